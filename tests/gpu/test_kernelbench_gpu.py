"""KernelBench problems and ModelNew solutions on a real GPU: load_inline builds, returned outputs timed, cheats caught.

Run on the GPU machine (tools/gpu_suite.sh, or `python3 -m pytest -q tests/gpu/test_kernelbench_gpu.py`).
The problems and solutions are reference/kernelbench/ (H100-sized, run here at smaller sizes where
the test only needs the path) and tests/fixtures/kernelbench/ (CPU-sized).
"""

import json
import shutil
from pathlib import Path

import pytest

from kernel_opt.check.records import CorrectnessReport
from kernel_opt.commands.benchmark import main as benchmark_main
from kernel_opt.commands.correctness_check import main as check_main
from kernel_opt.commands.eval import main as eval_main

pytestmark = [pytest.mark.gpu]

REPO = Path(__file__).resolve().parents[2]
KERNELBENCH = REPO / "reference" / "kernelbench"
PROBLEMS, SOLUTIONS, WRONG = KERNELBENCH / "problems", KERNELBENCH / "solutions", KERNELBENCH / "wrong"
CPU_FIXTURES = REPO / "tests" / "fixtures" / "kernelbench"


# A first load_inline build compiles torch's headers and may outlast the default 120 s without progress.
BUILD_TIMEOUT = ("--timeout", "300")


def check(solution: Path, problem: str, out: Path, *extra: str, problems: Path = PROBLEMS):
    code = check_main([str(solution), "--ref", str(problems / f"{problem}.py"), "--output-dir", str(out),
                       *BUILD_TIMEOUT, *extra])
    return code, json.loads((out / "correctness.json").read_text())


def bench(solution: Path, problem: str, out: Path, *extra: str):
    code = benchmark_main([str(solution), "--ref", str(PROBLEMS / f"{problem}.py"), "--output-dir", str(out),
                           "--compile-modes", "default", *extra])
    return code, json.loads((out / "benchmark.json").read_text())


@pytest.mark.nvcc
def test_a_load_inline_model_new_builds_in_the_child_and_passes(tmp_path):
    code, report = check(SOLUTIONS / "19_ReLU.py", "19_ReLU", tmp_path, "--seeds", "2")
    assert code == 0 and report["verdict"] == "pass", report.get("error")
    assert report["backend"] == "modelnew" and report["device"]["type"] == "cuda"
    assert len(report["cases"]) == 8  # the file's sizes and three derived shapes (odd ones among them)
    assert {case["dims"]["dim"] for case in report["cases"]} == {16384, 8192, 4096, 4097}
    assert any((tmp_path / "build" / "torch_extensions").rglob("*.so"))  # built under the output dir


@pytest.mark.nvcc
def test_a_load_inline_build_error_is_the_solution_s_compile_error(tmp_path):
    code, report = check(CPU_FIXTURES / "adversarial" / "build_error.py", "1_Square_matmul", tmp_path,
                         problems=CPU_FIXTURES / "problems")
    assert code == 3 and report["error"]["kind"] == "compile_error"
    assert report["error"]["message"].startswith("the ModelNew's CUDA extension failed to build")
    assert "undeclared_name" in report["error"]["message"] + (report["error"]["hint"] or "")


def test_returning_released_memory_fails(tmp_path):
    code, report = check(WRONG / "19_ReLU_freed_result.py", "19_ReLU", tmp_path, "--seeds", "2",
                         "--batch_size=1024")
    assert code == 1 and report["verdict"] == "fail"
    assert all(not case["passed"] for case in report["cases"])


def test_a_tf32_model_new_is_a_precision_downgrade_under_either_rule(tmp_path):
    solution = SOLUTIONS / "1_Square_matrix_multiplication_.py"
    code, strict = check(solution, "1_Square_matrix_multiplication_", tmp_path / "strict", "--N=1024")
    assert code == 1 and strict["verdict"] == "fail"
    assert all(output.get("precision_downgrade") for case in strict["cases"] for output in case["outputs"])
    code, loose = check(solution, "1_Square_matrix_multiplication_", tmp_path / "loose", "--N=1024",
                        "--kernelbench-tolerances")
    assert code == 0 and loose["verdict"] == "pass" and loose["kernelbench_tolerances"] is True
    # On torch.rand inputs cuBLAS's TF32 error averages out to little above the float32 floor (1.27e-5 against
    # 1e-5 at N = 1024 on an H100): the error norms barely flag it, the rounding probe plainly does.
    # It passes only at 1e-2 (kernelbench_only), and the rounding probe's evidence makes that a precision downgrade.
    output = loose["cases"][0]["outputs"][0]
    assert output["kernelbench_only"] and output["solution_error"] > output["allowed_error"]
    assert loose["rounding_probe"]["downgraded_outputs"] == ["output"]
    assert CorrectnessReport.from_dict(loose).precision_downgrades == ["output"]


def test_a_triton_model_new_is_timed_against_the_problem_s_own_model(tmp_path):
    code, report = bench(SOLUTIONS / "23_Softmax.py", "23_Softmax", tmp_path, "--batch_size=1024")
    assert code == 0 and report["verdict"] == "measured", report.get("error")
    assert [b["name"] for b in report["baselines"]] == ["eager", "torch.compile (default)"]
    assert all(b["median_us"] for b in report["baselines"])
    # every timed call's returned output was delivered and checked, the kernel-only graph's too
    assert report["post_timing_check"] and all(check["passed"] for check in report["post_timing_check"].values())
    assert report["solution"]["median_us"] > 0 and report["speedup_vs_eager"] > 0
    assert any(note.startswith("inputs from 23_Softmax.py's get_inputs()") for note in report["notes"])
    # a fresh torch.empty_like per call: the caching allocator hands the freed block back, which is no kept buffer
    assert not any("same output memory" in note for note in report["notes"]), report["notes"]


