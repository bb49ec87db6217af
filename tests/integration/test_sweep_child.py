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
from kernel_opt.run.request import ChildRequest, SolutionSpec, SweepPart
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


def sweep(tmp_path, solution: Path, sizes: str, runs: int = 2, keep_reports: bool = False) -> runner.SweepRecord:
    reference = SOFTMAX / "ref.py"
    plan = plan_sweep(sizes, {"D": 16}, reference, solution)
    request = runner.SweepRequest(solution, reference, tmp_path / "out", plan, runs=runs, device="cpu",
                                  command="ncu_profile.py --sweep " + sizes, keep_reports=keep_reports)
    return runner.sweep_solution(request)


@pytest.mark.slow
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
    # the full reports are gone, said once; the CSVs the sweep read stay
    assert not list(out.rglob("*.ncu-rep")) and (out / "nsight" / "N-2" / "frame.csv").is_file()
    assert record.notes == ["removed nsight-python's 2 full report(s) (0.0 MB of .ncu-rep) from nsight/: sweep.csv "
                            "and each size's CSVs hold what the sweep reads; --keep-reports keeps them"]
    assert "note: removed nsight-python's 2 full report(s)" in (out / "sweep.md").read_text()


@pytest.mark.slow
def test_keep_reports_keeps_each_sizes_full_report(tmp_path, fake_nsight):
    record = sweep(tmp_path, SOFTMAX / "good" / "softmax.py", "N=2,4", keep_reports=True)
    out = tmp_path / "out"
    assert sorted(path.relative_to(out).as_posix() for path in out.rglob("*.ncu-rep")) == [
        "nsight/N-2/ncu-output-sweep-0.ncu-rep", "nsight/N-4/ncu-output-sweep-0.ncu-rep"]
    assert record.notes == []


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_when_no_size_is_correct_nothing_is_profiled_and_no_earlier_sweeps_files_remain(tmp_path, fake_nsight):
    solution = tmp_path / "zeros.py"
    solution.write_text("import triton  # noqa: F401\n\n\ndef run_kernel(out, **_):\n    out.zero_()\n")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("sweep.csv", "sweep.png", "sweep_events.jsonl"):
        (out / name).write_text("from an earlier sweep")
    record = sweep(tmp_path, solution, "N=2,4")
    assert (record.verdict, record.exit_code) == ("failed", 1)
    assert [point.status for point in record.points] == ["incorrect", "incorrect"]
    assert not fake_nsight.exists()  # nsight-python was never asked
    assert not any((out / name).exists() for name in ("sweep.csv", "sweep.png", "sweep_events.jsonl"))
    assert set(record.files) == {"json", "md", "check", "nsight"}
    assert "![" not in (out / "sweep.md").read_text()  # no chart linked


def test_an_nsight_python_that_cannot_import_makes_the_child_say_what_to_install(tmp_path):
    broken = tmp_path / "shim" / "nsight"  # installed without a dependency, as pip --no-deps leaves it
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'cachebox'\", name='cachebox')\n")
    request = ChildRequest(SolutionSpec("triton", "none.py"), "ref.py", "cpu", {},
                           SweepPart("N", [2], {}, str(tmp_path), str(tmp_path / "sweep.csv")))
    outcome = run_worker(request, timeout_s=60, env={"PYTHONPATH": str(tmp_path / "shim")}, program=child_program())
    error = next(event for event in outcome.events if isinstance(event, ErrorEvent))
    assert outcome.returncode == 4 and error.exit_code == 4
    assert error.message == ("nsight-python cannot be imported in the sweep's process: ModuleNotFoundError: "
                             "No module named 'cachebox'")
    assert "pip install nsight-python==0.9.6" in error.hint
    assert not any(isinstance(event, (SweepOutcomeEvent, SweepSizeEvent)) for event in outcome.events)
    assert outcome.failure()["exit_code"] == 4



