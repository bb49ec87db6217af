"""The profile's advice on a real GPU fits the problem: benchmark.py, then ncu_profile.py into the same folder.

The benchmark record there gives the problem's counted bytes; the profile reads its family from ref.py and its
DRAM bytes from ncu, and leaves out what cannot help. Run alone on the GPU machine (tools/gpu_suite.sh --part
timing): the benchmark's ceiling decides whether the kernel is at its memory roof.
"""

import json

import pytest

from kernel_opt.commands.benchmark import main as benchmark
from kernel_opt.commands.ncu_profile import main as ncu_profile

pytestmark = [pytest.mark.gpu, pytest.mark.ncu, pytest.mark.timing]

# Strategies that only save bytes, or are written for GEMM tiles: none fits a kernel that reads each byte once.
NEVER_FOR_ELEMENTWISE = {"single_pass", "fuse_kernels", "cache_hints", "l2_reuse", "smem_tiling", "tile_shape",
                         "dot_precision", "tensor_cores", "wgmma", "split_k", "grouped_order"}
OCCUPANCY_FINDINGS = {"low_occupancy", "occupancy_gap"}
ROOF_FINDINGS = {"memory_at_peak", "compute_at_peak", "pipe_at_roof"}


def benchmark_then_profile(reference_dir, out, problem, solution, *dims):
    arguments = [str(reference_dir / problem / solution), "--ref", str(reference_dir / problem / "ref.py"),
                 "--output-dir", str(out), *dims]
    assert benchmark([*arguments, "--baseline", "none"]) == 0
    assert ncu_profile(arguments) == 0
    return json.loads((out / "ncu_summary.json").read_text())


def test_a_triton_vector_add_reads_each_byte_once_and_gets_no_byte_saving_advice(reference_dir, tmp_path):
    summary = benchmark_then_profile(reference_dir, tmp_path, "vector_add", "good/vector_add.py", "--n=67108864")
    traits = summary["traits"]
    assert traits["family"] == "elementwise" and traits["family_source"] == "the reference calls add"
    assert traits["minimum_bytes"] == 3 * 4 * 67108864
    ratio = traits["dram_bytes_per_call"] / traits["minimum_bytes"]
    assert 0.7 < ratio <= 1.1, ratio  # one read of x and y, one write of out (writes still in L2 count less)
    keys = [finding["key"] for finding in summary["findings"]]
    assert "minimum_traffic" in keys
    if ROOF_FINDINGS & set(keys):
        assert not OCCUPANCY_FINDINGS & set(keys), keys
    strategies = {item["strategy"] for item in summary["read_next"]}
    assert not strategies & NEVER_FOR_ELEMENTWISE, strategies
    if traits["percent_of_ceiling"] >= traits["target_percent"]:
        assert summary["read_next"] == []  # at the memory roof with the minimum bytes: nothing in the guide helps


def test_a_triton_softmax_is_a_row_reduction(reference_dir, tmp_path):
    summary = benchmark_then_profile(reference_dir, tmp_path, "softmax", "good/softmax.py")
    traits = summary["traits"]
    assert traits["family"] == "row_reduction" and traits["minimum_bytes"] == 2 * 4096 * 4096 * 4
    assert traits["dram_bytes_per_call"] > 0
    strategies = {item["strategy"] for item in summary["read_next"]}
    assert not strategies & {"tile_shape", "dot_precision", "split_k", "grouped_order"}, strategies
