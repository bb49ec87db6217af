"""The ncu command line, exactly, and how a failed ncu run is reported (subprocess mocked)."""

import subprocess
from pathlib import Path

import pytest

from kernel_opt.profile.ncu import collection
from kernel_opt.profile.ncu.collection import (
    NcuCommandOptions,
    NcuRun,
    build_ncu_command,
    environment_for_child,
    ncu_failure_message,
    ncu_messages,
    ncu_own_errors,
    run_ncu,
)
from kernel_opt.profile.ncu.metric_aliases import METRIC_ALIASES, OPCODE_MIX_METRIC

NCU = "/usr/local/cuda/bin/ncu"
PROGRAM = ["/usr/bin/python3", "-m", "kernel_opt.profile.target", "/out/v1/profile_request.json"]
TARGETED_SECTIONS = [
    "--section", "SpeedOfLight",
    "--section", "MemoryWorkloadAnalysis",
    "--section", "ComputeWorkloadAnalysis",
    "--section", "Occupancy",
    "--section", "LaunchStats",
    "--section", "SchedulerStats",
    "--section", "WarpStateStats",
]
EXTRA_METRICS = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,"
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,"
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,"
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,"
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum,"
    "smsp__sass_average_branch_targets_threads_uniform.pct,smsp__thread_inst_executed_per_inst_executed.ratio,"
    "dram__bytes_read.sum,dram__bytes_write.sum,"
    "smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_shared_st.sum,"
    "sass__inst_executed_per_opcode"
)
HOPPER_PIPES = (
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
    "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",
)


def test_targeted_command_is_exact():
    options = NcuCommandOptions(export_base=Path("/out/v1/profile"))
    assert build_ncu_command(NCU, PROGRAM, options) == [
        NCU,
        "--target-processes", "all",
        "--clock-control", "none",
        "--nvtx",
        "--nvtx-include", "kernel_opt_solution/",
        "--launch-count", "100",
        *TARGETED_SECTIONS,
        "--metrics", EXTRA_METRICS,
        "--import-source", "no",
        "--export", "/out/v1/profile",
        "--force-overwrite",
        *PROGRAM,
    ]
    assert options.report_path == Path("/out/v1/profile.ncu-rep")


def test_full_set_replaces_the_sections_and_keeps_the_rest():
    options = NcuCommandOptions(export_base=Path("/out/v1/profile"), section_set="full", max_launches=7)
    command = build_ncu_command(NCU, PROGRAM, options)
    assert command == [
        NCU, "--target-processes", "all", "--clock-control", "none", "--nvtx", "--nvtx-include", "kernel_opt_solution/",
        "--launch-count", "7", "--set", "full", "--metrics", EXTRA_METRICS, "--import-source", "no",
        "--export", "/out/v1/profile", "--force-overwrite", *PROGRAM,
    ]
    assert "--section" not in command


def test_options_change_only_their_own_arguments():
    options = NcuCommandOptions(export_base=Path("p"), clock_control="base", nvtx_range="mine", max_launches=None,
                                extra_metrics=())
    command = build_ncu_command("ncu", ["prog"], options)
    assert command[:8] == ["ncu", "--target-processes", "all", "--clock-control", "base", "--nvtx", "--nvtx-include",
                           "mine/"]
    assert "--launch-count" not in command and "--metrics" not in command
    assert command[-4:] == ["--export", "p", "--force-overwrite", "prog"]


def test_every_extra_metric_is_read_back_by_an_alias():
    """Collecting a metric nobody reads costs passes; reading one nobody collects finds nothing."""
    candidates = {name for alias in METRIC_ALIASES for name in alias.candidates} | {OPCODE_MIX_METRIC}
    chip_specific = {name for _, _, names in collection.CAPABILITY_METRICS for name in names}
    assert set(collection.EXTRA_METRICS) | chip_specific <= candidates


