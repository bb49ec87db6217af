"""suite/runner.py: which earlier entry a run may reuse, the GPU an entry names, and the row of a lost pair."""

from __future__ import annotations

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.suite.pairs import find_pairs
from kernel_opt.suite.runner import (
    EvalRequest,
    entry_key,
    held_gpu,
    lost_entry,
    new_entry,
    reusable_entry,
    write_entry,
)

from .pool_jobs import FAKE_GPUS, fake_gpus

PROBLEMS, SOLUTIONS = FIXTURES_DIR / "kernelbench" / "problems", FIXTURES_DIR / "kernelbench" / "solutions"
H100 = {"type": "cuda", "gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "torch": "2.11.0", "triton": "3.6.0"}
H200 = {**H100, "gpu": "NVIDIA H200"}


@pytest.fixture
def pair_and_request(tmp_path):
    pair = find_pairs(PROBLEMS, SOLUTIONS)[0][0]
    return pair, EvalRequest(PROBLEMS, SOLUTIONS, tmp_path / "out")


def written(request, pair, device, key=None):
    entry = new_entry(pair, entry_key(pair, request, device) if key is None else key)
    entry.verdict, entry.device = "correct", device
    write_entry(request.output_dir, entry)
    return request.output_dir / "pairs" / pair.name


def test_an_entry_is_reused_on_a_device_the_run_has_and_only_there(pair_and_request):
    pair, request = pair_and_request
    folder = written(request, pair, H100)
    assert reusable_entry(folder, pair, request, [H200, H100]).verdict == "correct"  # a worker of its model
    assert reusable_entry(folder, pair, request, [H200]) is None  # no worker of its model: it runs again
    request.seeds += 1
    assert reusable_entry(folder, pair, request, [H100]) is None  # other options: it runs again


def test_where_the_devices_are_known_only_later_the_entrys_own_device_counts(pair_and_request):
    """Ray: which node a task lands on is not known up front; the entry's key must hold under its own device."""
    pair, request = pair_and_request
    folder = written(request, pair, H200)
    assert reusable_entry(folder, pair, request, None).device == H200
    request.device = "cpu"
    assert reusable_entry(folder, pair, request, None) is None  # made on a GPU, asked for the CPU
    request.device = "cuda"
    forged = written(request, pair, H200, key="0" * 64)  # a key that is not these files under that device
    assert reusable_entry(forged, pair, request, None) is None
    lost = written(request, pair, H200, key="")  # a worker that died: no key, never reused
    assert reusable_entry(lost, pair, request, [H200]) is None and reusable_entry(lost, pair, request, None) is None


@pytest.mark.parametrize("verdict, reused", [("usage_error", False), ("environment_error", False),
                                             ("internal_error", False), ("missing", False),
                                             ("incorrect", True), ("solution_error", True), ("invalid", True)])
def test_a_pair_that_blamed_no_solution_runs_again(pair_and_request, verdict, reused):
    pair, request = pair_and_request
    folder = written(request, pair, H100)
    entry = reusable_entry(folder, pair, request, [H100])
    entry.verdict = verdict
    write_entry(request.output_dir, entry)
    assert (reusable_entry(folder, pair, request, [H100]) is not None) is reused


def test_an_unreadable_entry_runs_again(pair_and_request):
    pair, request = pair_and_request
    folder = request.output_dir / "pairs" / pair.name
    folder.mkdir(parents=True)
    (folder / "entry.json").write_text("{not json")
    assert reusable_entry(folder, pair, request, [H100]) is None


def test_the_gpu_an_entry_names_is_the_one_this_process_holds(tmp_path, monkeypatch):
    fake_gpus(tmp_path / "bin", monkeypatch)
    assert held_gpu("cpu") is None  # no GPU asked for, none held
    gpu = held_gpu("cuda")
    assert (gpu["index"], gpu["name"], gpu["uuid"]) == (0, *FAKE_GPUS[0]) and gpu["host"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # as a worker of --gpus, or a Ray task, is given it
    assert (held_gpu("cpu")["index"], held_gpu("cuda")["name"]) == (1, FAKE_GPUS[1][0])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # Ray's task without a GPU
    assert held_gpu("cpu") is None


def test_a_lost_pair_is_a_timeout_that_keeps_its_key_or_a_worker_death_that_does_not(pair_and_request):
    pair, request = pair_and_request
    gpu = {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-b", "host": "node"}
    hang = lost_entry(pair, H200, gpu, 1800.04, kind="timeout", message="past the pair timeout",
                      key=entry_key(pair, request, H200))
    died = lost_entry(pair, H200, gpu, 12.0, kind="worker_died", message="the worker died")
    assert (hang.verdict, hang.error_kind, hang.wall_s, hang.gpu) == ("solution_error", "timeout", 1800.0, gpu)
    assert (died.verdict, died.error_kind, died.key) == ("internal_error", "worker_died", "")
    assert hang.key == entry_key(pair, request, H200) and hang.solution == str(pair.solution)
    with pytest.raises(KeyError):
        lost_entry(pair, H200, gpu, 1.0, kind="unknown", message="")


def test_a_pair_s_speedup_over_eager_is_the_benchmark_s_own_paired_one():
    """Eager timed in alternation with the solution: the row reads against the solution in those pairs."""
    from kernel_opt.measure.records import BenchmarkReport, TimedEntry, TimedSolution
    from kernel_opt.suite.records import EvalEntry
    from kernel_opt.suite.runner import _read_benchmark

    eager = TimedEntry("eager", median_us=120.0, paired_solution_us=110.0)
    compiled = TimedEntry("torch.compile (default)", median_us=105.0)
    report = BenchmarkReport(solution=TimedSolution(median_us=100.0), reference="p.py", backend="modelnew",
                             command="benchmark.py", verdict="measured", baselines=[eager, compiled],
                             speedup_vs_eager=120.0 / 110.0)
    entry = EvalEntry(name="p", problem="p.py", verdict="correct")
    _read_benchmark(entry, report)
    assert (entry.solution_us, entry.eager_us) == (100.0, 120.0)
    assert entry.speedup_vs_eager == pytest.approx(120.0 / 110.0)
    assert entry.speedup_vs_compile == pytest.approx(1.05)  # torch.compile is timed after: its own medians
