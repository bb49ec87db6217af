"""Bottleneck classification: canonical ncu metrics in, one label with its evidence out.

The original skill kept these rules in prose, looked only at DRAM for "memory" (an L1-bound
kernel read as latency-bound) and let the verdict drift from the numbers. Here the label is a
pure function of a `KernelMetrics` record, every threshold sits in `THRESHOLDS` (thresholds.py;
documented, with the same values, in profiling/NCU.md), and each finding (one rule each, in
findings.py) carries the metric values that triggered it.

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

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kernel_opt.profile.assessments import (
    MEMORY_UNITS,
    GridAssessment,
    Label,
    OccupancyAssessment,
    assess_grid,
    assess_occupancy,
    grid_text,
    memory_sol,
    occupancy_cause_text,
    percent_text,
)
from kernel_opt.profile.findings import Finding, FindingContext, secondary_findings
from kernel_opt.profile.guides import guide_link
from kernel_opt.profile.ncu.metrics import KernelMetrics, StallShare
from kernel_opt.profile.thresholds import threshold


@dataclass
class Suggestion:
    """A strategy from a guide to read next, and why it applies."""

    guide: str  # the backend whose guide it is: "cuda", "triton"
    strategy: str  # the strategy name (a heading in the guide)
    link: str  # path from the skill root, with anchor
    why: str


@dataclass
class Classification:
    """One kernel's label, the assessments and evidence behind it, and its secondary findings."""

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
    label, reason, balanced = _decide_label(memory, sm, limiter, units, occupancy, grid)
    context = FindingContext(metrics, label, memory, limiter, sm, balanced, occupancy, grid, stalls)
    return Classification(label, reason, grid.small_grid, memory, sm, limiter, balanced, occupancy, grid, stalls,
                          evidence, secondary_findings(context))


def _decide_label(
    memory: float | None,
    sm: float | None,
    limiter: str | None,
    units: Mapping[str, float],
    occupancy: OccupancyAssessment,
    grid: GridAssessment,
) -> tuple[Label, str, bool]:
    """(label, reason, balanced) from the SOL values, in the order of decisions the module docstring gives."""
    memory_value, sm_value = memory or 0.0, sm or 0.0
    margin = threshold("balance_points")
    if max(memory_value, sm_value) < threshold("latency_line_pct"):
        label, reason = _latency_label(memory, sm, occupancy, grid)
        return label, reason, False
    if memory_value - sm_value >= margin:
        units_text = ", ".join(f"{unit} {value:.1f}%" for unit, value in units.items())
        reason = (f"memory throughput {percent_text(memory)} ({units_text}) leads SM throughput {percent_text(sm)} by "
                  f"{memory_value - sm_value:.1f} points; the busiest memory unit is {limiter or 'not reported'}")
        return "memory_bound", reason, False
    if sm_value - memory_value >= margin:
        reason = (f"SM throughput {percent_text(sm)} leads memory throughput {percent_text(memory)} by "
                  f"{sm_value - memory_value:.1f} points")
        return "compute_bound", reason, False
    label: Label = "memory_bound" if memory_value >= sm_value else "compute_bound"
    reason = (f"memory {percent_text(memory)} and SM {percent_text(sm)} throughput are within {margin:g} points "
              f"(balanced); labelled by the higher one, {label}")
    return label, reason, True


def _latency_label(
    memory: float | None, sm: float | None, occupancy: OccupancyAssessment, grid: GridAssessment
) -> tuple[Label, str]:
    """Nothing near its peak: a grid too small to fill the GPU, else low occupancy, else stalled warps."""
    both = (f"SM {percent_text(sm)} and memory {percent_text(memory)} throughput are both below the "
            f"{threshold('latency_line_pct'):g}% latency line")
    if grid.small_grid:
        return "latency_bound", (f"{both}, and the grid ({grid_text(grid)}) cannot fill the GPU: too little "
                                 "parallel work")
    if occupancy.low:
        return "occupancy_bound", (f"{both}, and achieved occupancy {percent_text(occupancy.achieved_pct)} is below "
                                   f"{threshold('low_occupancy_pct'):g}% ({occupancy_cause_text(occupancy)})")
    occupancy_text = percent_text(occupancy.achieved_pct) if occupancy.achieved_pct is not None else "not collected"
    return "latency_bound", f"{both}, with achieved occupancy {occupancy_text}: warps are stalled, not starved"


# --- where to read next ----------------------------------------------------------------------

MAX_SUGGESTIONS_PER_GUIDE = 4


def suggest(classification: Classification, metrics: KernelMetrics, backends: Sequence[str] | None = None,
            compute_capability: str | None = None) -> list[Suggestion]:
    """The guide sections to read next: specific evidence first, then the label's defaults.

    Each backend (by name; None: every registered backend with a guide) names its strategies
    (kernel_opt.backends: `default_strategies`, `specific_strategies`).
    """
    from kernel_opt.backends import registry

    suggestions: list[Suggestion] = []
    label = classification.label
    if label is None:
        return suggestions
    chosen = registry.backends() if backends is None else [registry.get(name) for name in backends]
    for backend in chosen:
        if backend.guide is None:
            continue
        picked: list[tuple[str, str]] = []

        def add(name: str, why: str, picked: list[tuple[str, str]] = picked) -> None:
            if name not in [item[0] for item in picked]:
                picked.append((name, why))

        if classification.small_grid:  # an idle GPU comes first: no per-SM tuning fixes missing blocks
            for name in backend.default_strategies["small_grid"]:
                add(name, "small_grid: the grid cannot fill the GPU")
        for name, why in backend.specific_strategies(classification, metrics, compute_capability):
            add(name, why)
        for name in backend.default_strategies[label]:
            add(name, f"a {label} strategy")
        for name, why in picked[:MAX_SUGGESTIONS_PER_GUIDE]:
            suggestions.append(Suggestion(backend.name, name, guide_link(backend.name, name), why))
    return suggestions


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
            "no kernel in the report carries SpeedOfLight metrics (SM and memory throughput), so none can be "
            "classified",
            hint="profile with ncu_profile.py (its targeted sections include SpeedOfLight)",
        )
    dominant = max(labelled, key=lambda verdict: verdict.share_pct)
    weights = [verdict.share_pct for verdict in verdicts]
    summary: dict[str, float | None] = {}
    for name in WEIGHTED_FIELDS:
        pairs = [(weight, _field_value(verdict, name)) for weight, verdict in zip(weights, verdicts, strict=True)]
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
    for key, label in (("bottleneck", "bottleneck label"), ("top_stall", "top stall"),
                       ("memory_limiter", "busiest memory unit")):
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
