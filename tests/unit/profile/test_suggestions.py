"""Where a classified kernel sends the reader: specific evidence first, then the label's defaults, all real headings."""

from dataclasses import replace

from kernel_opt.profile.assessments import LABELS
from kernel_opt.profile.classify import classify as classify_kernel
from kernel_opt.profile.guides import guide_anchors
from kernel_opt.profile.problem_traits import ProblemTraits
from kernel_opt.profile.suggestions import suggest

from .test_classify import kernel, keys

# --- where to read next -------------------------------------------------------------------------


def cuda_strategies(result, metrics, capability="9.0"):
    return [s.strategy for s in suggest(result, metrics, ("cuda",), capability)]


def test_l1_bound_with_bank_conflicts_points_at_bank_conflicts_first():
    metrics = kernel(l1_throughput_pct=85.0, memory_throughput_pct=85.0, shared_load_bank_conflicts=50.0,
                     shared_load_wavefronts=100.0)
    assert cuda_strategies(classify_kernel(metrics), metrics)[:2] == ["smem_bank_conflicts", "smem_tiling"]


def test_dram_at_peak_points_at_fewer_bytes():
    metrics = kernel(dram_throughput_pct=92.0, memory_throughput_pct=92.0)
    assert cuda_strategies(classify_kernel(metrics), metrics)[:2] == ["single_pass", "fuse_kernels"]


def test_latency_bound_follows_the_top_stall():
    metrics = kernel(stalls={"barrier": 5.0, "long_scoreboard": 1.0})
    assert cuda_strategies(classify_kernel(metrics), metrics)[0] == "warp_shuffle_reduce"


def test_occupancy_bound_follows_the_limiter_and_small_grid_adds_its_own():
    metrics = kernel(achieved_occupancy_pct=20.0, theoretical_occupancy_pct=25.0, block_limit_registers_blocks=2)
    assert cuda_strategies(classify_kernel(metrics), metrics)[0] == "register_limit"
    small = kernel(grid_size_blocks=1, waves_per_sm=0.01)
    assert cuda_strategies(classify_kernel(small), small)[:2] == ["split_work", "persistent_kernel"]


def test_compute_bound_without_tensor_cores_points_at_them():
    metrics = kernel(sm_throughput_pct=90.0, tensor_pipe_pct=0.0)
    assert cuda_strategies(classify_kernel(metrics), metrics)[:2] == ["tensor_cores", "wgmma"]


def test_every_strategy_the_classifier_names_is_a_heading_in_its_guide():
    from kernel_opt.backends.cuda import suggestions as cuda_suggestions
    from kernel_opt.profile.advice import advice_for

    named = {"cuda": set(), "triton": set()}
    for guide in named:
        backend = advice_for(guide)
        for strategies in backend.default_strategies.values():
            named[guide].update(strategies)
        named[guide].update(s for group in backend.roof_strategies.values() for s in group)
    named["cuda"].update(s for group in cuda_suggestions.STALL_STRATEGIES.values() for s in group)
    named["cuda"].update(s for group in cuda_suggestions.OVERLAP_STALL_STRATEGIES.values() for s in group)
    named["cuda"].update(s for group in cuda_suggestions.MMA_STALL_STRATEGIES.values() for s in group)
    named["cuda"].update(cuda_suggestions.OCCUPANCY_STRATEGIES.values())
    named["cuda"].update({"smem_bank_conflicts", "smem_tiling", "l2_reuse", "fuse_kernels", "launch_overhead",
                          "branch_uniformity", "fewer_instructions", "wgmma", "tma_pipeline", "coalesce_access",
                          "smem_swizzle"})
    named["triton"].update({"single_pass", "pipeline_stages", "launch_overhead", "coalesce_access"})
    for guide, names in named.items():
        anchors = guide_anchors(guide)
        assert names <= set(anchors), f"{guide}: {sorted(names - set(anchors))} are not headings"
        for label in LABELS + ("small_grid",):
            assert label in anchors, f"{guide} has no section for {label}"


