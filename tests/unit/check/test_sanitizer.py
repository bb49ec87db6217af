"""compute-sanitizer mode on the CPU: the log parser on recorded H100 output, the command line,
the smallest case, the verdict (tests/integration/test_sanitize.py runs correctness_check --sanitize end to end)."""

import os
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR, REPO_ROOT

from kernel_opt.check.correctness import CheckOptions, CorrectnessRequest, check_solution, exit_code_of
from kernel_opt.check.records import SanitizerFinding, SanitizerRun
from kernel_opt.check.sanitizer import (
    FINDINGS_EXIT_CODE,
    LIBRARY_KERNELS_REGEX,
    SANITIZER_ENVIRONMENT,
    check_sanitizer_device,
    describe_finding,
    locate_sanitizer,
    racecheck_reason,
    sanitizer_command,
    sanitizer_error,
    smallest_case,
)
from kernel_opt.check.sanitizer_log import group_findings, parse_sanitizer_log
from kernel_opt.commands.correctness_check import main, parse_request
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.env import probes
from kernel_opt.run.events import DoneEvent, ErrorEvent
from kernel_opt.run.runner import ChildOutcome
from kernel_opt.sass.instruction_mix import InstructionMix
from kernel_opt.sass.report import KernelStaticAnalysis, StaticReport

FIXTURES = FIXTURES_DIR / "sanitizer"
VECTOR_ADD = REPO_ROOT / "reference" / "vector_add"


def log(name: str):
    return parse_sanitizer_log((FIXTURES / name).read_text())


# --- the parser, on what compute-sanitizer 2025.3.1 printed on an H100 ------------------------


def test_memcheck_tail_write_is_one_finding_of_24_reports_plus_the_api_error_after_it():
    parsed = log("memcheck_oob.txt")
    assert (parsed.completed, parsed.errors, parsed.warnings, parsed.not_printed) == (True, 25, 0, 0)
    assert len(parsed.findings) == 25 and parsed.tool_messages == []
    write, api = group_findings(parsed.findings)
    assert write == SanitizerFinding(
        kind="Invalid __global__ write of size 4 bytes", severity="error", kernel="tail_write(float *, int)",
        location="oob.cu:6", pc_offset="+0x90", thread="(232,0,0)", block="(3,0,0)", address="0x7fd682800fa0",
        detail="out of bounds; 1 bytes after the nearest allocation at 0x7fd682800000 of size 4,000 bytes", count=24)
    assert api.kind == ('Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA '
                        "API call to cudaDeviceSynchronize")
    assert (api.kernel, api.location, api.count) == (None, None, 1)


def test_the_summary_counts_what_the_print_limit_hid():
    parsed = log("memcheck_oob_limit.txt")
    assert (parsed.errors, parsed.not_printed, len(parsed.findings)) == (25, 22, 3)
    [write] = group_findings(parsed.findings)
    assert (write.count, write.thread, write.location) == (3, "(232,0,0)", "oob.cu:6")


def test_racecheck_analysis_report_names_both_lines_and_the_hazard_count():
    parsed = log("racecheck.txt")
    assert (parsed.completed, parsed.errors, parsed.warnings, parsed.finding_count) == (True, 1, 0, 1)
    [race] = parsed.findings
    assert race.kind == "Race between Write access and Read access" and race.severity == "error"
    assert (race.kernel, race.location, race.count) == ("exchange(const float *, float *)", "race.cu:7 and race.cu:9",
                                                         4096)
    assert race.detail == ("Write at exchange(const float *, float *)+0x140 in race.cu:7; "
                           "Read at exchange(const float *, float *)+0x150 in race.cu:9")


def test_racecheck_hazard_reports_group_by_place():
    parsed = log("racecheck_all.txt")
    assert (parsed.errors, len(parsed.findings)) == (4097, 100)
    [hazard] = group_findings(parsed.findings)
    assert hazard.kind == "Potential RAW hazard at __shared__"
    assert (hazard.address, hazard.block, hazard.thread, hazard.count) == ("0x680", "(2,0,0)", "(160,0,0)", 100)
    assert hazard.location == "race.cu:7 and race.cu:9"
    assert hazard.detail == "Write by thread (160,0,0); Read by thread (128,0,0)"


