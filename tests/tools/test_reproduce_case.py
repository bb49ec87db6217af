"""tools/reproduce_case.py on the real H100 run fixture, with the GPU scripts replaced by a fake.

The fake "re-runs" a recorded command by copying the recorded JSON into the scratch folder,
optionally changing figures, so each test states what the GPU would have measured.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from conftest import REPO_ROOT, load_tool

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "runs" / "softmax_cuda_h100"

reproduce_case = load_tool("reproduce_case")


@pytest.fixture
def case(tmp_path: Path) -> Path:
    destination = tmp_path / "demo" / "cuda" / "softmax"
    shutil.copytree(FIXTURE, destination)
    return destination


class FakeGpu:
    """Writes what a re-run would: the recorded records, with `edit(item, file name, record)` applied."""

    def __init__(self, case: Path, edit=lambda item, name, record: None, exit_codes: dict | None = None):
        self.case, self.edit, self.exit_codes, self.calls = case, edit, exit_codes or {}, []

    def __call__(self, script: str, arguments: list[str]) -> int:
        self.calls.append((script, arguments))
        if script == "measure_ceilings.py":  # reads this GPU's cache or measures; writes no record here
            return self.exit_codes.get((script, None), 0)
        output = Path(arguments[arguments.index("--output-dir") + 1])
        item = output.name
        source = self.case if item == "final" else self.case / item
        name = "benchmark.json" if script == "benchmark.py" else "correctness.json"
        record = copy.deepcopy(json.loads((source / name).read_text()))
        self.edit(item, name, record)
        (output / name).write_text(json.dumps(record))
        return self.exit_codes.get((script, item), 0)


def test_recorded_commands_are_moved_to_the_case_folder_and_the_scratch_dir(case: Path, tmp_path: Path):
    recorded = json.loads((case / "benchmark.json").read_text())["command"]
    assert recorded.startswith("benchmark.py runs/loop_cuda/v1/v1.cu --ref runs/loop_cuda/ref.py")

    script, arguments = reproduce_case.relocate(recorded, case, tmp_path / "scratch")

    assert script == "benchmark.py"
    assert arguments == [str(case / "v1" / "v1.cu"), "--ref", str(case / "ref.py"),
                         "--output-dir", str(tmp_path / "scratch"), "--against", str(case / "v0" / "v0.cu"),
                         "--N=4096", "--D=4096"]


def test_unchanged_figures_all_hold(case: Path, tmp_path: Path):
    gpu = FakeGpu(case)
    items = reproduce_case.select(case, None)

    result = reproduce_case.reproduce(case, items, tmp_path / "out", 0.05, runner=gpu)

    assert list(items) == ["v0", "v1", "final"]
    assert result.exit_code == 0 and result.holds
    # correctness and benchmark for v0 and v1, benchmark only for the final run
    assert gpu.calls[0] == ("measure_ceilings.py", [])  # the records used measured ceilings: have them here
    assert [(script, Path(args[args.index("--output-dir") + 1]).name) for script, args in gpu.calls[1:]] == [
        ("correctness_check.py", "v0"), ("benchmark.py", "v0"), ("correctness_check.py", "v1"),
        ("benchmark.py", "v1"), ("benchmark.py", "final")]
    names = {(figure.item, figure.name) for figure in result.figures}
    assert {("v1", "median µs"), ("v1", "speedup vs v0"), ("v1", "verdict vs v0"), ("final", "eager median µs"),
            ("final", "torch.compile (max-autotune-no-cudagraphs) median µs"), ("v0", "correctness"),
            ("final", "% of ceiling"), ("final", "ceiling basis")} <= names
    assert result.device_recorded == result.device_now == "NVIDIA H100 80GB HBM3"


def test_a_median_outside_the_tolerance_is_flagged_with_its_drift(case: Path, tmp_path: Path):
    def slower_v1(item, name, record):
        if item == "v1" and name == "benchmark.json":
            record["solution"]["median_us"] *= 1.08

    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["v1"]), tmp_path / "out", 0.05,
                                      runner=FakeGpu(case, slower_v1))

    failed = [figure for figure in result.figures if not figure.holds]
    assert [(figure.item, figure.name, figure.note) for figure in failed] == [("v1", "median µs", "+8.0%")]
    assert result.exit_code == 1
    report = reproduce_case.render(result).splitlines()
    header = next(line for line in report if line.startswith("| item"))
    assert [cell.strip() for cell in header.strip("|").split("|")] == [
        "item", "figure", "recorded", "re-run", "result", "drift"]
    row = next(line for line in report if "DIFFERS" in line)
    assert [cell.strip() for cell in row.strip("|").split("|")][:2] == ["v1", "median µs"]
    assert row.rstrip(" |").endswith("+8.0%")


def test_a_drift_inside_the_tolerance_holds(case: Path, tmp_path: Path):
    def slightly_slower(item, name, record):
        if name == "benchmark.json":
            record["solution"]["median_us"] *= 1.03

    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["v1"]), tmp_path / "out", 0.05,
                                      runner=FakeGpu(case, slightly_slower))
    assert result.exit_code == 0


def test_a_changed_verdict_does_not_hold_even_when_the_speedup_is_close(case: Path, tmp_path: Path):
    def neutral(item, name, record):
        if item == "final" and name == "benchmark.json":
            record["comparison"]["verdict"] = "neutral"

    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["final"]), tmp_path / "out", 0.05,
                                      runner=FakeGpu(case, neutral))
    verdict = next(figure for figure in result.figures if figure.name == "verdict vs v0")
    assert (verdict.recorded, verdict.reproduced, verdict.holds) == ("success", "neutral", False)
    assert result.exit_code == 1


def test_a_failed_correctness_check_does_not_hold(case: Path, tmp_path: Path):
    def wrong(item, name, record):
        if name == "correctness.json":
            record["passed"], record["verdict"] = False, "fail"

    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["v0"]), tmp_path / "out", 0.05,
                                      runner=FakeGpu(case, wrong, {("correctness_check.py", "v0"): 1}))
    correctness = next(figure for figure in result.figures if figure.name == "correctness")
    assert (correctness.reproduced, correctness.holds) == ("fail", False)
    assert result.exit_code == 1


def test_another_gpu_stops_the_comparison_with_exit_4(case: Path, tmp_path: Path):
    def other_gpu(item, name, record):
        if name == "benchmark.json":
            record["gpu"]["name"] = "NVIDIA H200"

    result = reproduce_case.reproduce(case, reproduce_case.select(case, None), tmp_path / "out", 0.05,
                                      runner=FakeGpu(case, other_gpu))
    assert result.exit_code == 4
    assert result.figures == [] or all(figure.name == "correctness" for figure in result.figures)
    assert "timings compare only on the same device type" in result.errors[0]


def test_no_gpu_is_an_environment_fault(case: Path, tmp_path: Path):
    gpu = FakeGpu(case, exit_codes={("correctness_check.py", "v0"): 4})
    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["v0"]), tmp_path / "out", 0.05, runner=gpu)
    assert result.exit_code == 4 and [script for script, _ in gpu.calls] == ["measure_ceilings.py",
                                                                             "correctness_check.py"]


def test_bad_input_exits_2_and_names_what_is_recorded(case: Path, tmp_path: Path, capsys):
    assert reproduce_case.main([str(case), "--versions", "v7"]) == 2
    assert "no recorded benchmark for v7; recorded: v0, v1, final" in capsys.readouterr().err
    assert reproduce_case.main([str(tmp_path)]) == 2
    assert "no run.json" in capsys.readouterr().err
    assert reproduce_case.main([str(case), "--tolerance", "5"]) == 2


def test_the_recorded_case_is_left_untouched(case: Path, tmp_path: Path):
    before = {path: path.read_bytes() for path in case.rglob("*") if path.is_file()}
    reproduce_case.reproduce(case, reproduce_case.select(case, None), tmp_path / "out", 0.05, runner=FakeGpu(case))
    assert {path: path.read_bytes() for path in case.rglob("*") if path.is_file()} == before


def test_measured_ceilings_that_cannot_be_measured_here_stop_the_run_with_exit_4(case: Path, tmp_path: Path):
    """The records' % of ceiling is against measured ceilings: without them here, no figure is re-run."""
    gpu = FakeGpu(case, exit_codes={("measure_ceilings.py", None): 3})
    result = reproduce_case.reproduce(case, reproduce_case.select(case, None), tmp_path / "out", 0.05, runner=gpu)
    assert result.exit_code == 4 and [script for script, _ in gpu.calls] == ["measure_ceilings.py"]
    assert result.figures == []
    assert result.errors[0].startswith("v0, v1, final: the recorded % of ceiling is against this GPU's measured "
                                       "ceilings, and measure_ceilings.py exited 3 here")
    assert "- error: v0, v1, final: the recorded % of ceiling" in reproduce_case.render(result)


