"""Bottleneck classification: canonical ncu metrics in, one label with its evidence out.

The original skill kept these rules in prose, looked only at DRAM for "memory" (an L1-bound
kernel read as latency-bound) and let the verdict drift from the numbers. Here the label is a
pure function of a `KernelMetrics` record (and, when there is one, the kernel's SASS opcode
counts), every threshold sits in `THRESHOLDS` (thresholds.py; documented, with the same values,
in profiling/NCU.md), and each finding (one rule each, in findings.py) carries the metric
values that triggered it.

Order of decisions, following Nsight Compute's SpeedOfLight, HighPipeUtilization,
SharedMemoryConflicts and IssueSlotUtilization rules:
1. memory SOL = the busiest of DRAM, L2 and L1/shared (and ncu's own compute-memory
   throughput); L1/shared is left out when its traffic is tensor-core operand staging (tensor
   pipe busy, bank conflicts below bank_conflict_pct). SM SOL = sm__throughput.
2. A math pipe (tensor, FMA, ALU, FP64, XU) at its roof: compute_bound on that pipe, unless
   DRAM or L2 runs ahead of it by the balance margin.
3. Low achieved occupancy in an asynchronous pipeline (wgmma, TMA, cp.async, warp
   specialization) is by design: overlap_bound when its warps wait while nothing runs near its
   peak (overlap_conditions).
4. Both SOLs below the latency line: nothing is near its peak, so latency limits the kernel.
   A grid that cannot fill the GPU is the cause (latency_bound, small_grid). Low occupancy with
   starved schedulers and latency stalls: occupancy_bound (with the limiter). Anything else:
   latency_bound.
5. Otherwise the higher of the two, when it leads by the balance margin; within the margin the
   kernel is balanced and gets the higher one's label, with a `balanced` finding.
Evidence a decision needed but the report lacked is listed in `unverified`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernel_opt.profile.assessments import (
    MEMORY_UNITS,
    GlobalAccessAssessment,
    GridAssessment,
    Label,
    OccupancyAssessment,
    PipeAssessment,
    SharedMemoryAssessment,
    assess_global_access,
    assess_grid,
    assess_occupancy,
    assess_pipes,
    assess_shared_memory,
    grid_text,
    memory_sol,
    occupancy_cause_text,
    percent_text,
)
from kernel_opt.profile.design import KernelDesign, assess_design, base_kernel_name
from kernel_opt.profile.findings import Finding, FindingContext, secondary_findings
from kernel_opt.profile.ncu.metrics import KernelMetrics
from kernel_opt.profile.ncu.stalls import LATENCY_STALLS, MEMORY_QUEUE_STALLS, StallShare
from kernel_opt.profile.thresholds import threshold


@dataclass
class Classification:
    """One kernel's label, the assessments and evidence behind it, and its secondary findings."""

    label: Label | None  # None only when the report lacks the SpeedOfLight metrics
    reason: str
    small_grid: bool
    memory_sol_pct: float | None  # as counted for the verdict (L1/shared left out when it is operand staging)
    sm_sol_pct: float | None
    memory_limiter: str | None  # "DRAM", "L2" or "L1/shared": the unit memory_sol_pct comes from
    balanced: bool
    occupancy: OccupancyAssessment
    grid: GridAssessment
    top_stalls: list[StallShare]
    evidence: dict[str, Any]
    findings: list[Finding]
    pipes: PipeAssessment
    shared: SharedMemoryAssessment
    design: KernelDesign
    access: GlobalAccessAssessment  # global loads and stores against what coalescing needs
    unverified: list[str] = field(default_factory=list)  # missing evidence that could change the label

    @property
    def top_stall(self) -> str | None:
        return self.top_stalls[0].reason if self.top_stalls else None


@dataclass(frozen=True)
class LabelInputs:
    """What the label is decided from: the SOLs and every assessment of one kernel."""

    memory_sol_pct: float | None
    sm_sol_pct: float | None
    memory_limiter: str | None
    memory_units: Mapping[str, float]
    occupancy: OccupancyAssessment
    grid: GridAssessment
    pipes: PipeAssessment
    shared: SharedMemoryAssessment
    design: KernelDesign
    top_stalls: Sequence[StallShare]


