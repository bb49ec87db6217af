"""The finding rules: the table gives the findings the classifier gave before the table, and each rule stands alone."""

import json
from dataclasses import asdict, replace

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.profile.assessments import (
    assess_grid,
    assess_occupancy,
    assess_pipes,
    assess_shared_memory,
    memory_sol,
)
from kernel_opt.profile.classify import classify
from kernel_opt.profile.design import assess_design
from kernel_opt.profile.findings import (
    FINDING_RULES,
    Finding,
    FindingContext,
    secondary_findings,
    uncoalesced_stores,
)
from kernel_opt.profile.ncu.metric_aliases import CANONICAL_FIELDS
from kernel_opt.profile.ncu.metrics import KernelMetrics
from kernel_opt.profile.ncu.reading import locate_report_reader, read_profile

FIXTURES = FIXTURES_DIR

# --- the recorded fixtures keep their findings -------------------------------------------------

# What the classifier finds in each .ncu-rep of tests/fixtures/ncu/ (H200, ncu 2025.3.1), in report
# order: the findings it gave before they became a table of rules (commit 0a509de), except
# tensor_core_matmul's, which issue 15 changed on purpose (the tensor pipe at its roof replaces
# compute_at_peak and tensor_pipe_at_peak; busy L1/shared is operand staging; the wgmma/TMA/
# setmaxnreg design makes its low occupancy a choice), and less the occupancy findings of memory_streaming
# (DRAM at 92.5%) and tensor_core_matmul (tensor pipe at 95.0%): at a roof occupancy is no lever, so
# neither is reported. Re-recording those reports changes their numbers: then regenerate this table
# from `ncu_profile.py --from-report`.
RECORDED_FINDINGS = {
    "memory_streaming": [
        ("memory_at_peak", "DRAM runs at 92.5% of its peak (>= 80%): only moving fewer bytes through it helps"),
        ("top_stall", "warps spend 94% of the cycles between issues on long_scoreboard (waiting for global or local "
                      "memory (L1TEX) results)"),
        ("divergence", "warps run with 32.0 of 32 threads active per instruction on average; branch uniformity 0.0%"),
    ],
    "naive_gemm_l1": [
        ("memory_at_peak", "L1/shared runs at 81.5% of its peak (>= 80%): only moving fewer bytes through it helps"),
        ("compute_at_peak", "the SM runs at 81.4% of its peak (>= 80%): only fewer or cheaper instructions help"),
        ("balanced", "compute and memory are balanced: a lasting speed-up must reduce both"),
        ("top_stall", "warps spend 28% of the cycles between issues on lg_throttle (the global/local memory "
                      "instruction queue is full)"),
    ],
    "one_block": [
        ("small_grid", "the grid cannot fill the GPU (1 blocks, 132 SMs, 0.00 waves): give it more blocks (split the "
                       "work) or make each block do more in a persistent loop"),
        ("top_stall", "warps spend 81% of the cycles between issues on long_scoreboard (waiting for global or local "
                      "memory (L1TEX) results)"),
    ],
    "shared_memory_limited": [
        ("top_stall", "warps spend 85% of the cycles between issues on long_scoreboard (waiting for global or local "
                      "memory (L1TEX) results)"),
    ],
    "tensor_core_matmul": [
        ("pipe_at_roof", "the tensor pipe runs at 95.0% of its peak (>= 80%): the kernel is at the tensor-core roof "
                         "for this algorithm: only less work (fewer FLOPs: skip masked or all-zero blocks, a cheaper "
                         "algorithm), a lower precision where the problem allows (fp8 doubles the tensor roof, TF32 "
                         "for fp32 inputs), or stopping helps"),
        ("top_stall", "warps spend 31% of the cycles between issues on barrier (waiting at __syncthreads / a block "
                      "barrier)"),
        ("operand_staging", "L1/shared runs at 73.5% but its traffic is tensor-core operand staging (tensor pipe "
                            "95.0%, bank conflicts 7.6% of shared wavefronts): not counted as a memory limit"),
        ("async_pipeline", "built as an asynchronous pipeline: wgmma (HGMMA x2.10M), TMA (UTMALDG x164k), warp "
                           "specialization (USETMAXREG x1584) (from the executed opcode mix (ncu))"),
    ],
}


