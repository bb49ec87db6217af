"""Kernels nobody here wrote, profiled on an H100, read the way an expert reads them (issue 15).

The reports in tests/fixtures/ncu/library/ were recorded by tools/record_classification_fixtures.sh
(its README names the device, ncu and command): cuBLAS GEMMs through torch.matmul and PyTorch's
SDPA backends. A Hopper tensor-core kernel at the tensor roof is compute_bound on that pipe, with
nothing to try but less work; a wgmma/TMA pipeline with low occupancy by design is not
occupancy_bound, and its advice is overlap, never more warps or what it already does.
"""

import json
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.commands.ncu_profile import main
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.profile.ncu.reading import locate_report_reader

LIBRARY = FIXTURES_DIR / "ncu" / "library"
HOPPER_PIPELINE = ("wgmma", "TMA", "warp specialization")

# name -> (label, busiest pipe, first CUDA advice, asynchronous features the SASS must show)
EXPECTED = {
    "gemm_bf16_8192": ("compute_bound", "tensor", "reduce_work", HOPPER_PIPELINE),
    "gemm_bf16_4096": ("compute_bound", "tensor", "reduce_work", HOPPER_PIPELINE),
    "gemm_bf16_8192x8192x1024": ("compute_bound", "tensor", "reduce_work", HOPPER_PIPELINE),
    "gemm_fp16_8192": ("compute_bound", "tensor", "reduce_work", HOPPER_PIPELINE),
    "gemm_fp16_4096": ("compute_bound", "tensor", "reduce_work", HOPPER_PIPELINE),
    "gemm_fp16_8192x8192x1024": ("compute_bound", "tensor", "reduce_work", HOPPER_PIPELINE),
    # strict fp32 (TF32 off): cuBLAS runs FFMA; tensor cores are the lever only where TF32 is allowed
    "gemm_fp32_8192x8192x1024": ("compute_bound", "FMA", "tensor_cores", ("cp.async",)),
    # FlashAttention-2 (mma.sync + cp.async): Hopper's asynchronous MMA is the missing piece
    "sdpa_flash": ("overlap_bound", "tensor", "wgmma", ("cp.async",)),
    # cuDNN's wgmma flash kernel: softmax and MMAs not overlapped enough; it is warp-specialized already
    "sdpa_cudnn": ("overlap_bound", "XU", "pipeline_depth", HOPPER_PIPELINE),
    "sdpa_efficient": ("overlap_bound", "ALU", "wgmma", ("cp.async",)),
}
OCCUPANCY_ADVICE = {"register_limit", "smem_limit", "block_shape", "load_balance"}


def summary_of(name: str, output_dir: Path) -> dict:
    try:
        locate_report_reader()
    except EnvironmentFault as error:
        pytest.skip(f"ncu_report is not available here ({error.message}); pip install ncu-report==2025.3.1")
    code = main(["--from-report", str(LIBRARY / f"{name}.ncu-rep"), "--output-dir", str(output_dir),
                 "--backend", "cuda"])
    assert code == 0
    return json.loads((output_dir / "ncu_summary.json").read_text())


def test_every_kept_report_is_expected_here():
    assert {path.stem for path in LIBRARY.glob("*.ncu-rep")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_library_kernel_verdict_and_first_advice(name, tmp_path):
    label, pipe, first_advice, features = EXPECTED[name]
    summary = summary_of(name, tmp_path)
    evidence = summary["reason"]
    assert summary["bottleneck"] == label, evidence
    assert summary["busiest_pipe"] == pipe, evidence
    assert summary["unverified"] == []
    assert summary["read_next"][0]["strategy"] == first_advice, summary["read_next"]
    kernel = summary["kernels"][0]
    shown = " ".join(kernel["design"]["async_features"])
    assert all(feature in shown for feature in features), shown
    advice = {item["strategy"] for item in summary["read_next"]}
    assert not advice & OCCUPANCY_ADVICE, "low occupancy by design is not a lever"


@pytest.mark.parametrize("name", [name for name, expected in EXPECTED.items() if expected[1] == "tensor"
                                  and expected[0] == "compute_bound"])
def test_a_gemm_at_the_tensor_roof_is_told_so_and_its_shared_traffic_is_not_a_memory_limit(name, tmp_path):
    summary = summary_of(name, tmp_path)
    kernel = summary["kernels"][0]
    assert kernel["pipes"]["at_roof"] and kernel["pipes"]["busiest_pct"] >= 80.0
    keys = [finding["key"] for finding in summary["findings"]]
    assert keys[0] == "pipe_at_roof" and "only less work" in summary["findings"][0]["text"]
    assert [item["strategy"] for item in summary["read_next"]] == ["reduce_work"]  # never "use tensor cores"
    assert summary["memory_limiter"] != "L1/shared" or "bank_conflicts" in keys


def test_the_cudnn_flash_kernel_is_not_told_to_do_what_it_already_does(tmp_path):
    summary = summary_of("sdpa_cudnn", tmp_path)
    advice = [item["strategy"] for item in summary["read_next"]]
    assert "warp_specialization" not in advice and "wgmma" not in advice and "tma_pipeline" not in advice
    assert {"pingpong_warpgroups", "softmax_mma_overlap"} <= set(advice)
    assert "more resident warps are not the lever" in summary["reason"]
