"""Strategy advice: what a backend's guide says to try once a kernel is classified.

A backend folder provides it as `ADVICE`, an instance of `StrategyAdvice`, in its own
`suggestions.py` (backends/cuda/suggestions.py, ...); it is found through the registry by that
module's name, so this layer imports no backend. A backend without one has no guide and adds no
suggestions. profile/suggestions.py orders what the advice says; profile/guides.py links it.

A strategy is suggested only where it fits: on a chip that has the hardware it is built on
(`chip_features`, profile/chip_features.py), for a problem of a family it is written for
(`strategy_families`: no GEMM tiling for a GELU), and, where a strategy only saves bytes
(`byte_saving_strategies`), for a solution that moves more than the minimum. `unfit` says why not.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kernel_opt.core.errors import UsageError
from kernel_opt.profile.chip_features import missing_feature
from kernel_opt.solution import registry
from kernel_opt.solution.families import FAMILIES

if TYPE_CHECKING:  # annotations only: classify, the metrics and the problem's traits are what the advice reads
    from kernel_opt.profile.classify import Classification
    from kernel_opt.profile.ncu.metrics import KernelMetrics
    from kernel_opt.profile.problem_traits import ProblemTraits

ADVICE_MODULE = "suggestions"  # the module of a backend's folder that defines it
ADVICE_ATTRIBUTE = "ADVICE"

# Families a strategy is written for (solution/families.py): the values of `strategy_families`.
MATMUL_FAMILIES = frozenset({"matmul_like"})  # tensor cores, MMA pipelines, GEMM tiles
TILED_FAMILIES = frozenset({"matmul_like", "stencil", "data_movement"})  # data staged and reused on chip
REREADING_FAMILIES = frozenset({"row_reduction", "reduction", "scan", "sort_select"})  # passes over the same data
REDUCING_FAMILIES = frozenset({"row_reduction", "reduction", "scan", "sort_select", "matmul_like"})  # reductions
NON_MATMUL_FAMILIES = frozenset(FAMILIES) - MATMUL_FAMILIES  # a GEMM's tiles have strategies of their own


def coalesce_advice(classification: Classification) -> tuple[list[tuple[str, str]], bool]:
    """`coalesce_access` where the profile found scattered global accesses, and whether it leads.

    It leads where the wasted sectors are most of the kernel's global traffic (a GEMM's epilogue
    stores from its accumulator fragments); beside coalesced main-loop loads it is a side cost,
    tried after the label's own strategies. Every backend's guide names the section the same.
    """
    keys = {finding.key for finding in classification.findings}
    if "uncoalesced_loads" not in keys and "uncoalesced_stores" not in keys:
        return [], False
    access = getattr(classification, "access", None)
    if access is None or access.wasted_pct is None:
        why = "global accesses are scattered (sectors per request above the coalesced range)"
        return [("coalesce_access", why)], True
    kinds = " and ".join(f"{side.kind}s" for side in (access.loads, access.stores) if side.uncoalesced)
    why = f"scattered global {kinds}: {access.wasted_pct:.0f}% of the global sectors through L1 are waste"
    return [("coalesce_access", why)], bool(access.uncoalesced_lead)


class StrategyAdvice:
    """A backend's guide and the strategies (the guide's headings) it suggests, per label and per evidence."""

    guide: ClassVar[str | None] = None  # the strategy guide, relative to the skill root
    # Strategy names per bottleneck label and "small_grid", in the order to try them.
    default_strategies: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    # Kernel family -> label -> strategies that take the place of the label's defaults for that family (a GEMM
    # whose shared memory leads is memory_bound, and its levers are tiles and pipelining, not elementwise blocks).
    family_defaults: ClassVar[Mapping[str, Mapping[str, tuple[str, ...]]]] = {}
    # Math pipe ("tensor", "FMA", "ALU", "XU", "FP64") at its roof -> the strategies that still help there.
    roof_strategies: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    # Another backend whose guide and strategies this one's solutions follow (a ModelNew's load_inline
    # kernels are CUDA): suggestions are drawn from that backend instead.
    strategies_from: ClassVar[str | None] = None
    # Strategy -> the chip feature it is built on (profile/chip_features.py), where its name does not say.
    chip_features: ClassVar[Mapping[str, str]] = {}
    # Strategy -> the kernel families it is written for; a strategy not listed fits every family.
    strategy_families: ClassVar[Mapping[str, frozenset[str]]] = {}
    # Strategies whose only gain is fewer DRAM bytes: nothing to gain for a solution that reads each byte once.
    byte_saving_strategies: ClassVar[frozenset[str]] = frozenset()
    # The strategy that makes more blocks by splitting a reduction: first where the grid has fewer blocks than SMs,
    # which a persistent loop cannot fix (it spreads the blocks there are).
    split_strategy: ClassVar[str | None] = None

    def unfit(self, strategy: str, compute_capability: str | None, traits: ProblemTraits | None) -> str | None:
        """Why `strategy` does not fit this chip or problem ("needs wgmma (sm_9x only); ..."), None where it does."""
        missing = missing_feature(strategy, compute_capability, self.chip_features)
        if missing is not None:
            return missing
        family = traits.known_family if traits is not None else None
        families = self.strategy_families.get(strategy)
        if family is not None and families is not None and family not in families:
            return f"written for {', '.join(sorted(families))} kernels; this problem is {family}"
        if traits is not None and traits.reads_once and strategy in self.byte_saving_strategies:
            return (f"only saves DRAM bytes; this solution moves {traits.traffic_ratio:.2f}x the problem's minimum, "
                    "each byte once")
        return None

    def label_defaults(self, label: str, traits: ProblemTraits | None) -> tuple[str, ...]:
        """The strategies to try for `label` when nothing more specific applies: the family's own, else the label's."""
        family = traits.known_family if traits is not None else None
        own = self.family_defaults.get(family, {}).get(label) if family is not None else None
        return own if own is not None else tuple(self.default_strategies.get(label, ()))

    def guide_for(self, solution: Path) -> str | None:
        """The backend whose guide and experience records fit this solution; None: strategies_from, else this one."""
        return self.strategies_from

    def strategies_in_place(self, classification: Classification) -> set[str]:
        """Strategies the kernel's design already shows (e.g. wgmma in its SASS): never suggested again."""
        return set()

    def specific_strategies(self, classification: Classification, metrics: KernelMetrics,
                            compute_capability: str | None) -> list[tuple[str, str]]:
        """(strategy, why) pairs that the profile's evidence points at, most specific first."""
        return []


NO_ADVICE = StrategyAdvice()


def advice_for(backend: str) -> StrategyAdvice:
    """The strategy advice of the backend called `backend`; NO_ADVICE where its folder provides none."""
    module = registry.backend_part(backend, ADVICE_MODULE)
    advice = getattr(module, ADVICE_ATTRIBUTE, None)
    if advice is None:
        return NO_ADVICE
    if not isinstance(advice, StrategyAdvice):
        raise UsageError(f"{module.__name__}.{ADVICE_ATTRIBUTE} is not a kernel_opt StrategyAdvice")
    return advice


def guide_backend(backend: str, solution: Path) -> str:
    """The backend whose guide and experience records fit this solution: what its advice says, else its own."""
    return advice_for(backend).guide_for(solution) or backend
