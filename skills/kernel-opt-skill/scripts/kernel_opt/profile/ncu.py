"""Nsight Compute: the command that profiles a solution, and the reader for the report it writes.

Collection and reading live in one module because they must agree: the sections and metrics
asked for on the command line are the ones the reader resolves.

- Collect: `build_ncu_command` is a pure function (tested with the exact argument list);
  `run_ncu` is the only place a subprocess starts. Only launches inside the NVTX push/pop range
  `kernel_opt_solution` are profiled, so JIT compilation, autotuning, warm-up calls and the
  reference's kernels (all outside that range) never reach the report. Clocks are left alone
  (`--clock-control none`): ncu's default locks them at base, which makes its durations
  disagree with every benchmark, and they are never compared with benchmark timings anyway.
- Read: through Nsight's own Python reader `ncu_report` (the `ncu-report` pip package, or the
  copy in `extras/python` beside the ncu binary), in a child process (`python -m kernel_opt.profile.ncu
  REPORT`): loaded beside torch, ncu_report has crashed its process. ncu's text output is never
  scraped for numbers. Metric names differ between ncu versions and chips, so every name the
  classifier uses is resolved in one table, `METRIC_ALIASES`, from canonical name to candidates.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence

from kernel_opt.core.errors import EnvironmentFault, ExitCode, KernelOptError, UsageError

# --- collection ------------------------------------------------------------------------------

SectionSet = Literal["targeted", "full"]
ClockControl = Literal["none", "base"]

# The NVTX push/pop range the profiled program (kernel_opt.profile.target) opens around the
# measured solution calls, after its warm-up calls.
NVTX_RANGE = "kernel_opt_solution"

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

# Metrics the classifier reads that no targeted section collects (they live in the
# MemoryWorkloadAnalysis_Tables and SourceCounters sections, which cost far more passes).
# Only names that exist unchanged from Volta to Hopper: ncu aborts on an unknown metric.
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
)

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


def run_ncu(command: list[str], env: Mapping[str, str] | None = None, timeout_s: float = DEFAULT_NCU_TIMEOUT_S) -> NcuRun:
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
        raise EnvironmentFault(f"ncu could not start: {error}", hint="check the ncu path (env_check.py shows it)") from error
    return NcuRun(command, completed.returncode, (completed.stdout or "") + (completed.stderr or ""), timeout_s=timeout_s)


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
        return (f"ncu did not finish within {run.timeout_s:.0f} s", "profile fewer launches (--max-launches) or raise --timeout",
                "ncu_timeout")
    if "ERR_NVGPUCTRPERM" in run.output:
        return ("ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)",
                "run as root, or have an admin set NVreg_RestrictProfilingToAdminUsers=0 "
                "(https://developer.nvidia.com/ERR_NVGPUCTRPERM)", "ncu_permission")
    if "No kernels were profiled" in run.output:
        return ("ncu profiled no kernel inside the NVTX range `kernel_opt_solution`: the solution launched no GPU kernel "
                "during its measured calls", "a solution must launch its kernels on every call (no caching of results)",
                "no_kernels")
    detail = joined or run.output.strip()[-1500:] or "(no output)"
    return (f"ncu exited with code {run.returncode}:\n{detail}", "see ncu.log in the output folder for its full output",
            "ncu_failed")


# --- metric aliases --------------------------------------------------------------------------

Combine = Literal["first", "max"]


@dataclass(frozen=True)
class MetricAlias:
    """One canonical metric: the ncu names that may carry it, preferred first, and how to read it.

    `unit` is the unit of the canonical value (after conversion), `label` says what it is for a
    person. `combine="max"` takes the largest present candidate instead of the first one (the
    tensor pipe is reported per instruction kind, HMMA and GMMA, and either may be the busy one).
    """

    canonical: str
    candidates: tuple[str, ...]
    label: str
    unit: str
    combine: Combine = "first"
    pattern: str | None = None  # regex over every metric name, tried only when no candidate is present


# Canonical names carry their unit; KernelMetrics has one field per entry, in this order.
METRIC_ALIASES: tuple[MetricAlias, ...] = (
    MetricAlias("duration_us", ("gpu__time_duration.sum", "gpu__time_duration.avg"), "kernel duration", "us"),
    MetricAlias("sm_throughput_pct", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
                "compute (SM) throughput, % of peak", "%"),
    MetricAlias("memory_throughput_pct", ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
                "memory throughput (busiest of DRAM, L2, L1/shared), % of peak", "%"),
    MetricAlias("dram_throughput_pct", ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                        "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                "DRAM throughput, % of peak", "%"),
    MetricAlias("l2_throughput_pct", ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
                "L2 cache throughput, % of peak", "%"),
    MetricAlias("l1_throughput_pct", ("l1tex__throughput.avg.pct_of_peak_sustained_active",
                                      "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"),
                "L1/TEX + shared memory throughput, % of peak", "%"),
    MetricAlias("achieved_occupancy_pct", ("sm__warps_active.avg.pct_of_peak_sustained_active",),
                "achieved occupancy, % of the SM's warp slots", "%"),
    MetricAlias("theoretical_occupancy_pct", ("sm__maximum_warps_per_active_cycle_pct",),
                "theoretical occupancy, % of the SM's warp slots", "%"),
    MetricAlias("achieved_warps_per_sm", ("sm__warps_active.avg.per_cycle_active",), "achieved active warps per SM", "warps"),
    MetricAlias("theoretical_warps_per_sm", ("sm__maximum_warps_avg_per_active_cycle",),
                "theoretical active warps per SM", "warps"),
    MetricAlias("block_limit_registers_blocks", ("launch__occupancy_limit_registers",),
                "blocks per SM allowed by registers", "blocks"),
    MetricAlias("block_limit_shared_memory_blocks", ("launch__occupancy_limit_shared_mem",),
                "blocks per SM allowed by shared memory", "blocks"),
    MetricAlias("block_limit_warps_blocks", ("launch__occupancy_limit_warps",),
                "blocks per SM allowed by warp slots (block size)", "blocks"),
    MetricAlias("block_limit_sm_blocks", ("launch__occupancy_limit_blocks",),
                "blocks per SM allowed by the resident-block limit", "blocks"),
    MetricAlias("grid_size_blocks", ("launch__grid_size",), "grid size", "blocks"),
    MetricAlias("block_size_threads", ("launch__block_size",), "block size", "threads"),
    MetricAlias("registers_per_thread", ("launch__registers_per_thread",), "registers per thread", "registers"),
    MetricAlias("static_shared_memory_per_block_bytes", ("launch__shared_mem_per_block_static",),
                "static shared memory per block", "bytes"),
    MetricAlias("dynamic_shared_memory_per_block_bytes", ("launch__shared_mem_per_block_dynamic",),
                "dynamic shared memory per block", "bytes"),
    MetricAlias("driver_shared_memory_per_block_bytes", ("launch__shared_mem_per_block_driver",),
                "shared memory the driver reserves per block", "bytes"),
    MetricAlias("waves_per_sm", ("launch__waves_per_multiprocessor",),
                "waves per SM (grid / (SMs x resident blocks per SM))", "waves"),
    MetricAlias("sm_count", ("device__attribute_multiprocessor_count", "launch__sm_count"), "SMs on the device", "SMs"),
    MetricAlias("issue_slots_busy_pct", ("sm__inst_issued.avg.pct_of_peak_sustained_active",
                                         "smsp__issue_active.avg.pct_of_peak_sustained_active"),
                "issue slots busy, % of active cycles", "%"),
    MetricAlias("eligible_warps_per_scheduler", ("smsp__warps_eligible.avg.per_cycle_active",),
                "eligible warps per scheduler per cycle", "warps"),
    MetricAlias("active_warps_per_scheduler", ("smsp__warps_active.avg.per_cycle_active",),
                "active warps per scheduler per cycle", "warps"),
    MetricAlias("warp_cycles_per_issued_instruction", ("smsp__average_warp_latency_per_inst_issued.ratio",
                                                       "smsp__average_warps_active_per_issue_active.ratio"),
                "cycles a warp waits between two issued instructions", "cycles"),
    MetricAlias("tensor_pipe_pct", ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                                    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                                    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                                    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
                                    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
                                    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active"),
                "tensor pipe busy, % of active cycles (busiest of HMMA/GMMA)", "%", combine="max",
                # the per-instruction-kind tensor pipes are named differently on each chip
                pattern=r"^sm__(pipe_tensor\w*_cycles_active|inst_executed_pipe_tensor\w*)"
                        r"\.avg\.pct_of_peak_sustained_active$"),
    MetricAlias("fma_pipe_pct", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"),
                "FMA pipe busy, % of active cycles", "%", combine="max",
                pattern=r"^sm__(pipe_fma\w*_cycles_active|inst_executed_pipe_fma\w*)\.avg\.pct_of_peak_sustained_active$"),
    MetricAlias("l1_hit_rate_pct", ("l1tex__t_sector_hit_rate.pct",), "L1/TEX hit rate (sectors)", "%"),
    MetricAlias("l2_hit_rate_pct", ("lts__t_sector_hit_rate.pct",), "L2 hit rate (sectors)", "%"),
    MetricAlias("global_load_sectors_per_request",
                ("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio",),
                "32-byte sectors per global load request (4 = coalesced 4-byte loads, 16 = coalesced 16-byte)",
                "sectors/request"),
    MetricAlias("global_store_sectors_per_request",
                ("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio",),
                "32-byte sectors per global store request", "sectors/request"),
    MetricAlias("global_load_sectors", ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",), "global load sectors", "sectors"),
    MetricAlias("global_load_requests", ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",), "global load requests",
                "requests"),
    MetricAlias("global_store_sectors", ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",), "global store sectors",
                "sectors"),
    MetricAlias("global_store_requests", ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",), "global store requests",
                "requests"),
    MetricAlias("shared_load_bank_conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",),
                "shared-memory load bank conflicts", "conflicts"),
    MetricAlias("shared_store_bank_conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
                "shared-memory store bank conflicts", "conflicts"),
    MetricAlias("shared_load_wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",),
                "shared-memory load wavefronts", "wavefronts"),
    MetricAlias("shared_store_wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",),
                "shared-memory store wavefronts", "wavefronts"),
    MetricAlias("local_load_sectors", ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",),
                "local-memory load sectors (spills, local arrays)", "sectors"),
    MetricAlias("local_store_sectors", ("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",),
                "local-memory store sectors (spills, local arrays)", "sectors"),
    MetricAlias("branch_uniformity_pct", ("smsp__sass_average_branch_targets_threads_uniform.pct",),
                "branch uniformity: branches every active thread of the warp took the same way", "%"),
    MetricAlias("threads_per_warp_instruction", ("smsp__thread_inst_executed_per_inst_executed.ratio",),
                "active threads per executed warp instruction (a ratio out of 32, not a percentage)", "threads of 32"),
    MetricAlias("dram_read_bytes", ("dram__bytes_read.sum",), "bytes read from DRAM", "bytes"),
    MetricAlias("dram_write_bytes", ("dram__bytes_write.sum",), "bytes written to DRAM", "bytes"),
)

ALIASES_BY_CANONICAL: dict[str, MetricAlias] = {alias.canonical: alias for alias in METRIC_ALIASES}


@dataclass(frozen=True)
class StallFamily:
    """A naming scheme for per-reason warp-stall metrics: prefix + reason + suffix."""

    prefix: str
    suffix: str
    unit: str


# Stall metrics, preferred scheme first. The first scheme with any reason present is used for
# all reasons, so shares are never computed across schemes with different units.
STALL_FAMILIES: tuple[StallFamily, ...] = (
    # WarpStateStats (ncu 2020+): warp cycles per issued instruction spent in each state.
    StallFamily("smsp__average_warps_issue_stalled_", "_per_issue_active.ratio", "cycles per issued instruction"),
    # Total latency per warp in each state.
    StallFamily("smsp__average_warp_latency_issue_stalled_", ".ratio", "cycles per warp"),
    # PC sampling (SourceCounters, --set full): samples in each state.
    StallFamily("smsp__pcsamp_warps_issue_stalled_", "", "samples"),
    # Older layouts: % of active warps per cycle in each state.
    StallFamily("smsp__warp_issue_stalled_", "_per_warp_active.pct", "% of active warps"),
)
# States that are not waiting on anything: shown, but never named as the top stall.
NOT_A_STALL = {"selected"}


# --- records ---------------------------------------------------------------------------------


@dataclass
class RawMetric:
    """One metric as ncu_report gives it: name, value, ncu's own unit and description."""

    name: str
    value: float | int | str | None
    unit: str = ""
    description: str = ""


