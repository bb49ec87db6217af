"""The launch check's decisions on synthetic traces (check/integrity/launch_rules.py), and its record in the reports.

The traces replay the probe recorded on an H100 (torch 2.11, tests/fixtures/launches/README.md):
a 1011 us fence on the caller's stream (the legacy default stream, CUPTI id 7, or a fresh
stream, id 17), the solution's activity, and a marker on the caller's stream.
"""

import json
import re
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.check.correctness import report_from_events
from kernel_opt.check.integrity.launch_profile import (
    CYCLES_PER_US_BOUND,
    FENCE_MAX_US,
    FENCE_MIN_US,
    activity_of,
    fence_cycles,
    outlasted_fence,
)
from kernel_opt.check.integrity.launch_rules import (
    STREAM_SLACK_NS,
    GpuActivity,
    LaunchCheck,
    judge_trace,
    kernel_base_name,
    library_of,
    own_base_names,
    profiled_kernels_problem,
)
from kernel_opt.check.integrity.launches import launch_check_of
from kernel_opt.check.integrity.verdict import correctness_failures
from kernel_opt.check.records import CorrectnessReport, DeviceInfo
from kernel_opt.check.report import correctness_summary, write_correctness_reports
from kernel_opt.run.events import CaseResultEvent, IntegrityEvent, PhaseEvent, PlanEvent
from kernel_opt.run.request import ChildRequest, CorrectnessPart, SolutionSpec
from kernel_opt.run.runner import ChildOutcome
from kernel_opt.solution import registry
from kernel_opt.solution.backend import BuildOptions

SPIN = "at::cuda::(anonymous namespace)::spin_kernel(long)"
ADD = "add(float const*, float const*, float*, int)"
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >"
CUTLASS = "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm::Params)"
TORCH_ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
             "std::array<char*, 3ul> >")
OWN_ADD = frozenset({"add"})


def us(value: float) -> int:
    return int(round(value * 1000))


def trace(caller: int, solution: list[tuple[str, int, float, float]], fence_end_us: float = 1011.0,
          marker_us: float = 1090.1) -> list[GpuActivity]:
    """Fence [0, fence_end_us) and a 1 us marker on `caller`; solution rows: (name, stream, start us, duration us)."""
    activities = [GpuActivity(SPIN, caller, 0, us(fence_end_us)), GpuActivity(SPIN, caller, us(marker_us), 1000)]
    activities += [GpuActivity(name, stream, us(start), us(duration)) for name, stream, start, duration in solution]
    return activities


# --- the probe's cases -------------------------------------------------------------------------------------


def test_a_kernel_on_the_caller_stream_passes_and_is_listed_as_its_own():
    verdict = judge_trace(trace(7, [(ADD, 7, 1012.2, 76.5)]), OWN_ADD)
    assert verdict.problems == [] and verdict.unreadable is None
    assert (verdict.caller_stream, verdict.fence_us, verdict.own_kernels, verdict.library_kernels) == (7, 1011.0, 1, 0)
    [row] = verdict.work
    assert (row.name, row.kind, row.stream, row.on_caller_stream, row.count, row.total_us, row.origin) == (
        ADD, "kernel", 7, True, 1, 76.5, "own")


@pytest.mark.parametrize("caller, side, start_us", [(7, 141, 140.7), (17, 141, 107.3)])
def test_an_unjoined_side_stream_fails_naming_kernel_and_stream(caller, side, start_us):
    verdict = judge_trace(trace(caller, [(ADD, side, start_us, 76.1)], marker_us=1012.3), OWN_ADD)
    [problem] = verdict.problems
    assert problem.startswith(f"{ADD} launched on stream {side} without waiting for the caller's stream: it may "
                              "read inputs before they are ready")
    assert f"started {1011.0 - start_us:.1f} us before" in problem
    assert verdict.work[0].on_caller_stream is False and verdict.own_kernels == 1


@pytest.mark.parametrize("caller, start_us, end_us, marker_us", [(7, 1012.9, 1088.8, 1090.1),
                                                                 (17, 1012.0, 1087.7, 1089.3)])
def test_a_side_stream_joined_both_ways_passes(caller, start_us, end_us, marker_us):
    verdict = judge_trace(trace(caller, [(ADD, 142, start_us, end_us - start_us)], marker_us=marker_us), OWN_ADD)
    assert verdict.problems == []
    assert verdict.work[0].on_caller_stream is False


