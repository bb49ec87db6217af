"""The classifier on hand-built metric records: every label, every threshold edge, the evidence."""

import re

import pytest

from kernel_opt.profile import classify
from kernel_opt.profile.classify import classify as classify_kernel
from kernel_opt.profile.guides import SKILL_ROOT
from kernel_opt.profile.ncu.metrics import KernelMetrics
from kernel_opt.profile.thresholds import THRESHOLDS


def kernel(**overrides) -> KernelMetrics:
    """A kernel that fills an H100 (132 SMs, 3.9 waves) at 80% occupancy and 20% of every peak."""
    values = dict(
        sm_throughput_pct=20.0, memory_throughput_pct=20.0, dram_throughput_pct=20.0, l2_throughput_pct=15.0,
        l1_throughput_pct=10.0, achieved_occupancy_pct=80.0, theoretical_occupancy_pct=100.0, grid_size_blocks=4096,
        block_size_threads=256, sm_count=132, waves_per_sm=3.9, block_limit_registers_blocks=8,
        block_limit_shared_memory_blocks=32, block_limit_warps_blocks=8, block_limit_sm_blocks=32, duration_us=120.0,
    )
    values.update(overrides)
    return KernelMetrics(**values)


def keys(result) -> set[str]:
    return {finding.key for finding in result.findings}


def finding(result, key):
    return next(item for item in result.findings if item.key == key)


# --- primary labels ---------------------------------------------------------------------------


def test_dram_at_85_percent_is_memory_bound_on_dram():
    result = classify_kernel(kernel(dram_throughput_pct=85.0, memory_throughput_pct=85.0))
    assert result.label == "memory_bound" and result.memory_limiter == "DRAM" and not result.small_grid
    assert result.memory_sol_pct == 85.0 and result.sm_sol_pct == 20.0
    assert "memory_at_peak" in keys(result) and finding(result, "memory_at_peak").evidence == {
        "memory_sol_pct": 85.0, "memory_limiter": "DRAM"}
    assert "DRAM" in result.reason and "65.0 points" in result.reason


def test_l1_at_85_with_dram_at_20_is_memory_bound_on_l1_not_latency_bound():
    result = classify_kernel(kernel(l1_throughput_pct=85.0, dram_throughput_pct=20.0, memory_throughput_pct=85.0))
    assert result.label == "memory_bound" and result.memory_limiter == "L1/shared"
    assert result.evidence["l1_throughput_pct"] == 85.0 and result.evidence["dram_throughput_pct"] == 20.0


def test_l1_counts_even_when_ncu_memory_throughput_is_missing():
    result = classify_kernel(kernel(l1_throughput_pct=85.0, memory_throughput_pct=None))
    assert result.label == "memory_bound" and result.memory_limiter == "L1/shared" and result.memory_sol_pct == 85.0


def test_l2_can_be_the_limiter():
    result = classify_kernel(kernel(l2_throughput_pct=75.0, memory_throughput_pct=75.0))
    assert result.label == "memory_bound" and result.memory_limiter == "L2" and "memory_at_peak" not in keys(result)


def test_sm_at_85_is_compute_bound():
    result = classify_kernel(kernel(sm_throughput_pct=85.0, memory_throughput_pct=30.0, dram_throughput_pct=30.0))
    assert result.label == "compute_bound" and "compute_at_peak" in keys(result)


def test_both_below_the_latency_line_with_low_occupancy_is_occupancy_bound_with_the_limiter():
    result = classify_kernel(kernel(achieved_occupancy_pct=12.0, theoretical_occupancy_pct=12.5,
                                    block_limit_shared_memory_blocks=1, block_limit_registers_blocks=8))
    assert result.label == "occupancy_bound"
    assert result.occupancy.limiters == ["shared memory"] and result.occupancy.low and not result.occupancy.gap
    assert "shared memory (1 blocks/SM)" in result.reason


