"""Metric definitions: every ncu metric the classifier reads, by canonical name, and how to read it.

Metric names differ between ncu versions and chips, so every name the classifier uses is
resolved in one table, `METRIC_ALIASES`, from canonical name (which carries its unit) to
candidate ncu names. `metrics_from_raw` turns one launch's raw metrics into a `KernelMetrics`
record (units converted, stall breakdown from the first stall naming scheme present);
`mean_metrics` averages launches of one kernel. All pure functions: no ncu, no ncu_report.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

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
    MetricAlias("achieved_warps_per_sm", ("sm__warps_active.avg.per_cycle_active",),
                "achieved active warps per SM", "warps"),
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
                                    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
                                    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active"),
                "tensor pipe busy, % of active cycles (busiest of HMMA/GMMA)", "%", combine="max",
                # the per-instruction-kind tensor pipes are named differently on each chip
                pattern=r"^sm__(pipe_tensor\w*_cycles_active|inst_executed_pipe_tensor\w*)"
                        r"\.avg\.pct_of_peak_sustained_active$"),
    MetricAlias("fma_pipe_pct", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"),
                "FMA pipe busy, % of active cycles", "%", combine="max",
                pattern=r"^sm__(pipe_fma\w*_cycles_active|inst_executed_pipe_fma\w*)"
                        r"\.avg\.pct_of_peak_sustained_active$"),
    # The other pipes of ncu's HighPipeUtilization rule (ComputeWorkloadAnalysis): cycle-based
    # utilisation where ncu has it, else the instruction rate (XU and LSU only have that).
    MetricAlias("alu_pipe_pct", ("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"),
                "ALU pipe busy (integer and logic), % of active cycles", "%"),
    MetricAlias("fp64_pipe_pct", ("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
                                  "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active"),
                "FP64 pipe busy, % of active cycles", "%"),
    MetricAlias("xu_pipe_pct", ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",),
                "XU pipe (transcendentals, conversions: MUFU) instruction rate, % of peak", "%"),
    MetricAlias("lsu_pipe_pct", ("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",),
                "LSU pipe (load/store instructions) instruction rate, % of peak", "%"),
    MetricAlias("gmma_instructions_pct", ("sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",),
                "warpgroup MMA (HGMMA/QGMMA/IGMMA) instruction rate, % of peak: above 0 the kernel runs wgmma", "%"),
    MetricAlias("tma_pipe_pct", ("sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__inst_executed_pipe_tma.avg.pct_of_peak_sustained_active"),
                "TMA (bulk tensor copy) pipe busy, % of active cycles: above 0 the kernel copies with TMA", "%",
                combine="max"),
    MetricAlias("l1_hit_rate_pct", ("l1tex__t_sector_hit_rate.pct",), "L1/TEX hit rate (sectors)", "%"),
    MetricAlias("l2_hit_rate_pct", ("lts__t_sector_hit_rate.pct",), "L2 hit rate (sectors)", "%"),
    MetricAlias("global_load_sectors_per_request",
                ("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio",),
                "32-byte sectors per global load request (4 = coalesced 4-byte loads, 16 = coalesced 16-byte)",
                "sectors/request"),
    MetricAlias("global_store_sectors_per_request",
                ("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio",),
                "32-byte sectors per global store request", "sectors/request"),
    MetricAlias("global_load_sectors", ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",), "global load sectors",
                "sectors"),
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
    # The requests of ncu's SharedMemoryConflicts rule: shared-memory load (LDS) and store (STS)
    # instructions; ldmatrix (LDSM, sm_75+) counts as a load request.
    MetricAlias("shared_load_instructions", ("smsp__sass_inst_executed_op_shared_ld.sum",),
                "shared-memory load instructions executed (LDS)", "instructions"),
    MetricAlias("shared_store_instructions", ("smsp__sass_inst_executed_op_shared_st.sum",),
                "shared-memory store instructions executed (STS)", "instructions"),
    MetricAlias("shared_matrix_load_instructions", ("smsp__inst_executed_op_ldsm.sum",),
                "ldmatrix instructions executed (LDSM)", "instructions"),
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

# Warp instructions executed per SASS opcode (an instanced metric: one instance per opcode, the
# value is the total). It is the executed instruction mix, the profile's own SASS evidence
# (HGMMA, LDGSTS, UTMALDG, USETMAXREG, LDL/STL, ...), recorded in the targeted sections' reports.
OPCODE_MIX_METRIC = "sass__inst_executed_per_opcode"
# The same mix with each opcode's modifiers (LDG.E.128, STG.E.U16, LDGSTS.E.BYPASS.128), which ncu
# records beside it. The reader keeps its global loads and stores: their widths say how many sectors
# a coalesced warp request needs (assessments.assess_global_access).
OPCODE_MODIFIER_MIX_METRIC = "sass__inst_executed_per_opcode_with_modifier_all"
GLOBAL_ACCESS_OPCODES: tuple[str, ...] = ("LDG", "LDGSTS", "STG")  # through the LSU and L1 (TMA's are not)
# Metrics whose per-instance values the reader keeps (every other metric keeps only its value).
INSTANCED_METRICS: tuple[str, ...] = (OPCODE_MIX_METRIC, OPCODE_MODIFIER_MIX_METRIC)


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

# What each warp state means, for findings and reports (Nsight Compute's Warp State descriptions,
# shortened).
STALL_MEANINGS: dict[str, str] = {
    "long_scoreboard": "waiting for global or local memory (L1TEX) results",
    "short_scoreboard": "waiting for shared memory or MUFU results",
    "barrier": "waiting at __syncthreads / a block barrier",
    "membar": "waiting on a memory barrier",
    "mio_throttle": "the shared-memory / special-instruction queue is full",
    "lg_throttle": "the global/local memory instruction queue is full",
    "tex_throttle": "the texture pipeline queue is full",
    "math_pipe_throttle": "the math pipe it needs is busy",
    "wait": "a fixed-latency dependency",
    "dispatch_stall": "the dispatcher could not issue",
    "drain": "memory stores draining at exit",
    "no_instruction": "instruction fetch (cache miss or branch target)",
    "branch_resolving": "a branch target being computed",
    "imc_miss": "an immediate-constant cache miss",
    "sleeping": "a nanosleep or warp suspension",
    "not_selected": "eligible but another warp was picked (plenty of ready warps)",
    "selected": "issuing an instruction (not a stall)",
    "gmma": "waiting for warpgroup MMA (wgmma) results",
    "misc": "miscellaneous reasons",
}

# Waits on a result, a barrier or an instruction fetch: another resident warp could issue
# meanwhile, so more warps per scheduler would hide them.
LATENCY_STALLS = frozenset({"long_scoreboard", "short_scoreboard", "wait", "barrier", "membar", "gmma", "sleeping",
                            "no_instruction", "branch_resolving", "imc_miss", "drain"})
# A memory instruction queue is full: the memory instruction path, not latency, holds the warp.
MEMORY_QUEUE_STALLS = frozenset({"lg_throttle", "mio_throttle", "tex_throttle"})


# --- records ---------------------------------------------------------------------------------


@dataclass
class RawMetric:
    """One metric as ncu_report gives it: name, value, ncu's own unit and description."""

    name: str
    value: float | int | str | None
    unit: str = ""
    description: str = ""
    instances: dict[str, float] | None = None  # an instanced metric's value per instance (INSTANCED_METRICS)


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
    alu_pipe_pct: float | None = None
    fp64_pipe_pct: float | None = None
    xu_pipe_pct: float | None = None
    lsu_pipe_pct: float | None = None
    gmma_instructions_pct: float | None = None
    tma_pipe_pct: float | None = None
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
    shared_load_instructions: float | None = None
    shared_store_instructions: float | None = None
    shared_matrix_load_instructions: float | None = None
    local_load_sectors: float | None = None
    local_store_sectors: float | None = None
    branch_uniformity_pct: float | None = None
    threads_per_warp_instruction: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    stalls: dict[str, float] = field(default_factory=dict)  # reason -> value in stall_unit
    # SASS opcode -> warp instructions executed (ncu's sass__inst_executed_per_opcode); {} when not collected
    executed_opcodes: dict[str, float] = field(default_factory=dict)
    # global load/store opcode with its modifiers ("LDG.E.128") -> warp instructions executed; {} when not collected
    executed_global_accesses: dict[str, float] = field(default_factory=dict)
    stall_unit: str | None = None
    sources: dict[str, str] = field(default_factory=dict)  # canonical -> the ncu metric it came from

    def stall_shares(self) -> list[StallShare]:
        """Every state as a share of the total, largest first."""
        total = sum(value for value in self.stalls.values() if value > 0)
        if total <= 0:
            return []
        shares = [StallShare(reason, value, 100.0 * value / total)
                  for reason, value in self.stalls.items() if value > 0]
        return sorted(shares, key=lambda share: (-share.value, share.reason))

    def top_stalls(self, count: int = 3) -> list[StallShare]:
        return [share for share in self.stall_shares() if share.reason not in NOT_A_STALL][:count]

    @property
    def shared_bank_conflict_pct(self) -> float | None:
        """Bank conflicts as a share of shared-memory wavefronts (each conflict costs one extra wavefront)."""
        conflicts = sum_known(self.shared_load_bank_conflicts, self.shared_store_bank_conflicts)
        wavefronts = sum_known(self.shared_load_wavefronts, self.shared_store_wavefronts)
        if conflicts is None or not wavefronts:
            return None
        return 100.0 * conflicts / wavefronts

    @property
    def shared_load_wavefronts_per_request(self) -> float | None:
        """Wavefronts per shared load request (LDS + LDSM), as ncu's SharedMemoryConflicts rule counts them."""
        requests = sum_known(self.shared_load_instructions, self.shared_matrix_load_instructions)
        if self.shared_load_wavefronts is None or not requests:
            return None
        return self.shared_load_wavefronts / requests

    @property
    def shared_store_wavefronts_per_request(self) -> float | None:
        if self.shared_store_wavefronts is None or not self.shared_store_instructions:
            return None
        return self.shared_store_wavefronts / self.shared_store_instructions

    @property
    def local_memory_sectors(self) -> float | None:
        return sum_known(self.local_load_sectors, self.local_store_sectors)

    @property
    def shared_memory_per_block_bytes(self) -> float | None:
        return sum_known(self.static_shared_memory_per_block_bytes, self.dynamic_shared_memory_per_block_bytes)

    def to_dict(self) -> dict[str, Any]:
        kept = [f.name for f in fields(self)
                if f.name not in ("stalls", "sources", "stall_unit", "executed_opcodes", "executed_global_accesses")]
        data = {name: getattr(self, name) for name in kept}
        data["shared_bank_conflict_pct"] = self.shared_bank_conflict_pct
        data["shared_load_wavefronts_per_request"] = self.shared_load_wavefronts_per_request
        data["shared_store_wavefronts_per_request"] = self.shared_store_wavefronts_per_request
        data["executed_opcodes"] = dict(self.executed_opcodes)
        data["executed_global_accesses"] = dict(self.executed_global_accesses)
        data["local_memory_sectors"] = self.local_memory_sectors
        data["stall_unit"] = self.stall_unit
        data["stalls"] = [asdict(share) for share in self.stall_shares()]
        return data