def test_a_blocking_side_stream_is_ordered_with_the_legacy_stream_but_not_with_a_fresh_one():
    legacy = judge_trace(trace(7, [(ADD, 143, 1012.7, 75.7)], marker_us=1089.6), OWN_ADD)
    fresh = judge_trace(trace(17, [(ADD, 143, 92.2, 75.7)], marker_us=1012.3), OWN_ADD)
    assert legacy.problems == []
    assert len(fresh.problems) == 1 and "launched on stream 143 without waiting" in fresh.problems[0]


def test_a_torch_op_on_another_torch_stream_fails():
    verdict = judge_trace(trace(7, [(TORCH_ADD, 13, 250.0, 67.2)], marker_us=1012.4), frozenset({"tadd"}))
    assert "launched on stream 13 without waiting" in verdict.problems[0]
    assert verdict.work[0].origin == "torch" and (verdict.own_kernels, verdict.library_kernels) == (0, 1)


def test_work_still_running_after_the_call_returned_fails_as_not_joined():
    """Launched after the fence ended (a slow host path), still running when the marker started."""
    verdict = judge_trace(trace(17, [(ADD, 141, 1020.0, 200.0)], marker_us=1030.0), OWN_ADD)
    [problem] = verdict.problems
    assert problem.startswith(f"{ADD} launched on stream 141 and not joined to the caller's stream: still running "
                              "when the call returned")
    assert "ended 190.0 us after" in problem


def test_copies_without_a_kernel_fail_and_are_named():
    verdict = judge_trace(trace(7, [("Memcpy DtoD (Device -> Device)", 7, 1012.0, 44.7)], marker_us=1058.0), OWN_ADD)
    [problem] = verdict.problems
    assert problem.startswith("launched no GPU kernel during the call: it only made copies "
                              "(1 x Memcpy DtoD (Device -> Device))")
    assert verdict.work[0].kind == "memcpy" and verdict.work[0].origin == "copy"
    assert (verdict.own_kernels, verdict.library_kernels) == (0, 0)


def test_nothing_on_the_gpu_fails():
    verdict = judge_trace(trace(7, [], marker_us=1012.4), OWN_ADD)
    assert verdict.problems == ["launched no GPU kernel during the call: nothing ran on the GPU between the call and "
                                "its return, so its outputs were computed elsewhere or not at all"]


def test_host_compute_with_copies_both_ways_fails_once_for_the_missing_kernel():
    copies = [("Memcpy DtoH (Device -> Pageable)", 17, 1012.0, 40.0), ("Memcpy DtoH (Device -> Pageable)", 17, 1053.0,
                                                                        40.0),
              ("Memcpy HtoD (Pageable -> Device)", 17, 3000.0, 50.0)]
    verdict = judge_trace(trace(17, copies, marker_us=3051.0), OWN_ADD)
    assert verdict.problems == [
        "launched no GPU kernel during the call: it only made copies (2 x Memcpy DtoH (Device -> Pageable), "
        "1 x Memcpy HtoD (Pageable -> Device)), so its outputs were computed on the host or copied from a result kept "
        "from an earlier call"]
    assert [row.count for row in verdict.work] == [2, 1]


def test_library_kernels_pass_and_are_counted_apart_from_own_ones():
    verdict = judge_trace(trace(7, [(CUTLASS, 7, 1012.0, 175.7)], marker_us=1189.1), frozenset({"matmul_kernel"}))
    assert verdict.problems == []
    assert (verdict.own_kernels, verdict.library_kernels) == (0, 1)
    assert verdict.work[0].origin == "cuBLAS/CUTLASS"


def test_several_kernels_on_the_caller_stream_pass_and_are_deduplicated():
    activities = trace(17, [(ADD, 17, 1012.0, 10.0), (FILL, 17, 1023.0, 1.0), (ADD, 17, 1025.0, 10.0)],
                       marker_us=1036.0)
    verdict = judge_trace(activities, OWN_ADD)
    assert verdict.problems == []
    assert [(row.name, row.count, row.total_us, row.origin) for row in verdict.work] == [
        (ADD, 2, 20.0, "own"), (FILL, 1, 1.0, "torch")]
    assert (verdict.own_kernels, verdict.library_kernels) == (1, 1)