@dataclass
class StallShare:
    reason: str  # "long_scoreboard", "barrier", ...
    value: float  # in the family's unit (KernelMetrics.stall_unit)
    share_pct: float  # of the sum over every state (so all shares add to 100)


@dataclass
class KernelMetrics:
    """Canonical metrics of one kernel (one launch, or the mean over launches of one kernel).

    Every field is optional: a report collected with other sections, or on another chip, simply
    leaves some unset, and the classifier says which evidence was missing.
    """

    duration_us: float | None = None
    sm_throughput_pct: float | None = None
    memory_throughput_pct: float | None = None
    dram_throughput_pct: float | None = None
    l2_throughput_pct: float | None = None
    l1_throughput_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    achieved_warps_per_sm: float | None = None
    theoretical_warps_per_sm: float | None = None
    block_limit_registers_blocks: float | None = None
    block_limit_shared_memory_blocks: float | None = None
    block_limit_warps_blocks: float | None = None
    block_limit_sm_blocks: float | None = None
    grid_size_blocks: float | None = None
    block_size_threads: float | None = None
    registers_per_thread: float | None = None
    static_shared_memory_per_block_bytes: float | None = None
    dynamic_shared_memory_per_block_bytes: float | None = None
    driver_shared_memory_per_block_bytes: float | None = None
    waves_per_sm: float | None = None
    sm_count: float | None = None
    issue_slots_busy_pct: float | None = None
    eligible_warps_per_scheduler: float | None = None
    active_warps_per_scheduler: float | None = None
    warp_cycles_per_issued_instruction: float | None = None
    tensor_pipe_pct: float | None = None
    fma_pipe_pct: float | None = None
    l1_hit_rate_pct: float | None = None
    l2_hit_rate_pct: float | None = None
    global_load_sectors_per_request: float | None = None
    global_store_sectors_per_request: float | None = None
    global_load_sectors: float | None = None
    global_load_requests: float | None = None
    global_store_sectors: float | None = None
    global_store_requests: float | None = None
    shared_load_bank_conflicts: float | None = None
    shared_store_bank_conflicts: float | None = None
    shared_load_wavefronts: float | None = None
    shared_store_wavefronts: float | None = None
    local_load_sectors: float | None = None
    local_store_sectors: float | None = None
    branch_uniformity_pct: float | None = None
    threads_per_warp_instruction: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    stalls: dict[str, float] = field(default_factory=dict)  # reason -> value in stall_unit
    stall_unit: str | None = None
    sources: dict[str, str] = field(default_factory=dict)  # canonical -> the ncu metric it came from

    def stall_shares(self) -> list[StallShare]:
        """Every state as a share of the total, largest first."""
        total = sum(value for value in self.stalls.values() if value > 0)
        if total <= 0:
            return []
        shares = [StallShare(reason, value, 100.0 * value / total) for reason, value in self.stalls.items() if value > 0]
        return sorted(shares, key=lambda share: (-share.value, share.reason))

    def top_stalls(self, count: int = 3) -> list[StallShare]:
        return [share for share in self.stall_shares() if share.reason not in NOT_A_STALL][:count]

    @property
    def shared_bank_conflict_pct(self) -> float | None:
        """Bank conflicts as a share of shared-memory wavefronts (each conflict costs one extra wavefront)."""
        conflicts = _sum_known(self.shared_load_bank_conflicts, self.shared_store_bank_conflicts)
        wavefronts = _sum_known(self.shared_load_wavefronts, self.shared_store_wavefronts)
        if conflicts is None or not wavefronts:
            return None
        return 100.0 * conflicts / wavefronts

    @property
    def local_memory_sectors(self) -> float | None:
        return _sum_known(self.local_load_sectors, self.local_store_sectors)

    @property
    def shared_memory_per_block_bytes(self) -> float | None:
        return _sum_known(self.static_shared_memory_per_block_bytes, self.dynamic_shared_memory_per_block_bytes)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("stalls", "sources", "stall_unit")}
        data["shared_bank_conflict_pct"] = self.shared_bank_conflict_pct
        data["local_memory_sectors"] = self.local_memory_sectors
        data["stall_unit"] = self.stall_unit
        data["stalls"] = [asdict(share) for share in self.stall_shares()]
        return data


