"""The sweep's child and its parent on a CPU: nsight-python replaced by tests/fixtures/fake_nsight.

The stand-in re-runs the child's script file as nsight-python does under ncu (NSPY_NCU_PROFILE
set) and returns a DataFrame of made-up times (1000 ns x size for the solution, 2000 ns x size
for the reference), so everything else is real: the parent's correctness check of every size
(Triton interpreter), the child started as a file, the profiled process loading the solution,
making the inputs with setup(seed=0), reporting the work and calling both inside their
annotations, the per-size frames merged into sweep.csv, and the record, sweep.md and sweep.png.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from kernel_opt.profile.sweep import runner
from kernel_opt.profile.sweep.frame import read_frame
from kernel_opt.profile.sweep.plan import child_program, plan_sweep
from kernel_opt.run.events import ErrorEvent, SweepOutcomeEvent, SweepSizeEvent
from kernel_opt.run.runner import run_worker

FAKE_NSIGHT = REPO_ROOT / "tests" / "fixtures" / "fake_nsight"
SOFTMAX = REPO_ROOT / "reference" / "softmax"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# Right at N=2, wrong at N=4 (the check must stop it), and at N=8 right when checked but failing in the
# profiled process only: the three ways a size can end.
MIXED_SOLUTION = '''
import os

import torch
import triton  # noqa: F401


def run_kernel(x, out, N, D, **_):
    if N == 8 and "NSPY_NCU_PROFILE" in os.environ:
        raise RuntimeError("fails only in the profiled process")
    out.copy_(torch.softmax(x, dim=-1) * (0.5 if N == 4 else 1.0))
'''


@pytest.fixture
def fake_nsight(tmp_path, monkeypatch):
    """nsight-python's stand-in on the child's path, this machine's tools as a GPU machine has them."""
    log = tmp_path / "fake_nsight.jsonl"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_NSIGHT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("FAKE_NSIGHT_LOG", str(log))
    monkeypatch.setattr(runner, "sweep_tools", lambda: runner.SweepTools("/opt/ncu/ncu", "2025.3.1.0", "0.9.6", None))
    return log


def logged(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def sweep(tmp_path, solution: Path, sizes: str, runs: int = 2) -> runner.SweepRecord:
    reference = SOFTMAX / "ref.py"
    plan = plan_sweep(sizes, {"D": 16}, reference, solution)
    request = runner.SweepRequest(solution, reference, tmp_path / "out", plan, runs=runs, device="cpu",
                                  command="ncu_profile.py --sweep " + sizes)
    return runner.sweep_solution(request)


def test_a_correct_solution_is_profiled_at_every_size_beside_pytorch(tmp_path, fake_nsight):
    record = sweep(tmp_path, SOFTMAX / "good" / "softmax.py", "N=2,4")
    out = tmp_path / "out"
    assert (record.verdict, record.exit_code, record.error) == ("profiled", 0, None)
    for point, value in zip(record.points, (2, 4), strict=True):
        assert point.status == "profiled" and point.dims == {"N": value, "D": 16, "scale": 1.0}
        assert point.work["bytes"] == 2 * value * 16 * 4 and point.work["bytes_source"] == "ref.py bytes()"
        assert point.solution.time_us == pytest.approx(float(value)) and point.solution.runs == 2
        assert point.reference.time_us == pytest.approx(2.0 * value) and point.speedup_vs_reference == 2.0
        assert point.solution.dram_bytes == 8.0 * value and point.solution.kernels == ["solution_kernel"]
    check = json.loads((out / "check" / "correctness.json").read_text())
    assert check["verdict"] == "pass" and check["seeds"] == [0]
    assert [case["dims"]["N"] for case in check["cases"]] == [2, 4]  # exactly the sweep's sizes, no SHAPES
    assert len(read_frame(out / "sweep.csv", "N")) == 4 and (out / "sweep.csv").read_text().count("\n") == 13
    assert (out / "sweep.png").read_bytes().startswith(PNG_MAGIC) and record.files["png"] == "sweep.png"
    assert "| 2   | 2.00          | 4.00         | 2.00x" in (out / "sweep.md").read_text()
    assert json.loads((out / "sweep.json").read_text())["points"][1]["solution"]["time_us"] == pytest.approx(4.0)


def test_nsight_python_gets_the_projects_options_and_each_size_its_own_folder(tmp_path, fake_nsight):
    sweep(tmp_path, SOFTMAX / "good" / "softmax.py", "N=2,4", runs=3)
    entries = logged(fake_nsight)
    calls = [entry for entry in entries if "options" in entry]
    assert [call["configs"] for call in calls] == [[[2]], [[4]]]
    for call, value in zip(calls, (2, 4), strict=True):
        options = call["options"]
        assert options["output_prefix"] == f"{tmp_path / 'out' / 'nsight'}/N-{value}/"
        assert (options["clock_control"], options["cache_control"], options["replay_mode"]) == ("none", "all", "kernel")
        assert options["metrics"] == ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]
        assert call["combine"] == [2, 5.0]  # a two-argument combiner that sums
    annotations = [entry["annotation"] for entry in entries if entry.get("signature") == "[[4]]"]
    assert annotations == ["solution", "reference"] * 3  # every run, in this order
    profiled = {entry["pid"] for entry in entries if "annotation" in entry}
    assert len(profiled) == 2 and not profiled & {call["pid"] for call in calls}  # one profiled process per size


def test_wrong_sizes_are_never_profiled_and_a_failing_profiled_process_is_the_solutions_fault(tmp_path, fake_nsight):
    solution = tmp_path / "mixed.py"
    solution.write_text(MIXED_SOLUTION)
    record = sweep(tmp_path, solution, "N=2,4,8")
    statuses = [(point.value, point.status, point.exit_code) for point in record.points]
    assert statuses == [(2, "profiled", 0), (4, "incorrect", 1), (8, "solution_error", 3)]
    assert record.point(4).message.startswith("wrong results: output 'out'")
    assert "the profiled program failed: the solution raised RuntimeError: fails only in the profiled process" in (
        record.point(8).message)
    assert (record.verdict, record.exit_code) == ("partial", 3)
    assert [call["configs"] for call in logged(fake_nsight) if "options" in call] == [[[2]], [[8]]]
    events = [json.loads(line) for line in (tmp_path / "out" / "sweep_events.jsonl").read_text().splitlines()]
    outcomes = [(event["value"], event["profiled"]) for event in events if event["event"] == "sweep_outcome"]
    assert outcomes == [(2, True), (8, False)]
    assert [point.value for point in record.charted()] == [2]


def test_an_nsight_python_that_cannot_import_makes_the_child_say_what_to_install(tmp_path):
    broken = tmp_path / "shim" / "nsight"  # installed without a dependency, as pip --no-deps leaves it
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'cachebox'\", name='cachebox')\n")
    request = {"sweep": {"name": "N", "values": [2]}, "nsight_options": {}, "frames_dir": str(tmp_path),
               "csv": str(tmp_path / "sweep.csv")}
    outcome = run_worker(request, timeout_s=60, env={"PYTHONPATH": str(tmp_path / "shim")}, program=child_program())
    error = next(event for event in outcome.events if isinstance(event, ErrorEvent))
    assert outcome.returncode == 4 and error.exit_code == 4
    assert error.message == ("nsight-python cannot be imported in the sweep's process: ModuleNotFoundError: "
                             "No module named 'cachebox'")
    assert "pip install nsight-python==0.9.6" in error.hint
    assert not any(isinstance(event, (SweepOutcomeEvent, SweepSizeEvent)) for event in outcome.events)
    assert outcome.failure()["exit_code"] == 4