# --- classification --------------------------------------------------------------------------


def classify(metrics: KernelMetrics, static_opcodes: Mapping[str, float] | None = None) -> Classification:
    """The primary label, small_grid, secondary findings and their evidence for one kernel.

    `static_opcodes`: base-opcode counts of this kernel from a static analysis, used when the
    report holds no executed opcode mix.
    """
    design = assess_design(metrics, static_opcodes)
    shared = assess_shared_memory(metrics, design.tensor_cores)
    memory, limiter, units = memory_sol(metrics, shared.operand_staging)
    inputs = LabelInputs(memory, metrics.sm_throughput_pct, limiter, units, assess_occupancy(metrics),
                         assess_grid(metrics), assess_pipes(metrics), shared, design, metrics.top_stalls(3))
    evidence = _evidence(inputs, metrics)
    access = assess_global_access(metrics)
    common = dict(small_grid=inputs.grid.small_grid, occupancy=inputs.occupancy, grid=inputs.grid,
                  top_stalls=list(inputs.top_stalls), evidence=evidence, pipes=inputs.pipes, shared=shared,
                  design=design, access=access)
    if memory is None and inputs.sm_sol_pct is None:
        return Classification(None, "no SpeedOfLight metrics (SM and memory throughput) in this report: profile with "
                              "the targeted sections", memory_sol_pct=None, sm_sol_pct=None, memory_limiter=None,
                              balanced=False, findings=[], **common)
    label, reason, balanced = _decide_label(inputs)
    context = FindingContext(metrics, label, memory, limiter, inputs.sm_sol_pct, balanced, inputs.occupancy,
                             inputs.grid, inputs.top_stalls, inputs.pipes, shared, design, access)
    return Classification(label, reason, memory_sol_pct=memory, sm_sol_pct=inputs.sm_sol_pct, memory_limiter=limiter,
                          balanced=balanced, findings=secondary_findings(context),
                          unverified=unverified_evidence(label, inputs), **common)


def _evidence(inputs: LabelInputs, metrics: KernelMetrics) -> dict[str, Any]:
    return {
        "memory_sol_pct": inputs.memory_sol_pct,
        "memory_limiter": inputs.memory_limiter,
        **{f"{name}": getattr(metrics, name) for _, name in MEMORY_UNITS},
        "l1_operand_staging": inputs.shared.operand_staging,
        "sm_sol_pct": inputs.sm_sol_pct,
        "busiest_pipe": inputs.pipes.busiest,
        "busiest_pipe_pct": inputs.pipes.busiest_pct,
        "achieved_occupancy_pct": inputs.occupancy.achieved_pct,
        "theoretical_occupancy_pct": inputs.occupancy.theoretical_pct,
        "waves_per_sm": inputs.grid.waves_per_sm,
        "grid_size_blocks": inputs.grid.grid_size_blocks,
        "sm_count": inputs.grid.sm_count,
    }


def _decide_label(inputs: LabelInputs) -> tuple[Label, str, bool]:
    """(label, reason, balanced), in the order of decisions the module docstring gives."""
    memory, sm, limiter = inputs.memory_sol_pct, inputs.sm_sol_pct, inputs.memory_limiter
    memory_value, sm_value = memory or 0.0, sm or 0.0
    margin = threshold("balance_points")
    if inputs.pipes.at_roof:
        return _roof_label(inputs, memory_value, margin)
    if inputs.design.asynchronous and overlap_conditions(inputs):
        return "overlap_bound", _overlap_reason(inputs), False
    if max(memory_value, sm_value) < threshold("latency_line_pct"):
        label, reason = _latency_label(inputs)
        return label, reason, False
    if memory_value - sm_value >= margin:
        units_text = ", ".join(f"{unit} {value:.1f}%" for unit, value in inputs.memory_units.items())
        staging = " (L1/shared not counted: operand staging)" if inputs.shared.operand_staging else ""
        reason = (f"memory throughput {percent_text(memory)} ({units_text}){staging} leads SM throughput "
                  f"{percent_text(sm)} by {memory_value - sm_value:.1f} points; the busiest memory unit is "
                  f"{limiter or 'not reported'}")
        return "memory_bound", reason, False
    if sm_value - memory_value >= margin:
        reason = (f"SM throughput {percent_text(sm)} leads memory throughput {percent_text(memory)} by "
                  f"{sm_value - memory_value:.1f} points")
        return "compute_bound", reason, False
    label: Label = "memory_bound" if memory_value >= sm_value else "compute_bound"
    reason = (f"memory {percent_text(memory)} and SM {percent_text(sm)} throughput are within {margin:g} points "
              f"(balanced); labelled by the higher one, {label}")
    return label, reason, True


