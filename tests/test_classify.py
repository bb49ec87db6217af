"""The classifier on hand-built metric records: every label, every threshold edge, the evidence."""

import re

import pytest

from kernel_opt.profile import classify
from kernel_opt.profile.assessments import LABELS
from kernel_opt.profile.classify import classify as classify_kernel
from kernel_opt.profile.guides import SKILL_ROOT, guide_anchors
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


@pytest.mark.parametrize("achieved, label", [(49.9, "occupancy_bound"), (50.0, "latency_bound")])
def test_low_occupancy_edge(achieved, label):
    assert classify_kernel(kernel(achieved_occupancy_pct=achieved, theoretical_occupancy_pct=50.0,
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


# --- where to read next -------------------------------------------------------------------------


def cuda_strategies(result, metrics, capability="9.0"):
    return [s.strategy for s in classify.suggest(result, metrics, ("cuda",), capability)]


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
    from kernel_opt.backends import registry
    from kernel_opt.backends.cuda.suggestions import OCCUPANCY_STRATEGIES, STALL_STRATEGIES

    named = {"cuda": set(), "triton": set()}
    for guide in named:
        for strategies in registry.get(guide).default_strategies.values():
            named[guide].update(strategies)
    named["cuda"].update(s for group in STALL_STRATEGIES.values() for s in group)
    named["cuda"].update(OCCUPANCY_STRATEGIES.values())
    named["cuda"].update({"smem_bank_conflicts", "smem_tiling", "l2_reuse", "fuse_kernels", "launch_overhead",
                          "branch_uniformity", "fewer_instructions"})
    named["triton"].update({"single_pass", "pipeline_stages", "launch_overhead"})
    for guide, names in named.items():
        anchors = guide_anchors(guide)
        assert names <= set(anchors), f"{guide}: {sorted(names - set(anchors))} are not headings"
        for label in LABELS + ("small_grid",):
            assert label in anchors, f"{guide} has no section for {label}"


# --- the documentation states the same thresholds ------------------------------------------------


def test_ncu_md_lists_every_threshold_with_the_same_value():
    text = (SKILL_ROOT / "profiling" / "NCU.md").read_text()
    documented = {}
    for match in re.finditer(r"^\|\s*`([a-z_]+)`\s*\|\s*([0-9.]+)\s*\|", text, re.MULTILINE):
        documented[match.group(1)] = float(match.group(2))
    assert documented == {name: item.value for name, item in THRESHOLDS.items()}