def test_both_below_the_latency_line_with_good_occupancy_is_latency_bound():
    result = classify_kernel(kernel(achieved_occupancy_pct=80.0,
                                    stalls={"long_scoreboard": 8.0, "selected": 1.0, "wait": 1.0}))
    assert result.label == "latency_bound" and result.top_stall == "long_scoreboard"
    assert finding(result, "top_stall").evidence == {"long_scoreboard": 80.0, "wait": 10.0}


def test_a_one_block_grid_on_132_sms_is_small_grid_and_latency_bound_even_at_low_occupancy():
    result = classify_kernel(kernel(grid_size_blocks=1, waves_per_sm=0.0, achieved_occupancy_pct=0.4))
    assert result.small_grid and result.label == "latency_bound"
    assert finding(result, "small_grid").evidence == {"grid_size_blocks": 1, "sm_count": 132, "waves_per_sm": 0.0}
    assert "low_occupancy" not in keys(result)  # the grid, not the SM's resources, starves it


def test_missing_speed_of_light_metrics_give_no_label():
    result = classify_kernel(KernelMetrics(grid_size_blocks=10))
    assert result.label is None and "SpeedOfLight" in result.reason


# --- threshold edges --------------------------------------------------------------------------


@pytest.mark.parametrize("busiest, label", [(59.9, "latency_bound"), (60.0, "memory_bound")])
def test_latency_line_edge(busiest, label):
    assert classify_kernel(kernel(dram_throughput_pct=busiest, memory_throughput_pct=busiest)).label == label


@pytest.mark.parametrize("memory, sm, label, balanced", [
    (70.0, 60.1, "memory_bound", True),   # 9.9 points apart: balanced, labelled by the higher
    (70.0, 60.0, "memory_bound", False),  # exactly 10 points: memory leads
    (65.0, 70.0, "compute_bound", True),
    (60.0, 70.0, "compute_bound", False),
    (70.0, 70.0, "memory_bound", True),   # a tie goes to memory
])
def test_balance_edge(memory, sm, label, balanced):
    result = classify_kernel(kernel(dram_throughput_pct=memory, memory_throughput_pct=memory, sm_throughput_pct=sm))
    assert (result.label, result.balanced, "balanced" in keys(result)) == (label, balanced, balanced)


@pytest.mark.parametrize("value, at_peak", [(79.9, False), (80.0, True)])
def test_high_throughput_edge(value, at_peak):
    memory = classify_kernel(kernel(dram_throughput_pct=value, memory_throughput_pct=value))
    compute = classify_kernel(kernel(sm_throughput_pct=value))
    assert ("memory_at_peak" in keys(memory), "compute_at_peak" in keys(compute)) == (at_peak, at_peak)


@pytest.mark.parametrize("achieved, theoretical, label", [
    (49.9, 49.9, "occupancy_bound"), (50.0, 50.0, "latency_bound"),
    # built for the line and achieving it: 49.8% of 50% (demo CUDA GEMM v1 on the H100) is not below it
    (49.8, 50.0, "latency_bound"), (40.1, 50.0, "latency_bound"),
    # ... unless achieved falls the gap margin short of what it was built for
    (40.0, 50.0, "occupancy_bound"), (30.0, 100.0, "occupancy_bound"),
])
def test_low_occupancy_edge(achieved, theoretical, label):
    assert classify_kernel(kernel(achieved_occupancy_pct=achieved, theoretical_occupancy_pct=theoretical,
                                  block_limit_registers_blocks=4)).label == label


@pytest.mark.parametrize(
    "grid, waves, small", [(131, 2.0, True), (132, 0.99, True), (132, 1.0, False), (1000, 7.6, False)]
)
def test_small_grid_edge(grid, waves, small):
    assert classify_kernel(kernel(grid_size_blocks=grid, waves_per_sm=waves)).small_grid is small


@pytest.mark.parametrize("achieved, gap", [(90.0, True), (90.1, False)])
def test_occupancy_gap_edge(achieved, gap):
    result = classify_kernel(kernel(achieved_occupancy_pct=achieved, theoretical_occupancy_pct=100.0))
    assert result.occupancy.gap is gap and ("occupancy_gap" in keys(result)) is gap


