"""suite/shipped_pair.py: a pair's files sent to a worker that has none of them, and its records brought back
with the driver's paths, written by the driver alone (no Ray needed)."""

from __future__ import annotations

import json
from pathlib import Path

from kernel_opt.core.files import write_json_atomic
from kernel_opt.suite import shipped_pair
from kernel_opt.suite.pairs import Pair
from kernel_opt.suite.runner import EvalRequest, new_entry
from kernel_opt.suite.shipped_pair import PairResult, evaluate_shipped, land, relocate, ship


def fake_evaluate(pair, request, device):
    """Writes what a real evaluation writes into the pair's folder, naming the paths it was given."""
    folder = request.output_dir / "pairs" / pair.name
    assert pair.problem.read_text() == "PROBLEM" and pair.solution.read_bytes() == b"SOLUTION"
    assert request.problems_dir == pair.problem.parent and request.solutions_dir == pair.solution.parent
    write_json_atomic(folder / "correctness.json", {"solution": str(pair.solution), "reference": str(pair.problem),
                                                    "output_dir": str(folder)})
    (folder / "correctness.md").write_text(f"checked {pair.solution} against {pair.problem}\n")
    (folder / "build").mkdir()
    (folder / "build" / "kernel.so").write_bytes(bytes(range(256)))
    (folder / "build" / "huge.bin").write_bytes(b"x" * 2048)
    entry = new_entry(pair, "k" * 64)
    entry.verdict, entry.device = "correct", {"type": device}
    entry.notes.append(f"built in {folder / 'build'}")
    return entry


def test_the_records_come_back_with_the_drivers_paths_and_land_in_the_output_folder(tmp_path, monkeypatch):
    problems, solutions = tmp_path / "problems", tmp_path / "runs" / "relu" / "v3"
    problems.mkdir()
    solutions.mkdir(parents=True)
    (problems / "19_ReLU.py").write_text("PROBLEM")
    (solutions / "v3.py").write_bytes(b"SOLUTION")
    pair = Pair("19_ReLU", problems / "19_ReLU.py", solutions / "v3.py", source="run folder", run_version="v3")
    request = EvalRequest(problems, tmp_path / "runs", tmp_path / "out")
    shipped = ship(pair)
    assert (shipped.problem_bytes, shipped.solution_bytes) == (b"PROBLEM", b"SOLUTION")
    monkeypatch.setattr(shipped_pair, "MAX_RETURNED_FILE_BYTES", 1024)
    result = evaluate_shipped(shipped, request, "cpu", evaluate=fake_evaluate)

    assert sorted(result.files) == ["build/kernel.so", "correctness.json", "correctness.md"]
    assert result.left_behind == ["build/huge.bin (0 MiB)"]
    assert "kernel-opt-eval-" not in json.dumps(result.entry) + result.files["correctness.md"].decode()
    folder = request.output_dir / "pairs" / "19_ReLU"
    (folder / "benchmark.json").parent.mkdir(parents=True)
    (folder / "benchmark.json").write_text("{}")  # an earlier run's: not this run's record
    entry = land(result, request.output_dir)

    assert json.loads((folder / "correctness.json").read_text()) == {
        "solution": str(pair.solution), "reference": str(pair.problem), "output_dir": str(folder)}
    assert (folder / "correctness.md").read_text() == f"checked {pair.solution} against {pair.problem}\n"
    assert (folder / "build" / "kernel.so").read_bytes() == bytes(range(256))
    assert not (folder / "benchmark.json").exists() and not (folder / "entry.json").exists()  # the driver's to write
    assert (entry.problem, entry.solution, entry.run_version) == (str(pair.problem), str(pair.solution), "v3")
    assert entry.notes == [f"built in {folder / 'build'}",
                           "left on the worker (too large to bring back): build/huge.bin (0 MiB)"]


def test_a_file_that_would_leave_the_pair_folder_is_not_written(tmp_path):
    entry = new_entry(Pair("a", Path("a.py"), None))
    land(PairResult(entry.to_dict(), {"../../escaped.json": b"{}", "kept.json": b"{}"}), tmp_path / "out")
    assert (tmp_path / "out" / "pairs" / "a" / "kept.json").is_file()
    assert not (tmp_path / "escaped.json").exists() and not (tmp_path / "out" / "escaped.json").exists()


def test_relocation_puts_back_the_longest_path_first():
    back = {"/s/out": "/home/me/out", "/s/out2": "/elsewhere", "/s/problems/a.py": "problems/a.py"}
    assert relocate("/s/problems/a.py, /s/out2/x and /s/out/pairs/a", back) == (
        "problems/a.py, /elsewhere/x and /home/me/out/pairs/a")
