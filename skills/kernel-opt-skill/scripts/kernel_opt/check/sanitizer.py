"""correctness_check.py --sanitize: one correctness case in a child process run under compute-sanitizer.

compute-sanitizer finds what comparing results cannot: a write past the end of a buffer that
lands in padding (reference/vector_add/wrong/tail_write.cu's twin passed the plain check at
n=1000 on an H100), a shared-memory race the warp schedule happens to hide, a read of memory
nothing wrote. It slows kernels 10-100x, so it runs one case, the smallest (`smallest_case`), with one
seed, and its text output is parsed (check/sanitizer_log.py) into the record's sanitizer section.

The child (`python -m kernel_opt.child`) runs under the tool as a command prefix
(`sanitizer_command`), with PyTorch's caching allocator off so that every tensor is its own
allocation with its true bounds (memcheck cannot see a write into the cache's padding). Any
finding is the verdict (exit 3), before whatever the case's comparison or the child said: a
kernel memcheck stopped at its first bad access fails afterwards with "unspecified launch
failure", which follows from the finding and is kept as a note.
"""

from __future__ import annotations

import math
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_opt.check.records import SanitizerFinding, SanitizerRun
from kernel_opt.check.sanitizer_log import group_findings, parse_sanitizer_log
from kernel_opt.core.errors import EnvironmentFault, ExitCode

if TYPE_CHECKING:  # annotations only: the runner and the static report stay out of this module's imports
    from kernel_opt.run.request import ChildRequest
    from kernel_opt.run.runner import ChildOutcome
    from kernel_opt.sass.report import StaticReport

SANITIZER_TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# compute-sanitizer's exit code when it found errors (--error-exitcode): apart from the child's own 0-4.
FINDINGS_EXIT_CODE = 86
PRINT_LIMIT = 100  # reports printed in full; the summary line still counts every one
# Instrumented kernels run 10-100x slower (the range usually quoted; tools/sanitizer_corpus.sh records
# this project's wall times); one small case runs, so the low end, times the --timeout per step.
SLOWDOWN_ALLOWANCE = 10
# Starting Python, torch and CUDA under the tool, before the child's first event; also how long the
# tool waits for the child to connect (--launch-timeout; its default, 60 s when every process is
# tracked, may not cover importing torch on a loaded machine).
STARTUP_ALLOWANCE_S = 300.0
# Every tensor its own cudaMalloc, so memcheck knows its bounds (PyTorch's caching allocator
# otherwise hands out blocks inside larger segments, where a tail write hits valid memory).
SANITIZER_ENVIRONMENT = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
# PyTorch's own kernels (namespace at::native, "at6native" in their mangled names) are not checked:
# they are the harness's copies, fills and comparisons and a torch reference, on buffers the harness
# made, so a finding there could not be the solution's. The solution's kernels, and any library
# kernel it launches itself (cuBLAS, ...), are checked.
UNCHECKED_KERNEL_SUBSTRING = "at6native"
# racecheck and synccheck find hazards inside one kernel: a race on its shared memory, a barrier some of its
# threads miss. In a library's kernel that is the library's, whoever called it, so those two tools leave the
# libraries' kernels unchecked, as they appear in mangled names: cuBLAS and cuBLASLt (sm90_xmma_gemm_*,
# cutlass3x_*, cutlass::Kernel2<cutlass_80_simt_sgemm_*>, gemv2T_kernel_val, dot_kernel<cublasDotParams>,
# cublasLt::splitKreduce_kernel), cuDNN (cudnn::*, fft2d_r2c_32x32, implicit_convolve_sgemm,
# convolveNd_dgrad_float_engine) and PyTorch's attention kernels (pytorch_flash::, PyTorchMemEffAttention). Under
# racecheck they are the slow part: the L2_18 trial's float64 truth (cuBLAS) took 33 s of a 65 s run on an H200,
# the solution's own call 0.13 s. memcheck and initcheck still check them: a solution that hands a library a wrong
# size or an unwritten buffer shows there. A kernel of the solution's own matches none of these names unless it
# borrows a library's.
LIBRARY_KERNELS_REGEX = ("cublas|cudnn|^sm[0-9]+_xmma_|^cutlass3x_|cutlass_[0-9]+_(simt|tensorop|wmma)_"
                         "|fft[123]d_[cr]2[cr]|implicit_convolve|convolveNd_|pytorch_flash|PyTorchMemEffAttention"
                         "|^_Z[0-9]+gemv|^_Z[0-9]+gemmSN|^_Z[0-9]+gemmk1")
