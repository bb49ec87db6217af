"""Where to read next: the guide strategies a classified kernel points to, most specific first.

A suggestion names a strategy (a heading in a backend's guide, e.g. experience/cuda/CUDA.md)
and says why it applies: first what the evidence singles out (a small grid, a math pipe at its
roof, then the backend's own reading of the findings, stalls and design), then the label's
defaults. Each backend owns its strategy names (its folder's `ADVICE`, profile/advice.py:
`default_strategies`, `roof_strategies`, `specific_strategies`); this module only orders them, and
leaves out what does not fit the chip or the problem (`StrategyAdvice.unfit`: wgmma on an A100,
GEMM tiling for a GELU, a single pass for a solution that reads each byte once). A memory-bound
solution at its memory roof that reads each byte once gets no label defaults, as a pipe at its
roof gets none: no generic change moves fewer bytes than the minimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernel_opt.profile.advice import advice_for
from kernel_opt.profile.classify import Classification
from kernel_opt.profile.guides import guide_link
from kernel_opt.profile.ncu.metrics import KernelMetrics
from kernel_opt.profile.problem_traits import ProblemTraits
from kernel_opt.solution import registry

MAX_SUGGESTIONS_PER_GUIDE = 4


@dataclass
class Suggestion:
    """A strategy from a guide to read next, and why it applies."""

    guide: str  # the backend whose guide it is: "cuda", "triton"
    strategy: str  # the strategy name (a heading in the guide)
    link: str  # path from the skill root, with anchor
    why: str


def suggest(classification: Classification, metrics: KernelMetrics, backends: Sequence[str] | None = None,
            compute_capability: str | None = None, traits: ProblemTraits | None = None) -> list[Suggestion]:
    """The guide sections to read next: specific evidence first, then the label's defaults.

    `backends` names the guides to draw from (None: every registered backend with a guide). What
    the kernel's design already shows (the advice's `strategies_in_place`: cuDNN's flash kernel is
    warp-specialized already) is never suggested, nor what does not fit the chip
    (`compute_capability`) or the problem (`traits`: its family, its traffic). A
    kernel whose busiest math pipe is at its roof gets what still helps there (the advice's
    `roof_strategies`) instead of the compute_bound defaults, which would tell a kernel at the
    tensor roof to use tensor cores.
    """
    suggestions: list[Suggestion] = []
    label = classification.label
    if label is None:
        return suggestions
    named = registry.names() if backends is None else [registry.get(name).name for name in backends]
    # A backend that follows another's guide (StrategyAdvice.strategies_from) gets that backend's suggestions, once.
    guides = list(dict.fromkeys(registry.get(advice_for(name).strategies_from or name).name for name in named))
    pipes = classification.pipes
    at_roof = label == "compute_bound" and pipes.at_roof
    at_memory_roof = label == "memory_bound" and traits is not None and traits.at_memory_roof
    for guide in guides:
        advice = advice_for(guide)
        if advice.guide is None:
            continue
        picked: list[tuple[str, str]] = []
        in_place = advice.strategies_in_place(classification)

        def add(name: str, why: str, picked: list[tuple[str, str]] = picked, in_place: set[str] = in_place,
                advice=advice) -> None:
            if name not in in_place and name not in [item[0] for item in picked] and \
                    advice.unfit(name, compute_capability, traits) is None:
                picked.append((name, why))

        if classification.small_grid:  # an idle GPU comes first: no per-SM tuning fixes missing blocks
            grid = classification.grid
            if advice.split_strategy and grid.grid_size_blocks and grid.sm_count and \
                    grid.grid_size_blocks < grid.sm_count:
                add(advice.split_strategy, f"{grid.grid_size_blocks:.0f} blocks for {grid.sm_count:.0f} SMs: split "
                                           "the reduction axis (K, a KV length, a long row) to make more")
            for name in advice.default_strategies["small_grid"]:
                add(name, "small_grid: the grid cannot fill the GPU")
        if at_roof:
            for name in advice.roof_strategies.get(pipes.busiest, ()):
                add(name, f"the {pipes.busiest} pipe is at its roof ({pipes.busiest_pct:.1f}%)")
        for name, why in advice.specific_strategies(classification, metrics, compute_capability):
            add(name, why)
        for name in () if at_roof or at_memory_roof else advice.label_defaults(label, traits):
            add(name, f"a {label} strategy")
        for name, why in picked[:MAX_SUGGESTIONS_PER_GUIDE]:
            suggestions.append(Suggestion(guide, name, guide_link(guide, name), why))
    return suggestions
