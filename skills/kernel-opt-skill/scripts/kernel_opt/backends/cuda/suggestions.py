"""Which sections of the CUDA guide (experience/cuda/CUDA.md) a profile's evidence points at: the CUDA ADVICE.

The names are the guide's headings (tests/unit/profile/test_suggestions.py checks that each one exists);
profile.suggestions.suggest() puts the evidence-driven ones first, then the label's defaults.
"""

from __future__ import annotations

from typing import Any

from kernel_opt.profile.advice import (
    MATMUL_FAMILIES,
    REDUCING_FAMILIES,
    REREADING_FAMILIES,
    TILED_FAMILIES,
    StrategyAdvice,
    coalesce_advice,
)

# Bottleneck label (and small_grid) -> strategies, in the order to try them when nothing more specific applies.
DEFAULT_STRATEGIES: dict[str, tuple[str, ...]] = {
    "memory_bound": ("coalesce_access", "vector_loads", "single_pass", "l2_reuse", "smem_tiling"),
    "compute_bound": ("tensor_cores", "wgmma", "fewer_instructions", "fast_math"),
    "latency_bound": ("more_bytes_in_flight", "cp_async_pipeline", "more_ilp"),
    "occupancy_bound": ("register_limit", "smem_limit", "block_shape", "load_balance"),
    "overlap_bound": ("warp_specialization", "pingpong_warpgroups", "pipeline_depth", "softmax_mma_overlap"),
    "small_grid": ("split_work", "persistent_kernel"),
}

# A math pipe at its roof: what still helps (the compute_bound defaults would not: a kernel at
# the tensor roof needs no advice to use tensor cores).
ROOF_STRATEGIES: dict[str, tuple[str, ...]] = {
    "tensor": ("reduce_work",),
    "FMA": ("tensor_cores", "fewer_instructions"),
    "ALU": ("fewer_instructions",),
    "XU": ("fast_math", "fewer_instructions"),
    "FP64": ("reduce_work",),
}

# Stall reason -> strategies that address it (CUDA.md names the stall in each heading).
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

# occupancy_bound or latency_bound in an MMA kernel (tensor instructions in the SASS): its
# registers hold the accumulator tiles that give it reuse, so the latency more warps would hide is
# better hidden by more work in flight per warp, and its barrier waits are the tile staging's (not
# a reduction's: warp_shuffle_reduce does not apply). Demo, H100: CUDA GEMM v3 (mma.sync,
# long_scoreboard 60%, 25% occupancy) gained 2.38x from a cp.async pipeline (v4), not from fewer
# registers; GEMM v1 (barrier 35%, long_scoreboard 25% at 50% occupancy) stages its tiles with
# synchronous 2-byte loads.
MMA_STALL_STRATEGIES: dict[str, tuple[str, ...]] = {
    "long_scoreboard": ("cp_async_pipeline", "more_bytes_in_flight"),
    "barrier": ("cp_async_pipeline",),
    "wait": ("more_ilp",),
}

OCCUPANCY_STRATEGIES: dict[str, str] = {
    "registers": "register_limit",
    "shared memory": "smem_limit",
    "block size": "block_shape",
    "blocks per SM": "block_shape",
}


# A feature the design evidence names (profile/design.py: "wgmma (HGMMA x...)") -> the strategy that adds it.
FEATURE_STRATEGIES: dict[str, str] = {
    "wgmma": "wgmma",
    "TMA": "tma_pipeline",
    "warp specialization": "warp_specialization",
    "cp.async": "cp_async_pipeline",
}


def strategies_in_place(classification: Any) -> set[str]:
    """The strategies whose feature the kernel's SASS already shows: suggesting them again helps nobody."""
    design = getattr(classification, "design", None)
    features = design.feature_names if design is not None else set()
    return {strategy for feature, strategy in FEATURE_STRATEGIES.items() if feature in features}