def test_a_record_on_the_datasheet_basis_needs_no_measured_ceilings(case: Path, tmp_path: Path):
    for path in case.rglob("benchmark.json"):
        record = json.loads(path.read_text())
        record["roofline"]["primary"] = "datasheet"
        path.write_text(json.dumps(record))
    gpu = FakeGpu(case)
    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["final"]), tmp_path / "out", 0.05,
                                      runner=gpu)
    assert [script for script, _ in gpu.calls] == ["benchmark.py"]
    assert result.ceilings == "no record used measured ceilings" and result.exit_code == 0


def test_a_percent_on_another_basis_is_set_aside_and_the_achieved_rate_decides(case: Path, tmp_path: Path):
    """Recorded against measured ceilings, re-run against the datasheet: 99% -> 72% with no kernel change (on
    2026-11-26 the Triton softmax at 100.4% of a same-size copy crossed the copy that H100 measured and was placed
    on the datasheet). The % and the basis are not comparable; the achieved rate they divide must hold."""
    def on_the_datasheet(item, name, record):
        if item == "final" and name == "benchmark.json":
            record["roofline"]["basis"] = {"name": "datasheet", "memory_bandwidth_gbps": 3350.0,
                                           "compute_tflops": 67.0, "dtype": "float32", "reason": "no measured"}
            record["percent_of_ceiling"] *= 0.72

    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["final"]), tmp_path / "out", 0.05,
                                      runner=FakeGpu(case, on_the_datasheet))
    figures = {figure.name: figure for figure in result.figures}
    basis, percent, achieved = figures["ceiling basis"], figures["% of ceiling"], figures["achieved GB/s"]
    assert (basis.recorded, basis.reproduced, basis.holds, basis.note) == (
        "same-size copy", "datasheet", None, "basis changed: the achieved rate is compared")
    assert percent.holds is None and percent.note == "not comparable: same-size copy vs datasheet basis"
    assert achieved.holds and result.exit_code == 0

    def without_the_rate(item, name, record):  # nothing left to compare the kernel by: the changed basis fails
        on_the_datasheet(item, name, record)
        if item == "final" and name == "benchmark.json":
            record["roofline"]["points"][record["roofline"]["primary"]].pop("achieved_bandwidth_gbps")

    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["final"]), tmp_path / "out2", 0.05,
                                      runner=FakeGpu(case, without_the_rate))
    figures = {figure.name: figure for figure in result.figures}
    assert (figures["ceiling basis"].holds, figures["ceiling basis"].note) == (False, "basis changed")
    assert figures["% of ceiling"].holds is False and result.exit_code == 1


