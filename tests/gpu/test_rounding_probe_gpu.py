"""The rounding probe on a real GPU: TF32 on the tensor cores (Triton's tl.dot default, cuBLAS with allow_tf32) is
caught on KernelBench's non-negative matmul inputs, and IEEE float32 is not.

Run on the GPU machine (tools/gpu_suite.sh, or `python3 -m pytest -q tests/gpu/test_rounding_probe_gpu.py`).
"""

import json
from pathlib import Path

import pytest

from kernel_opt.commands.correctness_check import main as check_main

pytestmark = [pytest.mark.gpu]

REPO = Path(__file__).resolve().parents[2]
PROBLEM = REPO / "reference" / "kernelbench" / "problems" / "1_Square_matrix_multiplication_.py"
ROUNDING = REPO / "tests" / "fixtures" / "rounding"
CUBLAS_TF32 = REPO / "reference" / "kernelbench" / "solutions" / "1_Square_matrix_multiplication_.py"


def check(solution: Path, out: Path, *extra: str) -> tuple[int, dict]:
    code = check_main([str(solution), "--ref", str(PROBLEM), "--output-dir", str(out), "--N=2048", "--seeds", "1",
                       *extra])
    return code, json.loads((out / "correctness.json").read_text())


def tf32_verdicts(record: dict) -> dict[str, set[str]]:
    """Per input, the verdicts of its two TF32 probes."""
    verdicts: dict[str, set[str]] = {}
    for probe in record["rounding_probe"]["probes"]:
        if probe["rounding"].startswith("tf32"):
            verdicts.setdefault(probe["input"], set()).add(probe["verdict"])
    return verdicts


@pytest.mark.parametrize("solution", [ROUNDING / "matmul_triton_tf32.py", CUBLAS_TF32], ids=["triton", "cublas"])
def test_tf32_on_the_tensor_cores_ignores_the_inputs_low_bits(tmp_path, solution):
    code, strict = check(solution, tmp_path / "strict")
    assert code == 1 and strict["verdict"] == "fail"
    code, loose = check(solution, tmp_path / "loose", "--kernelbench-tolerances")
    assert code == 0 and loose["verdict"] == "pass"
    verdicts = tf32_verdicts(loose)
    assert set(verdicts) == {"A", "B"} and all("ignored" in found for found in verdicts.values()), verdicts
    assert loose["rounding_probe"]["downgraded_outputs"] == ["output"]


def test_ieee_float32_on_the_gpu_follows_every_rounding(tmp_path):
    code, record = check(ROUNDING / "matmul_triton_ieee.py", tmp_path)
    assert code == 0 and record["verdict"] == "pass"
    assert {probe["verdict"] for probe in record["rounding_probe"]["probes"]} == {"followed"}
