"""Secondary findings: everything besides the label worth knowing about a kernel, one small rule each.

A rule is a function of a `FindingContext` (the kernel's metrics and the classifier's
assessments of them) that returns a `Finding`, with the values that triggered it, or None.
`@finding_rule` registers it in `FINDING_RULES`, and `secondary_findings` runs the rules in the
order they are registered here, which is the order findings appear in the reports. To add a
finding: one decorated function below, named after its key, with its threshold in thresholds.py
(and profiling/NCU.md). One finding reads the whole solution against the problem rather than one
kernel: `traffic_finding` (the DRAM bytes of every kernel against the problem's counted minimum),
added by profile/ncu_summary.py after the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kernel_opt.profile.assessments import (
    GlobalAccess,
    GlobalAccessAssessment,
    GridAssessment,
    Label,
    OccupancyAssessment,
    PipeAssessment,
    SharedMemoryAssessment,
    assess_global_access,
    grid_text,
    occupancy_cause_text,
    percent_text,
)
from kernel_opt.profile.design import KernelDesign
from kernel_opt.profile.ncu.metrics import KernelMetrics, sum_known
from kernel_opt.profile.ncu.stalls import STALL_MEANINGS, StallShare
from kernel_opt.profile.problem_traits import ProblemTraits
from kernel_opt.profile.thresholds import threshold


@dataclass
class Finding:
    """One observation worth acting on, with the values that triggered it."""

    key: str
    text: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FindingContext:
    """What every finding rule reads: one kernel's metrics, its label, and the assessments behind the label."""

    metrics: KernelMetrics
    label: Label
    memory_sol_pct: float | None
    memory_limiter: str | None  # "DRAM", "L2" or "L1/shared"
    sm_sol_pct: float | None
    balanced: bool
    occupancy: OccupancyAssessment
    grid: GridAssessment
    top_stalls: Sequence[StallShare]
    pipes: PipeAssessment
    shared: SharedMemoryAssessment
    design: KernelDesign
    access: GlobalAccessAssessment | None = None  # None: assessed from `metrics` when a rule asks

    @property
    def global_access(self) -> GlobalAccessAssessment:
        return self.access if self.access is not None else assess_global_access(self.metrics)


FindingRule = Callable[[FindingContext], "Finding | None"]

# Every rule, in the order its findings are reported.
FINDING_RULES: list[FindingRule] = []


def finding_rule(rule: FindingRule) -> FindingRule:
    """Register `rule` (after every rule defined before it)."""
    FINDING_RULES.append(rule)
    return rule


def secondary_findings(context: FindingContext) -> list[Finding]:
    """Everything else worth knowing, each with the values that triggered it: every rule that fires, in order."""
    return [finding for rule in FINDING_RULES if (finding := rule(context)) is not None]


# --- the rules, in report order --------------------------------------------------------------


@finding_rule
def memory_at_peak(context: FindingContext) -> Finding | None:
    memory, high = context.memory_sol_pct, threshold("high_throughput_pct")
    if memory is None or memory < high:
        return None
    limiter = context.memory_limiter
    return Finding("memory_at_peak", f"{limiter or 'memory'} runs at {memory:.1f}% of its peak "
                   f"(>= {high:g}%): only moving fewer bytes through it helps",
                   {"memory_sol_pct": memory, "memory_limiter": limiter})


@finding_rule
def compute_at_peak(context: FindingContext) -> Finding | None:
    sm, high = context.sm_sol_pct, threshold("high_throughput_pct")
    if sm is None or sm < high or context.pipes.at_roof:  # pipe_at_roof names the saturated pipe
        return None
    return Finding("compute_at_peak", f"the SM runs at {sm:.1f}% of its peak (>= {high:g}%): only fewer "
                   "or cheaper instructions help", {"sm_sol_pct": sm})


