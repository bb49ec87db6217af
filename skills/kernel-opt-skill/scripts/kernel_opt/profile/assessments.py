"""The bottleneck labels, and the parts a label and its findings are decided from.

Memory SOL, the compute pipes and their roof, shared memory (operand staging or bank
conflicts), occupancy and whether warps starve the schedulers, the grid: each is a pure
function of a `KernelMetrics` record. The classifier (classify.py) turns them into a label and
the finding rules (findings.py) into findings; the `*_text` helpers word them the same way in
both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kernel_opt.profile.ncu.metrics import KernelMetrics, sum_known
from kernel_opt.profile.thresholds import threshold

Label = Literal["memory_bound", "compute_bound", "latency_bound", "occupancy_bound", "overlap_bound"]
LABELS: tuple[str, ...] = ("memory_bound", "compute_bound", "latency_bound", "occupancy_bound", "overlap_bound")

# The math pipes whose roof makes a kernel compute_bound (the pipes of ncu's HighPipeUtilization
# rule, its composite "shared" pipe left out). LSU is read beside them but is the load/store
# path: at its roof the kernel issues too many memory instructions, a memory verdict on L1/shared.
MATH_PIPES: tuple[tuple[str, str], ...] = (
    ("tensor", "tensor_pipe_pct"),
    ("FMA", "fma_pipe_pct"),
    ("ALU", "alu_pipe_pct"),
    ("FP64", "fp64_pipe_pct"),
    ("XU", "xu_pipe_pct"),
)
PIPES: tuple[tuple[str, str], ...] = MATH_PIPES + (("LSU", "lsu_pipe_pct"),)

# The memory units whose throughput makes up memory SOL, and the metric of each.
MEMORY_UNITS: tuple[tuple[str, str], ...] = (
    ("DRAM", "dram_throughput_pct"),
    ("L2", "l2_throughput_pct"),
    ("L1/shared", "l1_throughput_pct"),
)

# Occupancy limiters: the per-SM block limit fields ncu reports, and what to call each.
OCCUPANCY_LIMITERS: tuple[tuple[str, str], ...] = (
    ("block_limit_registers_blocks", "registers"),
    ("block_limit_shared_memory_blocks", "shared memory"),
    ("block_limit_warps_blocks", "block size"),
    ("block_limit_sm_blocks", "blocks per SM"),
)


@dataclass
class OccupancyAssessment:
    """Occupancy as the classifier sees it: achieved, theoretical, and what limits it."""

    achieved_pct: float | None
    theoretical_pct: float | None
    limiters: list[str]  # what caps theoretical occupancy ("registers", "shared memory", ...); [] at 100%
    blocks_per_sm_limits: dict[str, float | None]
    low: bool  # achieved below low_occupancy_pct
    gap: bool  # achieved well below theoretical
    eligible_warps_per_scheduler: float | None = None
    issue_slots_busy_pct: float | None = None
    # few eligible warps and idle issue slots: the schedulers wait for a ready warp; None when not collected
    starved: bool | None = None


@dataclass
class GlobalAccess:
    """One direction of a kernel's global accesses through L1 (loads or stores) against what coalescing needs.

    The ideal is one request's bytes in 32-byte sectors: 32 threads times the mean width of the
    executed instructions (LDG.E.U16: 2 bytes, LDG.E: 4, LDG.E.128 and LDGSTS.E.BYPASS.128: 16),
    so 2 sectors for 2-byte and 16 for 16-byte accesses; None without the executed opcode mix.
    """

    kind: str  # "load" or "store"
    sectors: float | None
    requests: float | None
    sectors_per_request: float | None
    ideal_sectors_per_request: float | None
    async_copy_pct: float | None  # cp.async (LDGSTS) share of the executed global load instructions
    uncoalesced: bool  # >= uncoalesced_ideal_ratio x the ideal (without widths: > uncoalesced_sectors_per_request)
    split_copies: bool  # mostly cp.async, a little above the ideal: copies split by their shared-memory destination

    @property
    def excess_sectors(self) -> float | None:
        """Sectors beyond what the same requests need when coalesced; None without the counts or the ideal."""
        if self.sectors is None or self.requests is None or self.ideal_sectors_per_request is None:
            return None
        return max(self.sectors - self.ideal_sectors_per_request * self.requests, 0.0)


@dataclass
class GlobalAccessAssessment:
    """Global loads and stores, and how much of their traffic scattered accesses waste."""

    loads: GlobalAccess
    stores: GlobalAccess
    wasted_pct: float | None  # the uncoalesced directions' excess sectors, % of all global load and store sectors

    @property
    def uncoalesced_lead(self) -> bool:
        """Scattered accesses waste most of the global traffic: coalescing them comes before anything else."""
        return self.wasted_pct is not None and self.wasted_pct >= threshold("uncoalesced_lead_pct")


@dataclass
class GridAssessment:
    """Whether the grid fills the GPU, with the numbers that decide it."""

    small_grid: bool
    grid_size_blocks: float | None
    sm_count: float | None
    waves_per_sm: float | None


@dataclass
class PipeAssessment:
    """Every pipe's utilisation, and the busiest math pipe measured against its own roof."""

    utilisation_pct: dict[str, float]  # pipe -> % of its peak, for every pipe the report has (LSU too)
    busiest: str | None  # the busiest math pipe ("tensor", "FMA", ...); None without pipe metrics
    busiest_pct: float | None
    at_roof: bool  # busiest_pct >= pipe_roof_pct


