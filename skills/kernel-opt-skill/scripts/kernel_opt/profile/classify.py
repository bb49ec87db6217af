"""Bottleneck classification: canonical ncu metrics in, one label with its evidence out.

The original skill kept these rules in prose, looked only at DRAM for "memory" (an L1-bound
kernel read as latency-bound) and let the verdict drift from the numbers. Here the label is a
pure function of a `KernelMetrics` record, every threshold sits in `THRESHOLDS` (documented,
with the same values, in profiling/NCU.md), and each finding carries the metric values that
triggered it.

Order of decisions, following Nsight Compute's SpeedOfLight bottleneck rule:
1. memory SOL = the busiest of DRAM, L2 and L1/shared (and ncu's own compute-memory
   throughput); SM SOL = sm__throughput.
2. Both below the latency line: nothing is near its peak, so latency limits the kernel. If the
   grid cannot fill the GPU, that is the cause (latency_bound, small_grid). Else, if achieved
   occupancy is low, occupancy_bound (with the limiter); else latency_bound.
3. Otherwise the higher of the two, when it leads by the balance margin; within the margin the
   kernel is balanced and gets the higher one's label, with a `balanced` finding.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from kernel_opt.profile.ncu.metrics import ALIASES_BY_CANONICAL, KernelMetrics, StallShare

Label = Literal["memory_bound", "compute_bound", "latency_bound", "occupancy_bound"]
LABELS: tuple[str, ...] = ("memory_bound", "compute_bound", "latency_bound", "occupancy_bound")


@dataclass(frozen=True)
class Threshold:
    value: float
    unit: str
    meaning: str
    origin: str


# Every number the classifier compares against, in one place. profiling/NCU.md repeats this
# table (a test keeps the two equal). "Nsight Compute" origins quote its rule messages.
THRESHOLDS: dict[str, Threshold] = {
    "high_throughput_pct": Threshold(
        80.0, "%", "a unit at or above this share of its peak is saturated: only less work on it helps",
        "Nsight Compute SpeedOfLight rule: 'utilizing greater than 80.0% of the available compute or memory "
        "performance'"),
    "latency_line_pct": Threshold(
        60.0, "%", "SM and memory throughput both below this: latency, not throughput, limits the kernel",
        "Nsight Compute SpeedOfLight rule: 'below 60.0% of peak typically indicate latency issues'"),
    "balance_points": Threshold(
        10.0, "points", "memory and SM throughput closer than this are balanced (label: the higher one)",
        "Nsight Compute's balanced compute/memory case; the 10-point margin is this project's reading of it"),
    "low_occupancy_pct": Threshold(
        50.0, "%", "achieved occupancy below this, in a latency-limited kernel that fills the GPU: occupancy_bound",
        "project choice: under half the warp slots leaves each scheduler at most 8 warps (sm_80/sm_90) to hide "
        "latency; ncu has no absolute line"),
    "occupancy_gap_points": Threshold(
        10.0, "points", "achieved occupancy this far below theoretical: imbalance, tail effects or too few blocks",
        "project choice, the same margin as the balance rule"),
    "full_wave": Threshold(
        1.0, "waves", "fewer waves per SM than this (or fewer blocks than SMs): the grid cannot fill the GPU",
        "Nsight Compute LaunchStats rule: 'grid is too small to fill the available resources on this device'"),
    "uncoalesced_sectors_per_request": Threshold(
        16.0, "sectors/request", "more 32-byte sectors per global request than this: accesses are scattered "
        "(coalesced ones need 4 for 4-byte and 16 for 16-byte accesses per thread)",
        "memory model: a warp's 32 coalesced 16-byte accesses touch 16 sectors"),
    "bank_conflict_pct": Threshold(
        10.0, "% of wavefronts", "shared-memory bank conflicts above this share of shared wavefronts",
        "project choice"),
    "divergent_threads_per_instruction": Threshold(
        24.0, "threads of 32", "fewer active threads per warp instruction than this: divergence or partial warps",
        "project choice: a quarter of each warp idle"),
    "low_branch_uniformity_pct": Threshold(
        90.0, "%", "fewer uniform branches than this: divergent branches",
        "project choice"),
    "tensor_pipe_idle_pct": Threshold(
        10.0, "%", "a compute-bound kernel whose tensor pipe is below this does its math on the FMA/ALU pipes",
        "project choice"),
    "short_kernel_us": Threshold(
        5.0, "us", "kernels shorter than this are dominated by launch overhead",
        "project choice: a few microseconds is the order of a kernel launch"),
}


def threshold(name: str) -> float:
    return THRESHOLDS[name].value


# What each warp state means, for findings (Nsight Compute's Warp State descriptions, shortened).
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
class Finding:
    """One observation worth acting on, with the values that triggered it."""

    key: str
    text: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class OccupancyAssessment:
    achieved_pct: float | None
    theoretical_pct: float | None
    limiters: list[str]  # what caps theoretical occupancy ("registers", "shared memory", ...); [] at 100%
    blocks_per_sm_limits: dict[str, float | None]
    low: bool  # achieved below low_occupancy_pct
    gap: bool  # achieved well below theoretical


@dataclass
class GridAssessment:
    small_grid: bool
    grid_size_blocks: float | None
    sm_count: float | None
    waves_per_sm: float | None


@dataclass
class Suggestion:
    """A strategy from a guide to read next, and why it applies."""

    guide: str  # "cuda" or "triton"
    strategy: str  # the strategy name (a heading in the guide)
    link: str  # path from the skill root, with anchor
    why: str


@dataclass
class Classification:
    label: Label | None  # None only when the report lacks the SpeedOfLight metrics
    reason: str
    small_grid: bool
    memory_sol_pct: float | None
    sm_sol_pct: float | None
    memory_limiter: str | None  # "DRAM", "L2" or "L1/shared"
    balanced: bool
    occupancy: OccupancyAssessment
    grid: GridAssessment
    top_stalls: list[StallShare]
    evidence: dict[str, Any]
    findings: list[Finding]

    @property
    def top_stall(self) -> str | None:
        return self.top_stalls[0].reason if self.top_stalls else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["top_stall"] = self.top_stall
        return data


# --- the parts -------------------------------------------------------------------------------


def memory_sol(metrics: KernelMetrics) -> tuple[float | None, str | None, dict[str, float]]:
    """(memory SOL %, the limiting unit, each unit's %): the busiest of DRAM, L2 and L1/shared.

    ncu's compute-memory throughput is itself a maximum over memory sub-units; it is included so
    that a unit this table does not name still counts, but the limiter is named from the units.
    Every DRAM byte also passes through the L2, so a streaming kernel shows the L2 a few points
    busier than DRAM (93% against 91% on an H200, tests/fixtures/ncu/memory_streaming): DRAM is
    named the limiter whenever it is within `balance_points` of the busiest unit, because only
    fewer DRAM bytes would help. The L2 is the limiter only when it runs well ahead of DRAM
    (traffic that hits in the L2).
    """
    units = {unit: getattr(metrics, name) for unit, name in MEMORY_UNITS if getattr(metrics, name) is not None}
    candidates = list(units.values()) + ([metrics.memory_throughput_pct] if metrics.memory_throughput_pct is not None else [])
    if not candidates:
        return None, None, units
    limiter = max(units, key=units.get) if units else None
    dram = units.get("DRAM")
    if limiter == "L2" and dram is not None and units["L2"] - dram < THRESHOLDS["balance_points"].value:
        limiter = "DRAM"
    return max(candidates), limiter, units


def assess_occupancy(metrics: KernelMetrics) -> OccupancyAssessment:
    limits = {label: getattr(metrics, name) for name, label in OCCUPANCY_LIMITERS}
    known = {label: value for label, value in limits.items() if value is not None}
    theoretical = metrics.theoretical_occupancy_pct
    limiters: list[str] = []
    if known and (theoretical is None or theoretical < 99.5):
        smallest = min(known.values())
        limiters = [label for label, value in known.items() if value == smallest]
    achieved = metrics.achieved_occupancy_pct
    low = achieved is not None and achieved < threshold("low_occupancy_pct")
    gap = achieved is not None and theoretical is not None and theoretical - achieved >= threshold("occupancy_gap_points")
    return OccupancyAssessment(achieved, theoretical, limiters, limits, low, gap)


def assess_grid(metrics: KernelMetrics) -> GridAssessment:
    waves, grid, sms = metrics.waves_per_sm, metrics.grid_size_blocks, metrics.sm_count
    small = (waves is not None and waves < threshold("full_wave")) or (
        grid is not None and sms is not None and grid < sms
    )
    return GridAssessment(bool(small), grid, sms, waves)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _describe_limiters(occupancy: OccupancyAssessment) -> str:
    if not occupancy.limiters:
        return "no per-SM limit below the hardware maximum"
    parts = [f"{label} ({occupancy.blocks_per_sm_limits[label]:g} blocks/SM)" for label in occupancy.limiters]
    return " and ".join(parts)


# --- classification --------------------------------------------------------------------------


def classify(metrics: KernelMetrics) -> Classification:
    """The primary label, small_grid, secondary findings and their evidence for one kernel."""
    memory, limiter, units = memory_sol(metrics)
    sm = metrics.sm_throughput_pct
    occupancy = assess_occupancy(metrics)
    grid = assess_grid(metrics)
    stalls = metrics.top_stalls(3)
    evidence: dict[str, Any] = {
        "memory_sol_pct": memory,
        "memory_limiter": limiter,
        **{f"{name}": getattr(metrics, name) for _, name in MEMORY_UNITS},
        "sm_sol_pct": sm,
        "achieved_occupancy_pct": occupancy.achieved_pct,
        "theoretical_occupancy_pct": occupancy.theoretical_pct,
        "waves_per_sm": grid.waves_per_sm,
        "grid_size_blocks": grid.grid_size_blocks,
        "sm_count": grid.sm_count,
    }
    if memory is None and sm is None:
        return Classification(
            None, "no SpeedOfLight metrics (SM and memory throughput) in this report: profile with the targeted "
            "sections", grid.small_grid, None, None, None, False, occupancy, grid, stalls, evidence, [],
        )
    memory_value, sm_value = memory or 0.0, sm or 0.0
    line, margin = threshold("latency_line_pct"), threshold("balance_points")
    balanced = False
    units_text = ", ".join(f"{unit} {value:.1f}%" for unit, value in units.items())
    if max(memory_value, sm_value) < line:
        both = f"SM {_pct(sm)} and memory {_pct(memory)} throughput are both below the {line:g}% latency line"
        if grid.small_grid:
            label: Label = "latency_bound"
            reason = f"{both}, and the grid ({_grid_text(grid)}) cannot fill the GPU: too little parallel work"
        elif occupancy.low:
            label = "occupancy_bound"
            reason = (f"{both}, and achieved occupancy {_pct(occupancy.achieved_pct)} is below "
                      f"{threshold('low_occupancy_pct'):g}% ({_occupancy_cause(occupancy)})")
        else:
            label = "latency_bound"
            occupancy_text = _pct(occupancy.achieved_pct) if occupancy.achieved_pct is not None else "not collected"
            reason = f"{both}, with achieved occupancy {occupancy_text}: warps are stalled, not starved"
    elif memory_value - sm_value >= margin:
        label = "memory_bound"
        reason = (f"memory throughput {_pct(memory)} ({units_text}) leads SM throughput {_pct(sm)} by "
                  f"{memory_value - sm_value:.1f} points; the busiest memory unit is {limiter or 'not reported'}")
    elif sm_value - memory_value >= margin:
        label = "compute_bound"
        reason = f"SM throughput {_pct(sm)} leads memory throughput {_pct(memory)} by {sm_value - memory_value:.1f} points"
    else:
        balanced = True
        label = "memory_bound" if memory_value >= sm_value else "compute_bound"
        reason = (f"memory {_pct(memory)} and SM {_pct(sm)} throughput are within {margin:g} points (balanced); "
                  f"labelled by the higher one, {label}")
    findings = secondary_findings(metrics, label, memory, limiter, sm, balanced, occupancy, grid, stalls)
    return Classification(label, reason, grid.small_grid, memory, sm, limiter, balanced, occupancy, grid, stalls,
                          evidence, findings)


def _grid_text(grid: GridAssessment) -> str:
    parts = []
    if grid.grid_size_blocks is not None:
        parts.append(f"{grid.grid_size_blocks:g} blocks")
    if grid.sm_count is not None:
        parts.append(f"{grid.sm_count:g} SMs")
    if grid.waves_per_sm is not None:
        parts.append(f"{grid.waves_per_sm:.2f} waves")
    return ", ".join(parts) or "size not reported"


def _occupancy_cause(occupancy: OccupancyAssessment) -> str:
    causes = []
    if occupancy.limiters:
        causes.append(f"theoretical {_pct(occupancy.theoretical_pct)}, limited by {_describe_limiters(occupancy)}")
    if occupancy.gap:
        causes.append(f"achieved is {occupancy.theoretical_pct - occupancy.achieved_pct:.1f} points below theoretical: "
                      "imbalanced blocks or a partial last wave")
    return "; ".join(causes) or f"theoretical {_pct(occupancy.theoretical_pct)}"


def secondary_findings(
    metrics: KernelMetrics,
    label: Label,
    memory: float | None,
    limiter: str | None,
    sm: float | None,
    balanced: bool,
    occupancy: OccupancyAssessment,
    grid: GridAssessment,
    stalls: Sequence[StallShare],
) -> list[Finding]:
    """Everything else worth knowing, each with the values that triggered it."""
    findings: list[Finding] = []
    high = threshold("high_throughput_pct")
    if memory is not None and memory >= high:
        findings.append(Finding("memory_at_peak", f"{limiter or 'memory'} runs at {memory:.1f}% of its peak "
                                f"(>= {high:g}%): only moving fewer bytes through it helps",
                                {"memory_sol_pct": memory, "memory_limiter": limiter}))
    if sm is not None and sm >= high:
        findings.append(Finding("compute_at_peak", f"the SM runs at {sm:.1f}% of its peak (>= {high:g}%): only fewer "
                                "or cheaper instructions help", {"sm_sol_pct": sm}))
    if balanced:
        findings.append(Finding("balanced", "compute and memory are balanced: a lasting speed-up must reduce both",
                                {"memory_sol_pct": memory, "sm_sol_pct": sm}))
    if grid.small_grid:
        findings.append(Finding("small_grid", f"the grid cannot fill the GPU ({_grid_text(grid)}): give it more "
                                "blocks (split the work) or make each block do more in a persistent loop",
                                {"grid_size_blocks": grid.grid_size_blocks, "sm_count": grid.sm_count,
                                 "waves_per_sm": grid.waves_per_sm}))
    if label != "occupancy_bound" and not grid.small_grid and occupancy.low:
        findings.append(Finding("low_occupancy", f"achieved occupancy {_pct(occupancy.achieved_pct)} is below "
                                f"{threshold('low_occupancy_pct'):g}% ({_occupancy_cause(occupancy)})",
                                {"achieved_occupancy_pct": occupancy.achieved_pct,
                                 "theoretical_occupancy_pct": occupancy.theoretical_pct,
                                 "limiters": occupancy.limiters}))
    elif label != "occupancy_bound" and not grid.small_grid and occupancy.gap:
        findings.append(Finding("occupancy_gap", f"achieved occupancy {_pct(occupancy.achieved_pct)} is far below "
                                f"theoretical {_pct(occupancy.theoretical_pct)}: imbalanced blocks or a partial last wave",
                                {"achieved_occupancy_pct": occupancy.achieved_pct,
                                 "theoretical_occupancy_pct": occupancy.theoretical_pct}))
    if stalls:
        top = stalls[0]
        findings.append(Finding("top_stall", f"warps spend {top.share_pct:.0f}% of the cycles between issues on "
                                f"{top.reason} ({STALL_MEANINGS.get(top.reason, 'see the Warp State section')})",
                                {share.reason: round(share.share_pct, 1) for share in stalls}))
    scattered = threshold("uncoalesced_sectors_per_request")
    for kind in ("load", "store"):
        value = getattr(metrics, f"global_{kind}_sectors_per_request")
        if value is not None and value > scattered:
            findings.append(Finding(f"uncoalesced_{kind}s", f"global {kind}s touch {value:.1f} sectors per request "
                                    f"(coalesced: 4 to {scattered:g}): neighbouring threads access scattered addresses",
                                    {f"global_{kind}_sectors_per_request": value}))
    conflicts = metrics.shared_bank_conflict_pct
    if conflicts is not None and conflicts >= threshold("bank_conflict_pct"):
        findings.append(Finding("bank_conflicts", f"{conflicts:.1f}% of shared-memory wavefronts are bank conflicts",
                                {"shared_bank_conflict_pct": conflicts,
                                 "shared_load_bank_conflicts": metrics.shared_load_bank_conflicts,
                                 "shared_store_bank_conflicts": metrics.shared_store_bank_conflicts}))
    local = metrics.local_memory_sectors
    if local:
        findings.append(Finding("local_memory", f"{local:g} local-memory sectors: register spills or a local array "
                                "indexed at run time (check static_analysis.py for LDL/STL and spill bytes)",
                                {"local_load_sectors": metrics.local_load_sectors,
                                 "local_store_sectors": metrics.local_store_sectors}))
    threads = metrics.threads_per_warp_instruction
    uniform = metrics.branch_uniformity_pct
    if (threads is not None and threads < threshold("divergent_threads_per_instruction")) or (
        uniform is not None and uniform < threshold("low_branch_uniformity_pct")
    ):
        findings.append(Finding("divergence", f"warps run with {threads if threads is not None else 'n/a'} of 32 threads "
                                f"active per instruction on average; branch uniformity {_pct(uniform)}",
                                {"threads_per_warp_instruction": threads, "branch_uniformity_pct": uniform}))
    issue = metrics.issue_slots_busy_pct
    if issue is not None and issue >= high:
        findings.append(Finding("issue_bound", f"issue slots are {issue:.1f}% busy: the instruction count itself is "
                                "the limit", {"issue_slots_busy_pct": issue}))
    tensor = metrics.tensor_pipe_pct
    if label == "compute_bound" and tensor is not None and tensor < threshold("tensor_pipe_idle_pct"):
        findings.append(Finding("tensor_pipe_idle", f"the tensor pipe is {tensor:.1f}% busy: the math runs on the "
                                "FMA/ALU pipes; a matmul-like kernel should use tensor cores",
                                {"tensor_pipe_pct": tensor, "fma_pipe_pct": metrics.fma_pipe_pct}))
    if tensor is not None and tensor >= high:
        findings.append(Finding("tensor_pipe_at_peak", f"the tensor pipe is {tensor:.1f}% busy", {"tensor_pipe_pct": tensor}))
    if metrics.duration_us is not None and metrics.duration_us < threshold("short_kernel_us"):
        findings.append(Finding("short_kernel", f"the kernel runs {metrics.duration_us:.2f} us: launch overhead is of "
                                "the same order", {"duration_us": metrics.duration_us}))
    return findings


# --- where to read next ----------------------------------------------------------------------

SKILL_ROOT = Path(__file__).resolve().parents[3]
GUIDES: dict[str, str] = {"cuda": "experience/cuda/CUDA.md", "triton": "experience/triton/TRITON.md"}


def github_anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped (not _ or -), spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@lru_cache(maxsize=4)
def guide_anchors(guide: str) -> dict[str, str]:
    """Strategy or label name -> anchor, read from the guide's headings.

    A heading's key is its first `backticked` name, else its first word: "### `tma_pipeline`
    (sm_90)" -> tma_pipeline, "## memory_bound" -> memory_bound. Reading the real headings keeps
    the links right when a heading's tail changes.
    """
    path = SKILL_ROOT / GUIDES[guide]
    anchors: dict[str, str] = {}
    if not path.is_file():
        return anchors
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^#{2,4}\s+(.*)$", line)
        if not match:
            continue
        heading = match.group(1)
        named = re.search(r"`([A-Za-z0-9_]+)`", heading)
        key = named.group(1) if named else heading.split()[0]
        anchors.setdefault(key, github_anchor(heading))
    return anchors


def guide_link(guide: str, name: str) -> str:
    anchor = guide_anchors(guide).get(name, name)
    return f"{GUIDES[guide]}#{anchor}"


# Strategy names per guide and label, in the order to try them when nothing more specific applies.
DEFAULT_STRATEGIES: dict[str, dict[str, tuple[str, ...]]] = {
    "cuda": {
        "memory_bound": ("coalesce_access", "vector_loads", "single_pass", "l2_reuse", "smem_tiling"),
        "compute_bound": ("tensor_cores", "wgmma", "fewer_instructions", "fast_math"),
        "latency_bound": ("more_bytes_in_flight", "cp_async_pipeline", "more_ilp"),
        "occupancy_bound": ("register_limit", "smem_limit", "block_shape", "load_balance"),
        "small_grid": ("split_work", "persistent_kernel"),
    },
    "triton": {
        "memory_bound": ("block_size", "vector_hints", "single_pass", "cache_hints"),
        "compute_bound": ("dot_precision", "tile_shape", "autotune", "fast_math"),
        "latency_bound": ("pipeline_stages", "more_work_per_program"),
        "occupancy_bound": ("num_warps_stages_tradeoff",),
        "small_grid": ("persistent_kernel", "split_k"),
    },
}

# Stall reason -> CUDA strategies that address it (CUDA.md names the stall in each heading).
STALL_STRATEGIES: dict[str, tuple[str, ...]] = {
    "long_scoreboard": ("more_bytes_in_flight", "cp_async_pipeline"),
    "barrier": ("warp_shuffle_reduce",),
    "short_scoreboard": ("warp_shuffle_reduce", "smem_bank_conflicts"),
    "mio_throttle": ("smem_bank_conflicts",),
    "lg_throttle": ("vector_loads",),
    "wait": ("more_ilp",),
    "math_pipe_throttle": ("more_ilp",),
}

OCCUPANCY_STRATEGIES: dict[str, str] = {
    "registers": "register_limit",
    "shared memory": "smem_limit",
    "block size": "block_shape",
    "blocks per SM": "block_shape",
}

MAX_SUGGESTIONS_PER_GUIDE = 4


def suggest(classification: Classification, metrics: KernelMetrics, backends: Sequence[str] = ("cuda", "triton"),
            compute_capability: str | None = None) -> list[Suggestion]:
    """The guide sections to read next: specific evidence first, then the label's defaults."""
    suggestions: list[Suggestion] = []
    label = classification.label
    if label is None:
        return suggestions
    keys = {finding.key for finding in classification.findings}
    for guide in backends:
        picked: list[tuple[str, str]] = []

        def add(name: str, why: str) -> None:
            if name not in [item[0] for item in picked]:
                picked.append((name, why))

        if classification.small_grid:  # an idle GPU comes first: no per-SM tuning fixes missing blocks
            for name in DEFAULT_STRATEGIES[guide]["small_grid"]:
                add(name, "small_grid: the grid cannot fill the GPU")
        if guide == "cuda":
            _cuda_specific(classification, metrics, keys, compute_capability, add)
        else:
            _triton_specific(classification, metrics, keys, add)
        for name in DEFAULT_STRATEGIES[guide][label]:
            add(name, f"a {label} strategy")
        for name, why in picked[:MAX_SUGGESTIONS_PER_GUIDE]:
            suggestions.append(Suggestion(guide, name, guide_link(guide, name), why))
    return suggestions


def _cuda_specific(classification, metrics, keys, compute_capability, add) -> None:
    label = classification.label
    if "uncoalesced_loads" in keys or "uncoalesced_stores" in keys:
        add("coalesce_access", "global accesses are scattered (sectors per request above the coalesced range)")
    if label == "memory_bound":
        unit = classification.memory_limiter
        if unit == "L1/shared":
            if "bank_conflicts" in keys:
                add("smem_bank_conflicts", "L1/shared is the busiest unit and shared memory has bank conflicts")
            add("smem_tiling", "L1/shared is the busiest unit: reuse data from shared memory or registers")
        elif unit == "L2":
            add("l2_reuse", "L2 is the busiest unit")
            add("smem_tiling", "L2 is the busiest unit: fewer repeated loads of the same data")
        elif "memory_at_peak" in keys:
            add("single_pass", "DRAM is at its peak: only fewer bytes help")
            add("fuse_kernels", "DRAM is at its peak: keep intermediates on chip")
        else:
            add("vector_loads", "DRAM is busiest but below its peak: wider accesses, more bytes per instruction")
    elif label == "compute_bound":
        if "tensor_pipe_idle" in keys:
            add("tensor_cores", "compute-bound with the tensor pipe idle")
            if compute_capability == "9.0":
                add("wgmma", "sm_90: warpgroup MMA is Hopper's fast tensor path")
        elif compute_capability == "9.0" and (metrics.tensor_pipe_pct or 0) > 0:
            add("wgmma", "tensor cores in use on sm_90: check the SASS shows HGMMA, not HMMA")
        if "issue_bound" in keys:
            add("fewer_instructions", "issue slots are saturated")
        if "divergence" in keys:
            add("branch_uniformity", "warps diverge")
    elif label == "latency_bound":
        for share in classification.top_stalls[:2]:
            for name in STALL_STRATEGIES.get(share.reason, ()):
                add(name, f"top stall {share.reason} ({share.share_pct:.0f}% of cycles)")
        if "short_kernel" in keys:
            add("launch_overhead", "the kernel is only a few microseconds long")
    elif label == "occupancy_bound":
        for limiter in classification.occupancy.limiters:
            add(OCCUPANCY_STRATEGIES[limiter], f"theoretical occupancy is limited by {limiter}")
        if classification.occupancy.gap:
            add("load_balance", "achieved occupancy is far below theoretical")
    if "local_memory" in keys:
        add("register_limit", "local-memory traffic: spills or a run-time-indexed local array")


def _triton_specific(classification, metrics, keys, add) -> None:
    label = classification.label
    if label == "memory_bound" and "memory_at_peak" in keys:
        unit = classification.memory_limiter or "memory"
        if unit == "DRAM":
            add("single_pass", "DRAM is at its peak: only fewer bytes help")
        else:  # L1/shared or L2 saturated: the same data is fetched again and again
            add("block_size", f"{unit} is at its peak: larger tiles reuse each loaded value more")
    if label == "latency_bound":
        top = classification.top_stall
        if top in ("long_scoreboard", "barrier"):
            add("pipeline_stages", f"top stall {top}: more loads in flight")
        if "short_kernel" in keys:
            add("launch_overhead", "the kernel is only a few microseconds long")


# --- several kernels: the solution's verdict -------------------------------------------------


@dataclass
class KernelVerdict:
    name: str
    launches: int
    launch_configuration: str
    total_duration_us: float | None
    share_pct: float  # of the profiled time (equal shares when durations are missing)
    classification: Classification
    metrics: KernelMetrics


@dataclass
class SolutionVerdict:
    """The whole solution: the dominant kernel's label, duration-weighted metrics, every kernel's verdict."""

    bottleneck: Label
    small_grid: bool
    top_stall: str | None
    memory_limiter: str | None
    dominant_kernel: str
    dominant_share_pct: float
    metrics: dict[str, float | None]  # duration-weighted means; duration_us and dram_bytes are sums
    kernels: list[KernelVerdict]


# Fields averaged with duration weights in the summary.
WEIGHTED_FIELDS: tuple[str, ...] = (
    "memory_sol_pct", "sm_sol_pct", "achieved_occupancy_pct", "theoretical_occupancy_pct", "dram_throughput_pct",
    "l2_throughput_pct", "l1_throughput_pct", "issue_slots_busy_pct", "tensor_pipe_pct",
)


def summarize(kernels: Sequence[tuple[str, int, str, float | None, KernelMetrics]]) -> SolutionVerdict:
    """Classify every kernel and combine: (name, launches, configuration, total duration us, mean metrics) each.

    The label is the one of the kernel with the largest share of the profiled time, because a
    duration-weighted average of a memory-bound and a compute-bound kernel describes neither.
    """
    from kernel_opt.core.errors import UsageError

    if not kernels:
        raise UsageError("the report holds no kernel to classify")
    durations = [duration for _, _, _, duration, _ in kernels]
    total = sum(d for d in durations if d is not None)
    verdicts: list[KernelVerdict] = []
    for name, launches, configuration, duration, metrics in kernels:
        share = 100.0 * duration / total if total > 0 and duration is not None else 100.0 / len(kernels)
        verdicts.append(KernelVerdict(name, launches, configuration, duration, share, classify(metrics), metrics))
    labelled = [verdict for verdict in verdicts if verdict.classification.label is not None]
    if not labelled:
        raise UsageError(
            "no kernel in the report carries SpeedOfLight metrics (SM and memory throughput), so none can be classified",
            hint="profile with ncu_profile.py (its targeted sections include SpeedOfLight)",
        )
    dominant = max(labelled, key=lambda verdict: verdict.share_pct)
    weights = [verdict.share_pct for verdict in verdicts]
    summary: dict[str, float | None] = {}
    for name in WEIGHTED_FIELDS:
        pairs = [(weight, _field_value(verdict, name)) for weight, verdict in zip(weights, verdicts)]
        pairs = [(weight, value) for weight, value in pairs if value is not None]
        weight_sum = sum(weight for weight, _ in pairs)
        summary[name] = sum(weight * value for weight, value in pairs) / weight_sum if weight_sum > 0 else None
    summary["duration_us"] = total if total > 0 else None
    known_bytes = [verdict for verdict in verdicts
                   if verdict.metrics.dram_read_bytes is not None or verdict.metrics.dram_write_bytes is not None]
    summary["dram_bytes"] = sum(
        ((v.metrics.dram_read_bytes or 0.0) + (v.metrics.dram_write_bytes or 0.0)) * v.launches for v in known_bytes
    ) if known_bytes else None
    return SolutionVerdict(
        bottleneck=dominant.classification.label,
        small_grid=dominant.classification.small_grid,
        top_stall=dominant.classification.top_stall,
        memory_limiter=dominant.classification.memory_limiter,
        dominant_kernel=dominant.name,
        dominant_share_pct=dominant.share_pct,
        metrics=summary,
        kernels=verdicts,
    )


def _field_value(verdict: KernelVerdict, name: str) -> float | None:
    if name == "memory_sol_pct":
        return verdict.classification.memory_sol_pct
    if name == "sm_sol_pct":
        return verdict.classification.sm_sol_pct
    return getattr(verdict.metrics, name)


# --- what moved since a baseline -------------------------------------------------------------


@dataclass
class MetricChange:
    name: str
    label: str
    unit: str
    before: Any
    after: Any
    change: float | None  # after - before, for numbers
    moved: bool  # a numeric change of at least 1 unit (points, us or %) or a changed label


COMPARED_METRICS: tuple[tuple[str, str, str], ...] = (
    ("duration_us", "summed kernel duration (ncu, clocks not locked)", "us"),
    ("memory_sol_pct", "memory SOL (busiest memory unit)", "%"),
    ("sm_sol_pct", "SM SOL", "%"),
    ("achieved_occupancy_pct", "achieved occupancy", "%"),
    ("dram_throughput_pct", "DRAM throughput", "%"),
    ("l2_throughput_pct", "L2 throughput", "%"),
    ("l1_throughput_pct", "L1/shared throughput", "%"),
    ("tensor_pipe_pct", "tensor pipe busy", "%"),
    ("dram_bytes", "DRAM bytes moved", "bytes"),
)


def compare_with_baseline(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[MetricChange]:
    """What moved between two ncu_summary.json payloads (the baseline's and this one's)."""
    changes: list[MetricChange] = []
    for key, label in (("bottleneck", "bottleneck label"), ("top_stall", "top stall"), ("memory_limiter", "busiest memory unit")):
        old, new = before.get(key), after.get(key)
        changes.append(MetricChange(key, label, "", old, new, None, old != new))
    before_metrics, after_metrics = before.get("metrics") or {}, after.get("metrics") or {}
    for key, label, unit in COMPARED_METRICS:
        old, new = before_metrics.get(key), after_metrics.get(key)
        if old is None and new is None:
            continue
        difference = new - old if isinstance(old, (int, float)) and isinstance(new, (int, float)) else None
        if key == "dram_bytes":
            moved = difference is not None and old and abs(difference) >= 0.01 * abs(old)
        else:
            moved = difference is not None and abs(difference) >= 1.0
        changes.append(MetricChange(key, label, unit, old, new, difference, bool(moved)))
    return changes


def metric_label(canonical: str) -> str:
    alias = ALIASES_BY_CANONICAL.get(canonical)
    return alias.label if alias else canonical.replace("_", " ")
