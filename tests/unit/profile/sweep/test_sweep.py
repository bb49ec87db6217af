"""The size sweep's decisions on a CPU: the plan, nsight-python's frame read back, every size's
verdict and numbers, the record, sweep.md and sweep.png, and ncu_profile.py --sweep's exit codes.

The frame is tests/fixtures/sweep/softmax_h100_synthetic.csv (synthetic, in nsight-python 0.9.6's
column layout: see its README); the events stand for what the profiled program reports.
"""

from __future__ import annotations

import importlib.metadata
import json

import pytest
from conftest import REPO_ROOT

from kernel_opt.check.records import CaseResult, CorrectnessReport, DeviceInfo, OutputComparison
from kernel_opt.commands.ncu_profile import main as ncu_profile
from kernel_opt.core.errors import EnvironmentFault, UsageError
from kernel_opt.core.records import ErrorRecord
from kernel_opt.env.probe_records import ToolProbe
from kernel_opt.measure.ceilings import CopyCeiling, DeviceIdentity, MatmulCeiling, MeasuredCeilings
from kernel_opt.profile import profiler
from kernel_opt.profile.sweep import assemble, frame, plan, report
from kernel_opt.profile.sweep.chart import draw_sweep_chart
from kernel_opt.profile.sweep.records import SweepRecord, read_sweep
from kernel_opt.run.events import (
    EnvironmentEvent,
    ErrorEvent,
    PhaseEvent,
    SweepOutcomeEvent,
    SweepSizeEvent,
)

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "sweep" / "softmax_h100_synthetic.csv"
SOFTMAX = REPO_ROOT / "reference" / "softmax"
SIZES = (1024, 2048, 4096, 8192)
H100 = "NVIDIA H100 80GB HBM3"
H100_BANDWIDTH_GBPS = 3350.0  # the datasheet's (kernel_opt/data), which lookup_gpu gives for this name
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def softmax_plan(values=SIZES) -> plan.SweepPlan:
    return plan.SweepPlan("N", tuple(values), {"D": 4096})


def work(value: int) -> dict:
    return {"flops": 5.0 * value * 4096, "flops_source": "ref.py flops()", "bytes": 2.0 * value * 4096 * 4,
            "bytes_source": "ref.py bytes()", "dtype": "float32", "allow_tf32": False}


def size_events(value: int, outcome: bool = True, extra=()) -> list:
    events = [PhaseEvent(plan.SIZE_PHASE, dims={"N": value}, seed=0),
              SweepSizeEvent(dims={"N": value, "D": 4096, "scale": 1.0}, work=work(value)), *extra]
    if outcome is not None:
        events.append(SweepOutcomeEvent(value=value, profiled=outcome, error=None if outcome else "ncu failed"))
    return events


def child_events(values=SIZES) -> list:
    events = [EnvironmentEvent({"gpu": {"name": H100}})]
    for value in values:
        events += size_events(value)
    return events


def passing_check(values=SIZES, failing=(), error=None) -> CorrectnessReport:
    cases = []
    for value in values:
        wrong = OutputComparison("out", "float32", [value, 4096], value * 4096, None, None, False, 17, 0, 0, 0.5, 0.4,
                                 0.3, False, tolerance_rule="reference error", solution_error=0.3,
                                 reference_error=2e-7, allowed_error=1e-5, element_bound=1e-5)
        cases.append(CaseResult({"N": value, "D": 4096, "scale": 1.0}, 0, value not in failing,
                                [wrong] if value in failing else [], []))
    return CorrectnessReport(verdict="fail" if failing or error else "pass", solution="softmax.py", reference="ref.py",
                             backend="triton", device=DeviceInfo("cuda"), interpreter=False, command="sweep",
                             dims={"N": values[0], "D": 4096}, seeds=[0], cases=cases, planned_cases=4, error=error)


def measured_ceilings(bandwidth_gbps=3000.0) -> MeasuredCeilings:
    identity = DeviceIdentity(H100, "580.159.04", "2.11.0", "13.0")
    copy = CopyCeiling(2**30, 2**31, bandwidth_gbps, 700.0, 699.0, 701.0)
    return MeasuredCeilings(identity, "2026-11-25T10:00:00+00:00", copy,
                            {"float32": MatmulCeiling("float32", 4096, 51.0)})


def points_for(check=None, events=None, frames=None, child_failure=None, sweep=None, measured=None):
    sweep = sweep or softmax_plan()
    events = child_events() if events is None else events
    roofs = assemble.Roofs.for_gpu(assemble.gpu_name(events), measured)
    frames = frame.read_frame(FIXTURE, "N") if frames is None else frames
    checks = assemble.checked_sizes(check or passing_check(), sweep)
    return assemble.build_points(sweep, checks, events, frames, roofs, child_failure)