LIBRARY_KERNELS_UNCHECKED_BY = ("racecheck", "synccheck")
INSTALL_SANITIZER = ("compute-sanitizer ships with the CUDA toolkit (e.g. `apt-get install cuda-toolkit-13-0` from "
                     "NVIDIA's repository): put its bin/ folder on PATH or set CUDA_HOME")


def log_name(tool: str) -> str:
    return f"sanitizer_{tool}.log"


def sanitizer_command(executable: str, tool: str, log_file: Path) -> list[str]:
    """The compute-sanitizer prefix the child process runs under (every option exists in 2025.3.1's --help).

    --error-exitcode makes its exit code say "found errors" (racecheck and initcheck exit 0
    otherwise); the counts still come from the log. Every process is tracked, the tool's default
    and how the H100 probe ran the harness (tests/fixtures/sanitizer/harness_memcheck.txt): the
    child's own subprocesses (ptxas for Triton) launch no kernel, so they add nothing to check.
    """
    command = [
        executable, "--tool", tool,
        "--log-file", str(log_file).replace("%", "%%"),  # the tool expands %p and %q{VAR} in this name
        "--error-exitcode", str(FINDINGS_EXIT_CODE),
        "--print-limit", str(PRINT_LIMIT),
        "--target-processes", "all",
        "--launch-timeout", str(int(STARTUP_ALLOWANCE_S)),
    ]
    # PyTorch's own kernels are left unchecked, except under initcheck: it tracks which bytes a
    # kernel wrote only in the kernels it checks, so with torch's excluded, its reductions' results
    # read back by cudaMemcpy counted as "uninitialized" (31 host API errors against an honest
    # vector add on the H100, 2026-11-25, from the harness's own input fingerprint).
    if tool != "initcheck":
        command += ["--kernel-name-exclude", f"kns={UNCHECKED_KERNEL_SUBSTRING}"]
    if tool in LIBRARY_KERNELS_UNCHECKED_BY:
        command += ["--kernel-name-exclude", f"regex={LIBRARY_KERNELS_REGEX}"]
    if tool == "racecheck":
        command += ["--racecheck-report", "analysis"]  # one line per racing pair of instructions, with a count
    return command


def locate_sanitizer() -> tuple[str, str | None]:
    """(path, version) of compute-sanitizer; exit 4 naming every place it looked when it is not there."""
    from kernel_opt.env.probes import probe_compute_sanitizer

    probe = probe_compute_sanitizer()
    if not probe.found or not probe.path:
        raise EnvironmentFault(f"{probe.error}: --sanitize cannot run here", hint=INSTALL_SANITIZER,
                               kind="no_compute_sanitizer")
    return probe.path, probe.version


def check_sanitizer_device(device: str) -> None:
    """compute-sanitizer instruments GPU kernels: a run on the CPU has nothing for it (exit 4)."""
    if device != "cuda":
        raise EnvironmentFault("compute-sanitizer checks kernels on an NVIDIA GPU, and torch sees none here",
                               hint="run --sanitize on a machine with an NVIDIA GPU", kind="no_gpu")


def problem_size(dims: dict[str, Any]) -> int:
    """The product of a case's integer sizes (flags, dtypes and other non-integers do not count)."""
    sizes = [value for value in dims.values() if isinstance(value, int) and not isinstance(value, bool)]
    return math.prod(sizes)


def smallest_case(cases: list[dict[str, Any]]) -> dict[str, Any]:
    """The case the sanitizer runs: the smallest product of integer sizes, the first of equals.

    The product of the sizes stands for the work, without running setup() for every case. A case
    with a size of 0 or less launches nothing to check, so it is passed over unless all are.
    """
    useful = [case for case in cases if problem_size(case) > 0] or cases
    return min(useful, key=problem_size)


