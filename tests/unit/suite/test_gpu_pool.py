"""suite/gpu_pool.py and the driver around it on a fake two-GPU host: which GPUs, one pair per GPU at a time,
a worker that crashes or hangs costing its own row, and a resumed run.

The host is faked where the tools look (an nvidia-smi on PATH, pool_jobs.fake_gpus) and the pairs'
evaluation is a stand-in (pool_jobs.evaluate_by_name), so the pool's own behaviour is what is tested,
in real worker processes; tests/integration/test_eval.py runs the real pairs with --gpus.
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.core.errors import EnvironmentFault, UsageError
from kernel_opt.suite.driver import run_eval
from kernel_opt.suite.gpu_pool import LocalWorkers, WorkerSlot, visible_gpus, worker_slots
from kernel_opt.suite.runner import EvalRequest

from .pool_jobs import FAKE_GPUS, evaluate_by_name, fake_gpus, interval

PROBLEM = FIXTURES_DIR / "kernelbench" / "problems" / "3_Sum_reduction.py"
SOLUTION = FIXTURES_DIR / "kernelbench" / "solutions" / "3_Sum_reduction.py"


def suite(tmp_path, names):
    """A problems and a solutions folder with one honest pair per name (the evaluation is stood in for anyway)."""
    problems, solutions = tmp_path / "problems", tmp_path / "solutions"
    problems.mkdir()
    solutions.mkdir()
    for name in names:
        shutil.copy(PROBLEM, problems / f"{name}.py")
        shutil.copy(SOLUTION, solutions / f"{name}.py")
    return EvalRequest(problems, solutions, tmp_path / "out", device="cpu", gpus="all")


def pool(request, timeout_s=None):
    if timeout_s is not None:
        request.pair_timeout_s = timeout_s
    return LocalWorkers(worker_slots("all", "cpu"), request, "cpu", evaluate=evaluate_by_name)


# --- which GPUs -------------------------------------------------------------------------------------------------


def test_all_means_every_gpu_nvidia_smi_lists_within_cuda_visible_devices(tmp_path, monkeypatch):
    fake_gpus(tmp_path / "bin", monkeypatch)
    slots = worker_slots("all", "cuda")
    assert [(slot.number, slot.gpu.index, slot.gpu.name, slot.gpu.uuid) for slot in slots] == [
        (0, 0, FAKE_GPUS[0][0], FAKE_GPUS[0][1]), (1, 1, FAKE_GPUS[1][0], FAKE_GPUS[1][1])]
    assert slots[1].environment() == {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert slots[1].label() == "GPU 1" and slots[1].identity("cuda")["gpu"] == "Fake H200"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert [gpu.name for gpu in visible_gpus()] == ["Fake H200"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"{FAKE_GPUS[0][1]},7")  # a UUID, then one that is not there
    assert [gpu.name for gpu in visible_gpus()] == ["Fake H100 80GB HBM3"]


def test_a_count_beyond_the_gpus_is_refused_on_a_gpu_and_runs_gpu_less_workers_on_the_cpu(tmp_path, monkeypatch):
    fake_gpus(tmp_path / "bin", monkeypatch)
    assert [slot.gpu.index for slot in worker_slots("1", "cuda")] == [0]
    with pytest.raises(EnvironmentFault, match="shows 2 GPU"):
        worker_slots("3", "cuda")
    slots = worker_slots("3", "cpu")
    assert [slot.gpu is not None for slot in slots] == [True, True, False]
    assert slots[2].environment() == {} and slots[2].label() == "worker 2" and slots[2].gpu_record() is None
    for bad in ("0", "two", "-1"):
        with pytest.raises(UsageError, match="positive count"):
            worker_slots(bad, "cpu")


def test_all_without_a_gpu_is_a_machine_limit(tmp_path, monkeypatch):
    fake_gpus(tmp_path / "bin", monkeypatch, gpus=())
    with pytest.raises(EnvironmentFault, match="lists no GPU") as caught:
        worker_slots("all", "cpu")
    assert caught.value.exit_code == 4 and "--gpus N --device cpu" in caught.value.hint
    assert worker_slots("2", "cpu") == [WorkerSlot(0), WorkerSlot(1)]


# --- scheduling, failures, resume -------------------------------------------------------------------------------


def test_each_pair_runs_once_and_alone_on_its_gpu_and_only_the_driver_writes_entries(tmp_path, monkeypatch):
    fake_gpus(tmp_path / "bin", monkeypatch)
    names = [f"p{index}" for index in range(6)]
    request = suite(tmp_path, names)
    seen = []
    report = run_eval(request, "eval.py", progress=lambda done, total, entry, reused: seen.append((done, total)),
                      pool=pool(request))
    assert [entry.name for entry in report.entries] == names  # the pairs' order, whatever order they ended in
    assert seen == [(done, 6) for done in range(1, 7)]
    by_gpu = {}
    for entry in report.entries:
        assert entry.verdict == "correct" and entry.device["type"] == "cpu"
        by_gpu.setdefault((entry.gpu["index"], entry.gpu["name"], entry.gpu["uuid"]), []).append(interval(entry))
    assert sorted(by_gpu) == [(0, *FAKE_GPUS[0]), (1, *FAKE_GPUS[1])]  # both GPUs took pairs
    for intervals in by_gpu.values():  # never two pairs on one GPU at once
        intervals.sort()
        assert all(earlier[1] <= later[0] for earlier, later in zip(intervals, intervals[1:], strict=False))
    for entry in report.entries:
        written = json.loads((request.output_dir / "pairs" / entry.name / "entry.json").read_text())
        assert written == entry.to_dict()
    execution = report.execution
    assert (execution.mode, execution.workers, execution.pairs_run, execution.pairs_reused) == ("local workers", 2,
                                                                                              6, 0)
    assert [(gpu["index"], gpu["pairs"]) for gpu in execution.gpus] == [
        (index, len(by_gpu[(index, *FAKE_GPUS[index])])) for index in (0, 1)]
    assert execution.pair_s == pytest.approx(sum(entry.wall_s for entry in report.entries), abs=0.2)
    assert sorted(report.by_gpu_model) == sorted(name for name, _ in FAKE_GPUS)
    assert sum(summary.problems for summary in report.by_gpu_model.values()) == 6
    assert any("2 GPU models" in note for note in report.notes)


@pytest.mark.slow
def test_a_crashing_and_a_hanging_worker_cost_one_row_each_and_the_run_resumes(tmp_path, monkeypatch):
    fake_gpus(tmp_path / "bin", monkeypatch)
    request = suite(tmp_path, ["a", "b", "crash", "d", "hang", "f"])
    report = run_eval(request, "eval.py", pool=pool(request, timeout_s=10))  # a fresh worker takes seconds
    entries = {entry.name: entry for entry in report.entries}
    assert {name: entry.verdict for name, entry in entries.items()} == {
        "a": "correct", "b": "correct", "crash": "internal_error", "d": "correct", "hang": "solution_error",
        "f": "correct"}
    crash, hang = entries["crash"], entries["hang"]
    assert crash.error_kind == "worker_died" and "died (exit code 9)" in crash.message and crash.key == ""
    assert crash.gpu["name"] in {name for name, _ in FAKE_GPUS}
    assert hang.error_kind == "timeout" and "past the pair timeout (10 s)" in hang.message and hang.key
    assert hang.wall_s >= 10

    # the next run reuses every row with a verdict, the hang's included, and runs the crashed pair again
    reused = []
    again = run_eval(request, "eval.py", progress=lambda done, total, entry, was: reused.append((entry.name, was)),
                     pool=pool(request, timeout_s=10))
    assert sorted(name for name, was in reused if was) == ["a", "b", "d", "f", "hang"]
    assert [name for name, was in reused if not was] == ["crash"]
    assert (again.execution.pairs_run, again.execution.pairs_reused) == (1, 5)
    assert {entry.name: entry.verdict for entry in again.entries} == {
        "a": "correct", "b": "correct", "crash": "internal_error", "d": "correct", "hang": "solution_error",
        "f": "correct"}  # the stand-in crashes again: a crash that is the pair's own keeps costing its row


def test_a_one_process_run_reuses_what_the_workers_made_on_the_cpu(tmp_path, monkeypatch):
    """--device cpu entries are keyed on the software alone, so the run that resumes may be spread otherwise."""
    fake_gpus(tmp_path / "bin", monkeypatch)
    request = suite(tmp_path, ["a", "b"])
    run_eval(request, "eval.py", pool=pool(request))
    request.gpus = None
    reused = []
    report = run_eval(request, "eval.py", progress=lambda done, total, entry, was: reused.append(was))
    assert reused == [True, True] and report.execution.mode == "one process" and report.execution.pairs_run == 0