def test_a_backend_that_cannot_tell_its_kernels_lists_them_as_unknown():
    verdict = judge_trace(trace(7, [(ADD, 7, 1012.0, 10.0)]), None)
    assert verdict.own_kernels is None and verdict.work[0].origin == "unknown" and verdict.problems == []


def test_work_on_the_caller_stream_after_the_marker_was_launched_outside_the_call():
    verdict = judge_trace(trace(7, [(ADD, 7, 1012.0, 10.0), (ADD, 7, 1300.0, 10.0)], marker_us=1023.0), OWN_ADD)
    assert verdict.problems == [f"{ADD} ran on the caller's stream after the call had returned: it was launched from "
                                "another thread or a callback, outside the call"]


# --- the slack at both edges -------------------------------------------------------------------------------------


@pytest.mark.parametrize("offset_ns, fails", [(-STREAM_SLACK_NS - 100, True), (-STREAM_SLACK_NS + 100, False),
                                              (0, False)])
def test_the_fence_edge_allows_one_microsecond(offset_ns, fails):
    fence_end = us(1011.0)
    activities = trace(17, [], marker_us=1200.0) + [GpuActivity(ADD, 142, fence_end + offset_ns, us(50.0))]
    assert bool(judge_trace(activities, OWN_ADD).problems) is fails


@pytest.mark.parametrize("offset_ns, fails", [(STREAM_SLACK_NS + 100, True), (STREAM_SLACK_NS - 100, False),
                                              (0, False)])
def test_the_marker_edge_allows_one_microsecond(offset_ns, fails):
    marker = us(1200.0)
    activities = trace(17, [], marker_us=1200.0) + [GpuActivity(ADD, 142, us(1012.0), marker + offset_ns - us(1012.0))]
    assert bool(judge_trace(activities, OWN_ADD).problems) is fails


def test_a_trace_without_the_harness_kernels_cannot_be_judged():
    assert "fence kernel is missing" in judge_trace([GpuActivity(ADD, 7, 0, 10)], OWN_ADD).unreadable
    only_fence = [GpuActivity(SPIN, 7, 0, us(1011.0)), GpuActivity(ADD, 7, us(1012.0), 10)]
    verdict = judge_trace(only_fence, OWN_ADD)
    assert "not the marker" in verdict.unreadable and verdict.problems == []


# --- names --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, base", [
    (ADD, "add"), ("void add<128>(float const*, int)", "add"), (SPIN, "spin_kernel"),
    (FILL, "vectorized_elementwise_kernel"), (CUTLASS, "Kernel2"), ("tadd", "tadd"), ("_Z3addPKfS0_Pfi", "add"),
    ("_ZN2ns6kernelEPf", "kernel"),
    ("_ZN2ns6kernelILi4EEvPf", "kernel"), ("_Z11gemm_kernelILi128EEvPKf", "gemm_kernel"),
    ("ns::(anonymous namespace)::softmax_kernel(float const*, float*, int, int)", "softmax_kernel"),
])
def test_kernel_names_compare_on_their_bare_identifier(name, base):
    assert kernel_base_name(name) == base


def test_a_cuda_build_and_the_trace_agree_on_a_kernel_whether_mangled_or_not():
    own = own_base_names(["_Z17vector_add_kernelPKfS0_Pfi", "void tile<64>(float*)"])
    assert own == {"vector_add_kernel", "tile"}
    verdict = judge_trace(trace(7, [("vector_add_kernel(float const*, float const*, float*, int)", 7, 1012.0, 5.0),
                                    ("void tile<64>(float*)", 7, 1018.0, 5.0)]), own)
    assert verdict.own_kernels == 2 and verdict.library_kernels == 0


def test_library_names():
    assert [library_of(name) for name in (FILL, CUTLASS, "sm90_xmma_gemm_f32f32_tf32", "mystery")] == [
        "torch", "cuBLAS/CUTLASS", "cuBLAS", "library"]


# --- what ncu profiled (loop/measure_steps.py) ----------------------------------------------------------------


def launches_with(*rows) -> LaunchCheck:
    verdict = judge_trace(trace(7, list(rows)), OWN_ADD)
    return LaunchCheck(profiled=True, work=verdict.work, own_kernels=verdict.own_kernels,
                       library_kernels=verdict.library_kernels)