@pytest.mark.parametrize("name", sorted(RECORDED_FINDINGS))
def test_recorded_reports_get_their_findings(name):
    report = FIXTURES / "ncu" / f"{name}.ncu-rep"
    try:
        locate_report_reader()
    except EnvironmentFault as error:
        pytest.skip(f"ncu_report is not available here ({error.message}); pip install ncu-report==2025.3.1")
    (kernel,) = read_profile(report).kernels
    found = [(finding.key, finding.text) for finding in classify(kernel.metrics).findings]
    assert found == RECORDED_FINDINGS[name]


RECORDED_SUMMARIES = sorted((FIXTURES / "runs").rglob("ncu_summary.json"))


def metrics_from_summary(kernel: dict) -> KernelMetrics:
    """A kernel's canonical metrics as ncu_summary.json recorded them (the stall shares give back the stalls)."""
    recorded = kernel["metrics"]
    return KernelMetrics(**{name: recorded.get(name) for name in CANONICAL_FIELDS},  # newer fields: absent
                         stalls={share["reason"]: share["value"] for share in recorded["stalls"]},
                         stall_unit=recorded["stall_unit"])


OCCUPANCY_FINDINGS = ("low_occupancy", "occupancy_gap")
ROOF_FINDINGS = ("memory_at_peak", "compute_at_peak", "pipe_at_roof")