def triton_strategies(result, metrics):
    return [s.strategy for s in suggest(result, metrics, ("triton",), "9.0")]


def test_a_pipe_at_its_roof_points_at_less_work_and_never_at_tensor_cores():
    metrics = kernel(sm_throughput_pct=93.0, tensor_pipe_pct=96.9)
    result = classify_kernel(metrics)
    assert cuda_strategies(result, metrics) == ["reduce_work"] and triton_strategies(result, metrics) == ["reduce_work"]
    why = suggest(result, metrics, ("cuda",))[0].why
    assert why == "the tensor pipe is at its roof (96.9%)"


def test_an_fma_pipe_at_its_roof_points_at_tensor_cores_first():
    metrics = kernel(sm_throughput_pct=90.0, fma_pipe_pct=91.0, tensor_pipe_pct=0.0)
    assert cuda_strategies(classify_kernel(metrics), metrics)[:2] == ["tensor_cores", "fewer_instructions"]


OVERLAP = dict(achieved_occupancy_pct=12.0, theoretical_occupancy_pct=12.5, eligible_warps_per_scheduler=0.3,
               issue_slots_busy_pct=25.0, tensor_pipe_pct=45.0, stalls={"gmma": 4.0, "barrier": 3.0})


def test_an_overlap_bound_mma_sync_pipeline_on_hopper_moves_to_wgmma_and_tma_first():
    metrics = kernel(**OVERLAP, executed_opcodes={"HMMA": 128.0, "LDGSTS": 8.0})
    result = classify_kernel(metrics)
    assert result.label == "overlap_bound"
    assert cuda_strategies(result, metrics) == ["wgmma", "tma_pipeline", "softmax_mma_overlap", "pingpong_warpgroups"]


def test_an_overlap_bound_wgmma_pipeline_follows_its_stalls():
    metrics = kernel(**OVERLAP, executed_opcodes={"HGMMA": 128.0, "UTMALDG": 8.0})
    result = classify_kernel(metrics)
    assert cuda_strategies(result, metrics) == ["softmax_mma_overlap", "pingpong_warpgroups", "warp_specialization",
                                                "pipeline_depth"]
    # Triton: gmma and barrier stalls ask for producer/consumer warps and deeper stages; its loads are TMA already
    assert triton_strategies(result, metrics) == ["warp_specialize", "pipeline_stages"]


def test_without_sass_the_overlap_advice_does_not_assume_what_it_cannot_see():
    metrics = kernel(**OVERLAP, gmma_instructions_pct=3.0)  # wgmma seen; TMA metric absent: not known either way
    assert cuda_strategies(classify_kernel(metrics), metrics)[0] == "softmax_mma_overlap"


def test_an_overlap_bound_pipeline_with_narrow_stores_also_points_at_wider_accesses():
    metrics = kernel(achieved_occupancy_pct=12.0, theoretical_occupancy_pct=12.5, sm_throughput_pct=60.0,
                     l2_throughput_pct=62.0, memory_throughput_pct=62.0, tensor_pipe_pct=65.0,
                     executed_opcodes={"HGMMA": 64.0, "UTMALDG": 8.0},
                     stalls={"long_scoreboard": 4.0, "lg_throttle": 2.5})
    result = classify_kernel(metrics)
    assert result.label == "overlap_bound"
    assert cuda_strategies(result, metrics) == ["pipeline_depth", "warp_specialization", "vector_loads",
                                                "pingpong_warpgroups"]


def test_a_triton_overlap_pipeline_waiting_on_its_loads_gets_more_stages_and_tma_loads_first():
    metrics = kernel(**{**OVERLAP, "stalls": {"long_scoreboard": 4.0, "wait": 1.0}},
                     executed_opcodes={"HGMMA": 128.0, "LDGSTS": 8.0})
    result = classify_kernel(metrics)
    assert result.label == "overlap_bound"
    assert triton_strategies(result, metrics) == ["pipeline_stages", "tensor_descriptors", "warp_specialize"]
    specialized = kernel(**OVERLAP, executed_opcodes={"HGMMA": 128.0, "UTMALDG": 8.0, "USETMAXREG": 2.0})
    assert triton_strategies(classify_kernel(specialized), specialized) == ["pipeline_stages"]  # all else in place