def test_ncu_profiling_nothing_or_none_of_the_own_kernels_fails_the_version():
    own = launches_with((ADD, 7, 1012.0, 10.0))
    assert "ncu profiled no kernel in the solution's calls" in profiled_kernels_problem([], own)
    assert "ncu profiled no kernel" in profiled_kernels_problem([], None)  # no launch record: still nothing ran
    problem = profiled_kernels_problem([TORCH_ADD.replace("add", "copy")], own)
    assert problem.startswith("ncu profiled only vectorized_elementwise_kernel, none of the solution's own kernels "
                              "(add)")
    assert profiled_kernels_problem(["add"], own) is None
    assert profiled_kernels_problem([ADD, FILL], own) is None


def test_ncu_on_a_library_only_solution_or_without_a_launch_record_judges_only_that_something_ran():
    library = launches_with((CUTLASS, 7, 1012.0, 175.0))
    assert library.library_only
    assert profiled_kernels_problem([CUTLASS], library) is None
    assert profiled_kernels_problem([CUTLASS], None) is None
    assert profiled_kernels_problem([CUTLASS], LaunchCheck(profiled=False, note="CPU")) is None


# --- the record and the reports -----------------------------------------------------------------------------------


def failed_launch_check() -> LaunchCheck:
    verdict = judge_trace(trace(17, [(ADD, 141, 107.3, 74.8)], marker_us=1012.4), OWN_ADD)
    return LaunchCheck(profiled=True, dims={"n": 1024}, seed=3, caller="a fresh stream", caller_stream=17,
                       fence_us=verdict.fence_us, call_host_us=40.0, work=verdict.work,
                       own_kernels=verdict.own_kernels, library_kernels=verdict.library_kernels,
                       problems=verdict.problems, outputs=[], values_passed=True)


def test_the_launch_check_round_trips_and_fails_on_any_problem_or_wrong_value():
    check = failed_launch_check()
    payload = json.loads(json.dumps(check.to_dict()))
    assert payload["passed"] is False and LaunchCheck.from_dict(payload) == check
    assert LaunchCheck(profiled=True, values_passed=True).passed
    assert not LaunchCheck(profiled=True, values_passed=False).passed
    assert not LaunchCheck(profiled=True, values_passed=True, modified_inputs=["x"]).passed
    assert LaunchCheck(profiled=False, note="CPU").passed  # nothing profiled is nothing failed
    assert check.failure_sentences()[0].endswith("(the profiled call (n=1024; seed 3))")


def outcome_with(check: LaunchCheck) -> ChildOutcome:
    return ChildOutcome(events=[
        PlanEvent(cases=[{"n": 1024}], seeds=[0], has_shapes=True),
        CaseResultEvent(0, {"n": 1024}, 0, True, [], {"modified_inputs": []}),
        IntegrityEvent("launches", check.to_dict()),
    ], returncode=0)


def empty_report() -> CorrectnessReport:
    return CorrectnessReport("fail", "s.cu", "ref.py", "cuda", DeviceInfo("cuda", "H100", "9.0"), False, "cmd",
                             {"n": 1024}, [0])


def test_a_failed_launch_check_fails_correctness_with_its_reasons(tmp_path):
    report = report_from_events(empty_report(), outcome_with(failed_launch_check()))
    assert report.verdict == "fail" and launch_check_of(report).problems
    [sentence] = correctness_failures(report)
    assert "launched on stream 141 without waiting for the caller's stream" in sentence
    summary = correctness_summary(report, tmp_path)
    assert summary.startswith("FAIL: all 1 cases match the reference, but the profiled call failed the launch check.")
    assert "without waiting" in summary
    write_correctness_reports(report, tmp_path, 1)
    markdown = (tmp_path / "correctness.md").read_text()
    assert "## What ran on the GPU" in markdown and "| other (141)" in markdown and "without waiting" in markdown
    assert json.loads((tmp_path / "correctness.json").read_text())["launches"]["passed"] is False


