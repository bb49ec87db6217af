"""The launch check on a real GPU (issue 14, items 3 and 4): what a checked call ran, on which streams.

correctness_check profiles one more call on a fresh stream (the legacy default stream for a solve
without a cudaStream_t) behind a fence, and lists every kernel and copy; benchmark.py carries the
listing over from its correctness gate. Every verdict of the fixtures is in
reference/*/expected.yaml (tests/integration/test_fixture_corpus.py); these tests assert the evidence.
Run on the GPU machine (tools/gpu_suite.sh).
"""

import json

import pytest

from kernel_opt.commands.benchmark import main as benchmark_main
from kernel_opt.commands.correctness_check import main

pytestmark = pytest.mark.gpu


def check(reference_dir, solution, output_dir, *extra, problem="vector_add"):
    code = main([str(reference_dir / problem / solution), "--ref", str(reference_dir / problem / "ref.py"),
                 "--output-dir", str(output_dir), *extra])
    return code, json.loads((output_dir / "correctness.json").read_text())


def bench(reference_dir, solution, output_dir):
    """benchmark.py on a vector_add fixture, no baselines; its exit code and benchmark.json."""
    code = benchmark_main([str(reference_dir / "vector_add" / solution), "--ref",
                           str(reference_dir / "vector_add" / "ref.py"), "--output-dir", str(output_dir),
                           "--baseline", "none"])
    return code, json.loads((output_dir / "benchmark.json").read_text())


@pytest.mark.parametrize("solution", ["good/vector_add.cu", "good/vector_add.py"])
def test_an_honest_kernel_is_listed_as_its_own_on_the_fresh_caller_stream(reference_dir, tmp_path, solution):
    code, report = check(reference_dir, solution, tmp_path)
    launches = report["launches"]
    assert code == 0 and launches["passed"] and launches["profiled"], launches
    assert launches["caller"].startswith("a fresh stream")
    [row] = launches["work"]
    assert row["name"].startswith("vector_add_kernel") and row["origin"] == "own" and row["on_caller_stream"]
    assert row["count"] == 1 and row["total_us"] > 0 and row["stream"] == launches["caller_stream"]
    assert (launches["own_kernels"], launches["library_kernels"], launches["problems"]) == (1, 0, [])
    assert launches["fence_us"] >= 1000 and 0 < launches["call_host_us"] < launches["fence_us"]
    assert launches["values_passed"] is True and launches["seed"] == 3 and launches["dims"]["n"] == 1 << 20
    assert "## What ran on the GPU" in (tmp_path / "correctness.md").read_text()


def test_a_solve_without_a_stream_keeps_to_the_legacy_default_stream(reference_dir, tmp_path):
    code, report = check(reference_dir, "good/legacy_default_stream.cu", tmp_path)
    launches = report["launches"]
    assert code == 0 and launches["caller"].startswith("the legacy default stream"), launches
    assert [row["on_caller_stream"] for row in launches["work"]] == [True]


@pytest.mark.parametrize("solution", ["good/side_stream_joined.cu", "good/side_stream_joined.py"])
def test_a_side_stream_joined_both_ways_passes_and_is_shown_on_its_stream(reference_dir, tmp_path, solution):
    code, report = check(reference_dir, solution, tmp_path)
    launches = report["launches"]
    assert code == 0 and launches["problems"] == [], launches
    kernels = [row for row in launches["work"] if row["kind"] == "kernel"]
    assert any(not row["on_caller_stream"] and row["origin"] == "own" for row in kernels)


@pytest.mark.parametrize("solution", ["wrong/side_stream.cu", "wrong/blocking_side_stream.cu", "wrong/side_stream.py"])
def test_an_unordered_side_stream_fails_the_launch_check_naming_kernel_and_stream(reference_dir, tmp_path, solution):
    code, report = check(reference_dir, solution, tmp_path)
    launches = report["launches"]
    assert code == 1 and report["verdict"] == "fail"
    side = next(row for row in launches["work"] if not row["on_caller_stream"])
    # Which stream rule catches it depends on when the side kernel starts: during the fence ("without waiting"),
    # or after it on a GPU busy with other work, and then still running when the call returns ("not joined").
    rules = ("without waiting for the caller's stream", "and not joined to the caller's stream")
    named = [f"{side['name']} launched on stream {side['stream']} {rule}" for rule in rules]
    assert any(problem.startswith(tuple(named)) for problem in launches["problems"]), launches["problems"]
    report_text = (tmp_path / "correctness.md").read_text()
    assert "without waiting" in report_text or "not joined" in report_text


@pytest.mark.parametrize("solution", ["wrong/host_compute.py", "wrong/host_compute.cu"])
def test_a_call_without_a_kernel_fails_and_names_its_copies(reference_dir, tmp_path, solution):
    code, report = check(reference_dir, solution, tmp_path)
    launches = report["launches"]
    assert code == 1 and launches["problems"][0].startswith("launched no GPU kernel during the call: it only made "
                                                            "copies (")
    kinds = {row["kind"] for row in launches["work"]}
    assert kinds == {"memcpy"} and any("DtoH" in row["name"] for row in launches["work"])


@pytest.mark.parametrize("solution, problem, library", [("wrong/calls_torch.py", "vector_add", "torch"),
                                                        ("wrong/calls_torch_matmul.py", "matmul", "cuBLAS")])
def test_a_library_only_solution_passes_and_says_so(reference_dir, tmp_path, solution, problem, library):
    code, report = check(reference_dir, solution, tmp_path, problem=problem)
    launches = report["launches"]
    assert code == 0 and launches["own_kernels"] == 0 and launches["library_kernels"] >= 1, launches
    assert any(library in row["origin"] for row in launches["work"])
    assert "No kernel of the solution's own ran" in (tmp_path / "correctness.md").read_text()


@pytest.mark.timing
def test_the_benchmark_lists_what_its_correctness_gate_saw_launched(reference_dir, tmp_path):
    code, report = bench(reference_dir, "wrong/calls_torch.py", tmp_path)
    assert code == 0 and report["verdict"] == "measured"
    assert report["correctness"]["launches"]["own_kernels"] == 0
    markdown = (tmp_path / "benchmark.md").read_text()
    assert "## What ran on the GPU" in markdown and "No kernel of the solution's own ran" in markdown


@pytest.mark.timing
def test_tampering_after_a_warm_up_is_caught_by_the_benchmark_child(reference_dir, tmp_path):
    code, report = bench(reference_dir, "wrong/tamper_after_warmup.py", tmp_path)
    assert report["correctness"]["passed"]  # at most 29 calls there: it had not tampered yet
    assert code == 3 and report["verdict"] == "solution_error" and report["error"]["kind"] == "tampering"
    assert "replaced torch.cuda.Event.elapsed_time" in report["error"]["message"]
    assert report["solution"].get("median_us") is None  # no time measured with the replaced timer is kept


@pytest.mark.timing
@pytest.mark.parametrize("solution, cause", [("wrong/stale_after_warmup.py", "earlier calls"),
                                             ("wrong/memoized_by_pointer.py", "earlier calls")])
def test_the_wrong_timed_output_message_names_the_cause(reference_dir, tmp_path, solution, cause):
    code, report = bench(reference_dir, solution, tmp_path)
    assert code == 1 and report["verdict"] == "incorrect"
    [message] = [w for w in report["warnings"] if w.startswith("the outputs of the timed calls are wrong")]
    assert cause in message and message.endswith("its timing is not valid")