def make_record(points, **fields) -> SweepRecord:
    verdict, code = assemble.sweep_verdict(points)
    values = {"solution": "OUT/v1/v1.py", "reference": "OUT/ref.py", "backend": "triton", "dim": "N",
              "values": [point.value for point in points], "dims": {"D": 4096}, "verdict": verdict, "exit_code": code,
              "points": points, "gpu": H100, "runs": 3, "nsight_options": plan.nsight_options(3),
              "nsight_python": "0.9.6", "ncu": "2025.3.1.0", "rate": assemble.chart_rate(points),
              "correctness": {"verdict": "pass", "path": "check/correctness.md"}, "files": {"json": "sweep.json"},
              "ceilings": assemble.Roofs.for_gpu(H100, None).described("float32", False)}
    return SweepRecord(**{**values, **fields})


# --- the plan ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("N=1024,2048,4096,8192", ("N", (1024, 2048, 4096, 8192))),
    ("N=8192, 1024,0x800", ("N", (1024, 2048, 8192))),
    ("rows=1e3,2e3", ("rows", (1000, 2000))),
])
def test_a_sweep_is_a_dim_over_ascending_integer_sizes(text, expected):
    assert plan.parse_sweep(text) == expected


@pytest.mark.parametrize("text, says", [
    ("N", "write it NAME=V1,V2,..."),
    ("=1,2", "write it NAME=V1,V2,..."),
    ("N=1024", "a sweep needs at least 2 sizes"),
    ("N=1024,1.5", "'1.5' is not a positive integer size"),
    ("N=1k,2k", "'1k' is not a positive integer size"),
    ("N=0,1024", "'0' is not a positive integer size"),
    ("N=-4,8", "'-4' is not a positive integer size"),
    ("N=1024,2048,1024", "1024 given more than once"),
    ("N=1024,", "'' is not a positive integer size"),
])
def test_a_malformed_sweep_is_a_usage_error_that_says_what_is_wrong(text, says):
    with pytest.raises(UsageError) as caught:
        plan.parse_sweep(text)
    assert says in caught.value.message and caught.value.exit_code == 2


def test_the_swept_name_is_checked_against_refs_setup_with_a_suggestion():
    checked = plan.plan_sweep("N=1024,2048", {"D": 4096.0}, SOFTMAX / "ref.py", SOFTMAX / "good" / "softmax.py")
    assert checked == plan.SweepPlan("N", (1024, 2048), {"D": 4096})
    assert checked.dims_at(2048) == {"D": 4096, "N": 2048} and checked.argument() == "N=1024,2048"
    with pytest.raises(UsageError) as unknown:
        plan.plan_sweep("n=1024,2048", {}, SOFTMAX / "ref.py")
    assert "unknown problem size --n=1024" in unknown.value.message and "did you mean --N?" in unknown.value.hint
    with pytest.raises(UsageError, match="--N is the size --sweep varies: drop --N=64"):
        plan.plan_sweep("N=1024,2048", {"N": 64}, SOFTMAX / "ref.py")
    with pytest.raises(UsageError, match="D takes an integer"):  # the other dims are checked as always
        plan.plan_sweep("N=1024,2048", {"D": "wide"}, SOFTMAX / "ref.py")


def test_a_dim_named_like_an_nsight_python_column_cannot_be_swept(tmp_path):
    ref = tmp_path / "ref.py"
    ref.write_text("def setup(seed=0, device='cuda', Metric=4):\n    pass\n\n\ndef reference(**kwargs):\n    pass\n")
    with pytest.raises(UsageError, match="nsight-python names a column of its own 'Metric'"):
        plan.plan_sweep("Metric=1,2", {}, ref)


@pytest.mark.parametrize("dims, suggested", [
    ({"N": 4096, "D": 4096}, ["--sweep", "N=512,1024,2048,4096", "--D=4096"]),
    ({"scale": 1.0, "n": 1000}, ["--sweep", "n=125,250,500,1000", "--scale=1.0"]),
    ({"causal": True, "S": 4, "B": 8}, ["--sweep", "B=1,2,4,8", "--causal=True", "--S=4"]),
    ({"N": 4, "dtype": "float16"}, None),
    ({}, None),
])
def test_the_finish_step_suggests_the_runs_size_and_three_halvings(dims, suggested):
    assert plan.suggested_sweep(dims) == suggested


def test_nsight_python_is_asked_for_the_projects_method_exactly():
    assert plan.nsight_options(3) == {
        "runs": 3,
        "metrics": ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"],
        "output": "quiet",
        "output_csv": True,
        "clock_control": "none",
        "cache_control": "all",
        "replay_mode": "kernel",
    }
    with pytest.raises(UsageError, match="--sweep-runs must be at least 1"):
        plan.nsight_options(0)