def test_an_occupancy_gap_alone_can_make_a_kernel_occupancy_bound():
    result = classify_kernel(kernel(achieved_occupancy_pct=30.0, theoretical_occupancy_pct=100.0))
    assert result.label == "occupancy_bound" and result.occupancy.gap and result.occupancy.limiters == []
    assert "imbalanced blocks" in result.reason


def test_tied_occupancy_limiters_are_all_named_and_full_occupancy_names_none():
    tied = classify_kernel(kernel(theoretical_occupancy_pct=25.0, block_limit_registers_blocks=2,
                                  block_limit_shared_memory_blocks=2))
    assert tied.occupancy.limiters == ["registers", "shared memory"]
    assert classify_kernel(kernel()).occupancy.limiters == []


@pytest.mark.parametrize("sectors, flagged", [(16.0, False), (16.1, True)])
def test_uncoalesced_edge(sectors, flagged):
    result = classify_kernel(kernel(global_load_sectors_per_request=sectors, global_store_sectors_per_request=4.0))
    assert ("uncoalesced_loads" in keys(result)) is flagged and "uncoalesced_stores" not in keys(result)


@pytest.mark.parametrize("conflicts, flagged", [(9.9, False), (10.0, True)])
def test_bank_conflict_edge(conflicts, flagged):
    result = classify_kernel(kernel(shared_load_bank_conflicts=conflicts, shared_load_wavefronts=100.0,
                                    shared_store_bank_conflicts=0.0, shared_store_wavefronts=0.0))
    assert ("bank_conflicts" in keys(result)) is flagged


def test_local_memory_is_flagged_with_its_sectors():
    result = classify_kernel(kernel(local_load_sectors=128.0, local_store_sectors=64.0))
    assert finding(result, "local_memory").evidence == {"local_load_sectors": 128.0, "local_store_sectors": 64.0}
    assert "local_memory" not in keys(classify_kernel(kernel(local_load_sectors=0.0, local_store_sectors=0.0)))


@pytest.mark.parametrize("threads, uniform, flagged", [(24.0, 90.0, False), (23.9, 100.0, True), (32.0, 89.9, True)])
def test_divergence_edges(threads, uniform, flagged):
    result = classify_kernel(kernel(threads_per_warp_instruction=threads, branch_uniformity_pct=uniform))
    assert ("divergence" in keys(result)) is flagged


@pytest.mark.parametrize("tensor, idle", [(9.9, True), (10.0, False)])
def test_tensor_pipe_idle_edge_in_a_compute_bound_kernel(tensor, idle):
    result = classify_kernel(kernel(sm_throughput_pct=85.0, tensor_pipe_pct=tensor, fma_pipe_pct=85.0))
    assert ("tensor_pipe_idle" in keys(result)) is idle


@pytest.mark.parametrize("issue, flagged", [(79.9, False), (80.0, True)])
def test_issue_bound_edge(issue, flagged):
    assert ("issue_bound" in keys(classify_kernel(kernel(issue_slots_busy_pct=issue)))) is flagged


@pytest.mark.parametrize("duration, short", [(4.9, True), (5.0, False)])
def test_short_kernel_edge(duration, short):
    assert ("short_kernel" in keys(classify_kernel(kernel(duration_us=duration)))) is short


# --- the per-pipe compute roof ------------------------------------------------------------------

# cuBLAS bf16 GEMM 8192^3 on an H100 as issue 15 read it: tensor pipe 96.9%, SM 93.2%, L1/shared 98.1%.
CUBLAS_8192 = dict(sm_throughput_pct=93.2, l1_throughput_pct=98.1, memory_throughput_pct=98.1, dram_throughput_pct=30.0,
                   l2_throughput_pct=45.0, tensor_pipe_pct=96.9, fma_pipe_pct=0.1, alu_pipe_pct=3.0, xu_pipe_pct=0.0,
                   lsu_pipe_pct=1.2, achieved_occupancy_pct=14.0, theoretical_occupancy_pct=18.75,
                   shared_load_bank_conflicts=900.0, shared_load_wavefronts=1.0e6, shared_store_bank_conflicts=0.0,
                   shared_store_wavefronts=6.0e5)