# Triton attention v0 of the demo (run's profile, H100): SM throughput leads, no pipe near its roof,
# the softmax's compares and masks (ALU) and exponentials (XU) fill the issue slots; tl.dot is on HGMMA.
SOFTMAX_HEAVY = dict(sm_throughput_pct=65.8, memory_throughput_pct=48.0, l2_throughput_pct=48.0,
                     l1_throughput_pct=34.5, dram_throughput_pct=8.6, achieved_occupancy_pct=24.2,
                     theoretical_occupancy_pct=25.0, issue_slots_busy_pct=67.9, tensor_pipe_pct=33.6,
                     fma_pipe_pct=34.3, alu_pipe_pct=42.6, xu_pipe_pct=35.8, stalls={"not_selected": 2.8, "wait": 1.2})


def test_a_triton_kernel_on_the_tensor_cores_is_never_told_to_change_its_dot_precision():
    metrics = kernel(**SOFTMAX_HEAVY, executed_opcodes={"HGMMA": 64.0, "LDGSTS": 8.0})
    result = classify_kernel(metrics)
    assert (result.label, result.pipes.busiest, result.pipes.at_roof) == ("compute_bound", "ALU", False)
    # fewer instructions on the busy pipes first: mask-free blocks (ALU), exp2 (XU); the FMA pipe's
    # dot_precision is in place (HGMMA), so its tile_shape follows
    assert triton_strategies(result, metrics) == ["mask_free_blocks", "fast_math", "tile_shape", "autotune"]
    why = suggest(result, metrics, ("triton",))[0].why
    assert why == "SM throughput leads and the ALU pipe is among the busiest (42.6%): fewer instructions there"


def test_an_fp32_triton_dot_on_the_fma_pipe_is_still_told_to_use_tensor_cores():
    metrics = kernel(sm_throughput_pct=70.0, memory_throughput_pct=40.0, fma_pipe_pct=65.0, alu_pipe_pct=20.0,
                     tensor_pipe_pct=0.0, executed_opcodes={"FFMA": 4096.0, "LDS": 512.0})
    result = classify_kernel(metrics)
    assert result.label == "compute_bound"
    assert triton_strategies(result, metrics)[:2] == ["dot_precision", "tile_shape"]


# CUDA GEMM v3 of the demo (run's profile, H100): mma.sync fed through registers, no cp.async, 25%
# occupancy limited by 123 registers, long_scoreboard 60% of stalls. The run's next step, a
# 3-stage cp.async pipeline, gained 2.38x; cutting registers would have cut the tile's reuse.
STARVED_MMA = dict(sm_throughput_pct=18.3, memory_throughput_pct=38.8, l1_throughput_pct=38.8,
                   l2_throughput_pct=13.1, dram_throughput_pct=5.0, achieved_occupancy_pct=24.2,
                   theoretical_occupancy_pct=25.0, block_limit_registers_blocks=2, eligible_warps_per_scheduler=0.16,
                   issue_slots_busy_pct=12.4, tensor_pipe_pct=18.4)


def test_an_occupancy_bound_mma_kernel_keeps_more_work_in_flight_before_giving_up_registers():
    metrics = kernel(**STARVED_MMA, stalls={"long_scoreboard": 6.0, "wait": 1.0},
                     executed_opcodes={"HMMA": 128.0, "LDSM": 32.0, "LDG": 16.0, "STS": 16.0})
    result = classify_kernel(metrics)
    assert result.label == "occupancy_bound"
    assert cuda_strategies(result, metrics) == ["cp_async_pipeline", "more_bytes_in_flight", "register_limit",
                                                "smem_limit"]
    waiting = kernel(**STARVED_MMA, stalls={"wait": 6.0, "long_scoreboard": 1.0},
                     executed_opcodes={"HMMA": 128.0, "LDSM": 32.0})
    assert cuda_strategies(classify_kernel(waiting), waiting) == ["more_ilp", "register_limit", "smem_limit",
                                                                  "block_shape"]