def test_pytorch_in_the_sweep_is_a_kernelbench_models_forward_alone(tmp_path):
    """As the benchmark's eager: not the contract's reference, which also copies into the outputs and poisons."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from kernel_opt.profile.sweep.nsight_child import ProfiledSize
    from kernel_opt.run.events import EventLog
    from kernel_opt.solution.backend import BuildOptions
    from kernel_opt.solution.spec import solution_spec

    problems = REPO_ROOT / "tests" / "fixtures" / "kernelbench"
    spec, _ = solution_spec(problems / "solutions" / "2_Gemm_Multiply_ReLU.py", "modelnew", "cpu", tmp_path,
                            BuildOptions(), [])
    request = ChildRequest(spec, str(problems / "problems" / "2_Gemm_Multiply_ReLU.py"), "cpu", {},
                           SweepPart("batch_size", [8], {}, str(tmp_path), str(tmp_path / "sweep.csv")))
    size = ProfiledSize(request, 8, EventLog(str(tmp_path / "events.jsonl")))

    class Ops(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Ops() as ops:
        returned = size.call_reference()
    assert not {"copy_", "fill_"} & set(ops.names), ops.names  # no output copy, no poisoning
    values = size.instance.values
    expected = torch.relu(torch.nn.functional.linear(values["x"], values["gemm_weight"], values["gemm_bias"]) * 2.0)
    assert returned.shape == (8, 36) and torch.equal(returned, expected)

# --- nsight-python's own extraction and aggregation, fed by a stand-in for ncu_report --------------

NSIGHT_FRAME_SCRIPT = '''
import sys
import types

from kernel_opt.profile.sweep.nsight_child import _summed, profiled_function
from kernel_opt.profile.sweep.plan import SWEEP_METRICS
from kernel_opt.run.events import EventLog

RUNS = 2
# per run: one solution kernel, two reference kernels (as PyTorch often launches)
LAUNCHES = [("solution", "softmax_kernel", 10000.0, 4e6, 4e6),
            ("reference", "exp_kernel", 7000.0, 4e6, 8e6), ("reference", "sum_kernel", 5000.0, 8e6, 4e6)]


class Value:
    def __init__(self, value):
        self._value = value

    def value(self):
        return self._value


class Action:
    def __init__(self, annotation, kernel, time_ns, read, written, run):
        self.annotation, self.kernel = annotation, kernel
        self.values = {"gpu__time_duration.sum": time_ns + 100.0 * run, "dram__bytes_read.sum": read,
                       "dram__bytes_write.sum": written, "device__attribute_clock_rate": 1980000,
                       "device__attribute_memory_clock_rate": 2619000,
                       "device__attribute_display_name": "NVIDIA H100 80GB HBM3"}

    def name(self):
        return self.kernel

    def metric_names(self):
        return list(self.values)

    def __getitem__(self, name):
        return Value(self.values[name])

    def nvtx_state(self):
        annotation = self.annotation
        domain = types.SimpleNamespace(name=lambda: "nsight-python", push_pop_ranges=lambda: [annotation])
        return types.SimpleNamespace(domains=lambda: [0], domain_by_id=lambda index: domain)


actions = [Action(*launch, run) for run in range(RUNS) for launch in LAUNCHES]
report_range = types.SimpleNamespace(num_actions=lambda: len(actions), action_by_idx=lambda i: actions[i])
sys.modules["ncu_report"] = types.SimpleNamespace(
    load_report=lambda path: types.SimpleNamespace(num_ranges=lambda: 1, range_by_idx=lambda i: report_range),
    IContext=object, IRange=object, IAction=object, INvtxState=object, INvtxDomainInfo=object)

from nsight import extraction, transformation  # noqa: E402  (after the stand-in)

function = profiled_function({"sweep": {"name": "N"}}, EventLog(sys.argv[2]), annotate=None)
raw = extraction.extract_df_from_report("unused.ncu-rep", list(SWEEP_METRICS), [(1024,)], RUNS, function, None, None,
                                        False, _summed)
transformation.aggregate_data(raw, function, None, False).to_csv(sys.argv[1], index=False)
'''


def _installed(distribution: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@pytest.mark.skipif(_installed("nsight-python") != "0.9.6" or _installed("pandas") is None,
                    reason="needs nsight-python 0.9.6 and pandas (tools/sweep_gpu.sh has them)")
def test_the_frame_reader_reads_what_nsight_python_0_9_6_writes(tmp_path):
    """Its extraction and aggregation run for real on stand-in ncu_report actions; the CSV reads back as expected."""
    import subprocess
    import sys

    from conftest import SCRIPTS_DIR

    script, csv_path = tmp_path / "frame.py", tmp_path / "frame.csv"
    script.write_text(NSIGHT_FRAME_SCRIPT)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SCRIPTS_DIR), os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run([sys.executable, str(script), str(csv_path), str(tmp_path / "events.jsonl")],
                               capture_output=True, text=True, env=environment, timeout=120)
    assert completed.returncode == 0, completed.stderr[-3000:]
    fixture = (REPO_ROOT / "tests" / "fixtures" / "sweep" / "softmax_h100_synthetic.csv").read_text()
    assert csv_path.read_text().splitlines()[0] == fixture.splitlines()[0]  # the synthetic fixture's layout is real
    frames = read_frame(csv_path, "N")
    assert sorted(frames) == [("reference", 1024), ("solution", 1024)]
    solution, reference = frames[("solution", 1024)], frames[("reference", 1024)]
    time = solution.metrics["gpu__time_duration.sum"]
    assert (time.mean, time.minimum, time.maximum, time.runs) == (10050.0, 10000.0, 10100.0, 2)
    assert reference.metrics["gpu__time_duration.sum"].mean == 12100.0  # both kernels summed: (12000 + 12200) / 2
    assert reference.kernels == ["exp_kernel", "sum_kernel"] and solution.kernels == ["softmax_kernel"]
    assert reference.metrics["dram__bytes_read.sum"].mean == 12e6 and solution.gpu == "NVIDIA H100 80GB HBM3"


FAKE_NCU = '''#!/usr/bin/env bash
# answers --version like ncu 2025.3.1; otherwise logs its command line and runs the program after the options
if [ "$1" = "--version" ]; then echo "NVIDIA (R) Nsight Compute Command Line Profiler Version 2025.3.1.0"; exit 0; fi
echo "$@" >> "$(dirname "$0")/commands.log"
while [ $# -gt 0 ] && [ "$1" != "$NCU_PROGRAM" ]; do shift; done
"$@"
'''


@pytest.mark.skipif(_installed("nsight-python") != "0.9.6" or _installed("pandas") is None,
                    reason="needs nsight-python 0.9.6 and pandas (tools/sweep_gpu.sh has them)")
def test_the_real_nsight_python_runs_the_child_under_its_ncu_command(tmp_path, monkeypatch):
    """nsight-python 0.9.6 itself, with an ncu that only runs the program: its command line is the one the project
    asks for, and the re-run child finds the call to profile (NSPY_NCU_PROFILE matches), runs the size and exits 0;
    without a report, each size ends as nsight-python's error, exit 4."""
    import sys

    ncu = tmp_path / "fake_ncu" / "ncu"
    ncu.parent.mkdir()
    ncu.write_text(FAKE_NCU)
    ncu.chmod(0o755)
    monkeypatch.setenv("NCU_PROGRAM", sys.executable)
    monkeypatch.setattr(runner, "sweep_tools", lambda: runner.SweepTools(str(ncu), "2025.3.1.0", "0.9.6", None))
    record = sweep(tmp_path, SOFTMAX / "good" / "softmax.py", "N=2,4")
    commands = (ncu.parent / "commands.log").read_text().splitlines()
    out = tmp_path / "out"
    assert len(commands) == 2 and commands[0].startswith(
        f"--log-file {out}/nsight/N-2/ncu-output-sweep-0.log --cache-control all --clock-control none "
        "--replay-mode kernel --nvtx --nvtx-include regex:nsight-python@.+/ "
        "--metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum "
        f"-f -o {out}/nsight/N-2/ncu-output-sweep-0.ncu-rep {sys.executable} {child_program()[1]} ")
    assert [point.work["bytes"] for point in record.points] == [256.0, 512.0]  # the profiled runs reported their sizes
    assert [(point.status, point.exit_code) for point in record.points] == [("profile_failed", 4)] * 2
    assert all("No NVIDIA Nsight Compute report found" in point.message for point in record.points)


def test_the_same_size_copy_needs_a_gpu_and_bytes_to_move():
    from kernel_opt.profile.sweep.nsight_child import same_size_copy

    assert same_size_copy(None, "cuda") is None and same_size_copy(4, "cuda") is None  # under one float each way
    assert same_size_copy(2**20, "cpu") is None  # the sweep profiles GPU kernels only