def test_cublas_at_the_tensor_roof_is_compute_bound_on_the_tensor_pipe_not_memory_bound_on_l1():
    result = classify_kernel(kernel(**CUBLAS_8192))
    assert result.label == "compute_bound" and result.pipes.busiest == "tensor" and result.pipes.at_roof
    assert result.memory_limiter == "L2" and result.shared.operand_staging
    assert result.reason == ("the tensor pipe runs at 96.9% of its peak (>= 80%, its roof): compute_bound on the "
                             "tensor pipe; memory 45.0% (L2); L1/shared at 98.1% does not change that")
    assert finding(result, "pipe_at_roof").evidence == {"pipe": "tensor", "pipe_pct": 96.9}
    assert "tensor-core roof" in finding(result, "pipe_at_roof").text and "compute_at_peak" not in keys(result)
    assert {"operand_staging", "memory_at_peak"} & keys(result) == {"operand_staging"}


def test_a_pipe_at_its_roof_wins_over_busy_l1_even_when_staging_cannot_be_checked():
    metrics = kernel(**{**CUBLAS_8192, "shared_load_wavefronts": None, "shared_store_wavefronts": None})
    result = classify_kernel(metrics)
    assert result.label == "compute_bound" and result.memory_limiter == "L1/shared" and result.balanced


@pytest.mark.parametrize("tensor, label", [(79.9, "memory_bound"), (80.0, "compute_bound")])
def test_pipe_roof_edge(tensor, label):
    metrics = kernel(tensor_pipe_pct=tensor, sm_throughput_pct=78.0, dram_throughput_pct=85.0,
                     memory_throughput_pct=85.0)
    assert classify_kernel(metrics).label == label  # below the roof: memory 85% vs SM 78%, balanced, memory


def test_dram_well_ahead_of_a_pipe_at_its_roof_is_still_memory_bound():
    result = classify_kernel(kernel(fma_pipe_pct=82.0, sm_throughput_pct=82.0, dram_throughput_pct=95.0,
                                    memory_throughput_pct=95.0))
    assert result.label == "memory_bound" and result.memory_limiter == "DRAM" and "13.0 points higher" in result.reason


@pytest.mark.parametrize("pipe, field_name", [("FMA", "fma_pipe_pct"), ("ALU", "alu_pipe_pct"),
                                              ("FP64", "fp64_pipe_pct"), ("XU", "xu_pipe_pct")])
def test_every_math_pipe_has_a_roof(pipe, field_name):
    result = classify_kernel(kernel(**{field_name: 88.0, "sm_throughput_pct": 70.0, "dram_throughput_pct": 65.0,
                                       "memory_throughput_pct": 65.0}))
    assert (result.label, result.pipes.busiest) == ("compute_bound", pipe)  # SM 70 vs memory 65 alone: balanced


def test_the_lsu_pipe_at_its_roof_is_never_a_compute_roof():
    result = classify_kernel(kernel(lsu_pipe_pct=95.0, fma_pipe_pct=30.0, sm_throughput_pct=81.0,
                                    l1_throughput_pct=82.0, memory_throughput_pct=82.0))
    assert result.label == "memory_bound" and result.memory_limiter == "L1/shared"
    assert result.pipes.busiest == "FMA" and not result.pipes.at_roof and result.pipes.utilisation_pct["LSU"] == 95.0


# --- shared memory: operand staging or bank conflicts -------------------------------------------

STAGING = dict(tensor_pipe_pct=40.0, l1_throughput_pct=75.0, memory_throughput_pct=75.0, dram_throughput_pct=20.0,
               l2_throughput_pct=30.0, sm_throughput_pct=45.0, shared_load_bank_conflicts=0.0,
               shared_load_wavefronts=1000.0, shared_store_bank_conflicts=0.0, shared_store_wavefronts=200.0)