def test_a_roof_this_gpu_measured_differently_sets_the_percent_aside_and_compares_the_achieved_rate(
        case: Path, tmp_path: Path):
    """On 2026-11-26 a fresh H100 measured the bf16 matmul roof at 784 TFLOP/s where the records used 708: every
    compute-bound % of ceiling moved about 10% with no kernel change. The % is set aside (not comparable), and the
    rate it divides is compared instead: the kernel held, so the case holds."""
    def on_a_higher_roof(item, name, record):
        if item == "final" and name == "benchmark.json":
            point = record["roofline"]["points"][record["roofline"]["primary"]]
            point["ceilings"]["memory_bandwidth_gbps"] *= 1.10
            point["percent_of_ceiling"] /= 1.10
            record["percent_of_ceiling"] /= 1.10

    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["final"]), tmp_path / "out", 0.05,
                                      runner=FakeGpu(case, on_a_higher_roof))
    figures = {figure.name: figure for figure in result.figures}
    percent, achieved = figures["% of ceiling"], figures["achieved GB/s"]
    assert percent.holds is None and percent.note.startswith("not comparable: the memory roof moved")
    assert achieved.holds and achieved.recorded == achieved.reproduced
    assert result.exit_code == 0 and "1 not comparable" in reproduce_case.render(result)

    def slower_too(item, name, record):
        on_a_higher_roof(item, name, record)
        if item == "final" and name == "benchmark.json":
            record["roofline"]["points"][record["roofline"]["primary"]]["achieved_bandwidth_gbps"] *= 0.9

    result = reproduce_case.reproduce(case, reproduce_case.select(case, ["final"]), tmp_path / "out2", 0.05,
                                      runner=FakeGpu(case, slower_too))
    assert not {figure.name: figure for figure in result.figures}["achieved GB/s"].holds and result.exit_code == 1
