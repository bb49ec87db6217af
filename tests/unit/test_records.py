"""The typed records: to_dict/from_dict round trips, schema tags, and the recorded runs read back into them.

Every correctness, benchmark, ncu_summary, run, version and evaluation record under demo/ and
tests/fixtures/ (written by earlier versions of the package, on an H100) must still read, and
must write back as the same JSON: a reader that drops or renames a field would fail here.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from kernel_opt.check.records import (
    CaseResult,
    CorrectnessReport,
    DeviceInfo,
    Mismatch,
    OutputComparison,
    ToleranceEntry,
    read_correctness,
)
from kernel_opt.core.errors import UsageError
from kernel_opt.core.records import UNSET, Section, list_of
from kernel_opt.loop.records import (
    EvaluationRecord,
    RunRecord,
    StepResult,
    VersionRecord,
    read_evaluation,
    read_run_record,
    read_version_record,
)
from kernel_opt.measure.records import BenchmarkReport, Comparison, TimedEntry, TimedSolution, read_benchmark
from kernel_opt.measure.roofline_records import Roofline, RoofPoint
from kernel_opt.profile.profiler import ProfileRequest, profile_solution
from kernel_opt.profile.records import NcuSummary, read_profile
from kernel_opt.run.environment import GpuInfo, RunEnvironment
from kernel_opt.run.events import (
    EVENT_TYPES,
    CaseResultEvent,
    ErrorEvent,
    IntegrityEvent,
    MemoryEvent,
    PhaseEvent,
    SweepOutcomeEvent,
    SweepSizeEvent,
    WorkEvent,
    parse_event,
)
from kernel_opt.solution.build_record import BuildRecord, BuiltKernel

RUN_FIXTURE = REPO_ROOT / "tests" / "fixtures" / "runs" / "softmax_cuda_h100"
DEMO_SOFTMAX = REPO_ROOT / "demo" / "cuda" / "softmax"
NCU_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "ncu"
RECORD_TYPES = {"correctness.json": CorrectnessReport, "correctness_memcheck.json": CorrectnessReport,
                "correctness_racecheck.json": CorrectnessReport, "benchmark.json": BenchmarkReport,
                "ncu_summary.json": NcuSummary, "run.json": RunRecord, "version.json": VersionRecord,
                "evaluation.json": EvaluationRecord}


def correctness_report() -> CorrectnessReport:
    failing = OutputComparison("out", "float32", [8, 129], 1032, 1e-5, 1e-5, False, 2, 1, 1, 0.5, "nan", 0.01, False,
                               [Mismatch([0, 128], "nan", 0.25), Mismatch([3, 7], 1.5, 1.0)])
    return CorrectnessReport(
        verdict="fail", solution="v1/v1.cu", reference="ref.py", backend="cuda",
        device=DeviceInfo("cuda", "NVIDIA H100 80GB HBM3", "9.0"), interpreter=False,
        command="correctness_check.py v1/v1.cu --ref ref.py --output-dir v1", dims={"N": 8, "D": 129}, seeds=[0, 1],
        cases=[CaseResult({"N": 8, "D": 129}, 0, False, [failing], ["x"])], planned_cases=2,
        warnings=["ref.py has no SHAPES"], notes=["inputs from ref.py setup()"],
        tolerances=[ToleranceEntry("out", "float32", "atol/rtol", 1e-5, 1e-5, None, None, "dtype default")],
        build=BuildRecord(arch="sm_90", kernels=[BuiltKernel(name="softmax_kernel", registers=32)]),
        environment=RunEnvironment(torch="2.11.0", python="3.12.3"),
    )


def benchmark_report() -> BenchmarkReport:
    return BenchmarkReport(
        solution=TimedSolution(path="v1/v1.cu", backend="cuda", median_us=47.2, p20_us=46.4, p80_us=48.0),
        reference="ref.py", backend="cuda", command="benchmark.py v1/v1.cu --ref ref.py --output-dir v1",
        dims={"N": 4096}, gpu=GpuInfo(name="NVIDIA H100 80GB HBM3"), verdict="measured", exit_code=0,
        baselines=[TimedEntry("eager", median_us=59.5, reps=1000), TimedEntry("torch.compile (default)", error="boom")],
        comparison=Comparison("v0/v0.cu", "v0", 1.086, 1.083, 1.087, 0.95, 1000, 47.1, 51.1, "success", True),
        roofline=Roofline(points={"measured": RoofPoint(percent_of_ceiling=88.0),
                                  "datasheet": RoofPoint(percent_of_ceiling=70.0)}),
        percent_of_ceiling=88.0,
    )


def evaluation_record() -> EvaluationRecord:
    return EvaluationRecord(
        version="v1", state="measured", exit_code=0, started_at="2026-11-22T05:40:17+00:00", wall_s=48.2,
        gpu_available=True, against="v0",
        steps=[StepResult("correctness", "ok", 5.8, 0, "pass: 21 cases", ["v1/correctness.json"]),
               StepResult("recommend", "skipped", 0.0, None, "an earlier check failed")],
        needs_gpu=["profile: no ncu"], recommendations={"for_version": "v1", "strategies": []}, warnings=["w"],
    )


def test_correctness_benchmark_and_evaluation_records_round_trip():
    for record in (correctness_report(), benchmark_report(), evaluation_record()):
        payload = json.loads(json.dumps(record.to_dict()))  # through JSON, as the files hold them
        assert type(record).from_dict(payload) == record
    assert correctness_report().to_dict()["passed"] is False  # derived, written for readers, never read back
    assert benchmark_report().to_dict()["schema"] == "kernel_opt.benchmark/1"
    assert list(benchmark_report().to_dict())[0] == "exit_code"  # benchmark.json has always led with it


def test_run_and_version_records_round_trip():
    run = RunRecord("softmax", "cuda", "v{n}/v{n}.cu", "ref.py", {"N": 4096}, 3, 90.0, "2026-11-22T05:00:00+00:00",
                    "softmax.cu", "ref.py", nvcc_flags="--use_fast_math", arch="sm_90a")
    assert RunRecord.from_dict(json.loads(json.dumps(run.to_dict()))) == run
    assert run.build_arguments() == ["--arch", "sm_90a", "--nvcc-flags=--use_fast_math"]
    first = VersionRecord("v0", None, copied_from="softmax.cu", created_at="2026-11-22T05:00:00+00:00")
    later = VersionRecord("v2", "v1", copied_from="v1/v1.cu", created_at="2026-11-22T06:00:00+00:00",
                          parent_median_us=47.2, continued_past_target=True)
    for record in (first, later):
        assert VersionRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    # v0 has no parent, so no parent facts: the file reads as `init` has always written it.
    assert list(first.to_dict()) == ["version", "parent", "copied_from", "created_at", "schema"]


def test_the_profile_record_round_trips(tmp_path):
    summary = profile_solution(ProfileRequest(tmp_path / "v0", from_report=NCU_FIXTURES / "naive_gemm_l1.ncu-rep"))
    after = profile_solution(ProfileRequest(tmp_path / "v1", from_report=NCU_FIXTURES / "memory_streaming.ncu-rep",
                                            baseline=tmp_path / "v0"))
    for record in (summary, after):
        assert NcuSummary.from_dict(json.loads(json.dumps(record.to_dict()))) == record
        assert read_profile(tmp_path / ("v0" if record is summary else "v1")) == record
    assert after.baseline.dir == str(tmp_path / "v0")
    moved = [change for change in after.baseline.changes if change.moved]
    assert after.moved() == moved and moved and summary.moved() == []
    assert after.dominant().name == after.dominant_kernel.name


def test_worker_events_round_trip_through_their_json_lines():
    events = [PhaseEvent("setup", case=1, dims={"n": 127}, seed=2), PhaseEvent("profile", calls=1, nvtx_range="r"),
              WorkEvent({"flops": 1.0, "flops_source": "ref.py flops()", "bytes": 8.0, "dtype": "float32"}),
              ErrorEvent("crash", "segfault", None, 3),
              CaseResultEvent(0, {"n": 8}, 0, True, [{"name": "out"}], {"modified_inputs": []}),
              SweepSizeEvent({"N": 1024, "D": 4096}, {"bytes": 3.3e7, "dtype": "float32", "allow_tf32": False}),
              SweepOutcomeEvent(1024, True, frame="nsight/N-1024/frame.csv"),
              SweepOutcomeEvent(2048, False, error="ncu failed"),
              IntegrityEvent("launches", {"profiled": False, "note": "not profiled: the CPU"}),
              IntegrityEvent("rounding_probe", {"ran": False, "note": "not run: no float32 output"}),
              MemoryEvent("truth", peak_bytes=3 * 2**30, case=0, dims={"n": 8}, seed=1),
              MemoryEvent("input pool", plan="the float64 truth in 2 row chunks")]
    for event in events:
        line = json.loads(json.dumps({**event.to_json(), "t": 12.5}))
        assert parse_event(line) == event and parse_event(line).t == 12.5
    # The JSON lines keep their shape: optional fields left out, "range" for the NVTX range.
    assert PhaseEvent("load_solution").to_json() == {"event": "phase", "phase": "load_solution"}
    assert PhaseEvent("profile", nvtx_range="r").to_json()["range"] == "r"
    assert WorkEvent({"flops": 1.0}).to_json() == {"event": "work", "flops": 1.0}
    assert SweepOutcomeEvent(8, True).to_json() == {"event": "sweep_outcome", "value": 8, "profiled": True}
    assert MemoryEvent("truth", plan="p").to_json() == {"event": "memory", "step": "truth", "plan": "p"}
    assert len(EVENT_TYPES) == 24
    with pytest.raises(ValueError, match="unknown worker event 'teleport'"):
        parse_event({"event": "teleport"})


def test_a_record_of_another_schema_is_refused():
    payload = benchmark_report().to_dict() | {"schema": "kernel_opt.benchmark/2"}
    with pytest.raises(UsageError, match="kernel_opt.benchmark/2"):
        BenchmarkReport.from_dict(payload)
    with pytest.raises(UsageError, match="run.json lacks"):
        RunRecord.from_dict({"kernel_name": "softmax"})


def test_a_record_without_its_tag_or_newer_fields_still_reads():
    """Records written before the schema tags: defaults fill what they lack."""
    record = CorrectnessReport.from_dict({"passed": True, "backend": "cuda", "dims": {"N": 1}})
    assert (record.verdict, record.passed, record.cases, record.schema) == (
        "pass", True, [], "kernel_opt.correctness/1"
    )
    benchmark = BenchmarkReport.from_dict({"solution": {"median_us": 10.0}, "verdict": "measured", "comparison": None})
    assert (benchmark.median_us, benchmark.measured, benchmark.comparison, benchmark.baselines) == (
        10.0, True, None, []
    )
    older = BenchmarkReport.from_dict({"roofline": {"points": {"datasheet": {"percent_of_ceiling": 50.0}}}})
    # no "primary": measured, else datasheet
    assert older.primary_point() == ("datasheet", RoofPoint(percent_of_ceiling=50.0))
    # A nested part reads what it lacks as its default and writes back only what it had.
    partial = BenchmarkReport.from_dict({"work": {"flops": 8.0, "flops_lower_bound": True},
                                         "kernel_time": {"error": "x"}})
    assert (partial.work.flops, partial.work.bytes, partial.work.floor_flops(), partial.kernel_time.median_us) == (
        8.0, None, None, None)
    written = partial.to_dict()
    assert (written["work"], written["kernel_time"], written["gpu"], written["roofline"]) == (
        {"flops": 8.0, "flops_lower_bound": True}, {"error": "x"}, {}, {})


def test_a_correctness_record_of_another_schema_is_refused():
    with pytest.raises(UsageError, match="kernel_opt.correctness/2"):
        CorrectnessReport.from_dict(correctness_report().to_dict() | {"schema": "kernel_opt.correctness/2"})


@dataclass
class _Item(Section):
    name: str
    count: int | None = None


@dataclass
class _Part(Section):
    name: str
    count: int | None = None
    note: str | None = UNSET
    items: list[_Item] | None = UNSET

    readers = {"items": list_of(_Item)}


def test_a_section_writes_back_what_it_read_and_what_code_set():
    """core.records.Section: the rule every nested part of the correctness and benchmark records follows."""
    built = _Part("a")
    assert built.to_dict() == {"name": "a", "count": None} and built.has("count") and not built.has("note")
    built.note = None  # set, even to None: written
    assert list(built.to_dict()) == ["name", "count", "note"]
    raw = {"note": "n", "later": [1], "name": "b", "items": [{"count": 2, "zzz": True}]}
    read = _Part.from_dict(raw)
    assert (read.name, read.count, read.items[0].count, read.items[0].name) == ("b", None, 2, None)
    assert json.dumps(read.to_dict()) == json.dumps(raw)  # the keys it had, unknown ones included, in their order
    read.count = 5
    assert list(read.to_dict()) == ["note", "later", "name", "items", "count"]
    assert not _Part.from_dict({}) and _Part.from_dict({"name": None})  # falsy as {} is


# Fields added to the profile's record after the demo runs were recorded, with the value an old record reads as.
NCU_SUMMARY_ADDED = {"busiest_pipe": None, "unverified": [], "traits": None}  # traits: the problem the advice fitted
KERNEL_SUMMARY_ADDED = {"pipes": {}, "shared_memory": {}, "design": {}, "unverified": []}


def recorded_files() -> list[Path]:
    return sorted(path for root in (REPO_ROOT / "demo", REPO_ROOT / "tests" / "fixtures")
                  for path in root.rglob("*.json") if path.name in RECORD_TYPES)


@pytest.mark.parametrize("path", recorded_files(), ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_every_recorded_record_reads_and_writes_back_the_same(path):
    raw = json.loads(path.read_text())
    record_type = RECORD_TYPES[path.name]
    record = record_type.from_dict(raw)
    written = record.to_dict()
    expected = dict(raw)
    if record_type is CorrectnessReport:  # recorded before a verdict named its subject (check/reuse.py)
        expected.setdefault("subject", {})
    expected.setdefault("schema", written["schema"])  # tags are added to untagged records
    if record_type in (CorrectnessReport, BenchmarkReport):
        # The same JSON to the letter: every key, value and null, in the same order at every depth.
        assert json.dumps(written) == json.dumps(expected)
    if record_type is VersionRecord and raw.get("parent") is not None:
        expected.setdefault("continued_past_target", False)  # recorded before `next --ignore-target` existed
    if record_type is NcuSummary:  # recorded before the classifier kept its pipe, shared-memory and design reading
        for key, default in NCU_SUMMARY_ADDED.items():
            expected.setdefault(key, default)
        expected["kernels"] = [{**{key: default for key, default in KERNEL_SUMMARY_ADDED.items()}, **kernel}
                               for kernel in raw.get("kernels", [])]
    assert written == expected
    assert record_type.from_dict(written) == record


# The parts of the correctness and benchmark records kept as JSON on purpose (docs/ARCHITECTURE.md, "Records"):
# name-to-value maps, the integrity checks' results (each read by its own check), the case's findings of those
# checks, and the ceilings cache file the roofline copies.
JSON_ON_PURPOSE = frozenset({"dims", "dtypes", "phases_s", "integrity", "findings", "launches", "measured_ceilings",
                             "limits"})  # limits: nvidia-smi clock limit -> share of busy samples
SECTIONS_BY_NAME = frozenset({"points", "post_timing_check"})  # dicts whose values are sections


def untyped_objects(value, where: str) -> list[str]:
    """Where a record read from JSON still holds a JSON object as a dict, outside the parts kept as JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = []
        for item in dataclasses.fields(value):
            nested = getattr(value, item.name)
            if item.name in SECTIONS_BY_NAME and isinstance(nested, dict):
                found += [path for key, entry in nested.items()
                          for path in untyped_objects(entry, f"{where}.{item.name}[{key}]")]
            elif item.name not in JSON_ON_PURPOSE:
                found += untyped_objects(nested, f"{where}.{item.name}")
        return found
    if isinstance(value, list):
        return [path for index, entry in enumerate(value) for path in untyped_objects(entry, f"{where}[{index}]")]
    return [where] if isinstance(value, dict) else []