@dataclass
class SharedMemoryAssessment:
    """Shared memory read properly: bank conflicts (ncu's SharedMemoryConflicts counts) or operand staging."""

    load_bank_conflicts: float | None
    store_bank_conflicts: float | None
    load_wavefronts: float | None
    store_wavefronts: float | None
    load_wavefronts_per_request: float | None
    store_wavefronts_per_request: float | None
    bank_conflict_pct: float | None  # conflicts as a share of all shared wavefronts; None when not collected
    conflicted: bool  # bank_conflict_pct at or above bank_conflict_pct: a real shared-memory problem
    operand_staging: bool  # the kernel feeds tensor cores and its shared traffic is conflict-free
    unchecked: list[str]  # what could not be checked, so a memory verdict on L1/shared may be operand staging


def assess_pipes(metrics: KernelMetrics) -> PipeAssessment:
    """The busiest math pipe against its roof (ncu's HighPipeUtilization reading); LSU is listed, never the roof."""
    utilisation = {pipe: getattr(metrics, name) for pipe, name in PIPES if getattr(metrics, name) is not None}
    math = {pipe: utilisation[pipe] for pipe, _ in MATH_PIPES if pipe in utilisation}
    if not math:
        return PipeAssessment(utilisation, None, None, False)
    busiest = max(math, key=math.get)
    return PipeAssessment(utilisation, busiest, math[busiest], math[busiest] >= threshold("pipe_roof_pct"))


def assess_shared_memory(metrics: KernelMetrics, sass_tensor_cores: bool | None = None) -> SharedMemoryAssessment:
    """Bank conflicts and wavefronts per request, and whether busy L1/shared is only operand staging.

    Staging: the tensor pipe is busy (at least tensor_pipe_idle_pct; without the pipe metric,
    tensor instructions in the SASS, `sass_tensor_cores`), shared-memory bank conflicts stay
    below bank_conflict_pct of the wavefronts and the LSU pipe is below its roof. wgmma reads
    its operands from shared memory and ldmatrix loads fragments from it, so such a kernel keeps
    L1/shared busy by design; only conflicts (or an LSU pipe at its roof) make that traffic a
    memory problem.
    """
    tensor = metrics.tensor_pipe_pct
    tensor_cores = tensor >= threshold("tensor_pipe_idle_pct") if tensor is not None else sass_tensor_cores
    load, store = metrics.shared_load_bank_conflicts, metrics.shared_store_bank_conflicts
    load_wavefronts, store_wavefronts = metrics.shared_load_wavefronts, metrics.shared_store_wavefronts
    conflicts, wavefronts = sum_known(load, store), sum_known(load_wavefronts, store_wavefronts)
    share = None if conflicts is None or wavefronts is None else (100.0 * conflicts / wavefronts if wavefronts else 0.0)
    conflicted = share is not None and share >= threshold("bank_conflict_pct")
    lsu_at_roof = metrics.lsu_pipe_pct is not None and metrics.lsu_pipe_pct >= threshold("pipe_roof_pct")
    unchecked = []
    if tensor_cores is None:
        unchecked.append("tensor-core use (no tensor pipe metric and no SASS)")
    if share is None:
        unchecked.append("shared-memory bank conflicts (no conflict and wavefront counts)")
    staging = bool(tensor_cores) and share is not None and not conflicted and not lsu_at_roof
    return SharedMemoryAssessment(load, store, load_wavefronts, store_wavefronts,
                                  metrics.shared_load_wavefronts_per_request,
                                  metrics.shared_store_wavefronts_per_request, share, conflicted, staging, unchecked)