# What "at the roof" means for each math pipe, and the only ways left.
PIPE_ROOF_ADVICE: dict[str, str] = {
    "tensor": "the kernel is at the tensor-core roof for this algorithm: only less work (fewer FLOPs: skip masked "
              "or all-zero blocks, a cheaper algorithm), a lower precision where the problem allows (fp8 doubles the "
              "tensor roof, TF32 for fp32 inputs), or stopping helps",
    "FMA": "FP32 arithmetic is at its roof: move matmul-like math onto the tensor cores, or do fewer or cheaper FP32 "
           "operations",
    "ALU": "integer and logic instructions are at their roof: fewer of them (index arithmetic, predicates, "
           "conversions)",
    "FP64": "double-precision arithmetic is at its roof: fewer FP64 operations, or FP32 where the problem allows",
    "XU": "transcendentals and conversions (MUFU) are at their roof: fewer of them (fold scales into exp2, a "
          "polynomial exp on the FMA pipe)",
}


@finding_rule
def pipe_at_roof(context: FindingContext) -> Finding | None:
    pipes = context.pipes
    if not pipes.at_roof:
        return None
    return Finding("pipe_at_roof", f"the {pipes.busiest} pipe runs at {pipes.busiest_pct:.1f}% of its peak "
                   f"(>= {threshold('pipe_roof_pct'):g}%): {PIPE_ROOF_ADVICE[pipes.busiest]}",
                   {"pipe": pipes.busiest, "pipe_pct": pipes.busiest_pct})


@finding_rule
def balanced(context: FindingContext) -> Finding | None:
    if not context.balanced:
        return None
    return Finding("balanced", "compute and memory are balanced: a lasting speed-up must reduce both",
                   {"memory_sol_pct": context.memory_sol_pct, "sm_sol_pct": context.sm_sol_pct})


@finding_rule
def small_grid(context: FindingContext) -> Finding | None:
    grid = context.grid
    if not grid.small_grid:
        return None
    return Finding("small_grid", f"the grid cannot fill the GPU ({grid_text(grid)}): give it more "
                   "blocks (split the work) or make each block do more in a persistent loop",
                   {"grid_size_blocks": grid.grid_size_blocks, "sm_count": grid.sm_count,
                    "waves_per_sm": grid.waves_per_sm})


def _at_a_roof(context: FindingContext) -> bool:
    """A memory unit, the SM or a math pipe runs at its peak: more resident warps cannot make it go faster."""
    high = threshold("high_throughput_pct")
    return (context.memory_sol_pct is not None and context.memory_sol_pct >= high) or (
        context.sm_sol_pct is not None and context.sm_sol_pct >= high) or context.pipes.at_roof


def _occupancy_is_secondary(context: FindingContext) -> bool:
    """Occupancy is a finding only where the label does not already explain it, a small grid does not either, and
    nothing runs at its roof (there occupancy is no lever: an elementwise kernel at the memory roof)."""
    return context.label not in ("occupancy_bound", "overlap_bound") and not context.grid.small_grid \
        and not _at_a_roof(context)


@finding_rule
def low_occupancy(context: FindingContext) -> Finding | None:
    occupancy = context.occupancy
    if not (_occupancy_is_secondary(context) and occupancy.low):
        return None
    by_design = ("; low by design of an asynchronous pipeline, so more warps are not the lever"
                 if context.design.asynchronous else "")
    return Finding("low_occupancy", f"achieved occupancy {percent_text(occupancy.achieved_pct)} is below "
                   f"{threshold('low_occupancy_pct'):g}% ({occupancy_cause_text(occupancy)}){by_design}",
                   {"achieved_occupancy_pct": occupancy.achieved_pct,
                    "theoretical_occupancy_pct": occupancy.theoretical_pct,
                    "limiters": occupancy.limiters})


@finding_rule
def occupancy_gap(context: FindingContext) -> Finding | None:
    occupancy = context.occupancy
    if not (_occupancy_is_secondary(context) and occupancy.gap) or occupancy.low:  # low_occupancy says it already
        return None
    return Finding("occupancy_gap", f"achieved occupancy {percent_text(occupancy.achieved_pct)} is far below "
                   f"theoretical {percent_text(occupancy.theoretical_pct)}: imbalanced blocks or a partial last wave",
                   {"achieved_occupancy_pct": occupancy.achieved_pct,
                    "theoretical_occupancy_pct": occupancy.theoretical_pct})


@finding_rule
def top_stall(context: FindingContext) -> Finding | None:
    if not context.top_stalls:
        return None
    top = context.top_stalls[0]
    return Finding("top_stall", f"warps spend {top.share_pct:.0f}% of the cycles between issues on "
                   f"{top.reason} ({STALL_MEANINGS.get(top.reason, 'see the Warp State section')})",
                   {share.reason: round(share.share_pct, 1) for share in context.top_stalls})