CANONICAL_FIELDS: tuple[str, ...] = tuple(alias.canonical for alias in METRIC_ALIASES)


def _sum_known(*values: float | None) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


# --- pure extraction: raw metrics -> canonical -----------------------------------------------

_TIME_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
_BYTE_SCALE = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
               "kibyte": 2.0**10, "mibyte": 2.0**20, "gibyte": 2.0**30}


def convert_unit(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a time or byte quantity into the canonical unit; other units pass through.

    ncu_report usually hands raw values in base units (nsecond, byte), but a unit like
    "usecond" or "Kbyte/block" must still land in the canonical unit. Per-block and per-thread
    denominators are part of the canonical name, so only the numerator is converted.
    """
    numerator = (from_unit or "").split("/")[0].strip().lower()
    if to_unit == "us" and numerator in _TIME_TO_US:
        return value * _TIME_TO_US[numerator]
    if to_unit == "bytes" and numerator in _BYTE_SCALE:
        return value * _BYTE_SCALE[numerator]
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def resolve_alias(alias: MetricAlias, raw: Mapping[str, RawMetric]) -> tuple[float | None, str | None]:
    """(value in the canonical unit, the ncu name it came from), or (None, None) when absent."""
    found: list[tuple[float, str]] = []
    for name in alias.candidates:
        metric = raw.get(name)
        number = _number(metric.value) if metric is not None else None
        if number is None:
            continue
        found.append((convert_unit(number, metric.unit, alias.unit), name))
        if alias.combine == "first":
            break
    if not found and alias.pattern:
        pattern = re.compile(alias.pattern)
        for name in sorted(raw):
            number = _number(raw[name].value) if pattern.match(name) else None
            if number is not None:
                found.append((convert_unit(number, raw[name].unit, alias.unit), name))
    if not found:
        return None, None
    return max(found, key=lambda item: item[0]) if alias.combine == "max" else found[0]


def stalls_from_raw(raw: Mapping[str, RawMetric]) -> tuple[dict[str, float], str | None, str | None]:
    """(reason -> value, unit, scheme template) from the first stall scheme present in `raw`."""
    for family in STALL_FAMILIES:
        stalls: dict[str, float] = {}
        for name, metric in raw.items():
            if not (name.startswith(family.prefix) and name.endswith(family.suffix)):
                continue
            reason = name[len(family.prefix): len(name) - len(family.suffix) if family.suffix else len(name)]
            # pcsamp also has "<reason>_not_issued" twins, and other schemes must not leak in.
            if not reason or reason.endswith("_not_issued") or "." in reason or "_per_" in reason:
                continue
            number = _number(metric.value)
            if number is not None:
                stalls[reason] = number
        if stalls:
            return stalls, family.unit, f"{family.prefix}<reason>{family.suffix}"
    return {}, None, None


def metrics_from_raw(raw: Mapping[str, RawMetric]) -> KernelMetrics:
    """Resolve every canonical metric (and the stall breakdown) from one launch's raw metrics."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for alias in METRIC_ALIASES:
        value, source = resolve_alias(alias, raw)
        values[alias.canonical] = value
        if source is not None:
            sources[alias.canonical] = source
    # Sectors per request: the ratio metric when present, else sectors / requests from the sums.
    for kind in ("load", "store"):
        ratio_key = f"global_{kind}_sectors_per_request"
        sectors, requests = values[f"global_{kind}_sectors"], values[f"global_{kind}_requests"]
        if values[ratio_key] is None and sectors is not None and requests:
            values[ratio_key] = sectors / requests
            sources[ratio_key] = f"{sources[f'global_{kind}_sectors']} / {sources[f'global_{kind}_requests']}"
    stalls, stall_unit, stall_source = stalls_from_raw(raw)
    if stall_source:
        sources["stalls"] = stall_source
    return KernelMetrics(**values, stalls=stalls, stall_unit=stall_unit, sources=sources)


def mean_metrics(records: Sequence[KernelMetrics]) -> KernelMetrics:
    """The mean of several launches of one kernel (fields absent from every launch stay None)."""
    if len(records) == 1:
        return records[0]
    values: dict[str, Any] = {}
    for name in CANONICAL_FIELDS:
        known = [getattr(record, name) for record in records if getattr(record, name) is not None]
        values[name] = sum(known) / len(known) if known else None
    reasons = sorted({reason for record in records for reason in record.stalls})
    stalls = {
        reason: sum(record.stalls.get(reason, 0.0) for record in records) / len(records) for reason in reasons
    }
    sources: dict[str, str] = {}
    for record in records:
        for key, value in record.sources.items():
            sources.setdefault(key, value)
    return KernelMetrics(**values, stalls=stalls, stall_unit=records[0].stall_unit, sources=sources)


# --- rule results ----------------------------------------------------------------------------

# ncu_report's link markup inside rule messages and tables:
# @url:<text>:<link>@, @section:<id>:<text>@, @sass:<address>:<text>@, @source:<file>:<line>:<text>@
_LINK_MARKUP = (
    re.compile(r"@url:([^:@]*):[^@]*@"),
    re.compile(r"@section:[^:@]*:([^@]*)@"),
    re.compile(r"@sass:[^:@]*:([^@]*)@"),
    re.compile(r"@source:[^:@]*:[^:@]*:([^@]*)@"),
)
_HTML_TAGS = re.compile(r"</?(?:b|i|u|em|strong|code|br|p|span)\b[^>]*>", re.IGNORECASE)
RULE_MESSAGE_MAX_CHARS = 600

# ncu_report's MsgType values, by name (the numbers are the module's own constants).
RULE_KINDS = {"MsgType_NONE": "info", "MsgType_OK": "ok", "MsgType_OPTIMIZATION": "optimization",
              "MsgType_WARNING": "warning", "MsgType_ERR": "error"}


def strip_rule_markup(text: str) -> str:
    """Rule text for people: ncu's link markup reduced to its visible text, tags removed, spaces folded."""
    for pattern in _LINK_MARKUP:
        text = pattern.sub(lambda match: match.group(1), text)
    text = _HTML_TAGS.sub(" ", text)
    return " ".join(text.split())


@dataclass
class RuleResult:
    """One of ncu's own rule results (its guided-analysis advice), link markup stripped."""

    rule: str  # rule identifier, e.g. "SOLBottleneck"
    name: str
    section: str
    kind: str  # ok, optimization, warning, error, info
    title: str
    message: str
    estimated_speedup_pct: float | None = None


def rule_from_dict(data: Mapping[str, Any], kind_names: Mapping[int, str] | None = None) -> RuleResult:
    """A RuleResult from one entry of `IAction.rule_results_as_dicts()`."""
    message = data.get("rule_message") or {}
    kind_value = message.get("type")
    kind = (kind_names or {}).get(kind_value, str(kind_value) if kind_value is not None else "info")
    text = strip_rule_markup(str(message.get("message") or ""))
    if len(text) > RULE_MESSAGE_MAX_CHARS:
        text = text[: RULE_MESSAGE_MAX_CHARS - 1].rstrip() + "…"
    speedup = data.get("speedup_estimation") or {}
    estimate = _number(speedup.get("speedup")) if isinstance(speedup, Mapping) else None
    return RuleResult(
        rule=str(data.get("rule_identifier") or ""),
        name=str(data.get("name") or ""),
        section=str(data.get("section_identifier") or ""),
        kind=kind,
        title=strip_rule_markup(str(message.get("title") or "")),
        message=text,
        estimated_speedup_pct=estimate,
    )


# --- reading a report ------------------------------------------------------------------------


@dataclass
class LaunchRecord:
    """One profiled kernel launch (an ncu "action")."""

    name: str  # function name, e.g. "vector_add_kernel"
    demangled_name: str
    raw: dict[str, RawMetric]
    rules: list[RuleResult]
    nvtx_ranges: list[str]  # push/pop ranges open at launch, outermost first

    @property
    def metrics(self) -> KernelMetrics:
        return metrics_from_raw(self.raw)

    def raw_value(self, name: str) -> Any:
        metric = self.raw.get(name)
        return metric.value if metric is not None else None


@dataclass
class KernelProfile:
    """All launches of one kernel with one launch configuration, merged."""

    name: str
    demangled_name: str
    launches: int
    total_duration_us: float | None
    metrics: KernelMetrics  # mean over launches
    raw_metrics: list[RawMetric]  # the first launch's, for the details report
    rules: list[RuleResult]
    inside_range: bool  # every launch was inside the NVTX range

    @property
    def launch_configuration(self) -> str:
        grid, block = self.metrics.grid_size_blocks, self.metrics.block_size_threads
        if grid is None or block is None:
            return "unknown"
        return f"{int(grid)} blocks x {int(block)} threads"


@dataclass
class ProfileReport:
    """What one .ncu-rep holds, grouped per kernel."""

    report_path: str
    reader: str  # which ncu_report was used, for the report
    device_name: str | None
    compute_capability: str | None
    kernels: list[KernelProfile]
    launches: int
    launches_outside_range: int

    @property
    def total_duration_us(self) -> float | None:
        known = [kernel.total_duration_us for kernel in self.kernels if kernel.total_duration_us is not None]
        return sum(known) if known else None


@dataclass
class ReaderLocation:
    """Where `ncu_report` can be imported from, found without importing it."""

    source: str  # for the report: which copy is used
    sys_path_entry: str | None  # folder to put first on sys.path; None when importable as installed


def locate_report_reader(ncu_path: str | None = None) -> ReaderLocation:
    """Find `ncu_report` (the ncu-report pip package, or extras/python beside ncu) without importing it.

    Importing happens only in the reading child process: loaded in a process that also holds
    torch, ncu_report has crashed that process on the GPU machine. Raises EnvironmentFault with
    the install command when there is no copy.
    """
    from kernel_opt.env.probes import ncu_report_candidates

    if importlib.util.find_spec("ncu_report") is not None:
        try:
            return ReaderLocation(f"ncu_report from the pip package ncu-report {importlib.metadata.version('ncu-report')}", None)
        except importlib.metadata.PackageNotFoundError:
            return ReaderLocation("ncu_report importable from sys.path", None)
    for folder in ncu_report_candidates(ncu_path):
        if (folder / "ncu_report.py").is_file():
            return ReaderLocation(f"ncu_report from {folder} (shipped beside ncu)", str(folder))
    raise EnvironmentFault(
        "Nsight Compute's report reader (the Python module ncu_report) is not available here, so an .ncu-rep "
        "cannot be read: it is neither installed nor in extras/python beside an Nsight Compute install",
        hint="pip install ncu-report==<the version of the ncu that wrote the report> (e.g. 2025.3.1), or install "
        "Nsight Compute, which ships it",
        kind="no_ncu_report",
    )


def import_report_reader(location: ReaderLocation) -> Any:
    if location.sys_path_entry and location.sys_path_entry not in sys.path:
        sys.path.insert(0, location.sys_path_entry)
    try:
        return importlib.import_module("ncu_report")
    except Exception as error:
        raise EnvironmentFault(f"`import ncu_report` failed ({location.source}): {type(error).__name__}: {error}",
                               kind="no_ncu_report") from error


def _kind_names(module: Any) -> dict[int, str]:
    names: dict[int, str] = {}
    for constant, kind in RULE_KINDS.items():
        value = getattr(module, constant, None)
        if isinstance(value, int):
            names[value] = kind
    return names


def _metric_value(metric: Any) -> Any:
    try:
        return metric.value()
    except Exception:  # a metric whose value kind the reader cannot convert: absent, not fatal
        return None


def _safe_text(call, default: str = "") -> str:
    try:
        value = call()
    except Exception:
        return default
    return default if value is None else str(value)


def read_action(action: Any, kind_names: Mapping[int, str] | None = None) -> LaunchRecord:
    """Everything this project uses from one ncu_report IAction (also works on test doubles)."""
    raw: dict[str, RawMetric] = {}
    for name in action.metric_names():
        metric = action.metric_by_name(name)
        if metric is None:
            continue
        raw[name] = RawMetric(
            name=name,
            value=_metric_value(metric),
            unit=_safe_text(metric.unit),
            description=_safe_text(metric.description),
        )
    rules_as_dicts = getattr(action, "rule_results_as_dicts", None)
    rules = [rule_from_dict(entry, kind_names) for entry in (rules_as_dicts() if rules_as_dicts else [])]
    demangled_base = getattr(action, "NameBase_DEMANGLED", None)
    function_name = _safe_text(action.name, "unknown kernel")
    demangled = _safe_text(lambda: action.name(demangled_base), function_name) if demangled_base is not None else function_name
    return LaunchRecord(function_name, demangled, raw, rules, _nvtx_ranges(action))


def _nvtx_ranges(action: Any) -> list[str]:
    state_getter = getattr(action, "nvtx_state", None)
    if state_getter is None:
        return []
    try:
        state = state_getter()
        ranges: list[str] = []
        for domain_id in state.domains():
            ranges.extend(str(name) for name in state.domain_by_id(domain_id).push_pop_ranges())
        return ranges
    except Exception:  # an older report without NVTX data
        return []


def group_launches(launches: Sequence[LaunchRecord], nvtx_range: str | None = NVTX_RANGE) -> list[KernelProfile]:
    """Merge launches of the same kernel with the same grid and block; longest total duration first."""
    groups: "OrderedDict[tuple, list[LaunchRecord]]" = OrderedDict()
    for launch in launches:
        key = (launch.name, launch.raw_value("launch__grid_size"), launch.raw_value("launch__block_size"))
        groups.setdefault(key, []).append(launch)
    kernels: list[KernelProfile] = []
    for members in groups.values():
        per_launch = [member.metrics for member in members]
        durations = [metrics.duration_us for metrics in per_launch if metrics.duration_us is not None]
        rules: list[RuleResult] = []
        seen: set[tuple[str, str]] = set()
        for member in members:
            for rule in member.rules:
                if (rule.rule, rule.message) not in seen:
                    seen.add((rule.rule, rule.message))
                    rules.append(rule)
        kernels.append(
            KernelProfile(
                name=members[0].name,
                demangled_name=members[0].demangled_name,
                launches=len(members),
                total_duration_us=sum(durations) if durations else None,
                metrics=mean_metrics(per_launch),
                raw_metrics=sorted(members[0].raw.values(), key=lambda metric: metric.name),
                rules=rules,
                inside_range=nvtx_range is None or all(nvtx_range in member.nvtx_ranges for member in members),
            )
        )
    return sorted(kernels, key=lambda kernel: -(kernel.total_duration_us or 0.0))


def profile_from_launches(
    launches: Sequence[LaunchRecord], report_path: str, reader: str, nvtx_range: str | None = NVTX_RANGE
) -> ProfileReport:
    """A ProfileReport from launch records (the pure half of `read_profile`)."""
    first = launches[0] if launches else None
    device = first.raw_value("device__attribute_display_name") if first else None
    major = first.raw_value("device__attribute_compute_capability_major") if first else None
    minor = first.raw_value("device__attribute_compute_capability_minor") if first else None
    capability = f"{int(major)}.{int(minor)}" if _number(major) is not None and _number(minor) is not None else None
    outside = sum(1 for launch in launches if nvtx_range is not None and launch.nvtx_ranges and nvtx_range not in launch.nvtx_ranges)
    return ProfileReport(
        report_path=report_path,
        reader=reader,
        device_name=str(device) if device else None,
        compute_capability=capability,
        kernels=group_launches(launches, nvtx_range),
        launches=len(launches),
        launches_outside_range=outside,
    )


def collect_launches(module: Any, path: Path) -> list[LaunchRecord]:
    """Every action in the report, through an imported ncu_report `module` (runs in the reading child)."""
    try:
        context = module.load_report(str(path))
    except Exception as error:
        raise UsageError(f"{path} cannot be read as an Nsight Compute report: {type(error).__name__}: {error}") from error
    kind_names = _kind_names(module)
    launches: list[LaunchRecord] = []
    for range_index in range(context.num_ranges() if context is not None else 0):
        profiled_range = context.range_by_idx(range_index)
        for action_index in range(profiled_range.num_actions()):
            launches.append(read_action(profiled_range.action_by_idx(action_index), kind_names))
    return launches


def launch_to_dict(launch: LaunchRecord) -> dict[str, Any]:
    return {
        "name": launch.name,
        "demangled_name": launch.demangled_name,
        "raw": [[m.name, m.value, m.unit, m.description] for m in launch.raw.values()],
        "rules": [asdict(rule) for rule in launch.rules],
        "nvtx_ranges": launch.nvtx_ranges,
    }


def launch_from_dict(data: Mapping[str, Any]) -> LaunchRecord:
    raw = {name: RawMetric(name, value, unit, description) for name, value, unit, description in data["raw"]}
    return LaunchRecord(data["name"], data["demangled_name"], raw, [RuleResult(**rule) for rule in data["rules"]],
                        list(data["nvtx_ranges"]))


READ_TIMEOUT_S = 600.0


def read_report_launches(path: Path, ncu_path: str | None = None) -> tuple[list[LaunchRecord], str]:
    """(launches, reader description): the report is read by `python -m kernel_opt.profile.ncu` in a child process.

    The child imports ncu_report, so a crash of its native library (seen beside torch on the GPU
    machine) ends only the child and comes back as an error with a plain message.
    """
    location = locate_report_reader(ncu_path)
    command = [sys.executable, "-m", "kernel_opt.profile.ncu", str(path)] + (["--ncu", ncu_path] if ncu_path else [])
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=READ_TIMEOUT_S,
                                   env=environment_for_child(), stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired as error:
        raise EnvironmentFault(f"reading {path} with ncu_report took more than {READ_TIMEOUT_S:.0f} s") from error
    try:
        payload = json.loads(completed.stdout.strip().splitlines()[-1]) if completed.stdout.strip() else None
    except json.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict):
        raise EnvironmentFault(
            f"ncu_report crashed while reading {path} (exit status {completed.returncode}): "
            f"{completed.stderr.strip()[-800:] or 'no message'}",
            hint=f"the reader was {location.source}; try the ncu-report pip package matching the ncu that wrote it",
            kind="ncu_report_crash",
        )
    if not payload.get("ok"):
        error = payload.get("error") or {}
        error_class = {int(ExitCode.USAGE): UsageError}.get(int(error.get("exit_code", 4)), EnvironmentFault)
        raise error_class(error.get("message") or "reading the report failed", hint=error.get("hint"),
                          kind=error.get("kind"))
    return [launch_from_dict(item) for item in payload["launches"]], payload["reader"]