def test_an_occupancy_bound_kernel_without_tensor_instructions_still_starts_at_its_limiter():
    metrics = kernel(**STARVED_MMA, stalls={"long_scoreboard": 6.0}, executed_opcodes={"FFMA": 512.0, "LDG": 16.0})
    result = classify_kernel(metrics)
    assert result.label == "occupancy_bound"
    assert cuda_strategies(result, metrics)[0] == "register_limit"


# --- the H100 re-profile of the demo (2026-11-25): numbers from demo/cuda/gemm/vN/reprofile/ ------

# GEMM v9: TMA loads, wgmma, one block per SM; its only LSU global traffic is the epilogue's 2-byte
# stores from the accumulator fragments (8 sectors per request, 4x the ideal), lg_throttle 25%. The
# run's v10 staged C through shared memory and stored 16-byte pieces: 1.32x.
GEMM_V9 = dict(sm_throughput_pct=61.1, memory_throughput_pct=63.5, l2_throughput_pct=63.5, l1_throughput_pct=52.7,
               dram_throughput_pct=24.6, achieved_occupancy_pct=12.4, theoretical_occupancy_pct=12.5,
               block_limit_registers_blocks=1, eligible_warps_per_scheduler=0.16, issue_slots_busy_pct=13.2,
               tensor_pipe_pct=66.1, stalls={"long_scoreboard": 32.2, "lg_throttle": 24.5, "wait": 9.6},
               global_store_sectors_per_request=8.0, global_store_sectors=4194304.0, global_store_requests=524288.0,
               global_load_sectors=0.0, global_load_requests=0.0,
               executed_opcodes={"HGMMA": 1048576.0, "UTMALDG": 163840.0},
               executed_global_accesses={"STG.E.U16": 524288.0})


def test_scattered_stores_that_are_most_of_the_global_traffic_come_first():
    metrics = kernel(**GEMM_V9)
    result = classify_kernel(metrics)
    assert (result.label, result.access.wasted_pct) == ("overlap_bound", 75.0)
    assert cuda_strategies(result, metrics) == ["coalesce_access", "pipeline_depth", "warp_specialization",
                                                "vector_loads"]
    assert suggest(result, metrics, ("cuda",))[0].why == ("scattered global stores: 75% of the global sectors "
                                                          "through L1 are waste")
    # GEMM v7: the same stores beside 67M sectors of coalesced cp.async loads are 4% of the traffic: a side cost
    beside = kernel(**{**GEMM_V9, "global_load_sectors": 67108864.0, "global_load_requests": 4194304.0,
                       "global_load_sectors_per_request": 16.0,
                       "executed_global_accesses": {"STG.E.U16": 524288.0, "LDGSTS.E.BYPASS.128": 4194304.0}})
    side = classify_kernel(beside)
    assert round(side.access.wasted_pct, 1) == 4.4 and "uncoalesced_stores" in keys(side)
    assert cuda_strategies(side, beside)[0] == "pipeline_depth" and "coalesce_access" not in cuda_strategies(
        side, beside)[:1]


# GEMM v4: cp.async into rows padded by 16 bytes, 19 sectors per 16-byte copy, L2 at 85% (91% hits).
GEMM_V4 = dict(sm_throughput_pct=43.1, memory_throughput_pct=84.6, l2_throughput_pct=84.6, l1_throughput_pct=60.9,
               dram_throughput_pct=11.9, achieved_occupancy_pct=24.2, theoretical_occupancy_pct=25.0,
               tensor_pipe_pct=44.6, shared_load_bank_conflicts=0.0, shared_load_wavefronts=1000.0,
               stalls={"wait": 30.0, "barrier": 13.0}, global_load_sectors_per_request=19.0,
               global_load_sectors=79691776.0, global_load_requests=4194304.0,
               executed_opcodes={"HMMA": 33554432.0, "LDGSTS": 4194304.0},
               executed_global_accesses={"LDGSTS.E.BYPASS.128": 4194304.0})