@pytest.mark.parametrize("capability, added", [
    (None, ()),
    ("7.0", ()),  # Volta: no ldmatrix
    ("8.0", ("smsp__inst_executed_op_ldsm.sum",)),
    ("9.0", ("smsp__inst_executed_op_ldsm.sum", *HOPPER_PIPES)),
    ("10.0", ("smsp__inst_executed_op_ldsm.sum",)),  # Hopper's pipe names are not assumed on Blackwell
])
def test_chip_specific_metrics_are_asked_for_only_on_their_chips(capability, added):
    assert collection.extra_metrics_for(capability) == collection.EXTRA_METRICS + added


def test_the_hopper_command_carries_the_pipe_metrics():
    options = NcuCommandOptions(export_base=Path("p"), extra_metrics=collection.extra_metrics_for("9.0"))
    command = build_ncu_command("ncu", ["prog"], options)
    metrics = command[command.index("--metrics") + 1]
    assert metrics == ",".join((EXTRA_METRICS, "smsp__inst_executed_op_ldsm.sum", *HOPPER_PIPES))


def test_run_ncu_passes_an_argument_list_with_timeout_and_environment(monkeypatch):
    calls = []

    def fake_run(command, **kwargs):
        calls.append((command, kwargs))
        return subprocess.CompletedProcess(command, 0, stdout="==PROF== Disconnected\n", stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    command = ["ncu", "--nvtx", "python3", "-m", "kernel_opt.profile.target", "r.json"]
    run = run_ncu(command, env={"PYTHONPATH": "/pkg"}, timeout_s=42)
    assert len(calls) == 1
    passed, kwargs = calls[0]
    assert passed == command and kwargs["timeout"] == 42 and kwargs["env"] == {"PYTHONPATH": "/pkg"}
    assert kwargs.get("shell", False) is False and kwargs["stdin"] == subprocess.DEVNULL
    assert (run.returncode, run.timed_out, run.output) == (0, False, "==PROF== Disconnected\n")


def test_run_ncu_reports_a_timeout_with_the_partial_output(monkeypatch):
    def fake_run(command, **kwargs):
        raise subprocess.TimeoutExpired(command, kwargs["timeout"], output=b"==PROF== Profiling", stderr=None)

    monkeypatch.setattr(subprocess, "run", fake_run)
    run = run_ncu(["ncu"], timeout_s=5)
    assert run.timed_out and run.returncode is None and run.output == "==PROF== Profiling"
    message, hint, kind = ncu_failure_message(run)
    assert kind == "ncu_timeout" and "5 s" in message and "--max-launches" in hint


@pytest.mark.parametrize(
    "output, kind, words",
    [
        ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters",
         "ncu_permission", "performance counters"),
        ("==PROF== Disconnected from process 12\n==WARNING== No kernels were profiled.", "no_kernels", "no GPU kernel"),
        ("==PROF== Connected\n==ERROR== Failed to find metric foo__bar\nnoise", "ncu_failed",
         "Failed to find metric foo__bar"),
    ],
)
def test_failure_messages_name_the_cause(output, kind, words):
    run = NcuRun(["ncu"], 1, output)
    message, hint, found_kind = ncu_failure_message(run)
    assert found_kind == kind and words in message and hint


def test_ncu_messages_keep_only_its_error_and_warning_lines():
    output = "app output\n==PROF== Connected\n==WARNING== a\n  ==ERROR== b  \n"
    assert ncu_messages(output) == ["==WARNING== a", "==ERROR== b"]


def test_child_environment_makes_the_package_importable(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    env = environment_for_child()
    first, rest = env["PYTHONPATH"].split(":", 1)
    assert (Path(first) / "kernel_opt" / "profile" / "target.py").is_file() and rest == "/elsewhere"
    assert env["PYTHONUNBUFFERED"] == "1"


def test_ncus_own_errors_leave_out_the_applications_exit_code():
    output = ("==ERROR== Failed to find metric x\n==ERROR== The application returned an error code (1).\n"
              "==WARNING== something")
    assert ncu_own_errors(output) == ["==ERROR== Failed to find metric x"]