def smallest_case_note(case: dict[str, Any]) -> str:
    shape = ", ".join(f"{key}={value}" for key, value in case.items()) or "the default shape"
    return (f"under compute-sanitizer one case runs, the smallest ({shape}: the least product of its integer "
            "sizes among the command line's shape and SHAPES), with one seed; without --sanitize every case runs")


def run_sanitized(request: ChildRequest, tool: str, timeout_s: float, environment: dict[str, str],
                  output_dir: Path) -> tuple[ChildOutcome, SanitizerRun]:
    """Run the correctness child under compute-sanitizer; return how it ended and the parsed section."""
    from kernel_opt.run.runner import run_worker

    executable, version = locate_sanitizer()
    output_dir.mkdir(parents=True, exist_ok=True)
    log_file = (output_dir / log_name(tool)).resolve()
    log_file.unlink(missing_ok=True)  # a log left by an earlier run must not be read as this one's
    prefix = sanitizer_command(executable, tool, log_file)
    # One seed, the smallest case, outputs filled before the reference copies them (setup()'s torch.empty
    # would otherwise be read unwritten by the harness itself, and initcheck would report that), and only
    # the integrity checks that apply under the tool (check/child.py).
    request = request.with_part(seeds=[0], sanitized=True)
    outcome = run_worker(request, timeout_s=timeout_s * SLOWDOWN_ALLOWANCE,
                         env={**environment, **SANITIZER_ENVIRONMENT}, prefix=prefix,
                         startup_allowance_s=STARTUP_ALLOWANCE_S)
    log = parse_sanitizer_log(log_file.read_text(errors="replace") if log_file.is_file() else "")
    findings, messages = group_findings(log.findings), list(log.tool_messages)
    if log.completed and log.finding_count == 0 and findings:  # its summary counts none: notes, not findings
        messages += [describe_finding(finding) for finding in findings]
        findings = []
    section = SanitizerRun(
        tool=tool, command=shlex.join(prefix), version=version, log_file=str(log_file),
        exit_code=outcome.returncode, completed=log.completed, errors=log.errors, warnings=log.warnings,
        not_printed=log.not_printed, findings=findings, tool_messages=messages,
    )
    return outcome, section


def describe_finding(finding: SanitizerFinding) -> str:
    """One finding in a sentence: what, in which kernel, where, by which thread."""
    text = finding.kind
    if finding.kernel:
        text += f" in {finding.kernel}"
    if finding.location:
        text += f" at {finding.location}"
    elif finding.pc_offset and finding.kernel:
        text += f" (at {finding.pc_offset}: no line info)"
    if finding.thread or finding.block:
        text += f", thread {finding.thread or '?'} in block {finding.block or '?'}"
    if finding.detail:
        text += f": {finding.detail}"
    return text


def first_finding(findings: list[SanitizerFinding]) -> SanitizerFinding:
    """The finding to name first: one in a kernel before one in a CUDA API call (which has no kernel)."""
    return next((finding for finding in findings if finding.kernel), findings[0])


def sanitizer_error(section: SanitizerRun, outcome: ChildOutcome) -> dict[str, Any] | None:
    """The record's error for what compute-sanitizer said; None when it finished and found nothing.

    Findings: exit 3, the tool and the first finding named. A tool that ended without its summary
    line: the child's own error if it reported one (a timeout, a crash), else exit 4 with what
    the tool said, since its counts are unknown and "nothing found" cannot be concluded.
    """
    tool, log = section.tool, section.log_file
    unfinished_reports = not section.completed and section.findings  # printed before it was stopped
    if section.findings and all(_out_of_memory(finding) for finding in section.findings):
        return _out_of_memory_error(section, outcome)
    if section.finding_count or unfinished_reports or section.exit_code == FINDINGS_EXIT_CODE:
        if section.completed:
            count = f"{section.errors} error(s)" + (f", {section.warnings} warning(s)" if section.warnings else "")
        else:
            count = f"{sum(f.count for f in section.findings)} report(s) before it stopped without its summary"
        first = describe_finding(first_finding(section.findings)) if section.findings else \
            "none could be read from the log"
        return {"kind": "sanitizer_finding", "exit_code": int(ExitCode.SOLUTION_FAULT),
                "message": f"{tool} found {count}; the first: {first}",
                "hint": f"every finding, grouped: the sanitizer section of the report; the tool's own output: {log}"}
    if section.completed:
        return None
    child_error = outcome.failure()
    if child_error is not None and (outcome.timed_out or outcome.error_event is not None):
        return {**child_error, "message": f"{child_error['message']} (under compute-sanitizer {tool}, which printed "
                                          "no summary)"}
    said = "; ".join(section.tool_messages) or "nothing it could say"
    return {"kind": "sanitizer_failed", "exit_code": int(ExitCode.ENVIRONMENT_FAULT),
            "message": f"compute-sanitizer {tool} ended (exit code {section.exit_code}) without its summary line, so "
                       f"its findings are unknown; it said: {said}",
            "hint": f"read {log}; run the command in the report's sanitizer section by hand to see why"}