def cuda_strategies(classification: Any, metrics: Any, compute_capability: str | None) -> list[tuple[str, str]]:
    """(strategy, why) pairs from the findings, the busiest unit, the top stalls and the occupancy limiters.

    Scattered global accesses lead when they waste most of the global traffic (GEMM v9's epilogue
    stores); otherwise they follow the label's own strategies (the same stores beside GEMM v1-v8's
    loads are a side cost).
    """
    keys = {finding.key for finding in classification.findings}
    label = classification.label
    coalesce, leads = coalesce_advice(classification)
    picked: list[tuple[str, str]] = list(coalesce) if leads else []
    if label == "memory_bound":
        picked += _memory_bound(classification.memory_limiter, keys)
    elif label == "compute_bound" and not classification.pipes.at_roof:
        picked += _compute_bound(metrics, keys, compute_capability)
    elif label == "latency_bound":
        picked += _stall_strategies(classification)
        if "short_kernel" in keys:
            picked.append(("launch_overhead", "the kernel is only a few microseconds long"))
    elif label == "occupancy_bound":
        picked += _stall_strategies(classification, count=1, others=False)
        for limiter in classification.occupancy.limiters:
            picked.append((OCCUPANCY_STRATEGIES[limiter], f"theoretical occupancy is limited by {limiter}"))
        if classification.occupancy.gap:
            picked.append(("load_balance", "achieved occupancy is far below theoretical"))
    elif label == "overlap_bound":
        picked += _overlap_bound(classification, compute_capability)
    if "local_memory" in keys:
        picked.append(("register_limit", "local-memory traffic: spills or a run-time-indexed local array"))
    if coalesce and not leads:
        picked += coalesce
    if "split_async_copies" in keys:
        picked.append(("smem_swizzle", "cp.async copies split by padded shared-memory rows"))
    return picked


def _stall_strategies(classification: Any, count: int = 2, others: bool = True) -> list[tuple[str, str]]:
    """The top stalls' strategies: in an MMA kernel its own reading of them (MMA_STALL_STRATEGIES) first.

    `others`: also the general STALL_STRATEGIES for a stall the MMA reading does not cover.
    """
    mma = bool(classification.design.tensor_cores)
    picked = []
    for share in classification.top_stalls[:count]:
        stall = f"top stall {share.reason} ({share.share_pct:.0f}% of cycles)"
        if mma and share.reason in MMA_STALL_STRATEGIES:
            why = (f"{stall} in an MMA kernel: its barriers wait on the tile staging; copies in flight while the "
                   "MMAs run" if share.reason == "barrier" else
                   f"{stall} in an MMA kernel: more work in flight per warp hides it and keeps the registers that "
                   "give the MMAs their reuse")
            picked += [(name, why) for name in MMA_STALL_STRATEGIES[share.reason]]
        elif others:
            picked += [(name, stall) for name in STALL_STRATEGIES.get(share.reason, ())]
    return picked


def _memory_bound(unit: str | None, keys: set[str]) -> list[tuple[str, str]]:
    picked = []
    if "split_async_copies" in keys and unit in ("L2", "L1/shared"):
        picked.append(("smem_swizzle", f"{unit} is the busiest unit and the cp.async copies that load it are split "
                                       "by padded shared-memory rows, which fetches shared sectors again"))
    if unit == "L1/shared":
        if "bank_conflicts" in keys:
            picked.append(("smem_bank_conflicts", "L1/shared is the busiest unit and shared memory has bank conflicts"))
        return picked + [("smem_tiling", "L1/shared is the busiest unit: reuse data from shared memory or registers")]
    if unit == "L2":  # well ahead of DRAM (memory_sol): its traffic hits, so fewer loads per output, not reuse
        return picked + [("smem_tiling", "L2 is the busiest unit and runs ahead of DRAM: larger tiles load each "
                                         "value fewer times"),
                         ("l2_reuse", "L2 is the busiest unit")]
    if "memory_at_peak" in keys:
        return picked + [("single_pass", "DRAM is at its peak: only fewer bytes help"),
                         ("fuse_kernels", "DRAM is at its peak: keep intermediates on chip")]
    return picked + [("vector_loads", "DRAM is busiest but below its peak: wider accesses, more bytes per instruction")]


