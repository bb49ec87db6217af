"""correctness_check on a real GPU: the CUDA corpus (including crashes that poison the CUDA
context), half and bfloat16 kernels, Triton on the device, and the original skill's templates.

Run on the GPU machine with tools/gpu_suite.sh (or `python -m pytest -m gpu tests/gpu`).
"""

import json
from pathlib import Path

import pytest

from kernel_opt.commands.correctness_check import main

pytestmark = pytest.mark.gpu


def check(reference_dir, solution, output_dir, *extra, problem="vector_add"):
    path = solution if str(solution).startswith("/") else reference_dir / problem / solution
    code = main([str(path), "--ref", str(reference_dir / problem / "ref.py"), "--output-dir", str(output_dir), *extra])
    return code, json.loads((output_dir / "correctness.json").read_text())


@pytest.mark.parametrize(
    "solution, dtype",
    [
        ("good/vector_add.cu", "float32"),
        ("good/vector_add_fp16.cu", "float16"),
        ("good/vector_add_bf16.cu", "bfloat16"),
        ("good/vector_add.py", "float32"),
        ("good/vector_add.py", "bfloat16"),
        ("good/rounding_noise.py", "float32"),
    ],
)
def test_correct_kernels_pass_on_the_gpu(reference_dir, tmp_path, solution, dtype):
    code, report = check(reference_dir, solution, tmp_path, f"--dtype={dtype}")
    assert code == 0, report.get("error")
    assert report["passed"] and report["interpreter"] is False
    assert report["device"]["type"] == "cuda" and report["device"]["name"]
    assert len(report["cases"]) == report["planned_cases"] == 18  # 6 shapes x 3 seeds
    assert {o["dtype"] for case in report["cases"] for o in case["outputs"]} == {dtype}


@pytest.mark.parametrize("solution", ["good/softmax.py", "good/softmax.cu"])
def test_softmax_solutions_pass(reference_dir, tmp_path, solution):
    code, report = check(reference_dir, solution, tmp_path, problem="softmax")
    assert code == 0, report.get("error")
    assert report["cases"][0]["dims"]["N"] == 4096


@pytest.mark.parametrize("suffix", ["cu", "py"])
@pytest.mark.parametrize(
    "name, evidence",
    [
        ("unwritten_element", lambda r: all(o["nan_unexpected"] == 1 for c in r["cases"] for o in c["outputs"])),
        ("mutates_input", lambda r: all(c["modified_inputs"] for c in r["cases"])),
        ("cli_shape_only", lambda r: r["cases"][0]["passed"] and not all(c["passed"] for c in r["cases"])),
        ("tolerance_edge", lambda r: max(o["max_rel_error"] for c in r["cases"] for o in c["outputs"]) > 1e-5),
    ],
)
def test_wrong_kernels_fail_with_evidence(reference_dir, tmp_path, name, evidence, suffix):
    code, report = check(reference_dir, f"wrong/{name}.{suffix}", tmp_path)
    assert code == 1 and report["verdict"] == "fail"
    assert evidence(report)


@pytest.mark.parametrize(
    "solution, kind, fragment",
    [
        ("wrong/illegal_address.cu", "illegal_memory_access", "CUDA error"),  # wording differs by driver
        ("wrong/launch_error.cu", "launch_error", "a kernel launch inside solve failed"),
        ("wrong/crash.cu", "crash", "SIGSEGV"),
        ("wrong/crash.py", "crash", "SIGSEGV"),
        ("wrong/dtype_mismatch.cu", "signature_mismatch", "dtype mismatch"),
    ],
)
def test_faulty_solutions_exit_3_and_say_why(reference_dir, tmp_path, solution, kind, fragment):
    code, report = check(reference_dir, solution, tmp_path)
    assert code == 3 and report["verdict"] == "solution_error"
    assert report["error"]["kind"] == kind
    assert fragment in report["error"]["message"]


@pytest.mark.parametrize("solution", ["wrong/hang.cu", "wrong/hang.py"])
def test_hanging_kernels_are_killed(reference_dir, tmp_path, solution):
    code, report = check(reference_dir, solution, tmp_path, "--timeout", "10")
    assert code == 3 and report["error"]["kind"] == "timeout"


def test_dtype_of_tensor_and_pointer_must_agree(reference_dir, tmp_path):
    code, report = check(reference_dir, "good/vector_add.cu", tmp_path, "--dtype=float16")
    assert code == 3
    assert "expects float32 but tensor 'x' is float16" in report["error"]["message"]


ORIGINAL = Path(__file__).resolve().parents[1] / "fixtures" / "original_templates"


def test_original_cuda_template_without_setup_infers_inputs(tmp_path):
    """The original skill's CUDA template and ref.py, unchanged: sizes come from the signature."""
    code = main([str(ORIGINAL / "kernel.cu"), "--ref", str(ORIGINAL / "ref_cuda.py"), "--output-dir", str(tmp_path),
                 "--n=100003"])
    report = json.loads((tmp_path / "correctness.json").read_text())
    assert code == 0, report.get("error")
    assert any("inferred from solve's signature" in w for w in report["warnings"])


def test_original_triton_template_with_its_own_setup(tmp_path):
    code = main([str(ORIGINAL / "kernel.py"), "--ref", str(ORIGINAL / "ref_triton.py"), "--output-dir", str(tmp_path),
                 "--n=5000"])
    report = json.loads((tmp_path / "correctness.json").read_text())
    assert code == 0, report.get("error")
    assert "inputs from the solution's setup() (ref.py has none)" in report["notes"]