def _uncoalesced(context: FindingContext, kind: Literal["load", "store"]) -> Finding | None:
    access: GlobalAccess = getattr(context.global_access, f"{kind}s")
    value = access.sectors_per_request
    if not access.uncoalesced or value is None:
        return None
    key, evidence = f"uncoalesced_{kind}s", {f"global_{kind}_sectors_per_request": value}
    if access.ideal_sectors_per_request is None:  # no executed opcode mix: the 16-byte pattern is the line
        scattered = threshold("uncoalesced_sectors_per_request")
        return Finding(key, f"global {kind}s touch {value:.1f} sectors per request (coalesced: 4 to {scattered:g}): "
                       "neighbouring threads access scattered addresses", evidence)
    ideal, total = access.ideal_sectors_per_request, sum_known(context.metrics.global_load_sectors,
                                                               context.metrics.global_store_sectors)
    wasted = 100.0 * access.excess_sectors / total if total and access.excess_sectors is not None else None
    wasted_text = f"; {wasted:.0f}% of the kernel's global sectors are waste" if wasted is not None else ""
    return Finding(key, f"global {kind}s touch {value:.1f} sectors per request where their width needs "
                   f"{ideal:.3g} ({value / ideal:.1f}x): neighbouring threads access scattered addresses{wasted_text}",
                   {**evidence, f"ideal_{kind}_sectors_per_request": ideal, "wasted_sectors_pct": wasted})


@finding_rule
def uncoalesced_loads(context: FindingContext) -> Finding | None:
    return _uncoalesced(context, "load")


@finding_rule
def uncoalesced_stores(context: FindingContext) -> Finding | None:
    return _uncoalesced(context, "store")


@finding_rule
def split_async_copies(context: FindingContext) -> Finding | None:
    loads = context.global_access.loads
    if not loads.split_copies:
        return None
    return Finding("split_async_copies", f"cp.async copies ({loads.async_copy_pct:.0f}% of the global loads) touch "
                   f"{loads.sectors_per_request:.1f} sectors per request where {loads.ideal_sectors_per_request:.3g} "
                   "would do: the L1 splits a copy whose shared-memory rows are padded off 128-byte lines and fetches "
                   "the sectors the parts share once per part, from L2 as well; an XOR-swizzled layout keeps each "
                   "copy whole",
                   {"global_load_sectors_per_request": loads.sectors_per_request,
                    "ideal_load_sectors_per_request": loads.ideal_sectors_per_request,
                    "async_copy_pct": loads.async_copy_pct})


@finding_rule
def bank_conflicts(context: FindingContext) -> Finding | None:
    shared = context.shared
    if not shared.conflicted:
        return None
    return Finding("bank_conflicts", f"{shared.bank_conflict_pct:.1f}% of shared-memory wavefronts are bank conflicts "
                   f"(loads {_per_request(shared.load_wavefronts_per_request)}, stores "
                   f"{_per_request(shared.store_wavefronts_per_request)} wavefronts per request)",
                   {"shared_bank_conflict_pct": shared.bank_conflict_pct,
                    "shared_load_bank_conflicts": shared.load_bank_conflicts,
                    "shared_store_bank_conflicts": shared.store_bank_conflicts,
                    "shared_load_wavefronts_per_request": shared.load_wavefronts_per_request,
                    "shared_store_wavefronts_per_request": shared.store_wavefronts_per_request})