def _roof_label(inputs: LabelInputs, memory_value: float, margin: float) -> tuple[Label, str, bool]:
    """A math pipe at its roof: compute_bound on it, unless DRAM or L2 runs well ahead of it."""
    pipes = inputs.pipes
    pipe, pipe_value = pipes.busiest, pipes.busiest_pct
    roof = f"the {pipe} pipe runs at {pipe_value:.1f}% of its peak (>= {threshold('pipe_roof_pct'):g}%, its roof)"
    if memory_value - pipe_value >= margin:
        return "memory_bound", (f"{roof}, but {inputs.memory_limiter} runs {memory_value - pipe_value:.1f} points "
                                f"higher at {memory_value:.1f}%"), False
    l1 = inputs.memory_units.get("L1/shared")
    l1_text = f"; L1/shared at {l1:.1f}% does not change that" if l1 is not None and l1 > memory_value else ""
    reason = (f"{roof}: compute_bound on the {pipe} pipe; memory {percent_text(inputs.memory_sol_pct)} "
              f"({inputs.memory_limiter or 'not reported'}){l1_text}")
    return "compute_bound", reason, abs(memory_value - pipe_value) < margin


def overlap_conditions(inputs: LabelInputs) -> bool:
    """Everything overlap_bound needs besides an asynchronous design: low occupancy and warps that wait.

    Below the latency line any top stall but a full memory queue will do; above it nothing may be
    near its peak (no pipe at its roof, memory and SM below high_throughput_pct), the top stall
    must be a wait (barrier, wait, gmma, long_scoreboard, ...), and busy L1/shared must not be a
    bank-conflict problem (that keeps its memory verdict).
    """
    occupancy, top = inputs.occupancy, (inputs.top_stalls[0] if inputs.top_stalls else None)
    if not occupancy.low or inputs.grid.small_grid or inputs.pipes.at_roof:
        return False
    memory, sm = inputs.memory_sol_pct or 0.0, inputs.sm_sol_pct or 0.0
    if max(memory, sm) < threshold("latency_line_pct"):
        return top is None or top.reason not in MEMORY_QUEUE_STALLS
    high = threshold("high_throughput_pct")
    conflicts_own_it = inputs.memory_limiter == "L1/shared" and inputs.shared.conflicted
    return (memory < high and sm < high and not conflicts_own_it and top is not None
            and top.reason in LATENCY_STALLS)


def _overlap_reason(inputs: LabelInputs) -> str:
    occupancy = inputs.occupancy
    stalls = ", ".join(f"{share.reason} {share.share_pct:.0f}%" for share in inputs.top_stalls) or "not collected"
    return (f"achieved occupancy {percent_text(occupancy.achieved_pct)} is below {threshold('low_occupancy_pct'):g}% "
            f"by design of an asynchronous pipeline ({', '.join(inputs.design.async_features)}) while nothing runs "
            f"near its peak (SM {percent_text(inputs.sm_sol_pct)}, memory {percent_text(inputs.memory_sol_pct)}) and "
            f"its warps wait ({stalls}): its copies, MMAs and other math do not overlap enough; more resident warps "
            "are not the lever")