CANONICAL_FIELDS: tuple[str, ...] = tuple(alias.canonical for alias in METRIC_ALIASES)


def sum_known(*values: float | None) -> float | None:
    """The sum of the values that are known; None when none is."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


# --- pure extraction: raw metrics -> canonical -----------------------------------------------

_TIME_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
               "second": 1e6, "s": 1e6}
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


def finite_number(value: Any) -> float | None:
    """A finite int or float as a float; None for anything else (strings, bools, NaN, infinity)."""
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
        number = finite_number(metric.value) if metric is not None else None
        if number is None:
            continue
        found.append((convert_unit(number, metric.unit, alias.unit), name))
        if alias.combine == "first":
            break
    if not found and alias.pattern:
        pattern = re.compile(alias.pattern)
        for name in sorted(raw):
            number = finite_number(raw[name].value) if pattern.match(name) else None
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
            number = finite_number(metric.value)
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
    opcode_mix = raw.get(OPCODE_MIX_METRIC)
    opcodes = {name: float(count) for name, count in (opcode_mix.instances or {}).items()} if opcode_mix else {}
    if opcodes:
        sources["executed_opcodes"] = OPCODE_MIX_METRIC
    accesses = global_accesses(raw.get(OPCODE_MODIFIER_MIX_METRIC))
    if accesses:
        sources["executed_global_accesses"] = OPCODE_MODIFIER_MIX_METRIC
    return KernelMetrics(**values, stalls=stalls, stall_unit=stall_unit, executed_opcodes=opcodes,
                         executed_global_accesses=accesses, sources=sources)


def global_accesses(modifier_mix: RawMetric | None) -> dict[str, float]:
    """The global loads and stores of the executed opcode mix with modifiers ("STG.E.U16" -> warp instructions)."""
    instances = (modifier_mix.instances or {}) if modifier_mix is not None else {}
    return {name: float(count) for name, count in instances.items()
            if name.split(".", 1)[0] in GLOBAL_ACCESS_OPCODES and count}


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
    opcodes, accesses = (_mean_counts([getattr(record, name) for record in records])
                         for name in ("executed_opcodes", "executed_global_accesses"))
    sources: dict[str, str] = {}
    for record in records:
        for key, value in record.sources.items():
            sources.setdefault(key, value)
    return KernelMetrics(**values, stalls=stalls, stall_unit=records[0].stall_unit, executed_opcodes=opcodes,
                         executed_global_accesses=accesses, sources=sources)


def _mean_counts(counts: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Per-launch instruction counts averaged over the launches (a launch without one counts 0)."""
    names = sorted({name for record in counts for name in record})
    return {name: sum(record.get(name, 0.0) for record in counts) / len(counts) for name in names}