def test_busy_l1_in_a_conflict_free_tensor_core_kernel_is_operand_staging_not_a_memory_verdict():
    result = classify_kernel(kernel(**STAGING))
    assert result.label == "latency_bound" and result.memory_limiter == "L2" and result.memory_sol_pct == 30.0
    assert result.shared.operand_staging and result.evidence["l1_operand_staging"] is True
    assert finding(result, "operand_staging").evidence == {"l1_throughput_pct": 75.0, "tensor_pipe_pct": 40.0,
                                                           "shared_bank_conflict_pct": 0.0}


@pytest.mark.parametrize("overrides, why", [
    (dict(shared_load_bank_conflicts=120.0), "bank conflicts: 10% of the 1200 wavefronts"),
    (dict(tensor_pipe_pct=9.9), "tensor pipe idle: L1 traffic is not feeding tensor cores"),
    (dict(lsu_pipe_pct=80.0), "LSU at its roof: too many load/store instructions"),
])
def test_only_real_shared_memory_problems_keep_the_memory_verdict_on_l1(overrides, why):
    result = classify_kernel(kernel(**{**STAGING, **overrides}))
    assert (result.label, result.memory_limiter, result.shared.operand_staging) == ("memory_bound", "L1/shared",
                                                                                    False), why


def test_without_conflict_counts_l1_still_counts_and_the_verdict_says_what_it_could_not_check():
    result = classify_kernel(kernel(**{**STAGING, "shared_load_wavefronts": None, "shared_store_wavefronts": None}))
    assert result.label == "memory_bound" and result.memory_limiter == "L1/shared"
    assert any(note.startswith("L1/shared operand staging: shared-memory bank conflicts") for note in result.unverified)


def test_a_kernel_without_lsu_shared_traffic_has_no_conflicts():
    result = classify_kernel(kernel(**{**STAGING, "shared_load_wavefronts": 0.0, "shared_store_wavefronts": 0.0}))
    assert result.shared.bank_conflict_pct == 0.0 and result.shared.operand_staging  # wgmma reads shared directly


# --- occupancy as a cause; asynchronous pipelines by design --------------------------------------

LOW_OCCUPANCY = dict(achieved_occupancy_pct=12.0, theoretical_occupancy_pct=12.5, block_limit_registers_blocks=1,
                     eligible_warps_per_scheduler=0.3, issue_slots_busy_pct=25.0, tensor_pipe_pct=45.0,
                     fma_pipe_pct=10.0, stalls={"barrier": 4.0, "wait": 3.0, "long_scoreboard": 2.0, "selected": 1.0})


def test_cudnn_style_wgmma_attention_at_low_occupancy_is_overlap_bound_not_occupancy_bound():
    opcodes = {"HGMMA": 4096.0, "UTMALDG": 512.0, "USETMAXREG": 132.0, "MUFU": 9000.0}
    result = classify_kernel(kernel(**LOW_OCCUPANCY, executed_opcodes=opcodes))
    assert result.label == "overlap_bound" and result.design.asynchronous and result.unverified == []
    assert result.design.async_features == ["wgmma (HGMMA x4096)", "TMA (UTMALDG x512)",
                                            "warp specialization (USETMAXREG x132)"]
    assert "by design of an asynchronous pipeline" in result.reason and "barrier 40%" in result.reason
    assert "low_occupancy" not in keys(result) and "async_pipeline" in keys(result)


def test_a_static_analysis_can_show_the_design_when_the_report_has_no_opcode_mix():
    result = classify_kernel(kernel(**LOW_OCCUPANCY), static_opcodes={"LDGSTS": 4.0, "HMMA": 128.0})
    assert result.label == "overlap_bound" and result.design.source == "static analysis (compiled SASS)"
    executed = classify_kernel(kernel(**LOW_OCCUPANCY, executed_opcodes={"HMMA": 99.0}),
                               static_opcodes={"LDGSTS": 4.0})
    assert executed.label == "occupancy_bound"  # what ran outranks what a static analysis compiled


