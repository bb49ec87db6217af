"""Collecting a profile: the ncu command line, running ncu, its failure messages, the child's environment.

`build_ncu_command` is a pure function (tested with the exact argument list); `run_ncu` is the
only place ncu starts. Only launches inside the NVTX push/pop range `kernel_opt_solution` are
profiled, so JIT compilation, autotuning, warm-up calls and the reference's kernels (all outside
that range) never reach the report. Clocks are left alone (`--clock-control none`): ncu's default
locks them at base, which makes its durations disagree with every benchmark, and they are never
compared with benchmark timings anyway. ncu's text output is kept for the log and for error
messages, never scraped for numbers.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.env.capabilities import nsight_python_compatibility
from kernel_opt.run.runner import child_environment

SectionSet = Literal["targeted", "full"]
ClockControl = Literal["none", "base"]

# The NVTX push/pop range the profiled program (kernel_opt.profile.target) opens around the
# measured solution calls, after its warm-up calls.
NVTX_RANGE = "kernel_opt_solution"
NO_KERNELS_PROFILED = "no_kernels"  # the error kind when ncu profiled no kernel in that range

# "targeted": the sections whose metrics the classifier and the reports read. Each one costs
# replay passes, so nothing else is collected unless `--set full` is asked for.
TARGETED_SECTIONS: tuple[str, ...] = (
    "SpeedOfLight",  # SM and memory throughput (% of peak) per unit, duration
    "MemoryWorkloadAnalysis",  # L1/L2 hit rates, memory throughput breakdown
    "ComputeWorkloadAnalysis",  # pipe utilisation (tensor, FMA, ...), issue slots
    "Occupancy",  # achieved vs theoretical occupancy and the per-SM block limits
    "LaunchStats",  # grid, block, registers, shared memory, waves per SM
    "SchedulerStats",  # eligible / active warps per scheduler
    "WarpStateStats",  # stall reasons in cycles per issued instruction
)

# Metrics the classifier reads that no targeted section is sure to collect (most live in the
# MemoryWorkloadAnalysis_Tables, InstructionStats and SourceCounters sections, which cost far
# more passes). Only names that exist unchanged from Volta to Hopper: ncu aborts on an unknown
# metric (chip-specific ones are in CAPABILITY_METRICS).
EXTRA_METRICS: tuple[str, ...] = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "smsp__thread_inst_executed_per_inst_executed.ratio",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    # Requests of ncu's SharedMemoryConflicts rule (shared loads and stores), for wavefronts per request.
    "smsp__sass_inst_executed_op_shared_ld.sum",
    "smsp__sass_inst_executed_op_shared_st.sum",
    # The executed instruction mix (warp instructions per SASS opcode): HGMMA, LDGSTS, UTMALDG, ...
    "sass__inst_executed_per_opcode",
)

# Metrics that exist only from some compute capability on, as (first capability, capability
# after the last, names): ncu aborts on a name the chip lacks, so they are asked for by chip.
CAPABILITY_METRICS: tuple[tuple[tuple[int, int], tuple[int, int], tuple[str, ...]], ...] = (
    # ldmatrix requests (sm_75+), the third request kind of ncu's SharedMemoryConflicts rule.
    ((7, 5), (99, 0), ("smsp__inst_executed_op_ldsm.sum",)),
    # Hopper's per-pipe utilisation (ComputeWorkloadAnalysis collects them too; asked for by name so
    # the compute roof is judged whatever the sections), spelled as the recorded H100/H200 reports
    # in demo/ and tests/fixtures/ncu/ show them (ncu 2025.3.1).
    ((9, 0), (10, 0), (
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
        "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",
    )),
)


def extra_metrics_for(compute_capability: str | None) -> tuple[str, ...]:
    """EXTRA_METRICS plus the chip-specific ones for a capability such as "9.0" (None: the common ones only)."""
    if not compute_capability:
        return EXTRA_METRICS
    major, _, minor = compute_capability.partition(".")
    capability = (int(major), int(minor or 0))
    chip_specific = [name for first, after_last, names in CAPABILITY_METRICS
                     if first <= capability < after_last for name in names]
    return EXTRA_METRICS + tuple(chip_specific)

# A solution that launches thousands of kernels per call would take hours to profile (each
# kernel is replayed tens of times); ncu stops profiling after this many launches.
DEFAULT_MAX_LAUNCHES = 100
DEFAULT_NCU_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class NcuCommandOptions:
    """What to collect and where the report goes (ncu appends `.ncu-rep` to export_base)."""

    export_base: Path
    section_set: SectionSet = "targeted"
    clock_control: ClockControl = "none"
    nvtx_range: str = NVTX_RANGE
    max_launches: int | None = DEFAULT_MAX_LAUNCHES
    extra_metrics: tuple[str, ...] = EXTRA_METRICS

    @property
    def report_path(self) -> Path:
        return Path(f"{self.export_base}.ncu-rep")


def build_ncu_command(ncu: str, program: Sequence[str], options: NcuCommandOptions) -> list[str]:
    """The exact ncu argument list that profiles `program` (a pure function: no I/O).

    `--nvtx-include "NAME/"`: the trailing slash selects a push/pop range (torch.cuda.nvtx's
    kind) in the default domain; without it ncu looks for a start/end range and profiles nothing.
    """
    command = [
        ncu,
        "--target-processes", "all",
        "--clock-control", options.clock_control,
        "--nvtx",
        "--nvtx-include", f"{options.nvtx_range}/",
    ]
    if options.max_launches is not None:
        command += ["--launch-count", str(options.max_launches)]
    if options.section_set == "full":
        command += ["--set", "full"]
    else:
        for section in TARGETED_SECTIONS:
            command += ["--section", section]
    if options.extra_metrics:
        command += ["--metrics", ",".join(options.extra_metrics)]
    command += [
        "--import-source", "no",
        "--export", str(options.export_base),
        "--force-overwrite",
        *program,
    ]
    return command


@dataclass
class NcuRun:
    """One ncu invocation: its command, exit status and output (kept for the log, never parsed for metrics)."""

    command: list[str]
    returncode: int | None
    output: str
    timed_out: bool = False
    timeout_s: float = 0.0

    @property
    def messages(self) -> list[str]:
        return ncu_messages(self.output)


def run_ncu(
    command: list[str], env: Mapping[str, str] | None = None, timeout_s: float = DEFAULT_NCU_TIMEOUT_S
) -> NcuRun:
    """Run ncu (which starts the profiled program itself) and wait for it."""
    try:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL, check=False,
        )
    except subprocess.TimeoutExpired as error:
        output = _text(error.stdout) + _text(error.stderr)
        return NcuRun(command, None, output, timed_out=True, timeout_s=timeout_s)
    except OSError as error:
        raise EnvironmentFault(f"ncu could not start: {error}",
                               hint="check the ncu path (env_check.py shows it)") from error
    output = (completed.stdout or "") + (completed.stderr or "")
    return NcuRun(command, completed.returncode, output, timeout_s=timeout_s)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def ncu_messages(output: str) -> list[str]:
    """ncu's own error and warning lines (`==ERROR== ...`, `==WARNING== ...`), for error messages."""
    return [line.strip() for line in output.splitlines() if line.strip().startswith(("==ERROR==", "==WARNING=="))]


