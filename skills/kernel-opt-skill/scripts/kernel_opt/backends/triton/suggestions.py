"""Which sections of the Triton guide (experience/triton/TRITON.md) a profile's evidence points at: the Triton ADVICE.

The names are the guide's headings (tests/unit/profile/test_suggestions.py checks that each one exists);
profile.suggestions.suggest() puts the evidence-driven ones first, then the label's defaults.
"""

from __future__ import annotations

from typing import Any

from kernel_opt.profile.advice import (
    MATMUL_FAMILIES,
    NON_MATMUL_FAMILIES,
    REDUCING_FAMILIES,
    REREADING_FAMILIES,
    TILED_FAMILIES,
    StrategyAdvice,
    coalesce_advice,
)
from kernel_opt.profile.thresholds import threshold

# Bottleneck label (and small_grid) -> strategies, in the order to try them when nothing more specific applies.
DEFAULT_STRATEGIES: dict[str, tuple[str, ...]] = {
    "memory_bound": ("block_size", "vector_hints", "single_pass", "cache_hints"),
    "compute_bound": ("dot_precision", "tile_shape", "autotune", "fast_math"),
    "latency_bound": ("pipeline_stages", "more_work_per_program"),
    "occupancy_bound": ("num_warps_stages_tradeoff",),
    "overlap_bound": ("pipeline_stages", "warp_specialize", "tensor_descriptors"),
    "small_grid": ("persistent_kernel", "split_k"),
}

# A matmul-like problem's own defaults (TRITON.md: `block_size` and `vector_hints` are written for elementwise and
# row kernels): a tl.dot kernel whose shared memory or L2 leads wants larger tiles, deeper pipelines, an L2-friendly
# tile order and TMA loads.
FAMILY_DEFAULTS: dict[str, dict[str, tuple[str, ...]]] = {
    "matmul_like": {"memory_bound": ("tile_shape", "pipeline_stages", "grouped_order", "tensor_descriptors")},
}

# A math pipe at its roof: what still helps (see backends/cuda/suggestions.py).
ROOF_STRATEGIES: dict[str, tuple[str, ...]] = {
    "tensor": ("reduce_work",),
    "FMA": ("dot_precision", "tile_shape"),
    "ALU": ("mask_free_blocks",),
    "XU": ("fast_math",),
    "FP64": ("reduce_work",),
}


# In an asynchronous pipeline a stall says what waits on what (as in backends/cuda/suggestions.py):
# loads late for the dots -> more stages in flight (TMA loads free the warps that issue them);
# dots and the other math taking turns instead of overlapping -> producer/consumer warps.
OVERLAP_STALL_STRATEGIES: dict[str, tuple[str, ...]] = {
    "long_scoreboard": ("pipeline_stages", "tensor_descriptors"),
    "barrier": ("pipeline_stages", "warp_specialize"),
    "gmma": ("warp_specialize",),
    "wait": ("warp_specialize",),
    "not_selected": ("warp_specialize",),
    "dispatch_stall": ("warp_specialize",),
}

# A feature the design evidence names (profile/design.py) -> the strategy that adds it.
FEATURE_STRATEGIES: dict[str, str] = {"TMA": "tensor_descriptors", "warp specialization": "warp_specialize"}


def strategies_in_place(classification: Any) -> set[str]:
    """What the kernel's SASS already shows: TMA loads, producer/consumer warps, dots on the tensor cores.

    `dot_precision` moves an fp32 `tl.dot` from FMA to the tensor cores; a kernel whose SASS runs
    tensor instructions (HMMA/HGMMA) is past that step, whatever its label.
    """
    design = getattr(classification, "design", None)
    if design is None:
        return set()
    in_place = {strategy for feature, strategy in FEATURE_STRATEGIES.items() if feature in design.feature_names}
    if design.tensor_cores:
        in_place.add("dot_precision")
    return in_place


