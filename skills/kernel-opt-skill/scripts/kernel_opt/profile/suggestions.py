"""Where to read next: the guide strategies a classified kernel points to, most specific first.

A suggestion names a strategy (a heading in experience/cuda/CUDA.md or experience/triton/TRITON.md)
and says why it applies: first what the evidence singles out (a small grid, the pipe at its
roof, bank conflicts, the top stall, the occupancy limiter, the missing Hopper building blocks
of an asynchronous pipeline), then the label's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from kernel_opt.profile.classify import Classification
from kernel_opt.profile.guides import guide_link
from kernel_opt.profile.ncu.metrics import KernelMetrics


@dataclass
class Suggestion:
    """A strategy from a guide to read next, and why it applies."""

    guide: str  # "cuda" or "triton"
    strategy: str  # the strategy name (a heading in the guide)
    link: str  # path from the skill root, with anchor
    why: str


# Strategy names per guide and label, in the order to try them when nothing more specific applies.
DEFAULT_STRATEGIES: dict[str, dict[str, tuple[str, ...]]] = {
    "cuda": {
        "memory_bound": ("coalesce_access", "vector_loads", "single_pass", "l2_reuse", "smem_tiling"),
        "compute_bound": ("tensor_cores", "wgmma", "fewer_instructions", "fast_math"),
        "latency_bound": ("more_bytes_in_flight", "cp_async_pipeline", "more_ilp"),
        "occupancy_bound": ("register_limit", "smem_limit", "block_shape", "load_balance"),
        "overlap_bound": ("warp_specialization", "pingpong_warpgroups", "pipeline_depth", "softmax_mma_overlap"),
        "small_grid": ("split_work", "persistent_kernel"),
    },
    "triton": {
        "memory_bound": ("block_size", "vector_hints", "single_pass", "cache_hints"),
        "compute_bound": ("dot_precision", "tile_shape", "autotune", "fast_math"),
        "latency_bound": ("pipeline_stages", "more_work_per_program"),
        "occupancy_bound": ("num_warps_stages_tradeoff",),
        "overlap_bound": ("pipeline_stages", "warp_specialize", "tensor_descriptors"),
        "small_grid": ("persistent_kernel", "split_k"),
    },
}

# A math pipe at its roof: what still helps (the compute_bound defaults would not: a kernel at
# the tensor roof needs no advice to use tensor cores).
ROOF_STRATEGIES: dict[str, dict[str, tuple[str, ...]]] = {
    "cuda": {"tensor": ("reduce_work",), "FMA": ("tensor_cores", "fewer_instructions"), "ALU": ("fewer_instructions",),
             "XU": ("fast_math", "fewer_instructions"), "FP64": ("reduce_work",)},
    "triton": {"tensor": ("reduce_work",), "FMA": ("dot_precision", "tile_shape"), "ALU": ("mask_free_blocks",),
               "XU": ("fast_math",), "FP64": ("reduce_work",)},
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

# In an asynchronous pipeline the same stalls mean a stage waits on another: overlap them.
OVERLAP_STALL_STRATEGIES: dict[str, tuple[str, ...]] = {
    "barrier": ("warp_specialization", "pipeline_depth"),
    "long_scoreboard": ("pipeline_depth", "warp_specialization"),
    "gmma": ("softmax_mma_overlap", "pingpong_warpgroups"),
    "wait": ("pingpong_warpgroups", "softmax_mma_overlap"),
    "not_selected": ("pingpong_warpgroups",),
    "dispatch_stall": ("pingpong_warpgroups",),
    "lg_throttle": ("vector_loads",),  # e.g. an epilogue of narrow stores that nothing overlaps
    "mio_throttle": ("smem_bank_conflicts",),
}

OCCUPANCY_STRATEGIES: dict[str, str] = {
    "registers": "register_limit",
    "shared memory": "smem_limit",
    "block size": "block_shape",
    "blocks per SM": "block_shape",
}

MAX_SUGGESTIONS_PER_GUIDE = 4

Add = Callable[[str, str], None]


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
        pipes = classification.pipes
        if label == "compute_bound" and pipes.at_roof:
            for name in ROOF_STRATEGIES[guide][pipes.busiest]:
                add(name, f"the {pipes.busiest} pipe is at its roof ({pipes.busiest_pct:.1f}%)")
        if guide == "cuda":
            _cuda_specific(classification, metrics, keys, compute_capability, add)
        else:
            _triton_specific(classification, keys, add)
        defaults = () if label == "compute_bound" and pipes.at_roof else DEFAULT_STRATEGIES[guide][label]
        for name in defaults:
            add(name, f"a {label} strategy")
        for name, why in picked[:MAX_SUGGESTIONS_PER_GUIDE]:
            suggestions.append(Suggestion(guide, name, guide_link(guide, name), why))
    return suggestions


def _cuda_specific(classification: Classification, metrics: KernelMetrics, keys: set[str],
                   compute_capability: str | None, add: Add) -> None:
    label = classification.label
    if "uncoalesced_loads" in keys or "uncoalesced_stores" in keys:
        add("coalesce_access", "global accesses are scattered (sectors per request above the coalesced range)")
    if label == "memory_bound":
        _cuda_memory(classification, keys, add)
    elif label == "compute_bound" and not classification.pipes.at_roof:
        _cuda_compute(metrics, keys, compute_capability, add)
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
    elif label == "overlap_bound":
        _cuda_overlap(classification, compute_capability, add)
    if "local_memory" in keys:
        add("register_limit", "local-memory traffic: spills or a run-time-indexed local array")


def _cuda_memory(classification: Classification, keys: set[str], add: Add) -> None:
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


def _cuda_compute(metrics: KernelMetrics, keys: set[str], compute_capability: str | None, add: Add) -> None:
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


def _cuda_overlap(classification: Classification, compute_capability: str | None, add: Add) -> None:
    """An asynchronous pipeline that does not overlap: Hopper's building blocks it lacks, then the stalls."""
    design = classification.design
    features = " ".join(design.async_features)
    if compute_capability == "9.0" and "wgmma" not in features and "wgmma" not in design.unchecked:
        add("wgmma", "the pipeline feeds mma.sync: wgmma runs asynchronously, so MMAs overlap other work")
    if compute_capability == "9.0" and "TMA" not in features and "TMA" not in design.unchecked:
        add("tma_pipeline", "no TMA: one thread's bulk copies free the other warps from issuing loads")
    for share in classification.top_stalls[:2]:
        for name in OVERLAP_STALL_STRATEGIES.get(share.reason, ()):
            add(name, f"top stall {share.reason} ({share.share_pct:.0f}% of cycles) in an asynchronous pipeline")


def _triton_specific(classification: Classification, keys: set[str], add: Add) -> None:
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