def test_the_wgmma_pipe_metric_alone_shows_an_asynchronous_pipeline():
    result = classify_kernel(kernel(**LOW_OCCUPANCY, gmma_instructions_pct=2.4))
    assert result.label == "overlap_bound" and result.design.async_features == ["wgmma (wgmma instruction rate 2.40%)"]


def test_an_asynchronous_pipeline_held_by_a_full_memory_queue_is_latency_bound():
    stalls = {"lg_throttle": 5.0, "barrier": 2.0}
    result = classify_kernel(kernel(**{**LOW_OCCUPANCY, "stalls": stalls}, gmma_instructions_pct=2.0))
    assert result.label == "latency_bound" and "lg_throttle is a full memory queue" in result.reason


ABOVE_THE_LINE = dict(LOW_OCCUPANCY, sm_throughput_pct=60.0, l2_throughput_pct=62.0, memory_throughput_pct=62.0,
                      gmma_instructions_pct=2.0, stalls={"long_scoreboard": 4.0, "lg_throttle": 2.5, "selected": 1.0})


def test_a_wgmma_pipeline_above_the_latency_line_with_nothing_at_its_peak_and_waiting_warps_is_overlap_bound():
    result = classify_kernel(kernel(**ABOVE_THE_LINE))  # CUDA GEMM v9 of the demo: TMA + wgmma, L2 62%, SM 60%
    assert result.label == "overlap_bound"
    assert "while nothing runs near its peak (SM 60.0%, memory 62.0%)" in result.reason


@pytest.mark.parametrize("overrides, label", [
    (dict(stalls={"not_selected": 4.0, "wait": 1.0}), "memory_bound"),  # ready warps, not waiting ones
    (dict(l2_throughput_pct=85.0, memory_throughput_pct=85.0), "memory_bound"),  # L2 at its peak owns the verdict
    (dict(achieved_occupancy_pct=60.0, theoretical_occupancy_pct=62.5), "memory_bound"),  # occupancy is not low
    (dict(l1_throughput_pct=75.0, memory_throughput_pct=75.0, shared_load_bank_conflicts=30.0,
          shared_load_wavefronts=100.0), "memory_bound"),  # a bank-conflict problem on L1/shared stays one
])
def test_above_the_latency_line_overlap_needs_waiting_warps_and_nothing_at_its_peak(overrides, label):
    assert classify_kernel(kernel(**{**ABOVE_THE_LINE, **overrides})).label == label


def test_occupancy_bound_needs_starved_schedulers_and_latency_more_warps_would_hide():
    sass = {"FFMA": 1000.0, "LDG": 100.0}  # no asynchronous feature: the design check is complete
    starved = classify_kernel(kernel(**LOW_OCCUPANCY, executed_opcodes=sass))
    assert starved.label == "occupancy_bound" and starved.unverified == []
    assert "0.30 eligible warps per scheduler, issue slots 25.0% busy" in starved.reason
    busy = classify_kernel(kernel(**{**LOW_OCCUPANCY, "eligible_warps_per_scheduler": 1.5}, executed_opcodes=sass))
    assert busy.label == "latency_bound" and "schedulers are not starved" in busy.reason
    issuing = classify_kernel(kernel(**{**LOW_OCCUPANCY, "issue_slots_busy_pct": 60.0}, executed_opcodes=sass))
    assert issuing.label == "latency_bound"
    throttled = classify_kernel(kernel(**{**LOW_OCCUPANCY, "stalls": {"mio_throttle": 3.0, "wait": 1.0}},
                                       executed_opcodes=sass))
    assert throttled.label == "latency_bound" and "mio_throttle is a full memory queue" in throttled.reason


