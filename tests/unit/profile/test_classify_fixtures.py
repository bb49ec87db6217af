"""Real Nsight Compute reports of kernels with a known character get the right label, on a CPU.

The reports (tests/fixtures/ncu/<name>.ncu-rep) are recorded on a GPU machine by
tools/record_ncu_fixtures.sh from the kernels in tests/fixtures/ncu/kernels/; their README says
on which device and with which ncu. Reading them needs Nsight Compute's Python reader
(`pip install ncu-report==2025.3.1`); without it, or before a fixture is recorded, the test skips.
"""

import json
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.commands.ncu_profile import main
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.profile.ncu.reading import locate_report_reader

FIXTURES = FIXTURES_DIR / "ncu"

# name -> (label, small_grid, memory limiter or None for "any", occupancy limiter or None for "any")
EXPECTED = {
    "memory_streaming": ("memory_bound", False, "DRAM", None),
    "tensor_core_matmul": ("compute_bound", False, None, None),
    "one_block": ("latency_bound", True, None, None),
    "shared_memory_limited": ("occupancy_bound", False, None, "shared memory"),
    "naive_gemm_l1": ("memory_bound", False, "L1/shared", None),
}


def read_fixture(name: str, output_dir: Path) -> dict:
    report = FIXTURES / f"{name}.ncu-rep"
    if not report.is_file():
        pytest.skip(f"{report.name} is not recorded yet: run tools/record_ncu_fixtures.sh OUT_DIR on a GPU machine")
    try:
        locate_report_reader()
    except EnvironmentFault as error:
        pytest.skip(f"ncu_report is not available here ({error.message}); pip install ncu-report==2025.3.1")
    code = main(["--from-report", str(report), "--output-dir", str(output_dir), "--backend", "cuda"])
    assert code == 0
    return json.loads((output_dir / "ncu_summary.json").read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_gets_its_label(name, tmp_path):
    label, small_grid, memory_limiter, occupancy_limiter = EXPECTED[name]
    summary = read_fixture(name, tmp_path)
    evidence = f"{summary['reason']} (metrics: {summary['metrics']})"
    assert summary["bottleneck"] == label, evidence
    assert summary["small_grid"] is small_grid, evidence
    if memory_limiter is not None:
        assert summary["memory_limiter"] == memory_limiter, evidence
    if occupancy_limiter is not None:
        assert occupancy_limiter in summary["occupancy_limiters"], evidence
    kernel = next(k for k in summary["kernels"] if k["name"] == summary["dominant_kernel"]["name"])
    assert kernel["inside_nvtx_range"], "a launch outside kernel_opt_solution was profiled"
    assert summary["metrics"]["duration_us"] > 0 and summary["read_next"]


def test_the_tensor_core_fixture_runs_on_the_tensor_pipe(tmp_path):
    summary = read_fixture("tensor_core_matmul", tmp_path)
    assert summary["metrics"]["tensor_pipe_pct"] is not None and summary["metrics"]["tensor_pipe_pct"] > 50.0


def test_the_l1_fixture_is_not_dram_bound(tmp_path):
    summary = read_fixture("naive_gemm_l1", tmp_path)
    metrics = summary["metrics"]
    assert metrics["l1_throughput_pct"] > metrics["dram_throughput_pct"] + 20.0


def test_cublas_on_the_h200_is_at_the_tensor_roof_and_its_busy_l1_is_operand_staging(tmp_path):
    """Issue 15: before, this report's memory limiter was L1/shared (73.5%); it is wgmma operand staging."""
    summary = read_fixture("tensor_core_matmul", tmp_path)
    (kernel,) = summary["kernels"]
    assert summary["bottleneck"] == "compute_bound" and summary["busiest_pipe"] == "tensor"
    assert kernel["pipes"]["at_roof"] and round(kernel["pipes"]["busiest_pct"], 1) == 95.0
    assert summary["memory_limiter"] == "L2" and kernel["shared_memory"]["operand_staging"]
    assert kernel["design"]["source"] == "executed opcode mix (ncu)"
    assert [feature.split(" ")[0] for feature in kernel["design"]["async_features"]] == ["wgmma", "TMA", "warp"]
    assert [item["strategy"] for item in summary["read_next"]] == ["reduce_work"]
    assert summary["unverified"] == []


def test_the_shared_memory_fixture_is_occupancy_bound_with_every_check_made(tmp_path):
    summary = read_fixture("shared_memory_limited", tmp_path)
    (kernel,) = summary["kernels"]
    assert summary["bottleneck"] == "occupancy_bound" and summary["unverified"] == []
    assert kernel["design"]["async_features"] == [] and kernel["occupancy"]["starved"] is True


def test_the_l1_fixture_keeps_its_memory_verdict_because_no_tensor_core_stages_through_l1(tmp_path):
    summary = read_fixture("naive_gemm_l1", tmp_path)
    (kernel,) = summary["kernels"]
    assert summary["memory_limiter"] == "L1/shared" and not kernel["shared_memory"]["operand_staging"]
    assert kernel["pipes"]["busiest"] == "FMA" and not kernel["pipes"]["at_roof"]
    assert kernel["pipes"]["utilisation_pct"]["LSU"] > 80.0  # the load/store pipe at its roof: memory, not compute