def read_profile(path: Path, ncu_path: str | None = None, nvtx_range: str | None = NVTX_RANGE) -> ProfileReport:
    """Read an .ncu-rep (in a child process) and return its kernels, grouped, with canonical metrics."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"report not found: {path}", hint="pass the .ncu-rep that ncu_profile.py wrote (DIR/profile.ncu-rep)")
    launches, reader = read_report_launches(path, ncu_path)
    if not launches:
        raise UsageError(
            f"{path} holds no profiled kernel: it is not an Nsight Compute report, or ncu profiled nothing",
            hint="re-run ncu_profile.py; its ncu.log says what ncu did",
        )
    return profile_from_launches(launches, str(path), reader, nvtx_range)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m kernel_opt.profile.ncu REPORT [--ncu PATH]`: print the report's launches as one JSON line."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    ncu_path = None
    if "--ncu" in arguments:
        index = arguments.index("--ncu")
        ncu_path = arguments[index + 1]
        del arguments[index: index + 2]
    try:
        location = locate_report_reader(ncu_path)
        launches = collect_launches(import_report_reader(location), Path(arguments[0]))
        payload: dict[str, Any] = {"ok": True, "reader": location.source,
                                   "launches": [launch_to_dict(launch) for launch in launches]}
        code = 0
    except KernelOptError as error:
        payload, code = {"ok": False, "error": error.to_dict()}, int(error.exit_code)
    sys.stdout.write("\n" + json.dumps(payload, default=str) + "\n")
    return code


def nsight_python_note(ncu_version: str | None) -> str:
    """One sentence on nsight-python: this tool runs ncu itself and reads with ncu_report, so
    nsight-python is never required; the note says whether the installed one could drive this ncu.

    Only its distribution metadata is read: importing nsight-python imports ncu_report, which
    must stay out of a process that holds torch.
    """
    from kernel_opt.env.probes import nsight_python_compatibility

    try:
        version = importlib.metadata.version("nsight-python")
    except importlib.metadata.PackageNotFoundError:
        return "nsight-python: not installed, not needed (ncu is run directly and read with ncu_report)"
    compatibility = nsight_python_compatibility(version, ncu_version)
    return f"nsight-python {version}: installed but not used (ncu is run directly); {compatibility.message}"


def environment_for_child(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The profiled program's environment: this package importable, output unbuffered."""
    package_parent = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **(extra or {})}
    env["PYTHONPATH"] = os.pathsep.join([package_parent] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def alias_table_rows() -> Iterable[tuple[str, str, str, str]]:
    """(canonical, unit, label, candidates) for the docs and the details report."""
    for alias in METRIC_ALIASES:
        yield alias.canonical, alias.unit, alias.label, ", ".join(alias.candidates)


if __name__ == "__main__":
    sys.exit(main())
