"""benchmark.py on a real GPU: baselines, the post-timing re-check, and interleaved comparison.

Run on the GPU machine (tools/gpu_suite.sh). Not in parallel with other GPU work: the
comparison tests assert timing ratios.
"""

import json

import pytest

from kernel_opt.commands.benchmark import main

pytestmark = [pytest.mark.gpu, pytest.mark.timing]


def bench(reference_dir, solution, output_dir, *extra, problem="vector_add"):
    code = main([str(reference_dir / problem / solution), "--ref", str(reference_dir / problem / "ref.py"),
                 "--output-dir", str(output_dir), *extra])
    return code, json.loads((output_dir / "benchmark.json").read_text())


def test_softmax_against_pytorch_baselines(reference_dir, tmp_path):
    code, report = bench(reference_dir, "good/softmax.py", tmp_path, problem="softmax")
    assert code == 0 and report["verdict"] == "measured", report.get("error")
    assert report["correctness"]["passed"] and report["post_timing_check"]["solution"]["passed"]
    assert report["solution"]["median_us"] > 0 and report["solution"]["p20_us"] <= report["solution"]["p80_us"]
    names = [b["name"] for b in report["baselines"]]
    assert names == ["eager", "torch.compile (default)", "torch.compile (max-autotune-no-cudagraphs)"]
    assert all(b["median_us"] or b["error"] for b in report["baselines"])
    assert all(b["compile_s"] > 0 for b in report["baselines"][1:] if not b["error"])
    assert report["best_baseline"] in names
    assert report["precision"]["allow_tf32"] is False
    assert report["work"]["bytes"] == 2 * 4096 * 4096 * 4 and report["work"]["flops_source"] == "ref.py flops()"
    assert report["roofline"]["points"] and 0 < report["percent_of_ceiling"] < 110
    assert report["gpu"]["name"] and report["clocks_start"] and report["versions"]["torch"]
    assert "# Benchmark: MEASURED" in (tmp_path / "benchmark.md").read_text()


@pytest.mark.parametrize("solution", ["wrong/stale_after_warmup.py", "wrong/stale_after_warmup.cu"])
def test_kernel_that_stops_working_after_warmup_fails_the_post_timing_check(reference_dir, tmp_path, solution):
    code, report = bench(reference_dir, solution, tmp_path, "--baseline", "none")
    assert report["correctness"]["passed"]  # correctness_check alone cannot see this bug
    assert code == 1 and report["verdict"] == "incorrect"
    check = report["post_timing_check"]["solution"]
    assert not check["passed"] and check["outputs"][0]["nan_unexpected"] == check["outputs"][0]["numel"]


def test_kernel_right_only_on_its_first_call_is_never_timed(reference_dir, tmp_path):
    code, report = bench(reference_dir, "wrong/cached_output.cu", tmp_path, "--baseline", "none")
    assert code == 1 and report["verdict"] == "incorrect" and not report["correctness"]["passed"]
    assert report["solution"].get("median_us") is None


def compare(reference_dir, tmp_path, solution, against):
    base = reference_dir / "vector_add"
    code = main([str(base / solution), "--ref", str(base / "ref.py"), "--output-dir", str(tmp_path),
                 "--against", str(base / against), "--baseline", "none", "--n=67108864"])
    return code, json.loads((tmp_path / "benchmark.json").read_text())["comparison"]


def test_interleaved_comparison_measures_a_known_2x(reference_dir, tmp_path):
    code, comparison = compare(reference_dir, tmp_path, "good/vector_add.cu", "good/vector_add_twice.cu")
    assert code == 0
    assert 1.8 < comparison["speedup"] < 2.2
    assert comparison["ci_low"] <= comparison["speedup"] <= comparison["ci_high"]
    assert comparison["verdict"] == "success" and comparison["pairs"] >= 30


def test_interleaved_comparison_calls_the_slower_version_a_failure(reference_dir, tmp_path):
    code, comparison = compare(reference_dir, tmp_path, "good/vector_add_twice.cu", "good/vector_add.cu")
    assert code == 0 and 0.45 < comparison["speedup"] < 0.56 and comparison["verdict"] == "failure"


def test_a_version_against_itself_is_not_a_success(reference_dir, tmp_path):
    code, comparison = compare(reference_dir, tmp_path, "good/vector_add.cu", "good/vector_add.cu")
    assert code == 0 and 0.97 < comparison["speedup"] < 1.03 and comparison["verdict"] != "success"