REPORT_FILES = [path for path in recorded_files() if RECORD_TYPES[path.name] in (CorrectnessReport, BenchmarkReport)]


@pytest.mark.parametrize("path", REPORT_FILES, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_every_recorded_report_reads_into_typed_sections(path):
    """Every nested object of a recorded correctness or benchmark record is read into its dataclass."""
    record = RECORD_TYPES[path.name].from_dict(json.loads(path.read_text()))
    assert untyped_objects(record, path.name) == []


def test_untyped_objects_finds_a_nested_dict():
    """The check above can fail: a section holding a plain dict where a section belongs is reported."""
    report = benchmark_report()
    report.roofline.physical_floor = {"floor_us": 1.0}
    report.post_timing_check["solution"] = {"passed": True}
    assert untyped_objects(report, "benchmark.json") == [
        "benchmark.json.post_timing_check[solution]", "benchmark.json.roofline.physical_floor"]
    assert untyped_objects(benchmark_report(), "benchmark.json") == []


def test_the_h100_run_fixture_reads_into_records():
    run = read_run_record(RUN_FIXTURE)
    assert (run.kernel_name, run.backend, run.dims, run.iterations_budget) == (
        "softmax", "cuda", {"N": 4096, "D": 4096}, 1
    )
    final = read_benchmark(RUN_FIXTURE)
    assert final.measured and final.gpu_name == "NVIDIA H100 80GB HBM3" and final.comparison.against_folder() == "v0"
    v1 = read_benchmark(RUN_FIXTURE / "v1")
    assert v1.verdict == "measured" and v1.median_us == pytest.approx(v1.solution.median_us)
    assert v1.primary_point()[0] == v1.roofline.primary
    assert [entry.name for entry in v1.baselines] == [
        baseline["name"]
        for baseline in json.loads((RUN_FIXTURE / "v1" / "benchmark.json").read_text())["baselines"]
    ]
    assert read_correctness(RUN_FIXTURE / "v1").passed is True
    assert read_profile(RUN_FIXTURE / "v1").bottleneck == "memory_bound"
    evaluation = read_evaluation(RUN_FIXTURE / "v1")
    assert evaluation.state == "measured" and [step.name for step in evaluation.steps][0] == "correctness"
    assert read_version_record(RUN_FIXTURE / "v0").parent is None


def test_the_demo_softmax_v1_reads_into_records():
    folder = DEMO_SOFTMAX / "v1"
    correctness = read_correctness(folder)
    assert correctness.passed and len(correctness.cases) == 21 and correctness.cases[0].outputs[0].name
    benchmark = read_benchmark(folder)
    assert benchmark.median_us == pytest.approx(47.216, abs=1e-3) and benchmark.exit_code == 0
    assert (benchmark.comparison.against_folder(), benchmark.comparison.verdict) == ("v0", "success")
    assert benchmark.percent_of_ceiling == pytest.approx(91.2, abs=0.05)
    profile = read_profile(folder)
    assert (profile.bottleneck, profile.memory_limiter, profile.top_stall) == (
        "memory_bound", "DRAM", "long_scoreboard"
    )
    assert profile.read_next[0].link.startswith("experience/cuda/CUDA.md#") and profile.baseline.dir.endswith("v0")
    evaluation = read_evaluation(folder)
    assert evaluation.against == "v0" and evaluation.steps[2].summary.startswith("47.22 us; vs v0 1.086x")
    version = read_version_record(folder)
    assert (version.parent, version.parent_median_us) == ("v0", pytest.approx(50.56, abs=0.01))