def test_split_copies_into_a_busy_l2_point_at_a_swizzled_layout_before_larger_tiles():
    metrics = kernel(**GEMM_V4)
    result = classify_kernel(metrics)
    assert (result.label, result.memory_limiter) == ("memory_bound", "L2")
    assert {"split_async_copies", "memory_at_peak"} <= keys(result) and "uncoalesced_loads" not in keys(result)
    assert cuda_strategies(result, metrics)[:3] == ["smem_swizzle", "smem_tiling", "l2_reuse"]
    # GEMM v5: the same copies in an overlap-bound mma.sync pipeline: wgmma and TMA (which swizzle) first
    overlap = kernel(**{**GEMM_V4, "memory_throughput_pct": 58.7, "l2_throughput_pct": 58.7,
                        "achieved_occupancy_pct": 12.4, "theoretical_occupancy_pct": 12.5,
                        "global_load_sectors_per_request": 18.67})
    assert cuda_strategies(classify_kernel(overlap), overlap)[:2] == ["wgmma", "tma_pipeline"]


def test_a_latency_bound_mma_kernel_reads_its_barrier_as_tile_staging_not_a_reduction():
    # GEMM v1: mma.sync, tiles staged with 2-byte loads, 49.8% of a theoretical 50% occupancy
    metrics = kernel(sm_throughput_pct=25.8, memory_throughput_pct=44.6, l1_throughput_pct=44.6,
                     l2_throughput_pct=14.5, dram_throughput_pct=8.1, achieved_occupancy_pct=49.8,
                     theoretical_occupancy_pct=50.0, block_limit_registers_blocks=1,
                     eligible_warps_per_scheduler=0.73, issue_slots_busy_pct=25.5, tensor_pipe_pct=16.9,
                     stalls={"barrier": 35.0, "long_scoreboard": 25.0, "short_scoreboard": 12.0},
                     executed_opcodes={"HMMA": 1000.0, "LDSM": 500.0, "LDG": 4000.0})
    result = classify_kernel(metrics)
    assert result.label == "latency_bound" and "warps are stalled, not starved" in result.reason
    assert cuda_strategies(result, metrics)[:2] == ["cp_async_pipeline", "more_bytes_in_flight"]
    # the same stalls without tensor instructions: a reduction's barrier
    plain = replace(metrics, executed_opcodes={"FFMA": 1000.0})
    assert cuda_strategies(classify_kernel(plain), plain)[0] == "warp_shuffle_reduce"


# --- advice that fits the chip and the problem -----------------------------------------------------

ELEMENTWISE = ProblemTraits(family="elementwise", family_source="the reference calls tanh, pow")


def test_an_ampere_chip_is_never_sent_to_hopper_only_hardware():
    idle = kernel(sm_throughput_pct=90.0, tensor_pipe_pct=0.0)
    assert cuda_strategies(classify_kernel(idle), idle, capability="8.0")[:2] == ["tensor_cores", "fewer_instructions"]
    mma_sync = kernel(**OVERLAP, executed_opcodes={"HMMA": 128.0, "LDGSTS": 8.0})
    # on Hopper: wgmma, tma_pipeline, softmax_mma_overlap, pingpong_warpgroups; on an A100 only deeper cp.async stages
    assert cuda_strategies(classify_kernel(mma_sync), mma_sync, capability="8.0") == ["pipeline_depth"]
    loads = kernel(**{**OVERLAP, "stalls": {"long_scoreboard": 4.0, "wait": 1.0}},
                   executed_opcodes={"HGMMA": 128.0, "LDGSTS": 8.0})
    triton = [s.strategy for s in suggest(classify_kernel(loads), loads, ("triton",), "8.6")]
    assert triton == ["pipeline_stages"]  # no tensor_descriptors (TMA) nor warp_specialize (setmaxnreg) on sm_86
    # Blackwell has TMA but no wgmma
    assert "wgmma" not in cuda_strategies(classify_kernel(idle), idle, capability="10.0")


