"""Real Nsight Compute reports of kernels with a known character get the right label, on a CPU.

The reports (tests/fixtures/ncu/<name>.ncu-rep) are recorded on a GPU machine by
tools/record_ncu_fixtures.sh from the kernels in tests/fixtures/ncu/kernels/; their README says
on which device and with which ncu. Reading them needs Nsight Compute's Python reader
(`pip install ncu-report==2025.3.1`); without it, or before a fixture is recorded, the test skips.
"""

import json
from pathlib import Path

import pytest

from kernel_opt.commands.ncu_profile import main
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.profile.ncu.reading import locate_report_reader

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"

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