def test_initcheck_reads_of_memory_nothing_wrote():
    parsed = log("initcheck.txt")
    assert (parsed.errors, parsed.not_printed) == (1000, 900)
    [read] = group_findings(parsed.findings)
    assert read.kind == "Uninitialized __global__ memory read of size 4 bytes"
    assert (read.kernel, read.location, read.address, read.count) == (
        "copy(const float *, float *, int)", "uninit.cu:6", "0x7f4406800800", 100)


@pytest.mark.parametrize("name", ["synccheck.txt", "memcheck_clean.txt", "torch_memcheck.txt"])
def test_clean_runs_complete_with_no_finding(name):
    parsed = log(name)
    assert (parsed.completed, parsed.errors, parsed.finding_count, parsed.findings) == (True, 0, 0, [])


def test_the_harness_child_under_memcheck_blames_the_kernel_line_not_the_host_frames():
    parsed = log("harness_memcheck.txt")
    assert (parsed.errors, parsed.application_failed) == (26, True)
    grouped = group_findings(parsed.findings)
    assert [(f.kind.split(" ")[0], f.count) for f in grouped] == [("Invalid", 24), ("Program", 1), ("Program", 1)]
    assert (grouped[0].kernel, grouped[0].location) == ("k(const float *, const float *, float *, int)",
                                                        "tail_write.cu:4")


def test_a_log_without_its_summary_line_is_not_complete_and_counts_nothing():
    text = "".join(line + "\n" for line in (FIXTURES / "memcheck_oob.txt").read_text().splitlines()
                   if "SUMMARY" not in line)
    parsed = parse_sanitizer_log(text)
    assert (parsed.completed, parsed.errors, parsed.finding_count, len(parsed.findings)) == (False, None, 0, 25)
    assert parse_sanitizer_log("").completed is False


def test_the_tool_s_own_errors_are_not_findings():
    parsed = parse_sanitizer_log(textwrap.dedent("""\
        ========= COMPUTE-SANITIZER
        ========= Error: Target application terminated before first instrumented API call
        ========= Internal Sanitizer Error: The Sanitizer failed to attach
        ========= Target application returned an error
        """))
    assert parsed.findings == [] and parsed.completed is False and parsed.application_failed is True
    assert parsed.tool_messages == ["Error: Target application terminated before first instrumented API call",
                                    "Internal Sanitizer Error: The Sanitizer failed to attach"]


def test_racecheck_warnings_count_as_findings():
    parsed = parse_sanitizer_log(textwrap.dedent("""\
        ========= COMPUTE-SANITIZER
        ========= Warning: Race reported between Read access at k(float *)+0x30 in warp.cu:12
        =========     and Write access at k(float *)+0x20 in warp.cu:11 [62 hazards]
        =========
        ========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)
        """))
    assert (parsed.errors, parsed.warnings, parsed.finding_count) == (0, 1, 1)
    [race] = parsed.findings
    assert (race.severity, race.kind, race.location, race.count) == (
        "warning", "Race between Read access and Write access", "warp.cu:12 and warp.cu:11", 62)


def test_synccheck_barrier_report_and_a_kernel_without_line_info():
    parsed = parse_sanitizer_log(textwrap.dedent("""\
        ========= COMPUTE-SANITIZER
        ========= Barrier error detected. Divergent thread(s) in warp.
        =========     at k(int *)+0xa0 in sync.cu:61
        =========     by thread (19,0,0) in block (0,0,0)
        =========
        ========= Barrier error detected. Invalid arguments
        =========     at k(int *)+0xb0
        =========     by thread (16,0,0) in block (0,0,0)
        =========
        ========= ERROR SUMMARY: 2 errors
        """))
    divergent, invalid = parsed.findings
    assert (divergent.kind, divergent.location, divergent.thread) == (
        "Barrier error detected. Divergent thread(s) in warp", "sync.cu:61", "(19,0,0)")
    assert (invalid.kind, invalid.location, invalid.pc_offset) == ("Barrier error detected. Invalid arguments", None,
                                                                  "+0xb0")
    assert describe_finding(invalid) == ("Barrier error detected. Invalid arguments in k(int *) (at +0xb0: no line "
                                         "info), thread (16,0,0) in block (0,0,0)")


# --- the command line, the case, the verdict ---------------------------------------------------------