def memory_sol(metrics: KernelMetrics, operand_staging: bool = False
               ) -> tuple[float | None, str | None, dict[str, float]]:
    """(memory SOL %, the limiting unit, each unit's %): the busiest of DRAM, L2 and L1/shared.

    ncu's compute-memory throughput is itself a maximum over memory sub-units; it is included so
    that a unit this table does not name still counts, but the limiter is named from the units.
    With `operand_staging` (SharedMemoryAssessment) L1/shared, and ncu's compute-memory
    throughput that includes it, do not count: the SOL is the busier of DRAM and L2, while the
    returned units still show L1/shared.
    Every DRAM byte also passes through the L2, so a streaming kernel shows the L2 a few points
    busier than DRAM (93% against 91% on an H200, tests/fixtures/ncu/memory_streaming): DRAM is
    named the limiter whenever it is within `balance_points` of the busiest unit, because only
    fewer DRAM bytes would help. The L2 is the limiter only when it runs well ahead of DRAM
    (traffic that hits in the L2).
    """
    units = {unit: getattr(metrics, name) for unit, name in MEMORY_UNITS if getattr(metrics, name) is not None}
    counted = {unit: value for unit, value in units.items() if not (operand_staging and unit == "L1/shared")}
    overall = metrics.memory_throughput_pct if not operand_staging else None
    candidates = list(counted.values()) + ([overall] if overall is not None else [])
    if not candidates:
        return None, None, units
    limiter = max(counted, key=counted.get) if counted else None
    dram = counted.get("DRAM")
    if limiter == "L2" and dram is not None and counted["L2"] - dram < threshold("balance_points"):
        limiter = "DRAM"
    return max(candidates), limiter, units


# Bytes per thread a global access's SASS modifier names; one without a width modifier moves 4 (LDG.E, STG.E).
ACCESS_WIDTH_BYTES: dict[str, int] = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16, "256": 32}


def access_width_bytes(opcode: str) -> int:
    """Bytes per thread of one global load or store, from its modifiers ("LDG.E.128.CONSTANT" -> 16)."""
    widths = [ACCESS_WIDTH_BYTES[modifier] for modifier in opcode.split(".")[1:] if modifier in ACCESS_WIDTH_BYTES]
    return widths[-1] if widths else 4


def _global_access(metrics: KernelMetrics, kind: str) -> GlobalAccess:
    prefixes = ("LDG", "LDGSTS") if kind == "load" else ("STG",)
    executed = {opcode: count for opcode, count in metrics.executed_global_accesses.items()
                if opcode.split(".", 1)[0] in prefixes}
    total = sum(executed.values())
    # 32 threads x bytes each / 32-byte sectors: the mean width in bytes is the ideal sector count
    ideal = sum(access_width_bytes(opcode) * count for opcode, count in executed.items()) / total if total else None
    copies = sum(count for opcode, count in executed.items() if opcode.startswith("LDGSTS."))
    async_pct = 100.0 * copies / total if total and kind == "load" else None
    value = getattr(metrics, f"global_{kind}_sectors_per_request")
    if value is None:
        uncoalesced = split = False
    elif ideal is None:
        uncoalesced, split = value > threshold("uncoalesced_sectors_per_request"), False
    else:
        uncoalesced = value >= threshold("uncoalesced_ideal_ratio") * ideal
        split = (not uncoalesced and async_pct is not None and async_pct > threshold("async_copy_majority_pct")
                 and value > ideal + threshold("misaligned_extra_sectors"))
    return GlobalAccess(kind, getattr(metrics, f"global_{kind}_sectors"), getattr(metrics, f"global_{kind}_requests"),
                        value, ideal, async_pct, uncoalesced, split)