def _compute_bound(metrics: Any, keys: set[str], compute_capability: str | None) -> list[tuple[str, str]]:
    picked = []
    if "tensor_pipe_idle" in keys:
        picked.append(("tensor_cores", "compute-bound with the tensor pipe idle"))
        if compute_capability == "9.0":
            picked.append(("wgmma", "sm_90: warpgroup MMA is Hopper's fast tensor path"))
    elif compute_capability == "9.0" and (metrics.tensor_pipe_pct or 0) > 0:
        picked.append(("wgmma", "tensor cores in use on sm_90: check the SASS shows HGMMA, not HMMA"))
    if "issue_bound" in keys:
        picked.append(("fewer_instructions", "issue slots are saturated"))
    if "divergence" in keys:
        picked.append(("branch_uniformity", "warps diverge"))
    return picked


def _overlap_bound(classification: Any, compute_capability: str | None) -> list[tuple[str, str]]:
    """An asynchronous pipeline that does not overlap: Hopper's building blocks it lacks, then the stalls."""
    design = classification.design
    features = design.feature_names
    picked = []
    if compute_capability == "9.0" and "wgmma" not in features and "wgmma" not in design.unchecked:
        picked.append(("wgmma", "the pipeline feeds mma.sync: wgmma runs asynchronously, so MMAs overlap other work"))
    if compute_capability == "9.0" and "TMA" not in features and "TMA" not in design.unchecked:
        picked.append(("tma_pipeline", "no TMA: one thread's bulk copies free the other warps from issuing loads"))
    for share in classification.top_stalls[:2]:
        for name in OVERLAP_STALL_STRATEGIES.get(share.reason, ()):
            picked.append((name, f"top stall {share.reason} ({share.share_pct:.0f}% of cycles) in an asynchronous "
                                 "pipeline"))
    return picked


# The hardware each strategy is built on (CUDA.md's headings say the same: "(sm_90)", "(sm_80+)").
CHIP_FEATURES: dict[str, str] = {
    "wgmma": "wgmma",
    "pingpong_warpgroups": "wgmma",  # two consumer warpgroups taking turns on wgmma
    "softmax_mma_overlap": "wgmma",  # wgmma.wait_group 1 under the softmax
    "tma_pipeline": "TMA",
    "warp_specialization": "setmaxnreg",  # producer/consumer warpgroups trade registers with setmaxnreg
    "cp_async_pipeline": "cp.async",
}

# The kernel families each strategy is written for; a strategy not listed fits any.
STRATEGY_FAMILIES: dict[str, frozenset[str]] = {
    "tensor_cores": MATMUL_FAMILIES,
    "wgmma": MATMUL_FAMILIES,
    "pingpong_warpgroups": MATMUL_FAMILIES,
    "softmax_mma_overlap": MATMUL_FAMILIES,
    "pipeline_depth": MATMUL_FAMILIES,
    "warp_specialization": MATMUL_FAMILIES,
    "tma_pipeline": TILED_FAMILIES,
    "smem_tiling": TILED_FAMILIES,
    "l2_reuse": TILED_FAMILIES,
    "single_pass": REREADING_FAMILIES,
    "warp_shuffle_reduce": REDUCING_FAMILIES,
}

BYTE_SAVING_STRATEGIES = frozenset({"single_pass", "fuse_kernels", "l2_reuse", "smem_tiling"})


class CudaAdvice(StrategyAdvice):
    guide = "experience/cuda/CUDA.md"
    default_strategies = DEFAULT_STRATEGIES
    roof_strategies = ROOF_STRATEGIES
    chip_features = CHIP_FEATURES
    strategy_families = STRATEGY_FAMILIES
    byte_saving_strategies = BYTE_SAVING_STRATEGIES
    split_strategy = "split_work"

    def strategies_in_place(self, classification) -> set[str]:
        return strategies_in_place(classification)

    def specific_strategies(self, classification, metrics, compute_capability) -> list[tuple[str, str]]:
        return cuda_strategies(classification, metrics, compute_capability)


ADVICE = CudaAdvice()