def test_an_elementwise_kernel_gets_no_matmul_or_reduction_advice():
    busy = kernel(sm_throughput_pct=90.0, tensor_pipe_pct=0.0)  # e.g. a GELU's tanh keeping the SM busy
    result = classify_kernel(busy)
    assert [s.strategy for s in suggest(result, busy, ("cuda",), "9.0", ELEMENTWISE)] == ["fewer_instructions",
                                                                                       "fast_math"]
    assert [s.strategy for s in suggest(result, busy, ("triton",), "9.0", ELEMENTWISE)] == ["autotune", "fast_math"]
    barrier = kernel(stalls={"barrier": 5.0, "long_scoreboard": 1.0})
    assert "warp_shuffle_reduce" not in [s.strategy for s in suggest(classify_kernel(barrier), barrier, ("cuda",),
                                                                      "9.0", ELEMENTWISE)]


def test_a_family_nothing_decided_filters_nothing():
    busy = kernel(sm_throughput_pct=90.0, tensor_pipe_pct=0.0)
    result = classify_kernel(busy)
    unknown = ProblemTraits(family="other")
    assert suggest(result, busy, ("cuda",), "9.0", unknown) == suggest(result, busy, ("cuda",), "9.0")


# A fresh agent's v1 for KernelBench level2 88 (H200): a 3xTF32 Triton GEMM on wgmma and cp.async, L1/shared leading
# at 61% with 10% bank conflicts, the tensor pipe at 42%, 18% occupancy. Labelled memory_bound, it was sent to
# block_size, vector_hints and cache_hints, which TRITON.md writes for elementwise and row kernels.
TF32X3_GEMM = dict(sm_throughput_pct=40.8, memory_throughput_pct=61.0, l1_throughput_pct=61.0, l2_throughput_pct=39.1,
                   dram_throughput_pct=5.3, achieved_occupancy_pct=17.9, theoretical_occupancy_pct=18.8,
                   block_limit_registers_blocks=3, block_limit_shared_memory_blocks=3, grid_size_blocks=2048,
                   block_size_threads=128, waves_per_sm=5.17, tensor_pipe_pct=42.3, fma_pipe_pct=14.0,
                   alu_pipe_pct=41.3, shared_load_bank_conflicts=15461.0, shared_load_wavefronts=150000.0,
                   shared_store_bank_conflicts=19.04e6, shared_store_wavefronts=180e6,
                   stalls={"barrier": 2.3, "wait": 1.9, "long_scoreboard": 1.3},
                   executed_opcodes={"HGMMA": 25.17e6, "LDSM": 8.39e6, "LDGSTS": 16.91e6})
MATMUL = ProblemTraits(family="matmul_like", family_source="the reference calls Linear, gemm")


def test_a_memory_bound_triton_gemm_gets_tile_and_pipeline_advice_not_elementwise_blocks():
    metrics = kernel(**TF32X3_GEMM)
    result = classify_kernel(metrics)
    assert (result.label, result.memory_limiter) == ("memory_bound", "L1/shared")
    picked = [s.strategy for s in suggest(result, metrics, ("triton",), "9.0", MATMUL)]
    assert picked == ["tile_shape", "pipeline_stages", "grouped_order", "tensor_descriptors"]
    assert [s.strategy for s in suggest(result, metrics, ("triton",), "8.0", MATMUL)] == [
        "tile_shape", "pipeline_stages", "grouped_order"]  # no TMA on an A100
    rows = ProblemTraits(family="row_reduction", family_source="the reference calls softmax")
    assert [s.strategy for s in suggest(result, metrics, ("triton",), "9.0", rows)][:2] == ["block_size",
                                                                                          "vector_hints"]