def busy_math_pipes(pipes: Any) -> list[tuple[str, float]]:
    """The non-tensor math pipes within the balance margin of the busiest one, busiest first.

    When SM throughput leads but no pipe is at its roof, the work that fills the SM is the
    instructions on these pipes (an attention's softmax: ALU compares and masks, XU exponentials).
    """
    if pipes.busiest_pct is None:
        return []
    floor = pipes.busiest_pct - threshold("balance_points")
    busy = [(pipe, value) for pipe, value in pipes.utilisation_pct.items()
            if pipe in ROOF_STRATEGIES and pipe != "tensor" and value >= floor and value > 0]
    return sorted(busy, key=lambda item: -item[1])


def triton_strategies(classification: Any) -> list[tuple[str, str]]:
    """(strategy, why) pairs from a saturated memory unit, the busy pipes, the top stalls and a short kernel."""
    keys = {finding.key for finding in classification.findings}
    label = classification.label
    coalesce, leads = coalesce_advice(classification)
    picked: list[tuple[str, str]] = list(coalesce) if leads else []
    if label == "memory_bound" and "memory_at_peak" in keys:
        unit = classification.memory_limiter or "memory"
        if unit == "DRAM":
            picked.append(("single_pass", "DRAM is at its peak: only fewer bytes help"))
        else:  # L1/shared or L2 saturated: the same data is fetched again and again (advice.unfit keeps one of these)
            picked.append(("block_size", f"{unit} is at its peak: larger blocks reuse each loaded value more"))
            picked.append(("tile_shape", f"{unit} is at its peak: larger tiles reuse each loaded operand more"))
    if label == "compute_bound" and not classification.pipes.at_roof:
        for pipe, value in busy_math_pipes(classification.pipes):
            for name in ROOF_STRATEGIES[pipe]:
                picked.append((name, f"SM throughput leads and the {pipe} pipe is among the busiest ({value:.1f}%): "
                                     "fewer instructions there"))
    if label == "overlap_bound":
        for share in classification.top_stalls[:2]:
            for name in OVERLAP_STALL_STRATEGIES.get(share.reason, ()):
                picked.append((name, f"top stall {share.reason} ({share.share_pct:.0f}% of cycles) in an "
                                     "asynchronous pipeline"))
    if label == "latency_bound":
        top = classification.top_stall
        if top in ("long_scoreboard", "barrier"):
            picked.append(("pipeline_stages", f"top stall {top}: more loads in flight"))
        if "short_kernel" in keys:
            picked.append(("launch_overhead", "the kernel is only a few microseconds long"))
    if coalesce and not leads:
        picked += coalesce
    return picked


# The hardware each strategy is built on (TRITON.md: tensor descriptors are TMA loads; warp_specialize's
# producer and consumer warps trade registers with setmaxnreg, USETMAXREG in the SASS).
CHIP_FEATURES: dict[str, str] = {"tensor_descriptors": "TMA", "warp_specialize": "setmaxnreg"}

# The kernel families each strategy is written for; a strategy not listed fits any.
STRATEGY_FAMILIES: dict[str, frozenset[str]] = {
    "block_size": NON_MATMUL_FAMILIES,
    "vector_hints": NON_MATMUL_FAMILIES,
    "dot_precision": MATMUL_FAMILIES,
    "tile_shape": MATMUL_FAMILIES,
    "split_k": REDUCING_FAMILIES,
    "grouped_order": MATMUL_FAMILIES,
    "warp_specialize": MATMUL_FAMILIES,
    "tensor_descriptors": TILED_FAMILIES,
    "single_pass": REREADING_FAMILIES,
}

BYTE_SAVING_STRATEGIES = frozenset({"single_pass", "fuse_kernels", "cache_hints", "grouped_order"})


class TritonAdvice(StrategyAdvice):
    guide = "experience/triton/TRITON.md"
    default_strategies = DEFAULT_STRATEGIES
    family_defaults = FAMILY_DEFAULTS
    roof_strategies = ROOF_STRATEGIES
    chip_features = CHIP_FEATURES
    strategy_families = STRATEGY_FAMILIES
    byte_saving_strategies = BYTE_SAVING_STRATEGIES
    split_strategy = "split_k"

    def strategies_in_place(self, classification) -> set[str]:
        return strategies_in_place(classification)

    def specific_strategies(self, classification, metrics, compute_capability) -> list[tuple[str, str]]:
        return triton_strategies(classification)


ADVICE = TritonAdvice()