def _per_request(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


@finding_rule
def operand_staging(context: FindingContext) -> Finding | None:
    shared, l1 = context.shared, context.metrics.l1_throughput_pct
    counted = context.memory_sol_pct
    if not shared.operand_staging or l1 is None or (counted is not None and l1 <= counted):
        return None  # L1/shared is not the busiest unit: leaving it out changed nothing
    tensor = context.metrics.tensor_pipe_pct
    return Finding("operand_staging", f"L1/shared runs at {l1:.1f}% but its traffic is tensor-core operand staging "
                   f"(tensor pipe {percent_text(tensor)}, bank conflicts {shared.bank_conflict_pct:.1f}% of shared "
                   "wavefronts): not counted as a memory limit",
                   {"l1_throughput_pct": l1, "tensor_pipe_pct": tensor,
                    "shared_bank_conflict_pct": shared.bank_conflict_pct})


@finding_rule
def local_memory(context: FindingContext) -> Finding | None:
    metrics = context.metrics
    local = metrics.local_memory_sectors
    if not local:
        return None
    return Finding("local_memory", f"{local:g} local-memory sectors: register spills or a local array "
                   "indexed at run time (check static_analysis.py for LDL/STL and spill bytes)",
                   {"local_load_sectors": metrics.local_load_sectors,
                    "local_store_sectors": metrics.local_store_sectors})


@finding_rule
def divergence(context: FindingContext) -> Finding | None:
    threads, uniform = context.metrics.threads_per_warp_instruction, context.metrics.branch_uniformity_pct
    few_threads = threads is not None and threads < threshold("divergent_threads_per_instruction")
    divergent_branches = uniform is not None and uniform < threshold("low_branch_uniformity_pct")
    if not (few_threads or divergent_branches):
        return None
    return Finding("divergence", f"warps run with {threads if threads is not None else 'n/a'} of 32 threads "
                   f"active per instruction on average; branch uniformity {percent_text(uniform)}",
                   {"threads_per_warp_instruction": threads, "branch_uniformity_pct": uniform})


@finding_rule
def issue_bound(context: FindingContext) -> Finding | None:
    issue = context.metrics.issue_slots_busy_pct
    if issue is None or issue < threshold("high_throughput_pct"):
        return None
    return Finding("issue_bound", f"issue slots are {issue:.1f}% busy: the instruction count itself is "
                   "the limit", {"issue_slots_busy_pct": issue})


@finding_rule
def tensor_pipe_idle(context: FindingContext) -> Finding | None:
    tensor = context.metrics.tensor_pipe_pct
    if context.label != "compute_bound" or tensor is None or tensor >= threshold("tensor_pipe_idle_pct"):
        return None
    return Finding("tensor_pipe_idle", f"the tensor pipe is {tensor:.1f}% busy: the math runs on the "
                   "FMA/ALU pipes; a matmul-like kernel should use tensor cores",
                   {"tensor_pipe_pct": tensor, "fma_pipe_pct": context.metrics.fma_pipe_pct})


@finding_rule
def async_pipeline(context: FindingContext) -> Finding | None:
    design = context.design
    if not design.asynchronous:
        return None
    return Finding("async_pipeline", f"built as an asynchronous pipeline: {', '.join(design.async_features)} "
                   f"(from the {design.source})", {"features": list(design.async_features), "source": design.source})


@finding_rule
def short_kernel(context: FindingContext) -> Finding | None:
    duration = context.metrics.duration_us
    if duration is None or duration >= threshold("short_kernel_us"):
        return None
    return Finding("short_kernel", f"the kernel runs {duration:.2f} us: launch overhead is of "
                   "the same order", {"duration_us": duration})


def traffic_finding(traits: ProblemTraits | None, label: Label | None) -> list[Finding]:
    """`minimum_traffic` for a memory-bound solution that reads each byte once; `extra_traffic` where it moves more.

    Both compare the DRAM bytes every profiled kernel read and wrote per call with the problem's counted
    minimum (ProblemTraits); [] where either is unknown or the solution is not memory-bound.
    """
    ratio = traits.traffic_ratio if traits is not None else None
    if ratio is None or label != "memory_bound":
        return []
    moved = (f"DRAM moved {traits.dram_bytes_per_call / 1e6:.1f} MB per call against the problem's minimum of "
             f"{traits.minimum_bytes / 1e6:.1f} MB ({traits.bytes_source or 'counted bytes'}): {ratio:.2f}x")
    evidence = {"dram_bytes_per_call": traits.dram_bytes_per_call, "minimum_bytes": traits.minimum_bytes,
                "traffic_ratio": ratio}
    if traits.reads_once:
        return [Finding("minimum_traffic", f"{moved}, each byte read once: no single pass, fusion or reuse moves "
                        "fewer bytes; past the bandwidth's peak only a smaller data type (where the reference "
                        "allows) is left", evidence)]
    return [Finding("extra_traffic", f"{moved}, above {threshold('minimum_traffic_ratio'):g}x: data read more than "
                    "once (a row per pass) or intermediates through DRAM (one kernel per step)", evidence)]