def test_without_sass_an_occupancy_verdict_says_cp_async_was_not_ruled_out():
    result = classify_kernel(kernel(**LOW_OCCUPANCY, gmma_instructions_pct=0.0, tma_pipe_pct=0.0))
    assert result.label == "occupancy_bound"
    assert result.unverified == ["asynchronous pipeline: cp.async (LDGSTS), warp specialization (USETMAXREG) not "
                                 "visible without the executed opcode mix or a static analysis (either could make it "
                                 "overlap_bound)"]


def test_a_report_without_pipe_metrics_says_the_roof_was_not_checked():
    result = classify_kernel(kernel(dram_throughput_pct=85.0, memory_throughput_pct=85.0))
    assert result.unverified[0].startswith("per-pipe compute roof: no pipe utilisation metrics")
    assert classify_kernel(kernel(dram_throughput_pct=85.0, memory_throughput_pct=85.0, fma_pipe_pct=5.0)
                           ).unverified == []


# --- several kernels ----------------------------------------------------------------------------


def test_the_dominant_kernel_labels_the_solution_and_metrics_are_duration_weighted():
    memory = kernel(dram_throughput_pct=90.0, memory_throughput_pct=90.0, achieved_occupancy_pct=60.0,
                    dram_read_bytes=1000.0, dram_write_bytes=500.0)
    compute = kernel(sm_throughput_pct=90.0, memory_throughput_pct=30.0, dram_throughput_pct=30.0,
                     achieved_occupancy_pct=20.0)
    verdict = classify.summarize([("gemm", 1, "x", 70.0, compute), ("epilogue", 2, "y", 30.0, memory)])
    assert verdict.bottleneck == "compute_bound" and verdict.dominant_kernel == "gemm"
    assert verdict.dominant_share_pct == pytest.approx(70.0)
    assert verdict.metrics["memory_sol_pct"] == pytest.approx(0.7 * 30.0 + 0.3 * 90.0)
    assert verdict.metrics["achieved_occupancy_pct"] == pytest.approx(0.7 * 20.0 + 0.3 * 60.0)
    assert verdict.metrics["duration_us"] == 100.0 and verdict.metrics["dram_bytes"] == 3000.0
    assert [k.classification.label for k in verdict.kernels] == ["compute_bound", "memory_bound"]


def test_a_solution_without_any_classifiable_kernel_is_refused():
    from kernel_opt.core.errors import UsageError

    with pytest.raises(UsageError, match="SpeedOfLight"):
        classify.summarize([("k", 1, "x", 5.0, KernelMetrics(grid_size_blocks=4))])


def test_baseline_comparison_marks_what_moved():
    before = {"bottleneck": "memory_bound", "top_stall": "long_scoreboard", "memory_limiter": "DRAM",
              "metrics": {"duration_us": 100.0, "memory_sol_pct": 90.0, "sm_sol_pct": 20.0, "dram_bytes": 1000.0}}
    after = {"bottleneck": "memory_bound", "top_stall": "lg_throttle", "memory_limiter": "DRAM",
             "metrics": {"duration_us": 80.0, "memory_sol_pct": 89.5, "sm_sol_pct": 25.0, "dram_bytes": 1005.0}}
    changes = {change.name: change for change in classify.compare_with_baseline(before, after)}
    assert not changes["bottleneck"].moved and changes["top_stall"].moved
    assert changes["duration_us"].change == -20.0 and changes["duration_us"].moved
    assert not changes["memory_sol_pct"].moved and changes["sm_sol_pct"].moved
    assert not changes["dram_bytes"].moved  # 0.5% of the bytes: below the 1% that counts
    assert "l2_throughput_pct" not in changes  # in neither summary


# --- the documentation states the same thresholds ------------------------------------------------


def test_ncu_md_lists_every_threshold_with_the_same_value():
    text = (SKILL_ROOT / "profiling" / "NCU.md").read_text()
    documented = {}
    for match in re.finditer(r"^\|\s*`([a-z_]+)`\s*\|\s*([0-9.]+)\s*\|", text, re.MULTILINE):
        documented[match.group(1)] = float(match.group(2))
    assert documented == {name: item.value for name, item in THRESHOLDS.items()}