def ncu_own_errors(output: str) -> list[str]:
    """ncu's error lines about itself, without the one that only relays the application's exit code."""
    return [line for line in ncu_messages(output)
            if line.startswith("==ERROR==") and "application returned an error code" not in line]


def ncu_failure_message(run: NcuRun) -> tuple[str, str | None, str]:
    """(message, hint, kind) for an ncu run that produced no usable report."""
    messages = run.messages
    joined = "\n".join(messages)
    if run.timed_out:
        return (f"ncu did not finish within {run.timeout_s:.0f} s",
                "profile fewer launches (--max-launches) or raise --timeout", "ncu_timeout")
    if "ERR_NVGPUCTRPERM" in run.output:
        return ("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)",
                "run as root, or have an admin set NVreg_RestrictProfilingToAdminUsers=0 "
                "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)", "ncu_permission")
    if "No kernels were profiled" in run.output:
        return ("ncu profiled no kernel inside the NVTX range `kernel_opt_solution`: the solution launched no GPU "
                "kernel during its measured calls",
                "a solution must launch its kernels on every call (no caching of results)", NO_KERNELS_PROFILED)
    detail = joined or run.output.strip()[-1500:] or "(no output)"
    return (f"ncu exited with code {run.returncode}:\n{detail}",
            "see ncu.log in the output folder for its full output", "ncu_failed")


def nsight_python_note(ncu_version: str | None) -> str:
    """One sentence on nsight-python: this tool runs ncu itself and reads with ncu_report, so
    nsight-python is never required; the note says whether the installed one could drive this ncu.

    Only its distribution metadata is read: importing nsight-python imports ncu_report, which
    must stay out of a process that holds torch.
    """
    try:
        version = importlib.metadata.version("nsight-python")
    except importlib.metadata.PackageNotFoundError:
        return "nsight-python: not installed, not needed (ncu is run directly and read with ncu_report)"
    compatibility = nsight_python_compatibility(version, ncu_version)
    return f"nsight-python {version}: installed but not used (ncu is run directly); {compatibility.message}"


def environment_for_child(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The profiled program's environment: a worker's (run/runner.child_environment), output unbuffered."""
    env = child_environment(dict(extra or {}))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