def test_the_child_starts_as_a_file_never_as_a_module():
    program = plan.child_program("/usr/bin/python3")
    assert program == ["/usr/bin/python3", str(plan.CHILD_SCRIPT)]
    assert plan.CHILD_SCRIPT.is_file() and plan.CHILD_SCRIPT.name == "nsight_child.py" and "-m" not in program


def test_paths_nsight_pythons_shell_command_cannot_carry_are_refused(tmp_path):
    assert plan.shell_unsafe_paths({"a": "/tmp/ok/N=1024/x.ncu-rep", "b": "/tmp/two words", "c": "/tmp/$HOME"}) == [
        "b (/tmp/two words)", "c (/tmp/$HOME)"]
    plan.check_output_dir(tmp_path / "fine")
    with pytest.raises(UsageError, match="holds a space or a shell character"):
        plan.check_output_dir(tmp_path / "with space")
    with pytest.raises(EnvironmentFault) as caught:
        plan.check_machine_paths({"the Python executable": "/opt/my python/bin/python3"})
    assert caught.value.exit_code == 4 and "the Python executable (/opt/my python/bin/python3)" in caught.value.message


# --- nsight-python's frame -------------------------------------------------------------------------


def test_the_frame_reads_back_every_annotation_and_size():
    frames = frame.read_frame(FIXTURE, "N")
    assert sorted(frames) == sorted((annotation, value) for annotation in ("reference", "solution") for value in SIZES)
    solution = frames[("solution", 1024)]
    time = solution.metrics["gpu__time_duration.sum"]
    assert (time.mean, time.stddev, time.minimum, time.maximum, time.runs, time.stable) == (
        14200.0, 90.0, 14110.0, 14290.0, 3, True)
    assert solution.kernels == ["softmax_kernel"] and solution.gpu == H100
    assert frames[("reference", 1024)].metrics["gpu__time_duration.sum"].stable is False  # 3.6% spread


def test_the_frame_splits_summed_kernels_and_refuses_another_layout(tmp_path):
    lines = FIXTURE.read_text().splitlines()
    combined = tmp_path / "combined.csv"
    combined.write_text("\n".join([lines[0], lines[4].replace("cunn_SoftMaxForward", "exp_kernel|sum_kernel")]) + "\n")
    assert frame.read_frame(combined, "N")[("reference", 1024)].kernels == ["exp_kernel", "sum_kernel"]
    assert frame.read_frame(tmp_path / "absent.csv", "N") == {}
    with pytest.raises(EnvironmentFault, match="lacks the column\\(s\\) rows"):
        frame.read_frame(FIXTURE, "rows")
    other = tmp_path / "other.csv"
    other.write_text(lines[0].replace("AvgValue", "Mean") + "\n" + lines[1] + "\n")
    with pytest.raises(EnvironmentFault, match="AvgValue: it is not the DataFrame nsight-python 0.9.6 writes"):
        frame.read_frame(other, "N")
    odd = tmp_path / "odd.csv"
    odd.write_text(lines[0] + "\n" + lines[1].replace(",1024,", ",1024.5,", 1) + "\n")
    with pytest.raises(EnvironmentFault, match="not an integer size"):
        frame.read_frame(odd, "N")


def test_merging_per_size_frames_keeps_one_header(tmp_path):
    lines = FIXTURE.read_text().splitlines()
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text("\n".join(lines[:7]) + "\n")
    second.write_text("\n".join([lines[0], *lines[7:13]]) + "\n")
    assert frame.merge_frames([first, second], tmp_path / "merged.csv") == 12
    merged = (tmp_path / "merged.csv").read_text().splitlines()
    assert merged == lines[:13] and merged.count(lines[0]) == 1


# --- each size's verdict and numbers ---------------------------------------------------------------


def test_every_size_is_placed_on_the_datasheet_without_measured_ceilings():
    points = points_for()
    assert [point.status for point in points] == ["profiled"] * 4 and [p.exit_code for p in points] == [0] * 4
    first = points[0]
    solution, reference = first.solution, first.reference
    counted = 2 * 1024 * 4096 * 4
    assert solution.time_us == pytest.approx(14.2) and solution.time_stddev_us == pytest.approx(0.09)
    assert solution.achieved_bandwidth_gbps == pytest.approx(counted / 14.2e-6 / 1e9)
    assert solution.achieved_tflops == pytest.approx(5 * 1024 * 4096 / 14.2e-6 / 1e12)
    assert solution.dram_bandwidth_gbps == pytest.approx((16844325 + 16780571) / 14.2e-6 / 1e9)
    floor_us = counted / (H100_BANDWIDTH_GBPS * 1e9) * 1e6
    assert solution.percent_of_ceiling == pytest.approx(100 * floor_us / 14.2)
    assert (solution.ceiling_basis, solution.bound, solution.below_floor) == ("datasheet", "memory", False)
    assert first.speedup_vs_reference == pytest.approx(16.9 / 14.2)
    assert reference.stable is False and reference.kernels == ["cunn_SoftMaxForward"]
    assert first.dims == {"N": 1024, "D": 4096, "scale": 1.0} and first.work == work(1024)
    assert assemble.sweep_verdict(points) == ("profiled", 0) and assemble.chart_rate(points) == "bandwidth"