def test_a_library_only_solution_passes_and_the_report_says_so_plainly(tmp_path):
    verdict = judge_trace(trace(7, [(CUTLASS, 7, 1012.0, 175.7)], marker_us=1189.1), frozenset({"matmul_kernel"}))
    check = LaunchCheck(profiled=True, dims={"n": 1024}, seed=3, caller="a fresh stream", fence_us=1011.0,
                        call_host_us=30.0, work=verdict.work, own_kernels=0, library_kernels=1, values_passed=True)
    report = report_from_events(empty_report(), outcome_with(check))
    assert report.verdict == "pass"
    assert "no kernel of the solution's own ran" in correctness_summary(report, tmp_path)
    write_correctness_reports(report, tmp_path, 0)
    markdown = (tmp_path / "correctness.md").read_text()
    assert "**No kernel of the solution's own ran: every kernel it launched is library code" in markdown
    assert json.loads((tmp_path / "correctness.json").read_text())["launches"]["own_kernels"] == 0


def test_an_unprofiled_check_passes_and_says_why(tmp_path):
    check = LaunchCheck(profiled=False, note="not profiled: the solution ran on the CPU (Triton interpreter)")
    report = report_from_events(empty_report(), outcome_with(check))
    assert report.verdict == "pass"
    write_correctness_reports(report, tmp_path, 0)
    assert "not profiled: the solution ran on the CPU" in (tmp_path / "correctness.md").read_text()


# --- the recorded probe, replayed ---------------------------------------------------------------------------

PROBE = FIXTURES_DIR / "launches" / "profiler.txt"
_PROBE_ROW = re.compile(r"^\s+stream\s+(\d+) start\s+([\d.]+) us dur\s+([\d.]+) us\s+\?\s+(.*)$")
# Every block of the probe and whether the launch check must fail it (and for which reason).
PROBE_VERDICTS = {
    "solve_caller": None, "solve_unjoined": "without waiting", "solve_joined": None, "solve_legacy_blocking": None,
    "solve_memcpy": "launched no GPU kernel", "triton": None, "torch_matmul": None,
    "torch_side_stream": "without waiting", "nothing": "launched no GPU kernel",
    "solve_caller (caller on a fresh stream)": None, "solve_unjoined (caller on a fresh stream)": "without waiting",
    "solve_joined (caller on a fresh stream)": None,
    "solve_legacy_blocking (caller on a fresh stream)": "without waiting",
    "triton (caller on a fresh stream)": None,
}


def probe_traces() -> dict[str, list[GpuActivity]]:
    """The probe's blocks as traces; its marker (a fill) renamed to the harness's spin kernel."""
    traces: dict[str, list[GpuActivity]] = {}
    label = None
    for line in PROBE.read_text().splitlines():
        if line.startswith("=== "):
            label = line[4:].split(" caller_stream=")[0]
            traces[label] = []
        elif label is not None and (row := _PROBE_ROW.match(line)):
            stream, start, duration, name = int(row[1]), float(row[2]), float(row[3]), row[4]
            traces[label].append(GpuActivity(name, stream, us(start), us(duration)))
        elif line.startswith("-----"):
            label = None
    for activities in traces.values():
        caller = activities[0].stream
        marker = max((a for a in activities if a.stream == caller), key=lambda a: a.start_ns)
        activities[activities.index(marker)] = GpuActivity(SPIN, caller, marker.start_ns, marker.duration_ns)
    return traces


def test_the_probe_has_every_case():
    assert set(probe_traces()) == set(PROBE_VERDICTS)


@pytest.mark.parametrize("label", list(PROBE_VERDICTS))
def test_every_case_of_the_h100_probe_gets_its_verdict(label):
    verdict = judge_trace(probe_traces()[label], frozenset({"add", "tadd"}))
    expected = PROBE_VERDICTS[label]
    if expected is None:
        assert verdict.problems == []
    else:
        assert len(verdict.problems) == 1 and expected in verdict.problems[0]
    if label == "torch_matmul":
        assert (verdict.own_kernels, verdict.library_kernels) == (0, 1)


# --- the profiler layer's pure parts (check/integrity/launch_profile.py) ----------------------------------------------


class KinetoEvent:
    """The methods of torch's _KinetoEvent that activity_of reads; activity_type only where torch has it."""

    def __init__(self, name, device="DeviceType.CUDA", stream=7, start=100, duration=50, activity_type=None):
        self._values = (name, device, stream, start, duration)
        if activity_type is not None:
            self.activity_type = lambda: activity_type

    def name(self):
        return self._values[0]

    def device_type(self):
        return self._values[1]

    def device_resource_id(self):
        return self._values[2]

    def start_ns(self):
        return self._values[3]

    def duration_ns(self):
        return self._values[4]