def assess_global_access(metrics: KernelMetrics) -> GlobalAccessAssessment:
    """Loads and stores against the sectors their widths need, and the share of the traffic scattering wastes.

    ncu counts a cp.async (LDGSTS) sector once per L1 wavefront, and a copy whose shared-memory
    rows are padded off 128-byte lines splits into more wavefronts: 18-19 sectors per 16-byte
    request in the demo's padded CUDA GEMM v4-v6, 16 in its swizzled v7-v8, with the same
    contiguous global rows. That is `split_copies`, not scattered addresses.
    """
    loads, stores = _global_access(metrics, "load"), _global_access(metrics, "store")
    total = sum_known(loads.sectors, stores.sectors)
    excess = [side.excess_sectors for side in (loads, stores) if side.uncoalesced]
    wasted = None
    if total and all(value is not None for value in excess):
        wasted = 100.0 * sum(excess) / total
    return GlobalAccessAssessment(loads, stores, wasted)


def assess_occupancy(metrics: KernelMetrics) -> OccupancyAssessment:
    """Achieved and theoretical occupancy, what caps the theoretical one, and whether either is a problem."""
    limits = {label: getattr(metrics, name) for name, label in OCCUPANCY_LIMITERS}
    known = {label: value for label, value in limits.items() if value is not None}
    theoretical = metrics.theoretical_occupancy_pct
    limiters: list[str] = []
    if known and (theoretical is None or theoretical < 99.5):
        smallest = min(known.values())
        limiters = [label for label, value in known.items() if value == smallest]
    achieved, line = metrics.achieved_occupancy_pct, threshold("low_occupancy_pct")
    gap = (achieved is not None and theoretical is not None
           and theoretical - achieved >= threshold("occupancy_gap_points"))
    # A kernel built for at least the line that achieves what it was built for has the warps the
    # line asks for: 49.8% of a theoretical 50% (demo CUDA GEMM v1) is the line, not below it.
    at_line_by_design = theoretical is not None and theoretical >= line and not gap
    low = achieved is not None and achieved < line and not at_line_by_design
    eligible, issue = metrics.eligible_warps_per_scheduler, metrics.issue_slots_busy_pct
    starved = None
    if eligible is not None or issue is not None:
        starved = ((eligible is None or eligible < threshold("few_eligible_warps"))
                   and (issue is None or issue < threshold("issue_active_target_pct")))
    return OccupancyAssessment(achieved, theoretical, limiters, limits, low, gap, eligible, issue, starved)


def assess_grid(metrics: KernelMetrics) -> GridAssessment:
    """Whether the grid can fill the GPU: at least one full wave, and at least one block per SM."""
    waves, grid, sms = metrics.waves_per_sm, metrics.grid_size_blocks, metrics.sm_count
    small = (waves is not None and waves < threshold("full_wave")) or (
        grid is not None and sms is not None and grid < sms
    )
    return GridAssessment(bool(small), grid, sms, waves)


def percent_text(value: float | None) -> str:
    """'42.0%', or 'n/a' for a metric the report lacks."""
    return "n/a" if value is None else f"{value:.1f}%"


def limiters_text(occupancy: OccupancyAssessment) -> str:
    """What caps theoretical occupancy, with each limit in blocks per SM."""
    if not occupancy.limiters:
        return "no per-SM limit below the hardware maximum"
    parts = [f"{label} ({occupancy.blocks_per_sm_limits[label]:g} blocks/SM)" for label in occupancy.limiters]
    return " and ".join(parts)


def grid_text(grid: GridAssessment) -> str:
    """The grid's size in blocks, SMs and waves, as far as the report tells."""
    parts = []
    if grid.grid_size_blocks is not None:
        parts.append(f"{grid.grid_size_blocks:g} blocks")
    if grid.sm_count is not None:
        parts.append(f"{grid.sm_count:g} SMs")
    if grid.waves_per_sm is not None:
        parts.append(f"{grid.waves_per_sm:.2f} waves")
    return ", ".join(parts) or "size not reported"


def occupancy_cause_text(occupancy: OccupancyAssessment) -> str:
    """Why occupancy is low: the per-SM limiter, a gap between achieved and theoretical, or both."""
    causes = []
    if occupancy.limiters:
        causes.append(f"theoretical {percent_text(occupancy.theoretical_pct)}, "
                      f"limited by {limiters_text(occupancy)}")
    if occupancy.gap:
        causes.append(f"achieved is {occupancy.theoretical_pct - occupancy.achieved_pct:.1f} points below theoretical: "
                      "imbalanced blocks or a partial last wave")
    return "; ".join(causes) or f"theoretical {percent_text(occupancy.theoretical_pct)}"
