"""Which sections of the Triton guide (experience/triton/TRITON.md) a profile's evidence points at.

The names are the guide's headings (tests/test_classify.py checks that each one exists);
profile.suggestions.suggest() puts the evidence-driven ones first, then the label's defaults.
"""

from __future__ import annotations

from typing import Any

# Bottleneck label (and small_grid) -> strategies, in the order to try them when nothing more specific applies.
DEFAULT_STRATEGIES: dict[str, tuple[str, ...]] = {
    "memory_bound": ("block_size", "vector_hints", "single_pass", "cache_hints"),
    "compute_bound": ("dot_precision", "tile_shape", "autotune", "fast_math"),
    "latency_bound": ("pipeline_stages", "more_work_per_program"),
    "occupancy_bound": ("num_warps_stages_tradeoff",),
    "overlap_bound": ("pipeline_stages", "warp_specialize", "tensor_descriptors"),
    "small_grid": ("persistent_kernel", "split_k"),
}

# A math pipe at its roof: what still helps (see backends/cuda/suggestions.py).
ROOF_STRATEGIES: dict[str, tuple[str, ...]] = {
    "tensor": ("reduce_work",),
    "FMA": ("dot_precision", "tile_shape"),
    "ALU": ("mask_free_blocks",),
    "XU": ("fast_math",),
    "FP64": ("reduce_work",),
}


def triton_strategies(classification: Any) -> list[tuple[str, str]]:
    """(strategy, why) pairs from a saturated memory unit, the top stall and a short kernel."""
    keys = {finding.key for finding in classification.findings}
    label = classification.label
    picked: list[tuple[str, str]] = []
    if label == "memory_bound" and "memory_at_peak" in keys:
        unit = classification.memory_limiter or "memory"
        if unit == "DRAM":
            picked.append(("single_pass", "DRAM is at its peak: only fewer bytes help"))
        else:  # L1/shared or L2 saturated: the same data is fetched again and again
            picked.append(("block_size", f"{unit} is at its peak: larger tiles reuse each loaded value more"))
    if label == "latency_bound":
        top = classification.top_stall
        if top in ("long_scoreboard", "barrier"):
            picked.append(("pipeline_stages", f"top stall {top}: more loads in flight"))
        if "short_kernel" in keys:
            picked.append(("launch_overhead", "the kernel is only a few microseconds long"))
    return picked