def test_measured_ceilings_come_first_as_in_the_benchmark():
    points = points_for(measured=measured_ceilings())
    solution = points[3].solution
    floor_us = 2 * 8192 * 4096 * 4 / 3000e9 * 1e6
    assert solution.ceiling_basis == "measured" and solution.percent_of_ceiling == pytest.approx(100 * floor_us / 91.8)
    described = assemble.Roofs.for_gpu(H100, measured_ceilings()).described("float32", False)
    assert assemble.gpu_name(child_events()) == H100
    assert [item["basis"] for item in described] == ["measured", "datasheet"]
    assert described[0]["memory_bandwidth_gbps"] == 3000.0 and described[1]["memory_bandwidth_gbps"] == 3350.0


def test_a_size_that_fails_correctness_is_never_profiled_even_if_the_frame_has_it():
    points = points_for(check=passing_check(failing=(2048,)))
    wrong = points[1]
    assert (wrong.status, wrong.exit_code, wrong.solution, wrong.reference) == ("incorrect", 1, None, None)
    assert wrong.message.startswith("wrong results: output 'out': 17 of 8388608 elements off by more than 1e-05")
    assert not wrong.charted and [p.status for p in points] == ["profiled", "incorrect", "profiled", "profiled"]
    assert assemble.sweep_verdict(points) == ("partial", 1)


def test_a_check_that_stopped_blames_the_first_unchecked_size_and_skips_the_rest():
    error = ErrorRecord("illegal_memory_access", "the solution raised CUDA error", None, 3)
    check = passing_check(values=(1024, 2048), error=error)
    points = points_for(check=check)
    assert [(p.status, p.exit_code) for p in points] == [("profiled", 0), ("profiled", 0), ("solution_error", 3),
                                                         ("not_checked", 3)]
    assert points[2].message == "the correctness check failed here: the solution raised CUDA error"
    assert points[3].message.startswith("not checked")
    assert assemble.sweep_verdict(points) == ("partial", 3)


def test_why_a_size_did_not_come_back_from_the_profile():
    events = [EnvironmentEvent({"gpu": {"name": H100}}), *size_events(1024),
              *size_events(2048, outcome=False, extra=[ErrorEvent("crash", "the solution raised boom", None, 3)]),
              *size_events(4096, outcome=False),
              PhaseEvent(plan.SIZE_PHASE, dims={"N": 8192}, seed=0)]  # the child died there
    failure = {"kind": "timeout", "message": "no progress for 600 s", "hint": None, "exit_code": 3}
    points = points_for(events=events, child_failure=failure)
    assert [(p.status, p.exit_code) for p in points] == [("profiled", 0), ("solution_error", 3),
                                                         ("profile_failed", 4), ("profile_failed", 3)]
    assert points[1].message == "the profiled program failed: the solution raised boom"
    assert points[2].message == "nsight-python could not profile it: ncu failed"
    assert "stopped before this size was profiled: no progress for 600 s" in points[3].message
    assert assemble.sweep_verdict(points) == ("partial", 4)


def test_a_solution_without_kernels_in_its_annotation_is_its_fault():
    frames = {key: value for key, value in frame.read_frame(FIXTURE, "N").items() if key != ("solution", 4096)}
    point = points_for(frames=frames)[2]
    assert (point.status, point.exit_code, point.message) == ("profile_failed", 3, assemble.NO_SOLUTION_KERNEL)
    no_reference = {key: value for key, value in frame.read_frame(FIXTURE, "N").items() if key != ("reference", 1024)}
    first = points_for(frames=no_reference)[0]
    assert first.status == "profiled" and first.speedup_vs_reference is None and "no GPU kernel" in first.message


def test_a_time_under_the_physical_floor_is_invalid_and_never_charted(tmp_path):
    lines = FIXTURE.read_text().splitlines()
    fast = tmp_path / "fast.csv"
    fast.write_text("\n".join(line.replace("solution,gpu__time_duration.sum,8192,91800.0",
                                           "solution,gpu__time_duration.sum,8192,1000.0") for line in lines) + "\n")
    point = points_for(frames=frame.read_frame(fast, "N"))[3]
    assert (point.status, point.exit_code, point.charted) == ("invalid", 1, False)
    assert point.solution.below_floor and point.solution.percent_of_ceiling is None
    assert point.message.startswith("INVALID: 1.00 us is faster than the memory floor")