def _out_of_memory(finding) -> bool:
    """A CUDA API call that failed for want of memory: not a kernel's bad access (memcheck reports it as an error)."""
    return finding.kernel is None and "cudaErrorMemoryAllocation" in finding.kind


def _out_of_memory_error(section: SanitizerRun, outcome: ChildOutcome) -> dict[str, Any]:
    """The GPU ran out of memory under the tool: whose fault is the child's to say (run/memory.py tells the harness's
    allocations from the solution's call); where it said nothing, this machine's (exit 4)."""
    child_error = outcome.failure()
    if child_error is not None and outcome.error_event is not None:
        return {**child_error, "message": f"{child_error['message']} (under compute-sanitizer {section.tool}, which "
                                          "reported the failed allocation as an API error, not a bad access)"}
    return {"kind": "harness_out_of_memory", "exit_code": int(ExitCode.ENVIRONMENT_FAULT),
            "message": f"the GPU ran out of memory under compute-sanitizer {section.tool} (a failed cudaMalloc, not a "
                       "bad access by a kernel); nothing was found against the solution",
            "hint": f"free the GPU's memory (another process may hold it) and run it again; the tool's output: "
                    f"{section.log_file}"}


def racecheck_reason(report: StaticReport | None) -> tuple[bool, str]:
    """Whether racecheck has anything to check, from the kernels' SASS: (run it, why).

    `why` completes "the kernel ...", as evaluate's racecheck summary reads it.

    racecheck looks only at shared memory, so it runs when a kernel's disassembly has shared
    memory instructions (LDS/STS, ldmatrix/stmatrix, cp.async, TMA, bulk copies, shared atomics)
    or a shared allocation per block. Without a static report (it failed), it runs anyway.
    """
    if report is None:
        return True, "may use shared memory (no static analysis of its SASS ran, so racecheck runs to be safe)"
    users = []
    for kernel in report.kernels:
        mix = kernel.mix
        instructions = (mix.shared_loads + mix.shared_stores + mix.shared_matrix_loads + mix.shared_matrix_stores
                        + mix.async_copies + mix.tma_loads + mix.bulk_copies + mix.opcode_counts.get("ATOMS", 0))
        if instructions or (kernel.shared_memory_per_block_bytes or 0) > 0:
            users.append(f"{kernel.name.split('(')[0]}: {instructions} shared-memory instructions, "
                         f"{kernel.shared_memory_per_block_bytes or 0} B shared per block")
    if users:
        return True, "uses shared memory (" + "; ".join(users) + ")"
    names = ", ".join(kernel.name.split("(")[0] for kernel in report.kernels) or "no kernel"
    return False, f"no kernel uses shared memory ({names}: no shared-memory instruction in the SASS)"


def sanitize_usage_problem(device_option: str, compile_only: bool) -> str | None:
    """Why --sanitize cannot go with these options (a usage error), or None."""
    if compile_only:
        return "--sanitize runs the solution, --compile-only does not: use one of them"
    if device_option == "cpu":
        return "--sanitize checks kernels on an NVIDIA GPU: drop --device cpu"
    return None