def test_an_output_buffer_a_model_new_keeps_is_noted(tmp_path):
    kept = tmp_path / "23_Softmax_kept_buffer.py"
    kept.write_text((SOLUTIONS / "23_Softmax.py").read_text().replace(
        "        y = torch.empty_like(x)\n",
        "        if getattr(self, 'y', None) is None or self.y.shape != x.shape:\n"
        "            self.y = torch.empty_like(x)\n"
        "        y = self.y\n"))
    code, report = bench(kept, "23_Softmax", tmp_path / "out", "--batch_size=1024")
    assert code == 0 and report["verdict"] == "measured", report.get("error")
    assert any("same output memory on consecutive calls while the first call's output was still held" in note
               for note in report["notes"]), report["notes"]


def test_two_model_news_are_compared_interleaved(tmp_path):
    other = tmp_path / "other.py"
    shutil.copy(SOLUTIONS / "23_Softmax.py", other)
    code, report = bench(SOLUTIONS / "23_Softmax.py", "23_Softmax", tmp_path / "out", "--batch_size=1024",
                         "--against", str(other), "--baseline", "none")
    assert code == 0 and report["comparison"] is not None, report.get("error")
    checks = report["post_timing_check"]
    assert checks["solution (interleaved)"]["passed"] and checks["against"]["passed"]


def test_an_output_cached_by_input_pointer_is_caught(tmp_path):
    code, report = bench(WRONG / "23_Softmax_cached_by_pointer.py", "23_Softmax", tmp_path, "--batch_size=1024",
                         "--baseline", "none")
    assert code == 1 and report["verdict"] == "incorrect"


@pytest.mark.nvcc
def test_a_cuda_solve_binds_the_model_s_weights_by_name(tmp_path):
    code, report = check(KERNELBENCH / "contract" / "12_Gemm_Multiply_LeakyReLU.cu", "12_Gemm_Multiply_LeakyReLU",
                         tmp_path, "--batch_size=64", "--in_features=256", "--out_features=128")
    assert code == 0 and report["verdict"] == "pass", report.get("error")
    assert "gemm_weight" in " ".join(report["build"]["signature"])


def test_eval_times_the_pairs_and_writes_its_table(tmp_path):
    out = tmp_path / "eval"
    code = eval_main([str(PROBLEMS), str(SOLUTIONS), "--output-dir", str(out), "--only", "23_Softmax,19_ReLU",
                      "--compile-modes", "default", "--seeds", "2", *BUILD_TIMEOUT])
    record = json.loads((out / "eval.json").read_text())
    assert code == 0, record["entries"]
    assert [entry["name"] for entry in record["entries"]] == ["19_ReLU", "23_Softmax"]
    for entry in record["entries"]:
        assert entry["verdict"] == "correct" and entry["timed"] and entry["speedup_vs_eager"] > 0
        assert entry["compile_mode"] == "torch.compile (default)" and entry["library_only"] is False
        launches = json.loads((out / "pairs" / entry["name"] / "correctness.json").read_text())["launches"]
        assert launches["own_kernels"] >= 1, launches  # the ModelNew's Triton kernels, named as its own
    assert record["summary"]["fast_p"]["eager"] is not None and (out / "eval.png").is_file()


@pytest.mark.ncu
def test_a_triton_model_new_is_profiled_with_the_triton_guide(tmp_path):
    """A ModelNew whose kernels are Triton's is advised from the Triton guide (profile.advice.guide_backend)."""
    from kernel_opt.commands.ncu_profile import main as profile_main

    code = profile_main([str(SOLUTIONS / "23_Softmax.py"), "--ref", str(PROBLEMS / "23_Softmax.py"),
                         "--output-dir", str(tmp_path), "--batch_size=1024"])
    summary = json.loads((tmp_path / "ncu_summary.json").read_text())
    assert code == 0 and summary["bottleneck"] is not None
    assert "softmax_kernel" in summary["dominant_kernel"]["name"]
    assert summary["read_next"] and all(link["link"].startswith("experience/triton/TRITON.md#")
                                        for link in summary["read_next"])


@pytest.mark.ncu
def test_a_float32_convolution_is_profiled_as_the_strict_kernel_the_checks_run(tmp_path):
    """The profiled program once ran under cuDNN's own default (TF32 allowed) and profiled a tf32 kernel."""
    from kernel_opt.commands.ncu_profile import main as profile_main

    problem = CPU_FIXTURES / "problems" / "4_Conv2d_ReLU_BiasAdd.py"
    solution = tmp_path / "conv_model_new.py"
    solution.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):\n"
        "        super().__init__()\n"
        "        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)\n"
        "        self.bias = nn.Parameter(torch.randn(bias_shape))\n\n"
        "    def forward(self, x):\n"
        "        return torch.relu(self.conv(x)) + self.bias\n")
    code = profile_main([str(solution), "--ref", str(problem), "--output-dir", str(tmp_path / "out"),
                         "--batch_size=32", "--in_channels=64", "--out_channels=128", "--height=64", "--width=64"])
    summary = json.loads((tmp_path / "out" / "ncu_summary.json").read_text())
    names = [kernel["name"] for kernel in summary["kernels"]]
    assert code == 0 and names and not any("tf32" in name.lower() for name in names), names