def with_rows(tmp_path, replacements: dict[str, str], added: list[str]) -> dict:
    """The fixture's frame with some rows' values replaced and rows added (an annotation the fixture lacks)."""
    text = FIXTURE.read_text()
    for old, new in replacements.items():
        assert old in text
        text = text.replace(old, new)
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "frame.csv"
    path.write_text(text.rstrip("\n") + "\n" + "\n".join(added) + "\n")
    return frame.read_frame(path, "N")


def copy_row(value: int, time_ns: float) -> str:
    """A "copy" annotation's time row at one size, in the fixture's column layout."""
    return (f"copy,gpu__time_duration.sum,{value},{time_ns},10.0,{time_ns - 10},{time_ns + 10},3,"
            f"vectorized_elementwise_kernel,{H100},gpu-host,1980000,2619000,{time_ns - 20},{time_ns + 20},0.1,True,"
            f"False,{time_ns}")


def test_a_same_size_copy_is_a_roof_so_an_honest_kernel_never_passes_100_percent(tmp_path):
    """At N = 1024 (33.5 MB counted) the datasheet's 3350 GB/s floor is 10.0 us; an output tail still in L2 when
    ncu stops the clock lets a kernel finish in 9.7 us (103% of the datasheet), and a copy of the same bytes in 9.5."""
    counted = 2 * 1024 * 4096 * 4
    faster = {"solution,gpu__time_duration.sum,1024,14200.0": "solution,gpu__time_duration.sum,1024,9700.0"}
    datasheet_only = points_for(frames=with_rows(tmp_path / "a", faster, []))[0]
    assert datasheet_only.solution.ceiling_basis == "datasheet"
    assert datasheet_only.solution.percent_of_ceiling == pytest.approx(100 * counted / 3350e3 / 9.7)  # 103.1%
    point = points_for(frames=with_rows(tmp_path / "b", faster, [copy_row(1024, 9500.0)]))[0]
    assert point.copy_bandwidth_gbps == pytest.approx(counted / 9.5e-6 / 1e9)
    assert point.solution.ceiling_basis == "same-size copy"
    assert point.solution.percent_of_ceiling == pytest.approx(100 * 9.5 / 9.7)  # 97.9%
    assert point.status == "profiled" and not point.solution.below_floor


def test_beating_the_datasheet_floor_is_invalid_unless_a_copy_of_the_same_bytes_is_as_fast(tmp_path):
    fastest = {"solution,gpu__time_duration.sum,1024,14200.0": "solution,gpu__time_duration.sum,1024,9000.0"}
    alone = points_for(frames=with_rows(tmp_path / "a", fastest, []))[0]
    assert alone.status == "invalid" and alone.solution.below_floor  # 10% under the datasheet's floor
    beside_copy = points_for(frames=with_rows(tmp_path / "b", fastest, [copy_row(1024, 8800.0)]))[0]
    assert beside_copy.status == "profiled" and beside_copy.solution.ceiling_basis == "same-size copy"
    assert beside_copy.solution.percent_of_ceiling == pytest.approx(100 * 8.8 / 9.0)


def test_the_parent_reads_the_ceilings_cache_of_the_gpu_the_child_named(tmp_path, monkeypatch):
    from kernel_opt.measure import ceilings

    monkeypatch.setattr(ceilings, "probe_nvidia_smi", lambda: None)
    monkeypatch.setattr(ceilings, "driver_version", lambda smi: "580.159.04")
    cached = measured_ceilings()
    ceilings.write_cache(ceilings.cache_path(cached.device, tmp_path), cached)
    assert ceilings.load_cached_for(H100, tmp_path) == cached
    assert ceilings.load_cached_for("NVIDIA H200", tmp_path) is None  # another GPU's cache is not this one's


def test_a_compute_bound_sweep_charts_tflops():
    heavy = [EnvironmentEvent({"gpu": {"name": H100}})]
    for value in SIZES:
        heavy += size_events(value)
        # 50 FLOP per counted byte: past the strict-fp32 ridge (494.5 / 3 TFLOP/s, 3xTF32, over 3350 GB/s = 49.2), at
        # rates under that roof
        heavy[-2] = SweepSizeEvent(dims={"N": value}, work={**work(value), "flops": 50 * work(value)["bytes"]})
    points = points_for(events=heavy)
    assert [p.status for p in points] == ["profiled"] * 4
    assert {p.solution.bound for p in points} == {"compute"} and assemble.chart_rate(points) == "flops"