@pytest.mark.parametrize("path", RECORDED_SUMMARIES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_recorded_runs_get_the_findings_their_summaries_hold(path):
    """Real H100 runs, recorded by ncu_profile.py before the rule table: every finding, text and evidence alike,
    but for an occupancy finding beside a roof, which the rules no longer report."""
    kernels = json.loads(path.read_text())["kernels"]
    assert kernels
    for kernel in kernels:
        at_roof = any(finding["key"] in ROOF_FINDINGS for finding in kernel["findings"])
        expected = [finding for finding in kernel["findings"] if not (at_roof and finding["key"] in OCCUPANCY_FINDINGS)]
        assert [asdict(finding) for finding in classify(metrics_from_summary(kernel)).findings] == expected


def test_the_h100_softmax_at_the_memory_roof_loses_only_its_occupancy_gap():
    recorded = json.loads((FIXTURES / "runs" / "softmax_cuda_h100" / "v1" / "ncu_summary.json").read_text())
    (kernel,) = recorded["kernels"]
    found = [finding.key for finding in classify(metrics_from_summary(kernel)).findings]
    assert [finding["key"] for finding in kernel["findings"]] == ["memory_at_peak", "occupancy_gap", "top_stall"]
    assert found == ["memory_at_peak", "top_stall"]


def test_there_are_recorded_summaries_to_compare():
    assert len(RECORDED_SUMMARIES) >= 2


# --- each rule alone -----------------------------------------------------------------------------

# An H100-sized kernel no rule has anything to say about: memory-bound but below every peak,
# a full grid, good occupancy, coalesced, no conflicts, spills, divergence or stalls.
QUIET = KernelMetrics(
    duration_us=100.0, sm_throughput_pct=40.0, memory_throughput_pct=55.0, dram_throughput_pct=55.0,
    l2_throughput_pct=30.0, l1_throughput_pct=20.0, achieved_occupancy_pct=80.0, theoretical_occupancy_pct=85.0,
    grid_size_blocks=4096, sm_count=132, waves_per_sm=3.9, issue_slots_busy_pct=30.0, tensor_pipe_pct=None,
    global_load_sectors_per_request=4.0, global_store_sectors_per_request=4.0, shared_load_bank_conflicts=0.0,
    shared_load_wavefronts=100.0, local_load_sectors=0.0, threads_per_warp_instruction=32.0,
    branch_uniformity_pct=100.0,
)


def context(label="memory_bound", balanced=False, **overrides) -> FindingContext:
    """The context the classifier would build for QUIET with `overrides`, under the given label."""
    metrics = replace(QUIET, **overrides)
    design = assess_design(metrics)
    shared = assess_shared_memory(metrics, design.tensor_cores)
    memory, limiter, _ = memory_sol(metrics, shared.operand_staging)
    return FindingContext(metrics, label, memory, limiter, metrics.sm_throughput_pct, balanced,
                          assess_occupancy(metrics), assess_grid(metrics), metrics.top_stalls(3), assess_pipes(metrics),
                          shared, design)


# For each rule: the smallest change to the quiet kernel that makes it, and only it, speak; and
# the evidence it must carry.
TRIGGERS = {
    "memory_at_peak": (dict(dram_throughput_pct=90.0), {"memory_sol_pct": 90.0, "memory_limiter": "DRAM"}),
    "compute_at_peak": (dict(label="compute_bound", sm_throughput_pct=85.0), {"sm_sol_pct": 85.0}),
    "pipe_at_roof": (dict(label="compute_bound", tensor_pipe_pct=95.0), {"pipe": "tensor", "pipe_pct": 95.0}),
    "balanced": (dict(balanced=True, sm_throughput_pct=50.0), {"memory_sol_pct": 55.0, "sm_sol_pct": 50.0}),
    "small_grid": (dict(grid_size_blocks=64, waves_per_sm=0.5),
                   {"grid_size_blocks": 64, "sm_count": 132, "waves_per_sm": 0.5}),
    "low_occupancy": (dict(achieved_occupancy_pct=30.0, block_limit_registers_blocks=2),
                      {"achieved_occupancy_pct": 30.0, "theoretical_occupancy_pct": 85.0, "limiters": ["registers"]}),
    "occupancy_gap": (dict(achieved_occupancy_pct=70.0), {"achieved_occupancy_pct": 70.0,
                                                          "theoretical_occupancy_pct": 85.0}),
    "top_stall": (dict(stalls={"long_scoreboard": 3.0, "barrier": 1.0}), {"long_scoreboard": 75.0, "barrier": 25.0}),
    "uncoalesced_loads": (dict(global_load_sectors_per_request=32.0), {"global_load_sectors_per_request": 32.0}),
    "uncoalesced_stores": (dict(global_store_sectors_per_request=17.0), {"global_store_sectors_per_request": 17.0}),
    # cp.async into padded shared rows (the demo's CUDA GEMM v4 on the H100: 19 sectors per 16-byte copy)
    "split_async_copies": (dict(global_load_sectors_per_request=19.0,
                                executed_global_accesses={"LDGSTS.E.BYPASS.128": 100.0}),
                           {"global_load_sectors_per_request": 19.0, "ideal_load_sectors_per_request": 16.0,
                            "async_copy_pct": 100.0}),
    "bank_conflicts": (dict(shared_load_bank_conflicts=25.0, shared_load_instructions=50.0),
                       {"shared_bank_conflict_pct": 25.0, "shared_load_bank_conflicts": 25.0,
                        "shared_store_bank_conflicts": None, "shared_load_wavefronts_per_request": 2.0,
                        "shared_store_wavefronts_per_request": None}),
    "operand_staging": (dict(tensor_pipe_pct=40.0, l1_throughput_pct=70.0),
                        {"l1_throughput_pct": 70.0, "tensor_pipe_pct": 40.0, "shared_bank_conflict_pct": 0.0}),
    "local_memory": (dict(local_load_sectors=8.0), {"local_load_sectors": 8.0, "local_store_sectors": None}),
    "divergence": (dict(threads_per_warp_instruction=12.0),
                   {"threads_per_warp_instruction": 12.0, "branch_uniformity_pct": 100.0}),
    "issue_bound": (dict(issue_slots_busy_pct=85.0), {"issue_slots_busy_pct": 85.0}),
    "tensor_pipe_idle": (dict(label="compute_bound", tensor_pipe_pct=2.0, fma_pipe_pct=60.0),
                         {"tensor_pipe_pct": 2.0, "fma_pipe_pct": 60.0}),
    "async_pipeline": (dict(gmma_instructions_pct=3.0),
                       {"features": ["wgmma (wgmma instruction rate 3.00%)"], "source": "pipe metrics (no SASS)"}),
    "short_kernel": (dict(duration_us=3.0), {"duration_us": 3.0}),
}


def test_the_rules_run_in_report_order():
    assert [rule.__name__ for rule in FINDING_RULES] == list(TRIGGERS)


def test_no_rule_speaks_about_the_quiet_kernel():
    assert {rule.__name__: rule(context()) for rule in FINDING_RULES} == {rule.__name__: None for rule in FINDING_RULES}
    assert secondary_findings(context()) == []


@pytest.mark.parametrize("rule", FINDING_RULES, ids=lambda rule: rule.__name__)
def test_each_rule_called_alone_finds_its_own_evidence(rule):
    overrides, evidence = TRIGGERS[rule.__name__]
    trigger = context(**overrides)
    finding = rule(trigger)
    assert isinstance(finding, Finding) and finding.key == rule.__name__ and finding.text
    assert finding.evidence == evidence
    assert secondary_findings(trigger) == [finding]  # the trigger makes this rule, and no other, speak


@pytest.mark.parametrize("overrides, fires", [
    (dict(global_load_sectors_per_request=16.0), False),  # exactly the coalesced 16-byte pattern
    (dict(global_load_sectors_per_request=16.5), True),
    (dict(duration_us=5.0), False),
    (dict(duration_us=4.99), True),
    (dict(label="occupancy_bound", achieved_occupancy_pct=30.0), False),  # already the label, not a finding
    (dict(achieved_occupancy_pct=30.0, grid_size_blocks=64, waves_per_sm=0.5), False),  # the small grid explains it
])
def test_rules_respect_their_edges_and_each_other(overrides, fires):
    keys = {finding.key for finding in secondary_findings(context(**overrides))}
    watched = {"uncoalesced_loads", "short_kernel", "low_occupancy", "occupancy_gap"}
    assert bool(keys & watched) is fires


# Sectors per request against the width the SASS executed (counts from the demo's H100 re-profile).
V9_STORES = dict(global_store_sectors_per_request=8.0, global_store_sectors=4194304.0, global_store_requests=524288.0,
                 global_load_sectors_per_request=None, global_load_sectors=0.0, global_load_requests=0.0,
                 executed_global_accesses={"STG.E.U16": 524288.0})


@pytest.mark.parametrize("overrides, found", [
    # 2-byte stores from MMA fragments: 8 sectors where 2 would do (CUDA GEMM v9, its loads on TMA)
    (V9_STORES, {"uncoalesced_stores"}),
    # the same stores at 2x the ideal are scattered; just under it (a misaligned row is 3 of 2) they are not
    ({**V9_STORES, "global_store_sectors_per_request": 4.0}, {"uncoalesced_stores"}),
    ({**V9_STORES, "global_store_sectors_per_request": 3.99}, set()),
    # 16-byte loads: 32 sectors (each thread another row) are scattered, 16 are not
    (dict(global_load_sectors_per_request=32.0, executed_global_accesses={"LDG.E.128.CONSTANT": 10.0}),
     {"uncoalesced_loads"}),
    (dict(global_load_sectors_per_request=16.0, executed_global_accesses={"LDG.E.128.CONSTANT": 10.0}), set()),
    # cp.async: one sector over the ideal is a misaligned row, more is a split copy; a minority of copies says nothing
    (dict(global_load_sectors_per_request=17.0, executed_global_accesses={"LDGSTS.E.BYPASS.128": 10.0}), set()),
    (dict(global_load_sectors_per_request=17.1, executed_global_accesses={"LDGSTS.E.BYPASS.128": 10.0}),
     {"split_async_copies"}),
    (dict(global_load_sectors_per_request=19.0, executed_global_accesses={"LDGSTS.E.BYPASS.128": 5.0,
                                                                          "LDG.E.128": 5.0}), set()),
    # no executed mix (older reports): the 16-sector line, as before
    (dict(global_load_sectors_per_request=19.0), {"uncoalesced_loads"}),
])
def test_coalescing_is_judged_against_the_executed_width(overrides, found):
    keys = {finding.key for finding in secondary_findings(context(**overrides))}
    assert keys & {"uncoalesced_loads", "uncoalesced_stores", "split_async_copies"} == found


def test_scattered_stores_say_how_much_of_the_traffic_they_waste():
    finding = uncoalesced_stores(context(**V9_STORES))
    assert finding.text == ("global stores touch 8.0 sectors per request where their width needs 2 (4.0x): "
                            "neighbouring threads access scattered addresses; 75% of the kernel's global sectors are "
                            "waste")
    assert finding.evidence == {"global_store_sectors_per_request": 8.0, "ideal_store_sectors_per_request": 2.0,
                                "wasted_sectors_pct": 75.0}