FAKE_TOOL = """\
#!{python}
# Stands in for compute-sanitizer: records its arguments and the child's environment, runs the
# child (everything from the Python executable on), then writes a recorded H100 log to --log-file.
import json, os, subprocess, sys
if sys.argv[1:] == ["--version"]:
    print("NVIDIA (R) Compute Sanitizer\\nVersion 2025.3.1.0 (build 36400806) (public-release)")
    sys.exit(0)
arguments = sys.argv[1:]
start = arguments.index({python!r})
child = subprocess.run(arguments[start:])
log_file = arguments[arguments.index("--log-file") + 1].replace("%%", "%")
recorded = {recorded!r}
text = open(recorded).read() if recorded else ""
open(log_file, "w").write(text)
json.dump({{"prefix": arguments[:start], "caching": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING")}},
          open(os.path.join(os.path.dirname(log_file), "fake_tool.json"), "w"))
found = "ERROR SUMMARY: 0 errors" not in text and "SUMMARY" in text
sys.exit(int(arguments[arguments.index("--error-exitcode") + 1]) if found else child.returncode)
"""


def fake_tool(folder: Path, recorded: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "compute-sanitizer"
    path.write_text(FAKE_TOOL.format(python=sys.executable, recorded=recorded))
    path.chmod(0o755)
    return path


def test_sanitizer_command_is_exact_and_uses_only_options_this_version_has():
    command = sanitizer_command("/cuda/bin/compute-sanitizer", "memcheck", Path("/out/100%/sanitizer_memcheck.log"))
    assert command == [
        "/cuda/bin/compute-sanitizer", "--tool", "memcheck", "--log-file", "/out/100%%/sanitizer_memcheck.log",
        "--error-exitcode", str(FINDINGS_EXIT_CODE), "--print-limit", "100", "--target-processes", "all",
        "--launch-timeout", "300", "--kernel-name-exclude", "kns=at6native",
    ]
    racecheck = sanitizer_command("cs", "racecheck", Path("/l"))
    assert racecheck[-2:] == ["--racecheck-report", "analysis"]
    assert racecheck[-6:-2] == ["--kernel-name-exclude", "kns=at6native", "--kernel-name-exclude",
                                f"regex={LIBRARY_KERNELS_REGEX}"]
    assert f"regex={LIBRARY_KERNELS_REGEX}" in sanitizer_command("cs", "synccheck", Path("/l"))
    assert "regex=" not in " ".join(command)  # memcheck checks the libraries' kernels: a wrong size shows there
    # initcheck tracks writes only in the kernels it checks: PyTorch's must stay checked (H100 corpus, 2026-11-25)
    assert "--kernel-name-exclude" not in sanitizer_command("cs", "initcheck", Path("/l"))
    help_text = (FIXTURES / "sanitizer_help.txt").read_text()
    for option in (item for item in racecheck if item.startswith("--")):
        assert f"{option} " in help_text, option
    assert "all              : Track the root application and all its child processes" in help_text
    assert "analysis : Report only race analysis reports" in help_text
    assert "regex                 : The value is a regular expression found in the mangled name of the kernel" in (
        help_text)
    assert "kernel_substring, kns : The value is a substring in the mangled name of the kernel" in help_text
    assert SANITIZER_ENVIRONMENT == {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}


# Library kernels as the tool matches them, by their mangled names: those the sweep's launch listings named
# (KernelBench levels 1 and 2 on an H200, torch 2.11; mangled here by hand from the listed names), and others of the
# same families (cuBLAS's Hopper GEMMs, PyTorch's flash attention). Then names a solution's own kernels may have.
LIBRARY_KERNELS = [
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel",
    "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize128x128x8_stage3_warpsize2x2x1_g1",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel",
    "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_warpspecialized",
    "_ZN7cutlass7Kernel2I36cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE",
    "_ZN8cublasLt19splitKreduce_kernelILi32ELi16EiffffLb1ELb0ELb0EEEv18cublasSplitKParamsIT4_EPKT2_",
    "_Z10dot_kernelIfLi128ELi0E15cublasDotParamsI16cublasGemvTensorIKfES1_IfEEEvT2_",
    "_Z17gemv2T_kernel_valIiiffffLi128ELi16ELi4ELi4ELb0ELb0E18cublasGemvParamsExEvT7_T5_S2_",
    "_Z16fft2d_r2c_32x32IfLb0ELj0ELb0EEvP6float2PKfiiiiiiiiiN5cudnn15reduced_divisorEb4int2ii",
    "_ZN5cudnn19engines_precompiled18setTensor5d_kernelIffEEv15cudnnTensorStructPT_T0_",
    "_Z23implicit_convolve_sgemmIffLi1024ELi5ELi5ELi3ELi3ELi3ELi1ELb0ELb1ELb1EEviiiPKT_iPT0_",
    "_Z29convolveNd_dgrad_float_engineIfLi3ELi512ELi6ELi5ELi3ELi3ELi3ELb0EEviiiPKT_iS2_",
    "_Z41fmha_cutlassF_f32_aligned_32x128_gmem_sm80N22PyTorchMemEffAttention15AttentionKernelIfN7cutlass4arch4Sm80E",
    "_ZN13pytorch_flash15flash_fwd_kernelI23Flash_fwd_kernel_traitsILi64ELi128ELi128ELi4ELb0E",
]
OWN_KERNELS = [
    "vector_add_kernel", "smem_race_kernel", "_Z13softmax_kernelPKfPfii", "attention_kernel", "matmul_kernel",
    "_Z11gemm_kernelILi128ELi128EEvPK13__nv_bfloat16S2_PS0_iii", "fused_sum_linear_kernel", "my_gemv", "xmma_like",
    "_ZN7cutlass13device_kernelIN4gemm6kernel13GemmUniversalI",  # a solution's own CUTLASS 3 GEMM
]


def test_racecheck_leaves_the_libraries_kernels_unchecked_and_never_a_solution_s_own():
    import re

    library = re.compile(LIBRARY_KERNELS_REGEX)
    assert [name for name in LIBRARY_KERNELS if not library.search(name)] == []
    assert [name for name in OWN_KERNELS if library.search(name)] == []


def test_the_smallest_case_is_the_least_product_of_integer_sizes():
    vector_add = [{"n": 1 << 20}, {"n": 1}, {"n": 127}, {"n": 128}, {"n": 129}, {"n": 4097}]
    assert smallest_case(vector_add) == {"n": 1}
    assert smallest_case([{"N": 4096, "D": 4096}, {"N": 1, "D": 129}, {"N": 3, "D": 50}]) == {"N": 1, "D": 129}
    # strings, floats and flags do not count; equals go to the first; a zero size launches nothing
    assert smallest_case([{"n": 8, "dtype": "float16", "causal": True}, {"n": 8, "scale": 0.5}]) == {
        "n": 8, "dtype": "float16", "causal": True}
    assert smallest_case([{"M": 0, "N": 64}, {"M": 16, "N": 16}]) == {"M": 16, "N": 16}
    assert smallest_case([{"M": 0}, {"M": 0, "N": 1}]) == {"M": 0}
    assert smallest_case([{}]) == {}


def outcome(*events, returncode=0, timed_out=False) -> ChildOutcome:
    return ChildOutcome(events=list(events), returncode=returncode, timed_out=timed_out, timeout_s=1200.0)


def section_from(name: str, exit_code: int | None = 0, tool="memcheck") -> SanitizerRun:
    parsed = log(name)
    return SanitizerRun(tool=tool, command="cs", exit_code=exit_code, completed=parsed.completed, errors=parsed.errors,
                        warnings=parsed.warnings, not_printed=parsed.not_printed,
                        findings=group_findings(parsed.findings), log_file="/out/sanitizer_memcheck.log")


def test_any_finding_is_exit_3_naming_the_tool_and_the_first_finding():
    error = sanitizer_error(section_from("memcheck_oob.txt", FINDINGS_EXIT_CODE), outcome(DoneEvent(),
                                                                                          returncode=86))
    assert (error["kind"], error["exit_code"]) == ("sanitizer_finding", 3)
    assert error["message"] == (
        "memcheck found 25 error(s); the first: Invalid __global__ write of size 4 bytes in tail_write(float *, int) "
        "at oob.cu:6, thread (232,0,0) in block (3,0,0): out of bounds; 1 bytes after the nearest allocation at "
        "0x7fd682800000 of size 4,000 bytes")
    assert "/out/sanitizer_memcheck.log" in error["hint"]
    racecheck = sanitizer_error(section_from("racecheck.txt", tool="racecheck"), outcome(DoneEvent()))
    assert racecheck["message"].startswith("racecheck found 1 error(s); the first: Race between Write access and Read")
    # its exit code says it found errors although none could be parsed: still not a pass
    silent = SanitizerRun(tool="initcheck", completed=True, errors=0, exit_code=FINDINGS_EXIT_CODE)
    assert sanitizer_error(silent, outcome(DoneEvent()))["exit_code"] == 3


def test_a_clean_complete_run_leaves_the_verdict_to_the_case():
    assert sanitizer_error(section_from("memcheck_clean.txt"), outcome(DoneEvent())) is None


def test_a_tool_that_did_not_finish_is_never_a_pass():
    unfinished = SanitizerRun(tool="memcheck", completed=False, exit_code=1, tool_messages=["Error: no GPU"])
    error = sanitizer_error(unfinished, outcome(DoneEvent(), returncode=1))
    assert (error["kind"], error["exit_code"]) == ("sanitizer_failed", 4)
    assert "without its summary line" in error["message"] and "Error: no GPU" in error["message"]
    hung = sanitizer_error(SanitizerRun(tool="memcheck"), outcome(timed_out=True, returncode=-9))
    assert (hung["kind"], hung["exit_code"]) == ("timeout", 3)
    assert "under compute-sanitizer memcheck" in hung["message"]
    crashed = sanitizer_error(SanitizerRun(tool="memcheck"),
                              outcome(ErrorEvent("launch_failure", "CUDA error", None, 3), returncode=3))
    assert crashed["kind"] == "launch_failure"
    # reports printed before it was killed are findings, counted as far as they go
    partial = SanitizerRun(tool="memcheck", findings=group_findings(log("memcheck_oob.txt").findings))
    message = sanitizer_error(partial, outcome(timed_out=True))["message"]
    assert message.startswith("memcheck found 25 report(s) before it stopped without its summary")


def test_memory_the_gpu_lacked_under_the_tool_is_whoever_s_the_child_says_never_a_finding():
    """memcheck reports a failed cudaMalloc as an API error: the harness's own allocation (here the inputs, while
    another process held the GPU's memory) must not become the solution's sanitizer finding."""
    section = section_from("memcheck_out_of_memory.txt", FINDINGS_EXIT_CODE)
    assert section.errors == 2 and all(finding.kernel is None for finding in section.findings)
    harness = ErrorEvent("harness_out_of_memory", "the GPU ran out of memory in the harness while creating inputs",
                         None, 4)
    error = sanitizer_error(section, outcome(harness, returncode=4))
    assert (error["kind"], error["exit_code"]) == ("harness_out_of_memory", 4)
    assert error["message"].endswith("which reported the failed allocation as an API error, not a bad access)")
    solution = sanitizer_error(section, outcome(ErrorEvent("out_of_memory", "the solution asked for 1 TiB", None, 3),
                                                returncode=3))
    assert (solution["kind"], solution["exit_code"]) == ("out_of_memory", 3)  # its own call's allocation: its fault
    silent = sanitizer_error(section, outcome(DoneEvent(), returncode=86))
    assert (silent["kind"], silent["exit_code"]) == ("harness_out_of_memory", 4)
    oob = section_from("memcheck_oob.txt", FINDINGS_EXIT_CODE)  # a bad access beside API errors stays a finding
    assert sanitizer_error(oob, outcome(harness, returncode=4))["kind"] == "sanitizer_finding"


def kernel(name, shared_bytes=0, **counts) -> KernelStaticAnalysis:
    return KernelStaticAnalysis(name=name, mangled_name=name, arch="sm_90", registers_per_thread=16,
                                shared_memory_per_block_bytes=shared_bytes, stack_frame_bytes=0,
                                spill_stores_bytes=0, spill_loads_bytes=0, local_memory_bytes=0,
                                mix=InstructionMix(**counts))


def static(*kernels) -> StaticReport:
    return StaticReport("v1.cu", "cuda", "sm_90", "cuobjdump", "nvcc", list(kernels))


def test_racecheck_runs_only_where_a_kernel_uses_shared_memory():
    needed, why = racecheck_reason(static(kernel("vector_add_kernel(const float *, float *, int)")))
    assert (needed, why) == (False, "no kernel uses shared memory (vector_add_kernel: no shared-memory instruction "
                                    "in the SASS)")
    needed, why = racecheck_reason(static(kernel("a"), kernel("tile(float *)", 1024, shared_loads=3,
                                                                shared_stores=1)))
    assert needed and why == "uses shared memory (tile: 4 shared-memory instructions, 1024 B shared per block)"
    assert racecheck_reason(static(kernel("t", tma_loads=2)))[0]
    assert racecheck_reason(static(kernel("t", opcode_counts={"ATOMS": 1})))[0]
    assert racecheck_reason(static(kernel("dynamic_only", 0, shared_stores=1)))[0]
    assert racecheck_reason(None) == (True, "may use shared memory (no static analysis of its SASS ran, so "
                                            "racecheck runs to be safe)")


def test_missing_compute_sanitizer_is_exit_4_naming_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(probes, "COMPUTE_SANITIZER_SEARCH_GLOBS", [str(tmp_path / "cuda" / "bin")])
    with pytest.raises(EnvironmentFault) as raised:
        locate_sanitizer()
    assert raised.value.exit_code == 4 and raised.value.kind == "no_compute_sanitizer"
    assert raised.value.message == (f"compute-sanitizer is not on PATH nor in {tmp_path / 'cuda' / 'bin'} "
                                    "(CUDA_HOME is not set): --sanitize cannot run here")
    home = tmp_path / "toolkit"
    fake_tool(home / "bin", "")
    monkeypatch.setenv("CUDA_HOME", str(home))
    assert locate_sanitizer() == (str(home / "bin" / "compute-sanitizer"), "2025.3.1.0")
    with pytest.raises(EnvironmentFault) as raised:
        check_sanitizer_device("cpu")
    assert raised.value.kind == "no_gpu"


# --- the arguments, and a machine without the tool --------------------------------------------------


def test_sanitize_arguments_round_trip_and_bad_combinations_are_usage_errors(tmp_path, capsys):
    arguments = [str(VECTOR_ADD / "good/vector_add.cu"), "--ref", str(VECTOR_ADD / "ref.py"), "--output-dir",
                 str(tmp_path), "--sanitize", "racecheck", "--n=1000"]
    request, _ = parse_request(arguments)
    assert request.check.sanitize == "racecheck"
    assert parse_request(request.argv())[0] == request and "--sanitize" in request.argv()
    assert main([*arguments, "--compile-only"]) == 2
    assert "--compile-only does not" in capsys.readouterr().err
    assert main([*arguments, "--device", "cpu"]) == 2
    assert "drop --device cpu" in capsys.readouterr().err
    assert main([*arguments[:-2], "--sanitize", "leakcheck"]) == 2
    with pytest.raises(Exception, match="--sanitize takes one of memcheck"):
        check_solution(CorrectnessRequest(VECTOR_ADD / "good/vector_add.cu", VECTOR_ADD / "ref.py", tmp_path,
                                          check=CheckOptions(sanitize="leakcheck")))


def test_without_compute_sanitizer_the_check_exits_4_and_keeps_the_full_record(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", f"{tmp_path / 'empty'}{os.pathsep}{os.path.dirname(sys.executable)}")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(probes, "COMPUTE_SANITIZER_SEARCH_GLOBS", [str(tmp_path / "cuda" / "bin")])
    (tmp_path / "correctness.json").write_text("{}")
    request = CorrectnessRequest(VECTOR_ADD / "good/vector_add.py", VECTOR_ADD / "ref.py", tmp_path,
                                 check=CheckOptions(sanitize="initcheck"))
    report = check_solution(request)
    assert exit_code_of(report) == 4 and report.error.kind == "no_compute_sanitizer"
    assert "not on PATH" in report.error.message and "CUDA_HOME is not set" in report.error.message
    assert (tmp_path / "correctness.json").read_text() == "{}"
    markdown = (tmp_path / "correctness_initcheck.md").read_text()
    assert "compute-sanitizer did not run" in markdown and report.cases == []


def test_the_verdict_names_a_kernels_finding_before_a_cuda_api_one():
    from kernel_opt.check.records import SanitizerFinding
    from kernel_opt.check.sanitizer import first_finding

    host = SanitizerFinding("Host API memory access error", "error", None, None, None, None, None, "0x7f", None, 7)
    device = SanitizerFinding("Uninitialized __global__ memory read of size 4 bytes", "error",
                              "add_into_scratch(const float *, const float *, float *, int)", "uninit_scratch.cu:14",
                              "+0xd0", "(0,0,0)", "(0,0,0)", "0x7f9e28800000", None, 93)
    assert first_finding([host, device]) is device
    assert first_finding([host]) is host