def test_a_size_that_beats_the_counted_flops_roof_is_placed_on_the_memory_roof():
    """61 FLOP per byte at these times is more than the strict-fp32 roof (3xTF32) allows: the FLOPs were not all
    performed."""
    heavy = [EnvironmentEvent({"gpu": {"name": H100}})]
    for value in SIZES:
        heavy += size_events(value)
        heavy[-2] = SweepSizeEvent(dims={"N": value}, work={**work(value), "flops": 61 * work(value)["bytes"]})
    points = points_for(events=heavy)
    assert {p.value: p.solution.bound for p in points} == {1024: "compute", 2048: "compute", 4096: "memory",
                                                           8192: "memory"}
    eight = next(p for p in points if p.value == 8192)
    assert eight.solution.percent_of_ceiling == pytest.approx(100 * 2 * 8192 * 4096 * 4 / 3350e9 * 1e9 / 91800.0)


# --- the record and its reports ------------------------------------------------------------------


def test_the_record_round_trips_and_refuses_another_schema(tmp_path):
    record = make_record(points_for(check=passing_check(failing=(2048,))))
    payload = json.loads(json.dumps(record.to_dict()))
    assert SweepRecord.from_dict(payload) == record and payload["schema"] == "kernel_opt.sweep/1"
    assert [point.value for point in record.charted()] == [1024, 4096, 8192]
    assert record.point(2048).status == "incorrect"
    (tmp_path / "sweep.json").write_text(json.dumps(payload))
    assert read_sweep(tmp_path) == record and read_sweep(tmp_path / "absent") is None
    with pytest.raises(UsageError, match="kernel_opt.sweep/2"):
        SweepRecord.from_dict({**payload, "schema": "kernel_opt.sweep/2"})
    (tmp_path / "sweep.json").write_text("{ not json")
    with pytest.raises(UsageError, match="is not valid JSON"):
        read_sweep(tmp_path)


def test_the_table_repeats_the_record(tmp_path):
    record = make_record(points_for(check=passing_check(failing=(2048,))))
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.strip("|").split("|")]
            for line in report.sweep_table(record).splitlines()[2:]}
    first = record.point(1024)
    solution = first.solution
    assert rows["1024"] == ["1024", "14.20", "16.90 (unstable)", "1.19x",
                            f"{solution.achieved_bandwidth_gbps:.0f}", f"{solution.dram_bandwidth_gbps:.0f}",
                            f"{solution.achieved_tflops:.3g}",
                            f"{first.solution.percent_of_ceiling:.1f}% (datasheet)",
                            f"{first.reference.percent_of_ceiling:.1f}% (datasheet)"]
    assert rows["2048"][1] == "WRONG: not profiled" and rows["2048"][2:] == ["—"] * 7
    markdown = report.render_sweep_markdown(record)
    assert markdown.startswith("# Size sweep: N = 1024, 2048, 4096, 8192 (partial)")
    assert "- N=2048: WRONG: not profiled: wrong results: output 'out'" in markdown
    assert "`clock_control=none`" in markdown and "`cache_control=all`" in markdown
    assert "solution: 1 kernel(s) per call: `softmax_kernel`" in markdown
    assert ("- datasheet roofs: 3350 GB/s, 164.8 TFLOP/s (float32; datasheet: NVIDIA H100 SXM5 80GB; fp32 products as "
            "3xTF32 on tensor cores: a third of the TF32 rate)") in markdown
    assert "the copy kernel profiled beside each size: Each % of ceiling names its basis" in " ".join(
        markdown.split())
    lines = report.summary_lines(record, "OUT/sweep")
    assert lines[0] == f"sweep N=1024,2048,4096,8192 on {H100}: partial (exit 1)"
    assert lines[1].startswith("  N=1024: solution 14.20 us, PyTorch 16.90 us (1.19x), ")
    assert lines[2].startswith("  N=2048: WRONG: not profiled: wrong results")
    assert lines[-1] == "report: OUT/sweep/sweep.json"


def test_the_chart_is_drawn_from_the_charted_sizes(tmp_path):
    pytest.importorskip("matplotlib")
    record = make_record(points_for(check=passing_check(failing=(2048,))))
    path = draw_sweep_chart(record, tmp_path / "sweep.png")
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 10000
    again = draw_sweep_chart(record, tmp_path / "again.png").read_bytes()
    assert again == data  # the record alone decides the picture


# --- ncu_profile.py --sweep: exit codes before anything runs ----------------------------------------


def sweep_arguments(tmp_path, *extra):
    return [str(SOFTMAX / "good" / "softmax.py"), "--ref", str(SOFTMAX / "ref.py"), "--output-dir",
            str(tmp_path / "sweep"), "--sweep", "N=1024,2048", "--D=4096", *extra]