def _latency_label(inputs: LabelInputs) -> tuple[Label, str]:
    """Nothing near its peak (and no asynchronous pipeline by design): a small grid, starved warps, or stalls."""
    occupancy, design = inputs.occupancy, inputs.design
    both = (f"SM {percent_text(inputs.sm_sol_pct)} and memory {percent_text(inputs.memory_sol_pct)} throughput are "
            f"both below the {threshold('latency_line_pct'):g}% latency line")
    if inputs.grid.small_grid:
        return "latency_bound", (f"{both}, and the grid ({grid_text(inputs.grid)}) cannot fill the GPU: too little "
                                 "parallel work")
    if not occupancy.low:
        occupancy_text = percent_text(occupancy.achieved_pct) if occupancy.achieved_pct is not None else "not collected"
        return "latency_bound", f"{both}, with achieved occupancy {occupancy_text}: warps are stalled, not starved"
    top = inputs.top_stalls[0] if inputs.top_stalls else None
    low = f"achieved occupancy {percent_text(occupancy.achieved_pct)} is below {threshold('low_occupancy_pct'):g}%"
    stalls = ", ".join(f"{share.reason} {share.share_pct:.0f}%" for share in inputs.top_stalls) or "not collected"
    hideable = top is None or top.reason in LATENCY_STALLS
    if not design.asynchronous and occupancy.starved is not False and hideable:
        return "occupancy_bound", (f"{both}, and {low} ({occupancy_cause_text(occupancy)}); {_starving_text(occupancy)}"
                                   f", top stalls {stalls}: latency more warps would hide")
    why = (f"the top stall {top.reason} is a full memory queue, not latency" if top is not None and not hideable
           else f"the schedulers are not starved ({_starving_text(occupancy)})")
    return "latency_bound", f"{both}; {low}, but {why}: more warps would not help, the stalls would"


def _starving_text(occupancy: OccupancyAssessment) -> str:
    eligible, issue = occupancy.eligible_warps_per_scheduler, occupancy.issue_slots_busy_pct
    if eligible is None and issue is None:
        return "eligible warps not collected"
    eligible_text = "n/a" if eligible is None else f"{eligible:.2f}"
    return f"{eligible_text} eligible warps per scheduler, issue slots {percent_text(issue)} busy"


def unverified_evidence(label: Label, inputs: LabelInputs) -> list[str]:
    """The checks this label depended on that the report could not make, each with what it could change."""
    notes: list[str] = []
    occupancy, design = inputs.occupancy, inputs.design
    if inputs.pipes.busiest is None:
        notes.append("per-pipe compute roof: no pipe utilisation metrics (a pipe at its roof makes it compute_bound)")
    if not design.asynchronous and design.unchecked and overlap_conditions(inputs):
        notes.append(f"asynchronous pipeline: {', '.join(design.unchecked)} not visible without the executed opcode "
                     "mix or a static analysis (either could make it overlap_bound)")
    if label == "occupancy_bound" and occupancy.starved is None:
        notes.append("starved schedulers: eligible warps and issue slots not collected")
    if label == "occupancy_bound" and not inputs.top_stalls:
        notes.append("latency stalls: warp states not collected")
    if inputs.memory_limiter == "L1/shared" and label == "memory_bound" and inputs.shared.unchecked:
        notes.append(f"L1/shared operand staging: {'; '.join(inputs.shared.unchecked)}")
    return notes


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


def summarize(kernels: Sequence[tuple[str, int, str, float | None, KernelMetrics]],
              static_opcodes: Mapping[str, Mapping[str, float]] | None = None) -> SolutionVerdict:
    """Classify every kernel and combine: (name, launches, configuration, total duration us, mean metrics) each.

    The label is the one of the kernel with the largest share of the profiled time, because a
    duration-weighted average of a memory-bound and a compute-bound kernel describes neither.
    `static_opcodes`: a static analysis's opcode counts by bare kernel name (design.load_static_opcodes).
    """
    from kernel_opt.core.errors import UsageError

    if not kernels:
        raise UsageError("the report holds no kernel to classify")
    durations = [duration for _, _, _, duration, _ in kernels]
    total = sum(d for d in durations if d is not None)
    verdicts: list[KernelVerdict] = []
    for name, launches, configuration, duration, metrics in kernels:
        share = 100.0 * duration / total if total > 0 and duration is not None else 100.0 / len(kernels)
        static = (static_opcodes or {}).get(base_kernel_name(name))
        verdicts.append(KernelVerdict(name, launches, configuration, duration, share, classify(metrics, static),
                                      metrics))
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
