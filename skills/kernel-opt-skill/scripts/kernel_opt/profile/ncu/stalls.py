"""Warp stalls: the naming schemes of ncu's per-reason stall metrics, what each state means, and the
breakdown read from one launch's raw metrics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kernel_opt.profile.ncu.raw_metrics import RawMetric, finite_number


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


@dataclass
class StallShare:
    reason: str  # "long_scoreboard", "barrier", ...
    value: float  # in the family's unit (KernelMetrics.stall_unit)
    share_pct: float  # of the sum over every state (so all shares add to 100)


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