@pytest.mark.parametrize("extra, says", [
    (["--baseline", "OUT/v0"], "--baseline cannot be combined with --sweep"),
    (["--set", "full"], "--set cannot be combined with --sweep"),
    (["--calls", "3"], "--calls cannot be combined with --sweep"),
    (["--sweep-runs", "0"], "--sweep-runs must be at least 1"),
    (["--M=3"], "unknown problem size --M=3"),
])
def test_bad_sweep_arguments_are_usage_errors(tmp_path, capsys, extra, says):
    assert ncu_profile(sweep_arguments(tmp_path, *extra)) == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "sweep").exists()  # nothing written before the arguments are right


def test_a_machine_without_a_gpu_or_ncu_cannot_sweep(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(profiler, "_gpu_problem", lambda: "torch sees no NVIDIA GPU on this machine")
    assert ncu_profile(sweep_arguments(tmp_path, "--json")) == 4
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert error["message"].startswith("this machine cannot run a size sweep: torch sees no NVIDIA GPU")
    assert "nsight-python 0.9.6" in error["hint"] and error["exit_code"] == 4


@pytest.mark.parametrize("installed, says", [
    (None, "the size sweep needs nsight-python 0.9.6: nsight-python is not installed"),
    ("1.1.0", "nsight-python 1.1.0 refuses ncu 2025.3.1.0"),
    ("0.9.5", "nsight-python 0.9.5 is installed, but the size sweep is written against nsight-python 0.9.6"),
])
def test_missing_or_unsuitable_nsight_python_is_exit_4_with_the_install_line(tmp_path, capsys, monkeypatch, installed,
                                                                              says):
    ncu = ToolProbe(name="ncu", found=True, path="/opt/nvidia/nsight-compute/2025.3.1/ncu", version="2025.3.1.0")
    monkeypatch.setattr(profiler, "probe_profiler", lambda: ncu)

    def version(name):
        if name != "nsight-python" or installed is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return installed

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert ncu_profile(sweep_arguments(tmp_path)) == 4
    err = capsys.readouterr().err
    assert says in err and "pip install nsight-python==0.9.6" in err
    assert not (tmp_path / "sweep" / "check").exists()  # refused before the correctness check


@pytest.mark.parametrize("flag, says", [("--keep-reports", "--keep-reports is for --sweep"),
                                         ("--kernelbench-tolerances", "is for --sweep's correctness check")])
def test_the_sweep_s_own_options_are_refused_without_a_sweep(tmp_path, capsys, flag, says):
    arguments = [str(REPO_ROOT / "reference" / "softmax" / "good" / "softmax.py"), "--ref",
                 str(REPO_ROOT / "reference" / "softmax" / "ref.py"), "--output-dir", str(tmp_path / "one"), flag]
    assert ncu_profile(arguments) == 2
    assert says in capsys.readouterr().err


def test_the_sweep_s_check_judges_at_the_rule_it_is_given(tmp_path, monkeypatch):
    from kernel_opt.profile.sweep import runner

    seen = []
    monkeypatch.setattr(runner, "check_correctness", lambda *args, **kwargs: seen.append(args[5]) or 1 / 0)
    request = runner.SweepRequest(solution=tmp_path / "s.py", reference=tmp_path / "r.py", output_dir=tmp_path,
                                  plan=softmax_plan(), kernelbench_tolerances=True)
    with pytest.raises(ZeroDivisionError):
        runner._check_sizes(request, tmp_path / "s.py", tmp_path / "r.py", "triton")
    assert seen[0].kernelbench_tolerances is True and seen[0].shapes == [{"N": 2048}, {"N": 4096}, {"N": 8192}]


def test_the_full_reports_are_removed_with_a_note_saying_how_many_and_how_large(tmp_path):
    from kernel_opt.profile.sweep.runner import drop_full_reports

    nsight = tmp_path / "nsight"
    for size, megabytes in (("N-1024", 1), ("N-2048", 2)):
        (nsight / size).mkdir(parents=True)
        (nsight / size / "ncu-output-sweep-0.ncu-rep").write_bytes(b"\0" * (megabytes * 1_000_000))
        (nsight / size / "frame.csv").write_text("kept")
    assert drop_full_reports(nsight) == [
        "removed nsight-python's 2 full report(s) (3.0 MB of .ncu-rep) from nsight/: sweep.csv and each size's CSVs "
        "hold what the sweep reads; --keep-reports keeps them"]
    assert not list(nsight.rglob("*.ncu-rep")) and len(list(nsight.rglob("frame.csv"))) == 2
    assert drop_full_reports(nsight) == [] and drop_full_reports(tmp_path / "absent") == []


def test_the_sweep_is_in_ncu_profiles_help(capsys):
    with pytest.raises(SystemExit) as finished:
        ncu_profile(["--help"])
    text = capsys.readouterr().out
    assert finished.value.code == 0
    assert "--sweep NAME=V1,V2,..." in text and "--sweep-runs" in text
    assert "--sweep N=1024,2048,4096,8192 --D=4096" in text and "final_report.py embeds it" in text
    assert "--keep-reports" in text and "only with --keep-reports" in text


def test_a_percent_above_100_says_from_ncus_dram_bytes_why_it_is_not_faster_than_physics(tmp_path):
    """9.7 us for 33.5 MB counted (103% of the datasheet), while ncu saw 20.8 MB of DRAM traffic: most of the
    output was still in L2 when the kernel ended."""
    row = next(line for line in FIXTURE.read_text().splitlines()
               if line.startswith("solution,dram__bytes_write.sum,1024,"))
    faster = {"solution,gpu__time_duration.sum,1024,14200.0": "solution,gpu__time_duration.sum,1024,9700.0",
              row: row.replace("16780571.0", "4000000.0")}
    record = make_record(points_for(frames=with_rows(tmp_path, faster, [])))
    solution = record.point(1024).solution
    assert solution.percent_of_ceiling > 100 and solution.dram_bandwidth_gbps < solution.achieved_bandwidth_gbps
    [note] = report.size_notes(record)
    assert note == (f"N=1024: the solution is at {solution.percent_of_ceiling:.1f}% of the datasheet roof: its counted "
                    f"bytes per call over its time give {solution.achieved_bandwidth_gbps:.0f} GB/s, while ncu "
                    f"measured {solution.dram_bandwidth_gbps:.0f} GB/s of DRAM traffic: part of the counted bytes "
                    "did not cross DRAM while the kernel ran (L2 held them), so above 100% here is not faster than "
                    "physics")
    assert f"- {note}" in report.render_sweep_markdown(record)
    assert report.size_notes(make_record(points_for())) == []  # every size at or under 100%: nothing to say
    only_time = {"solution,gpu__time_duration.sum,1024,14200.0": "solution,gpu__time_duration.sum,1024,9700.0"}
    [unexplained] = report.size_notes(make_record(points_for(frames=with_rows(tmp_path / "b", only_time, []))))
    assert unexplained.endswith("GB/s; ncu's DRAM bytes do not show where the rest went")  # DRAM saw it all


def test_a_compute_bound_size_names_the_compute_roof_it_is_measured_against():
    """A GEMM on the same-size copy basis is bound by compute, whose roof the copy does not measure: the label
    names the measured matmul, or the datasheet's peak when no matmul ceiling is cached (a 2026-11-26 sweep
    printed "75.3% (same-size copy)" for 745 TFLOP/s against the datasheet's 989.5)."""
    from kernel_opt.profile.sweep.records import Measurement

    work = {"flops": 2 * 1024 * 4096 * 4096.0, "bytes": 50331648.0, "dtype": "bfloat16"}  # 745 TFLOP/s at 46.09 us
    with_matmul = measured_ceilings()
    with_matmul.matmul["bfloat16"] = MatmulCeiling("bfloat16", 8192, 760.0)
    for measured, roof in ((None, "datasheet peak"), (with_matmul, "measured matmul")):
        measurement = Measurement(time_us=46.09)
        assemble._place(measurement, work, assemble.Roofs.for_gpu(H100, measured), 3125.0)
        assert measurement.ceiling_basis in ("same-size copy", "measured")  # equal compute roofs: either names it
        assert (measurement.bound, measurement.compute_roof) == ("compute", roof)
        assert report._percent(measurement) == f"{measurement.percent_of_ceiling:.1f}% ({roof})"


def test_without_a_measured_matmul_the_same_size_basis_does_not_call_the_datasheet_peak_measured():
    from kernel_opt.measure import placement, roofline

    sheet_roofs = roofline.Ceilings(3350.0, 989.5, source="datasheet: H100", dtype="bfloat16")
    points = placement.roofline_points(137.4e9, 100.7e6, 180.0, None, sheet_roofs, 3130.0)
    basis, reason = placement.choose_basis(points)
    assert basis == "same-size copy" and points[basis]["bound"] == "compute"
    assert "datasheet" in points[basis]["ceilings"]["source"] and "datasheet's compute peak" in reason
    measured = roofline.Ceilings(3020.0, 1000.0, source="measured", dtype="bfloat16")
    points = placement.roofline_points(137.4e9, 100.7e6, 180.0, measured, sheet_roofs, 3130.0)
    assert points["same-size copy"]["ceilings"]["source"] == "copy of the same bytes"
    assert placement.choose_basis(points)[1] == "the best roofs measured on this GPU"