def test_a_saturated_shared_memory_sends_a_gemm_to_larger_tiles_and_a_row_kernel_to_larger_blocks():
    metrics = kernel(l1_throughput_pct=88.0, memory_throughput_pct=88.0)
    result = classify_kernel(metrics)
    assert "memory_at_peak" in keys(result) and result.memory_limiter == "L1/shared"
    first = suggest(result, metrics, ("triton",), "9.0", MATMUL)[0]
    assert (first.strategy, first.why) == ("tile_shape", "L1/shared is at its peak: larger tiles reuse each loaded "
                                                         "operand more")
    rows = ProblemTraits(family="row_reduction", family_source="the reference calls softmax")
    assert suggest(result, metrics, ("triton",), "9.0", rows)[0].strategy == "block_size"


# The L2_1 trial's v1 (H200): an implicit-GEMM Conv2D in Triton whose A tile walks output pixels across rows and
# whose weights are read along a strided channel axis: L1/shared the busiest unit at 72.7%, DRAM 1.6%, global loads
# at 18 sectors per request, lg_throttle 28%. The trial's v2 laid the tile along one output row and permuted the
# weights: 2.18x.
CONV_V1 = dict(sm_throughput_pct=40.0, memory_throughput_pct=72.7, l1_throughput_pct=72.7, l2_throughput_pct=28.2,
               dram_throughput_pct=1.6, achieved_occupancy_pct=6.2, theoretical_occupancy_pct=6.25,
               tensor_pipe_pct=6.7, stalls={"lg_throttle": 28.0, "long_scoreboard": 23.0},
               global_load_sectors_per_request=18.0, global_load_sectors=72000000.0, global_load_requests=4000000.0,
               global_store_sectors=0.0, global_store_requests=0.0, executed_global_accesses={"LDG.E": 4000000.0})


def test_a_triton_kernel_whose_scattered_loads_are_its_traffic_is_pointed_at_coalescing_first():
    metrics = kernel(**CONV_V1)
    result = classify_kernel(metrics)
    assert "uncoalesced_loads" in keys(result) and result.access.uncoalesced_lead
    picked = suggest(result, metrics, ("triton",), "9.0", MATMUL)
    assert picked[0].strategy == "coalesce_access"
    assert picked[0].why == "scattered global loads: 78% of the global sectors through L1 are waste"
    assert "coalesce_access" in guide_anchors("triton")


def test_fewer_programs_than_sms_sends_a_triton_reduction_to_split_it_before_a_persistent_loop():
    """Decode attention with one program per (batch, KV head): 64 programs on 132 SMs, each streaming its cache.
    A persistent loop spreads programs that exist; only splitting the KV length makes more."""
    decode = kernel(grid_size_blocks=64, sm_count=132, waves_per_sm=0.24, dram_throughput_pct=21.0,
                    memory_throughput_pct=21.0, stalls={"long_scoreboard": 6.0})
    result = classify_kernel(decode)
    assert result.grid.small_grid
    attention = ProblemTraits(family="matmul_like", family_source="the reference calls scaled_dot_product_attention")
    picked = suggest(result, decode, ("triton",), "9.0", attention)
    assert [s.strategy for s in picked][:2] == ["split_k", "persistent_kernel"]
    assert picked[0].why.startswith("64 blocks for 132 SMs: split the reduction axis")
    assert cuda_strategies(result, decode)[:2] == ["split_work", "persistent_kernel"]
    rows = ProblemTraits(family="row_reduction", family_source="the reference calls softmax")
    assert [s.strategy for s in suggest(result, decode, ("triton",), "9.0", rows)][0] == "split_k"
    assert "split_k" not in [s.strategy for s in suggest(result, decode, ("triton",), "9.0", ELEMENTWISE)]
    # more programs than SMs, under one wave of resident ones: the persistent loop comes first, as before
    wide = kernel(grid_size_blocks=200, sm_count=132, waves_per_sm=0.4)
    wide_result = classify_kernel(wide)
    assert wide_result.grid.small_grid
    assert [s.strategy for s in suggest(wide_result, wide, ("triton",), "9.0", attention)][:2] == [
        "persistent_kernel", "split_k"]