def test_activity_of_keeps_gpu_work_and_drops_waits_overheads_and_host_events():
    assert activity_of(KinetoEvent(ADD)) == GpuActivity(ADD, 7, 100, 50)
    assert activity_of(KinetoEvent("Memcpy DtoD (Device -> Device)", activity_type="gpu_memcpy")).kind == "memcpy"
    assert activity_of(KinetoEvent("Memset (Device)")).kind == "memset"
    dropped = [KinetoEvent("aten::add", device="DeviceType.CPU"), KinetoEvent("Stream Wait Event"),
               KinetoEvent("Activity Buffer Request"), KinetoEvent("whatever", activity_type="cuda_sync"),
               KinetoEvent("cudaLaunchKernel", activity_type="cuda_runtime"),
               KinetoEvent("my_range", activity_type="gpu_user_annotation")]
    assert [activity_of(event) for event in dropped] == [None] * len(dropped)


@pytest.mark.parametrize("host_s, fence_us", [(0.0, FENCE_MIN_US), (20e-6, FENCE_MIN_US), (1e-3, 4000.0),
                                              (100.0, FENCE_MAX_US)])
def test_the_fence_outlasts_the_call_s_host_side(host_s, fence_us):
    assert fence_cycles(host_s) == pytest.approx(fence_us * CYCLES_PER_US_BOUND)
    # On the probe's H100 (2e6 cycles in 1011 us) the minimum fence lasts about 1.5 ms.
    assert fence_cycles(0.0) * 1011.0 / 2e6 == pytest.approx(1516.5)


@pytest.mark.parametrize("call_host_s, fenced_for_s, outlasted", [
    (0.0009, 0.0001, False),  # inside the 1 ms floor
    (0.0084, 0.0001, True),  # 8.4 ms against a 1 ms fence: seen on a loaded H200, profiled once more
    (0.0039, 0.001, False),  # inside 4 x 1 ms
    (0.0041, 0.001, True),
])
def test_a_call_whose_host_side_outlasts_its_fence_is_told_apart(call_host_s, fenced_for_s, outlasted):
    assert outlasted_fence(call_host_s, fenced_for_s) is outlasted


def test_a_call_that_outlasted_its_fence_is_profiled_again_on_fresh_inputs_fenced_for_its_own_time(monkeypatch):
    """Outputs poisoned before each profiled call; the first call's result forgotten; the second try on inputs from
    the second seed (a solution keying a kept result on its inputs finds nothing), its fence sized from the first."""
    from types import SimpleNamespace

    import torch

    from kernel_opt.check.integrity import launch_profile, launches

    fenced_for, seen, events = [], [], []
    host_times = iter([0.0084, 0.0085])

    def fake_profile(call, caller, host_s):
        fenced_for.append(host_s)
        values = prepared[-1].instance.values
        seen.append((values["x"][0].item(), torch.isnan(values["out"]).all().item()))
        values["out"].zero_()  # what the call wrote
        return [f"activity {len(fenced_for)}"], next(host_times)

    prepared = []

    def prepare(seed):
        values = {"x": torch.full((4,), float(seed)), "out": torch.zeros(4)}
        prepared.append(launches._ProfiledCase(SimpleNamespace(values=values, outputs=["out"], dims={"n": 4}),
                                               {}, None, seed))
        return prepared[-1]

    monkeypatch.setattr(launch_profile, "profile_fenced_call", fake_profile)
    solution = SimpleNamespace(forget_call=lambda: events.append("forgot"))
    runner = SimpleNamespace(solution=solution, solution_ran=lambda after: events.append(after))
    case = launches._profile_call(runner, prepare, (7, 9), None, 0.0001)
    assert fenced_for == [0.0001, 0.0084] and seen == [(7.0, True), (9.0, True)]
    assert (case.seed, case.activities, case.call_host_s) == (9, ["activity 2"], 0.0085)
    assert events == ["the solution's profiled call", "forgot"]
    host_times = iter([0.0002])
    fenced_for.clear()
    case = launches._profile_call(runner, prepare, (7, 9), None, 0.0001)
    assert (case.seed, case.call_host_s, fenced_for) == (7, 0.0002, [0.0001])


# --- the backends' hooks: whose kernels, which stream -------------------------------------------------------------


def loaded(backend_name: str, solution: Path, prepared: dict | None = None):
    """The backend's Launcher for a solution, loaded as the child loads it."""
    spec = SolutionSpec(backend_name, str(solution), prepared or {})
    return registry.get(backend_name).load(ChildRequest(spec, "ref.py", "cpu", {}, CorrectnessPart([0])))


@pytest.mark.parametrize("solution, own", [
    ("vector_add/good/vector_add.py", {"vector_add_kernel"}),
    ("vector_add/wrong/calls_torch.py", set()),  # no kernel of its own: library only
    ("softmax/good/softmax.py", {"softmax_kernel"}),
])
def test_a_triton_solution_s_own_kernels_are_its_module_s_jit_functions(reference_dir, solution, own):
    launcher = loaded("triton", reference_dir / solution)
    assert launcher.own_kernel_names() == own and launcher.takes_caller_stream()


def test_autotuned_and_heuristic_kernels_are_unwrapped_to_their_function_s_name(tmp_path):
    source = tmp_path / "tuned.py"
    source.write_text(
        "import triton\nimport triton.language as tl\n\n"
        "@triton.autotune(configs=[triton.Config({'BLOCK': 128})], key=['n'])\n"
        "@triton.jit\ndef tuned_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n\n"
        "@triton.heuristics({'EVEN': lambda args: True})\n"
        "@triton.jit\ndef guessed_kernel(x_ptr, n, EVEN: tl.constexpr):\n    pass\n\n"
        "def run_kernel(x, **_):\n    pass\n")
    launcher = loaded("triton", source)
    assert launcher.own_kernel_names() == {"tuned_kernel", "guessed_kernel"}


@pytest.mark.nvcc
@pytest.mark.parametrize("solution, own, takes_stream", [
    ("good/vector_add.cu", {"vector_add_kernel"}, True),
    ("good/legacy_default_stream.cu", {"vector_add_kernel"}, False),  # its caller's stream: the legacy default
    ("wrong/host_compute.cu", None, True),  # ptxas listed no kernel: unknown, never "library only" on a guess
])
def test_a_cuda_solution_s_own_kernels_come_from_its_build(reference_dir, tmp_path, solution, own, takes_stream):
    backend = registry.get("cuda")
    prepared = backend.prepare((reference_dir / "vector_add" / solution).resolve(), "cpu", tmp_path, BuildOptions(),
                               [])
    launcher = loaded("cuda", reference_dir / "vector_add" / solution, prepared.request)
    assert launcher.own_kernel_names() == own and launcher.takes_caller_stream() is takes_stream


def test_a_passing_check_prints_what_it_launched(tmp_path):
    verdict = judge_trace(trace(17, [("void add<128>(float const*, int)", 17, 1012.0, 10.0), (FILL, 17, 1023.0, 1.0)],
                                marker_us=1025.0), OWN_ADD)
    check = LaunchCheck(profiled=True, dims={"n": 1024}, seed=3, caller="a fresh stream", fence_us=1516.0,
                        call_host_us=20.0, work=verdict.work, own_kernels=verdict.own_kernels,
                        library_kernels=verdict.library_kernels, values_passed=True)
    report = report_from_events(empty_report(), outcome_with(check))
    assert "launched: 1 kernel(s) of its own (add), 1 library kernel(s)" in correctness_summary(report, tmp_path)


def test_the_record_keeps_where_the_worker_s_time_went_and_an_old_record_writes_none():
    outcome = outcome_with(LaunchCheck(profiled=False, note="not profiled"))
    outcome.events = [PhaseEvent("load_solution", t=10.0), PhaseEvent("setup", t=11.0),
                      PhaseEvent("reference", t=11.5), PhaseEvent("setup", t=13.0), *outcome.events]
    outcome.spawned, outcome.ended = 8.0, 16.0
    report = report_from_events(empty_report(), outcome)
    assert report.phases_s == {"worker start": 2.0, "load_solution": 1.0, "setup": 3.5, "reference": 1.5}
    assert CorrectnessReport.from_dict(report.to_dict()).phases_s == report.phases_s
    assert "phases_s" not in empty_report().to_dict()
