"""`workspace.py evaluate`: the order of its steps, what each step's result does to the version, and what
runs without a GPU.

The tools are faked (FakeTools) over synthetic runs (run_fixtures.py) built from the real record classes
and real ncu_summary.json files; the tests without a GPU run the real tools on this machine."""

import json
import re
import threading
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from run_fixtures import GPU, NCU_FIXTURES, SOFTMAX, VALID_HYPOTHESIS, WORK, make_run, synthetic_run, write_version

from kernel_opt.check.integrity.launch_rules import LaunchCheck, LaunchedWork
from kernel_opt.check.records import CaseResult, CorrectnessReport, DeviceInfo, SanitizerRun
from kernel_opt.commands import benchmark as benchmark_command
from kernel_opt.commands import correctness_check, ncu_profile
from kernel_opt.commands import workspace as workspace_command
from kernel_opt.core.errors import EnvironmentFault, SolutionError
from kernel_opt.core.records import ErrorRecord
from kernel_opt.experience.ranking import Match, Query, Recommendation, RecommendationResult
from kernel_opt.experience.records import ExperienceRecord
from kernel_opt.experience.store import Entry
from kernel_opt.loop import check_steps, evaluate, final_report, measure_steps, recommend_step
from kernel_opt.loop.workspace import read_run, run_status
from kernel_opt.measure.ceilings import CeilingsResult, MeasuredCeilings
from kernel_opt.measure.records import BenchmarkReport, TimedEntry, TimedSolution
from kernel_opt.profile import profiler
from kernel_opt.profile.problem_traits import problem_traits
from kernel_opt.profile.profiler import ProfileRequest
from kernel_opt.sass.instruction_mix import InstructionMix
from kernel_opt.sass.report import KernelStaticAnalysis, StaticReport

H200_CEILINGS = {
    "schema_version": 1, "measured_at": "2026-11-22T04:40:41+00:00",
    "device": {"name": "NVIDIA H200", "driver_version": "580", "torch_version": "2.11", "cuda_version": "13.0",
               "compute_capability": "9.0", "sm_count": 132, "l2_cache_bytes": 52428800, "total_memory_bytes": 141e9},
    "copy": {"buffer_bytes": 1 << 30, "bytes_moved": 1 << 31, "bandwidth_gbps": 4000.0, "median_us": 537.0,
             "p20_us": 536.0, "p80_us": 538.0, "method": "copy"},
    "copy_error": None,
    "matmul": {"float32": {"dtype": "float32", "size": 4096, "tflops": 55.0, "median_us": 1.0, "p20_us": 1.0,
                           "p80_us": 1.0, "precision": "strict", "error": None}},
}


class FakeHeldWorker:
    """Stands in for measure/benchmark.py's HeldBenchmarkWorker: says whether it was handed to the benchmark
    (and whether it had been stopped by then) and whether it was stopped."""

    def __init__(self, request, calls: list):
        self.request, self.handed_over, self.stopped_before_benchmark, self.stopped = request, False, None, False
        self.calls = calls  # the tools' calls: where evaluate waited for it to be prepared

    def wait_until_prepared(self) -> bool:
        self.calls.append(("benchmark worker prepared", None))
        return True

    def stop(self) -> None:
        self.stopped = True


class FakeTools:
    """Stands in for the GPU tools' library calls: records each typed request, writes what the real tool
    would, and returns the record. Each also prints noise on stdout: evaluate must not read stdout."""

    def __init__(self, out: Path, median_us: float, ceilings_fail: bool = False, shared_loads: int = 0,
                 sanitizer_errors: dict | None = None, correct: bool = True):
        self.out, self.median_us, self.calls, self.ceilings_fail = out, median_us, [], ceilings_fail
        self.shared_loads = shared_loads  # in the static analysis: whether racecheck has anything to check
        self.sanitizer_errors = sanitizer_errors or {}  # tool -> errors it finds
        self.correct = correct  # the correctness check's verdict
        self.held: list[FakeHeldWorker] = []  # the benchmark workers started beside the checks

    def install(self, monkeypatch) -> "FakeTools":
        monkeypatch.setattr(evaluate, "gpu_available", lambda: True)
        for module, names in ((check_steps, ("check_solution", "analyze_solution")),
                              (measure_steps, ("load_or_measure", "benchmark_solution", "profile_solution",
                                               "hold_benchmark_worker")),
                              (recommend_step, ("recommend_from_log",))):
            for name in names:
                monkeypatch.setattr(module, name, getattr(self, name))
        return self

    def requests(self, tool: str) -> list:
        return [request for name, request in self.calls if name == tool]

    def check_solution(self, request):
        if request.check.sanitize:
            return self.sanitize(request)
        self.calls.append(("correctness_check", request))
        print('{"passed": false} <- stdout, never read')
        folder = write_version(self.out, int(request.output_dir.name[1:]), state=None, correct=self.correct)
        return CorrectnessReport.from_dict(json.loads((folder / "correctness.json").read_text()))

    def sanitize(self, request):
        """One case under compute-sanitizer, clean unless sanitizer_errors says otherwise."""
        tool = request.check.sanitize
        self.calls.append((tool, request))
        errors = self.sanitizer_errors.get(tool, 0)
        report = CorrectnessReport(
            verdict="pass", solution=str(request.solution), reference=str(request.reference), backend="cuda",
            device=DeviceInfo.from_dict({"type": "cuda", **GPU}), interpreter=False, command="correctness_check.py",
            dims=request.dims,
            seeds=[0], cases=[CaseResult({"N": 1, "D": 1}, 0, True, [], [])], planned_cases=1,
            sanitizer=SanitizerRun(tool=tool, command="compute-sanitizer", completed=True, errors=errors),
        )
        if errors:
            report.verdict = "solution_error"
            report.error = ErrorRecord("sanitizer_finding", f"{tool} found {errors} error(s); the first: Invalid "
                                       "__global__ write", None, 3)
        return report

    def analyze_solution(self, request):
        self.calls.append(("static_analysis", request))
        mix = InstructionMix(shared_loads=self.shared_loads)
        kernel = KernelStaticAnalysis("softmax_kernel(const float *, float *, int, int)", "_Z14softmax_kernel",
                                      "sm_90", 30, 0, 0, 0, 0, 0, mix)
        return StaticReport(str(request.solution), "cuda", "sm_90", "cuobjdump", "nvcc", [kernel])

    def load_or_measure(self, refresh=False):
        self.calls.append(("measure_ceilings", refresh))
        print("ceilings measured at 1999-01-01 <- stdout, never read")
        if self.ceilings_fail:
            raise EnvironmentFault("no GPU that torch can use")
        return CeilingsResult(MeasuredCeilings.from_dict(H200_CEILINGS), from_cache=True,
                              cache_path=Path("/cache/ceilings-nvidia-h200-580.json"))

    def hold_benchmark_worker(self, request):
        self.held.append(FakeHeldWorker(request, self.calls))
        return self.held[-1]

    def benchmark_solution(self, request, held=None):
        self.calls.append(("benchmark", request))
        if held is not None:
            held.handed_over, held.stopped_before_benchmark = True, held.stopped
        print('{"verdict": "incorrect"} <- stdout, never read')
        against = request.against.parent.name if request.against else None
        folder = write_version(self.out, int(request.output_dir.name[1:]), median_us=self.median_us, against=against,
                               speedup=(self.median_us * 1.2) / self.median_us if against else None,
                               ci=(1.15, 1.25), verdict="success", state=None)
        return BenchmarkReport.from_dict(json.loads((folder / "benchmark.json").read_text()))

    def profile_solution(self, request):
        self.calls.append(("ncu_profile", request))
        print("COMPUTE_BOUND <- stdout, never read")
        summary = profiler.profile_solution(ProfileRequest(request.output_dir, baseline=request.baseline,
                                                           from_report=NCU_FIXTURES / "memory_streaming.ncu-rep"))
        # a profile on a GPU reads the problem's family from the run's ref.py, which a kept report cannot
        summary.traits = problem_traits(request.reference, None, None, None, None)
        (request.output_dir / "ncu_summary.json").write_text(json.dumps(summary.to_dict()))
        return summary

    def recommend_from_log(self, request):
        self.calls.append(("experience_log", request))
        print('{"recommendations": []} <- stdout, never read')
        entry = Entry("local", ExperienceRecord(id=1, kernel="softmax", backend="cuda", optimization="float4 loads",
                                                outcome="success", strategy="vector_loads", speedup=1.3))
        found = Recommendation("vector_loads", 1.0, [Match(entry, 1.0, ["same kernel"])])
        result = RecommendationResult(Query(kernel="softmax"), [found], [], 1)
        return result, []


def test_evaluate_compares_and_profiles_against_the_best_so_far(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])  # v3 from v1
    (out / "v3" / "hypothesis.txt").write_text(VALID_HYPOTHESIS)
    (out / "v3" / "v3.cu").write_text((out / "v3" / "v3.cu").read_text() + "// one change\n")
    tools = FakeTools(out, median_us=70.0).install(monkeypatch)
    capsys.readouterr()
    assert workspace_command.main(["evaluate", str(out), "v3"]) == 0
    commands = [command for command, _ in tools.calls]
    # the first three run side by side (the racecheck decision reads the static analysis): in any order
    assert sorted(commands[:3]) == ["correctness_check", "memcheck", "static_analysis"]
    assert commands[3:] == ["benchmark worker prepared", "measure_ceilings", "benchmark", "ncu_profile",
                            "experience_log"]
    [check] = tools.requests("correctness_check")
    [memcheck] = tools.requests("memcheck")  # the smallest case of the run's shapes, built as the run is
    assert (memcheck.output_dir, memcheck.dims, memcheck.build) == (out / "v3", check.dims, check.build)
    assert (check.solution, check.output_dir, check.dims) == (out / "v3" / "v3.cu", out / "v3", {"N": 4096, "D": 4096})
    [benchmark] = tools.requests("benchmark")
    assert benchmark.against == out / "v1" / "v1.cu"  # the best, not v2
    assert benchmark.target_percent == 90.0 and benchmark.compile_modes == ["default"]
    assert benchmark.baselines == ["eager", "compile"]  # timed at v0, reused through the run's cache
    assert benchmark.reference_cache == out / "reference_cache.json"
    assert benchmark.checked_by == out / "v3" / "correctness.json"  # the correctness step just checked it
    assert benchmark.check_seeds == 1  # the full check ran a moment before
    assert benchmark.dims == {"N": 4096, "D": 4096}
    assert tools.requests("ncu_profile")[0].baseline == out / "v1"
    [recommend] = tools.requests("experience_log")
    assert (recommend.bottleneck, recommend.chip, recommend.limit) == ("memory_bound", "NVIDIA H200", 5)
    assert recommend.family == "row_reduction"  # v3's profile read it from ref.py's torch.softmax
    record = json.loads((out / "v3" / "evaluation.json").read_text())
    assert (record["state"], record["exit_code"], record["against"]) == ("measured", 0, "v1")
    assert [(s["name"], s["status"]) for s in record["steps"]] == [
        ("correctness", "ok"), ("hypothesis", "ok"), ("memcheck", "ok"), ("racecheck", "skipped"), ("ceilings", "ok"),
        ("benchmark", "ok"), ("profile", "ok"), ("recommend", "ok")]
    assert all(s["wall_s"] >= 0 for s in record["steps"])
    summaries = {s["name"]: s["summary"] for s in record["steps"]}
    assert summaries["correctness"] == "pass: 0 cases"
    assert summaries["memcheck"] == "no errors (smallest case N=1, D=1, seed 0)"
    assert summaries["racecheck"] == ("no kernel uses shared memory (softmax_kernel: no shared-memory instruction in "
                                      "the SASS)")
    assert summaries["ceilings"] == "ceilings read from cache, measured at 2026-11-22T04:40:41+00:00"
    assert summaries["benchmark"].startswith("70.00 us; vs v1 1.200x [1.150, 1.250] success")
    assert summaries["profile"].startswith("memory_bound (DRAM), top stall ")
    assert summaries["recommend"] == "for v3 (memory_bound): vector_loads"
    assert record["recommendations"]["for_version"] == "v3"
    assert record["recommendations"]["strategies"][0]["strategy"] == "vector_loads"
    assert record["recommendations"]["read_next"]  # from v3's own profile, now the best
    # The log holds each step's command line and the summary rendered from its record, not stdout.
    log = (out / "v3" / "evaluate.log").read_text()
    assert f"$ benchmark.py {out / 'v3' / 'v3.cu'} --ref {out / 'ref.py'}" in log
    assert "--against " + str(out / "v1" / "v1.cu") in log and "MEASURED on NVIDIA H200" in log
    assert "$ experience_log.py recommend --kernel softmax --family row_reduction --backend cuda -n 5" in log
    assert "never read" not in log
    summary = capsys.readouterr().out
    assert "v3: MEASURED" in summary and "| benchmark" in summary and "70.00 us; vs v1 1.200x" in summary
    assert "experience_log.py add --from" in summary
    assert run_status(out).best.name == "v3"
    # Measured numbers are not replaced by a re-run, unless asked.
    assert workspace_command.main(["evaluate", str(out), "v3"]) == 2
    assert "already evaluated" in capsys.readouterr().err
    assert workspace_command.main(["evaluate", str(out), "v3", "--force"]) == 0


def test_evaluate_builds_the_command_lines_the_tools_would_parse_back(tmp_path, monkeypatch):
    """Each step's command line (in evaluate.log and the records' "command") parses back to its request."""
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    (out / "v3" / "hypothesis.txt").write_text(VALID_HYPOTHESIS)
    tools = FakeTools(out, median_us=70.0).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v3", "--baseline", "none"]) == 0
    for tool, module in (("correctness_check", correctness_check), ("memcheck", correctness_check),
                         ("benchmark", benchmark_command), ("ncu_profile", ncu_profile)):
        [request] = tools.requests(tool)
        assert module.parse_request(request.argv())[0] == request
    assert tools.requests("benchmark")[0].argv()[-12:] == [
        "--compile-modes", "default", "--seeds", "1", "--against", str(out / "v1" / "v1.cu"),
        "--checked-by", str(out / "v3" / "correctness.json"), "--reference-cache", str(out / "reference_cache.json"),
        "--N=4096", "--D=4096"]
    assert "--baseline none" in (out / "v3" / "evaluate.log").read_text()



class AtTargetTools(FakeTools):
    """A version past its roofline target, with baselines an H200 matvec trial met: eager and default torch.compile
    slower than it, max-autotune-no-cudagraphs 1.063x faster."""

    TIMES = {"eager": 2301.7, "torch.compile (default)": 2363.8, "torch.compile (max-autotune-no-cudagraphs)": 1905.0}
    target_percent = 1.0  # the synthetic work puts every version at a few % of the ceiling

    def benchmark_solution(self, request, held=None):
        self.calls.append(("benchmark", request))
        if held is not None:
            held.handed_over = True
        baselines = {name: us for name, us in self.TIMES.items()
                     if name == "eager" or name.removeprefix("torch.compile (").rstrip(")") in request.compile_modes}
        folder = write_version(self.out, int(request.output_dir.name[1:]), median_us=self.median_us,
                               baselines=baselines, target_percent=self.target_percent, state=None)
        return BenchmarkReport.from_dict(json.loads((folder / "benchmark.json").read_text()))


def test_a_version_at_its_target_is_timed_beside_max_autotune_before_the_target_stops_the_run(tmp_path, monkeypatch):
    out = tmp_path / "run"
    make_run(out)
    tools = AtTargetTools(out, median_us=2024.9).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 0
    first, second = tools.requests("benchmark")
    assert first.compile_modes == ["default"] and second.compile_modes == ["default", "max-autotune-no-cudagraphs"]
    assert [worker.handed_over for worker in tools.held] == [True]  # the second benchmark starts its own worker
    record = json.loads((out / "v0" / "benchmark.json").read_text())
    assert record["target_reached"] is True
    assert record["best_baseline"] == "torch.compile (max-autotune-no-cudagraphs)"
    assert record["notes"][-1].startswith("this version reached the roofline target, so it was timed again")
    status = run_status(out)
    assert (status.behind_baseline, status.stop_reason) == ("torch.compile (max-autotune-no-cudagraphs)", None)


def test_a_version_short_of_its_target_is_benchmarked_once(tmp_path, monkeypatch):
    out = tmp_path / "run"
    make_run(out)
    tools = AtTargetTools(out, median_us=2024.9)
    tools.target_percent = 90.0
    tools.install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 0
    assert [request.compile_modes for request in tools.requests("benchmark")] == [["default"]]

def test_evaluate_records_a_tool_that_raised_as_its_exit_code(tmp_path, monkeypatch):
    """A library call that raises is what its CLI would have exited with: the step says why, nothing stops."""
    out = tmp_path / "run"
    make_run(out)
    tools = FakeTools(out, median_us=100.0).install(monkeypatch)

    def no_ncu(request):
        raise EnvironmentFault("this machine cannot profile: Nsight Compute (ncu) is not installed", hint="install it")

    monkeypatch.setattr(measure_steps, "profile_solution", no_ncu)
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 4
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    profile = next(s for s in record["steps"] if s["name"] == "profile")
    assert (record["state"], profile["status"], profile["exit_code"]) == ("measured", "cannot_run_here", 4)
    assert profile["summary"] == "this machine cannot profile: Nsight Compute (ncu) is not installed"
    assert record["needs_gpu"] == [f"profile: {profile['summary']}"]
    assert "error: this machine cannot profile" in (out / "v0" / "evaluate.log").read_text()
    assert [name for name, _ in tools.calls][-1] == "experience_log"


def test_a_profile_of_no_kernel_fails_a_timed_version_and_it_is_never_best(tmp_path, monkeypatch):
    """The memoizing exploit of issue 14: timed at its true cost, but ncu saw its calls launch nothing."""
    out = tmp_path / "run"
    make_run(out)
    FakeTools(out, median_us=50.0).install(monkeypatch)

    def nothing_profiled(request):
        raise SolutionError("ncu profiled no kernel inside the NVTX range `kernel_opt_solution`", kind="no_kernels")

    monkeypatch.setattr(measure_steps, "profile_solution", nothing_profiled)
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 1
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {s["name"]: s for s in record["steps"]}
    assert (record["state"], record["exit_code"]) == ("failed", 1)
    assert (steps["benchmark"]["status"], steps["profile"]["status"], steps["profile"]["exit_code"]) == ("ok", "failed",
                                                                                                          1)
    assert steps["profile"]["summary"].startswith("FAIL: ncu profiled no kernel in the solution's calls")
    status = run_status(out)
    assert status.best is None or not status.best.measured
    assert "FAIL: ncu profiled no kernel" in (out / "v0" / "evaluate.log").read_text()


def with_launches(tools: "FakeTools", own_kernel: str) -> None:
    """Make the fake tools leave a correctness record whose launch check saw the solution run `own_kernel`."""
    check_solution, benchmark_solution = tools.check_solution, tools.benchmark_solution
    launches = LaunchCheck(profiled=True, work=[LaunchedWork(own_kernel, "kernel", 7, True, 1, 10.0, "own")],
                           own_kernels=1, values_passed=True).to_dict()

    def add_launches(folder: Path) -> CorrectnessReport:
        report = CorrectnessReport.from_dict(json.loads((folder / "correctness.json").read_text()))
        report.integrity["launches"] = launches
        (folder / "correctness.json").write_text(json.dumps(report.to_dict()))
        return report

    def checked(request):
        if request.check.sanitize:  # a sanitizer run writes correctness_<tool>.json, not the version's record
            return check_solution(request)
        check_solution(request)
        return add_launches(request.output_dir)

    def benchmarked(request, held=None):  # the fake rewrites the version's records
        report = benchmark_solution(request, held)
        add_launches(request.output_dir)
        return report

    tools.check_solution, tools.benchmark_solution = checked, benchmarked


@pytest.mark.parametrize("own_kernel, state", [("softmax_kernel(float const*, float*, int)", "failed"),
                                               ("stream_add_kernel(float4 const*, float4 const*, float4*, int)",
                                                "measured")])
def test_a_profile_without_the_solution_s_own_kernel_fails_the_version(tmp_path, monkeypatch, own_kernel, state):
    """ncu profiled stream_add_kernel; the correctness check saw the solution launch `own_kernel`."""
    out = tmp_path / "run"
    make_run(out)
    tools = FakeTools(out, median_us=50.0)
    with_launches(tools, own_kernel)
    tools.install(monkeypatch)
    workspace_command.main(["evaluate", str(out), "v0"])
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    profile = next(s for s in record["steps"] if s["name"] == "profile")
    assert record["state"] == state
    if state == "failed":
        assert profile["summary"].startswith("FAIL: ncu profiled only stream_add_kernel, none of the solution's own "
                                             "kernels (softmax_kernel)")
    else:
        assert profile["status"] == "ok" and run_status(out).best.name == "v0"


def test_evaluate_benchmarks_against_the_datasheet_only_with_a_warning(tmp_path, monkeypatch):
    """A machine that can neither read nor measure ceilings still times the version, and says so."""
    out = tmp_path / "run"
    make_run(out)
    FakeTools(out, median_us=100.0, ceilings_fail=True).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 0
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {s["name"]: s["status"] for s in record["steps"]}
    assert (record["state"], steps["ceilings"], steps["benchmark"]) == ("measured", "skipped", "ok")
    assert any("against the datasheet's peaks" in warning for warning in record["warnings"])


def test_evaluate_asks_every_version_for_the_baselines_through_the_run_cache(tmp_path, monkeypatch):
    out = tmp_path / "run"
    make_run(out)
    tools = FakeTools(out, median_us=100.0).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 0
    first = tools.requests("benchmark")[0]
    assert (first.baselines, first.reference_cache) == (["eager", "compile"], out / "reference_cache.json")
    assert workspace_command.main(["next", str(out)]) == 0
    (out / "v1" / "hypothesis.txt").write_text(VALID_HYPOTHESIS)
    tools.calls.clear()
    assert workspace_command.main(["evaluate", str(out), "v1", "--baseline", "eager"]) == 0
    assert tools.requests("benchmark")[0].baselines == ["eager"]  # asked for less


def test_evaluate_stops_at_an_unfilled_hypothesis(tmp_path, monkeypatch):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    tools = FakeTools(out, median_us=70.0).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v3"]) == 1
    assert [command for command, _ in tools.calls] == ["correctness_check"]
    assert tools.held == []  # no benchmark worker is started for a version that cannot be timed
    record = json.loads((out / "v3" / "evaluation.json").read_text())
    assert record["state"] == "invalid_hypothesis"
    assert [(s["name"], s["status"]) for s in record["steps"]][1:] == [
        ("hypothesis", "failed"), ("benchmark", "skipped"), ("profile", "skipped"), ("recommend", "skipped")]
    assert "identical to v1" in record["warnings"][0]
    # Nothing was timed, so it may be evaluated again once the hypothesis is written.
    assert workspace_command.main(["next", str(out)]) == 2


def evaluate_v3(tmp_path, monkeypatch, *arguments, **tool_options):
    """v3 of a synthetic run (one change, a valid hypothesis) evaluated with FakeTools; its record and the tools."""
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    (out / "v3" / "hypothesis.txt").write_text(VALID_HYPOTHESIS)
    (out / "v3" / "v3.cu").write_text((out / "v3" / "v3.cu").read_text() + "// one change\n")
    tools = FakeTools(out, median_us=70.0, **tool_options).install(monkeypatch)
    code = workspace_command.main(["evaluate", str(out), "v3", *arguments])
    return code, json.loads((out / "v3" / "evaluation.json").read_text()), tools, out


def test_a_memcheck_finding_fails_the_version_before_anything_is_timed(tmp_path, monkeypatch):
    code, record, tools, out = evaluate_v3(tmp_path, monkeypatch, sanitizer_errors={"memcheck": 24})
    assert code == 3 and (record["state"], record["exit_code"]) == ("failed", 3)
    assert [(s["name"], s["status"]) for s in record["steps"]] == [
        ("correctness", "ok"), ("hypothesis", "ok"), ("memcheck", "solution_error"), ("racecheck", "skipped"),
        ("benchmark", "skipped"), ("profile", "skipped"), ("recommend", "skipped")]
    memcheck = record["steps"][2]
    assert memcheck["summary"] == "solution_error: memcheck found 24 error(s); the first: Invalid __global__ write"
    # The three ran side by side (the racecheck decision reads the static analysis); nothing was timed.
    assert sorted(name for name, _ in tools.calls) == ["correctness_check", "memcheck", "static_analysis"]
    assert run_status(out).best.name == "v1"  # a version with a finding never becomes the best
    log = (out / "v3" / "evaluate.log").read_text()
    assert (f"$ correctness_check.py {out / 'v3' / 'v3.cu'} --ref {out / 'ref.py'} --output-dir {out / 'v3'} "
            "--sanitize memcheck --N=4096 --D=4096\nSOLUTION ERROR (sanitizer_finding): memcheck found 24") in log


@pytest.mark.slow
def test_racecheck_runs_when_the_sass_uses_shared_memory_and_its_finding_fails_the_version(tmp_path, monkeypatch):
    code, record, tools, _ = evaluate_v3(tmp_path, monkeypatch, shared_loads=4)
    assert code == 0
    racecheck = next(s for s in record["steps"] if s["name"] == "racecheck")
    assert racecheck["status"] == "ok"
    assert racecheck["summary"] == ("no errors (smallest case N=1, D=1, seed 0); it ran because the kernel uses "
                                    "shared memory (softmax_kernel: 4 shared-memory instructions, 0 B shared per "
                                    "block)")
    assert sorted(name for name, _ in tools.calls[:4]) == ["correctness_check", "memcheck", "racecheck",
                                                            "static_analysis"]
    code, record, _, _ = evaluate_v3(tmp_path / "race", monkeypatch, shared_loads=4,
                                     sanitizer_errors={"racecheck": 1})
    assert code == 3 and record["state"] == "failed"
    assert [(s["name"], s["status"]) for s in record["steps"]][2:5] == [
        ("memcheck", "ok"), ("racecheck", "solution_error"), ("benchmark", "skipped")]


def test_correctness_memcheck_and_racecheck_run_side_by_side(tmp_path, monkeypatch):
    """Each of the three waits until all three have started: run one after another, they would time out."""
    all_started = threading.Barrier(3, timeout=10)

    class SideBySide(FakeTools):
        def check_solution(self, request):
            all_started.wait()
            return super().check_solution(request)

    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    (out / "v3" / "hypothesis.txt").write_text(VALID_HYPOTHESIS)
    SideBySide(out, median_us=70.0, shared_loads=4).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v3"]) == 0
    record = json.loads((out / "v3" / "evaluation.json").read_text())
    assert [(s["name"], s["status"]) for s in record["steps"]][:4] == [
        ("correctness", "ok"), ("hypothesis", "ok"), ("memcheck", "ok"), ("racecheck", "ok")]


def test_the_benchmark_worker_starts_beside_the_checks_and_is_handed_over_only_after_them(tmp_path, monkeypatch):
    """The checks wait until the benchmark's worker has started: started after them, they would time out."""
    timeline, worker_started = [], threading.Event()

    class Timeline(FakeTools):
        def hold_benchmark_worker(self, request):
            timeline.append("benchmark worker started")
            worker_started.set()
            return super().hold_benchmark_worker(request)

        def check_solution(self, request):
            assert worker_started.wait(timeout=10)
            report = super().check_solution(request)
            timeline.append(f"{request.check.sanitize or 'correctness'} finished")
            return report

        def benchmark_solution(self, request, held=None):
            timeline.append("benchmark")
            return super().benchmark_solution(request, held)

    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    (out / "v3" / "hypothesis.txt").write_text(VALID_HYPOTHESIS)
    tools = Timeline(out, median_us=70.0, shared_loads=4).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v3"]) == 0
    assert timeline[0] == "benchmark worker started" and timeline[-1] == "benchmark"
    assert sorted(timeline[1:-1]) == ["correctness finished", "memcheck finished", "racecheck finished"]
    [held], [benchmark] = tools.held, tools.requests("benchmark")
    assert held.request == benchmark  # started for the very request the benchmark step makes
    assert (held.handed_over, held.stopped_before_benchmark, held.stopped) == (True, False, True)
    # Its preparation touches the GPU: the ceilings are read (or measured) only once it waits for its release.
    order = [name for name, _ in tools.calls]
    assert order.index("benchmark worker prepared") < order.index("measure_ceilings") < order.index("benchmark")


@pytest.mark.parametrize("failure", [{"correct": False}, {"sanitizer_errors": {"memcheck": 3}}])
def test_a_failed_check_stops_the_benchmark_worker_and_times_nothing(tmp_path, monkeypatch, failure):
    code, record, tools, out = evaluate_v3(tmp_path, monkeypatch, **failure)
    assert code in (1, 3) and record["state"] == "failed"
    steps = {s["name"]: s["status"] for s in record["steps"]}
    assert (steps["benchmark"], steps["profile"]) == ("skipped", "skipped")
    [held] = tools.held
    assert (held.handed_over, held.stopped) == (False, True)
    assert not tools.requests("benchmark") and not (out / "v3" / "benchmark.json").exists()


def test_no_sanitize_skips_the_sanitizer_and_its_static_analysis(tmp_path, monkeypatch):
    code, record, tools, _ = evaluate_v3(tmp_path, monkeypatch, "--no-sanitize", sanitizer_errors={"memcheck": 9})
    assert code == 0 and record["state"] == "measured"
    assert ("memcheck", "skipped", "--no-sanitize") in [(s["name"], s["status"], s["summary"]) for s in record["steps"]]
    assert "racecheck" not in [s["name"] for s in record["steps"]]
    assert not tools.requests("memcheck") and not tools.requests("static_analysis")


def test_static_analysis_runs_once_for_the_racecheck_decision_and_its_own_step(tmp_path, monkeypatch):
    code, record, tools, _ = evaluate_v3(tmp_path, monkeypatch, "--static-analysis")
    assert code == 0 and len(tools.requests("static_analysis")) == 1
    assert [s["status"] for s in record["steps"] if s["name"] == "static_analysis"] == ["ok"]


def test_a_failed_static_analysis_means_racecheck_runs_to_be_safe(tmp_path, monkeypatch):
    def no_cuobjdump(request):
        raise EnvironmentFault("cuobjdump (the SASS disassembler) is not available here")

    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    (out / "v3" / "hypothesis.txt").write_text(VALID_HYPOTHESIS)
    tools = FakeTools(out, median_us=70.0).install(monkeypatch)
    monkeypatch.setattr(check_steps, "analyze_solution", no_cuobjdump)
    assert workspace_command.main(["evaluate", str(out), "v3"]) == 0
    record = json.loads((out / "v3" / "evaluation.json").read_text())
    assert tools.requests("racecheck")
    assert any("whether a kernel uses shared memory is unknown: racecheck ran to be safe" in warning
               for warning in record["warnings"])


def test_without_compute_sanitizer_the_version_is_still_timed_and_evaluate_exits_4(tmp_path, monkeypatch):
    out = tmp_path / "run"
    make_run(out)
    tools = FakeTools(out, median_us=100.0).install(monkeypatch)

    def no_tool(request):
        if request.check.sanitize:
            raise EnvironmentFault("compute-sanitizer is not on PATH nor in /usr/local/cuda/bin (CUDA_HOME is not set)")
        return FakeTools.check_solution(tools, request)

    monkeypatch.setattr(check_steps, "check_solution", no_tool)
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 4
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {s["name"]: (s["status"], s["summary"]) for s in record["steps"]}
    assert steps["memcheck"][0] == "cannot_run_here" and steps["memcheck"][1].startswith("compute-sanitizer is not")
    assert steps["racecheck"] == ("skipped", "compute-sanitizer cannot run here (the memcheck step says why)")
    assert record["state"] == "measured" and steps["benchmark"][0] == "ok"
    assert record["needs_gpu"][0].startswith("memcheck: compute-sanitizer is not on PATH")


@pytest.mark.slow
def test_evaluate_without_a_gpu_runs_what_it_can_and_lists_the_rest(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    assert workspace_command.main(["init", str(out), "--kernel", str(SOFTMAX / "good" / "softmax.py"),
                                   "--ref", str(SOFTMAX / "ref.py"), "--iterations", "1", "--N=8", "--D=129"]) == 0
    monkeypatch.setattr(evaluate, "gpu_available", lambda: False)
    monkeypatch.setenv("KERNEL_OPT_EXPERIENCE_LOG", str(tmp_path / "experience.jsonl"))
    held = []  # no benchmark worker is started where nothing can be timed
    monkeypatch.setattr(measure_steps, "hold_benchmark_worker", held.append)
    capsys.readouterr()
    assert workspace_command.main(["evaluate", str(out), "v0", "--json"]) == 4
    assert held == []
    payload = json.loads(capsys.readouterr().out)
    steps = {s["name"]: s["status"] for s in payload["steps"]}
    assert steps == {"correctness": "ok", "memcheck": "cannot_run_here", "benchmark": "cannot_run_here",
                     "profile": "cannot_run_here", "static_analysis": "ok", "recommend": "ok"}
    assert payload["state"] == "needs_gpu" and [item.split(":")[0] for item in payload["needs_gpu"]] == [
        "memcheck", "benchmark", "profile"
    ]
    correctness = json.loads((out / "v0" / "correctness.json").read_text())
    assert correctness["passed"] is True and correctness["interpreter"] is True
    assert json.loads((out / "v0" / "static_analysis.json").read_text())["kernels"][0]["registers_per_thread"] > 0
    assert "$ correctness_check.py" in (out / "v0" / "evaluate.log").read_text()
    # Not timed: neither locked against a re-run nor a starting point for v1.
    assert workspace_command.main(["next", str(out)]) == 2
    assert "has not been timed yet" in capsys.readouterr().err


def test_evaluate_names_a_missing_version(tmp_path, capsys):
    make_run(tmp_path / "run")
    assert workspace_command.main(["evaluate", str(tmp_path / "run"), "v7"]) == 2
    assert "v7 does not exist" in capsys.readouterr().err
    assert workspace_command.main(["evaluate", str(tmp_path / "run"), "seven"]) == 2


@pytest.mark.slow
@pytest.mark.nvcc
def test_evaluate_without_a_gpu_compiles_a_cuda_kernel_and_claims_no_correctness(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    make_run(out, iterations=1)
    monkeypatch.setattr(evaluate, "gpu_available", lambda: False)
    monkeypatch.setenv("KERNEL_OPT_EXPERIENCE_LOG", str(tmp_path / "experience.jsonl"))
    capsys.readouterr()
    assert workspace_command.main(["evaluate", str(out), "v0", "--json"]) == 4
    payload = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["status"]) for s in payload["steps"]] == [
        ("correctness", "cannot_run_here"), ("compile_check", "ok"), ("memcheck", "cannot_run_here"),
        ("benchmark", "cannot_run_here"), ("profile", "cannot_run_here"), ("static_analysis", "ok"),
        ("recommend", "ok")]
    assert re.match(r"compiled for sm_\d+a?; softmax_kernel: \d+ registers", payload["steps"][1]["summary"])
    # A kernel that has not run has no correctness verdict in its folder.
    assert not (out / "v0" / "correctness.json").exists()
    assert json.loads((out / "v0" / "compile_check" / "correctness.json").read_text())["build"]["kernels"]


@pytest.mark.nvcc
def test_evaluate_reports_a_compile_error_as_the_solutions_fault(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    make_run(out, iterations=1)
    (out / "v0" / "v0.cu").write_text((out / "v0" / "v0.cu").read_text() + "\nthis is not CUDA;\n")
    monkeypatch.setattr(evaluate, "gpu_available", lambda: False)
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 3
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    assert record["state"] == "failed"
    assert [s["status"] for s in record["steps"]][-2:] == ["skipped", "skipped"]


class InvalidBenchmarkTools(FakeTools):
    """The benchmark's real assembly of a cached-output kernel's events: 2 us for 134 MB on an H200."""

    def benchmark_solution(self, request, held=None):
        from kernel_opt.measure.benchmark_assembly import assemble_report, exit_code_for
        from kernel_opt.run.events import parse_event
        from kernel_opt.run.runner import ChildOutcome

        self.calls.append(("benchmark", request))
        number = int(request.output_dir.name[1:])
        folder = write_version(self.out, number, state=None)
        entry = TimedEntry("solution", median_us=2.0, p20_us=1.9, p80_us=2.1, min_us=1.8, reps=500)
        sequence = [
            {"event": "environment", "info": {"gpu": {"name": "NVIDIA H200", "compute_capability": "9.0"}}},
            {"event": "precision", "allow_tf32": False, "note": "strict"},
            {"event": "work", **WORK, "flops_source": "ref.py flops()", "bytes_source": "ref.py bytes()"},
            {"event": "ceilings", "measured": H200_CEILINGS},
            {"event": "timed", "entry": entry.to_dict()},
            {"event": "post_timing_check", "name": "solution", "passed": True, "outputs": []},
            {"event": "post_timing_check", "name": "solution (interleaved)", "passed": True, "outputs": []},
            {"event": "post_timing_check", "name": "against", "passed": True, "outputs": []},
            {"event": "interleaved", "this": {"samples_us": [2.0] * 40}, "other": {"samples_us": [80.0] * 40}},
            {"event": "done"},
        ]
        report = BenchmarkReport(solution=TimedSolution(path=str(folder / f"v{number}.cu"), backend="cuda"),
                                 reference="ref.py", backend="cuda", command="benchmark.py", target_percent=90.0)
        assemble_report(report, ChildOutcome(events=[parse_event(e) for e in sequence], returncode=0),
                        str(request.against), str(request.against.parent))
        report.exit_code = exit_code_for(report)
        (folder / "benchmark.json").write_text(json.dumps(report.to_dict()))
        return report


def test_an_invalid_benchmark_fails_the_version_and_never_counts(tmp_path, monkeypatch):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    (out / "v3" / "hypothesis.txt").write_text(VALID_HYPOTHESIS)
    (out / "v3" / "v3.cu").write_text((out / "v3" / "v3.cu").read_text() + "// caches its output\n")
    InvalidBenchmarkTools(out, median_us=2.0).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v3"]) == 1
    record = json.loads((out / "v3" / "evaluation.json").read_text())
    assert (record["state"], record["exit_code"]) == ("failed", 1)
    steps = {step["name"]: step for step in record["steps"]}
    assert steps["benchmark"]["status"] == "failed"
    assert steps["benchmark"]["summary"].startswith("invalid: 2.00 us is faster than the physical memory floor of ")
    assert steps["profile"]["status"] == "skipped"
    benchmark = json.loads((out / "v3" / "benchmark.json").read_text())
    assert benchmark["verdict"] == "invalid" and benchmark["comparison"]["verdict"] == "failure"
    assert benchmark["percent_of_ceiling"] is None and benchmark["target_reached"] is None
    status = run_status(out)
    assert status.best.name == "v1" and not status.versions[3].measured
    assert status.target_reached is not True and status.stop_reason is None
    report = final_report.build_report(out)
    row = next(row for row in report.versions if row.name == "v3")
    assert row.benchmark_verdict == "invalid" and not row.is_best
    assert row.missing["median_us"].startswith("invalid: faster than the physical floor")
    assert row.expectation == "did not hold: its time is invalid (faster than the physical floor)"
    assert "v3: invalid (faster than the physical floor)" in report.not_on_roofline


# --- a KernelBench ModelNew run: static analysis of its Triton kernels, none for load_inline ---------------

KERNELBENCH = REPO_ROOT / "tests" / "fixtures" / "kernelbench"
H100_KERNELBENCH = REPO_ROOT / "reference" / "kernelbench"


def make_model_new_run(out: Path, solution: Path = KERNELBENCH / "solutions" / "2_Gemm_Multiply_ReLU.py",
                       problem: Path = KERNELBENCH / "problems" / "2_Gemm_Multiply_ReLU.py") -> None:
    assert workspace_command.main(["init", str(out), "--kernel", str(solution), "--ref", str(problem),
                                   "--iterations", "1"]) == 0
    assert read_run(out).backend == "modelnew"


def test_a_triton_model_new_on_a_gpu_gets_racecheck_from_its_static_analysis(tmp_path, monkeypatch):
    """Its forward runs once compile-only, so the racecheck decision reads its kernels' SASS as for run_kernel."""
    out = tmp_path / "run"
    make_model_new_run(out)
    tools = FakeTools(out, median_us=100.0).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v0", "--static-analysis"]) == 0
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {s["name"]: (s["status"], s["summary"]) for s in record["steps"]}
    assert record["state"] == "measured" and steps["racecheck"][0] == "skipped"
    assert steps["racecheck"][1].startswith("no kernel uses shared memory")
    assert steps["static_analysis"][0] == "ok" and len(tools.requests("static_analysis")) == 1
    [request] = tools.requests("static_analysis")
    assert request.reference == out / "ref.py" and request.dims == read_run(out).dims


def test_a_load_inline_model_new_on_a_gpu_gets_its_racecheck_decision_from_its_compiled_sources(tmp_path, monkeypatch):
    """Its CUDA sources compile ahead of a run (modelnew/inline_static.py): racecheck runs only where they use shared
    memory, as for a .cu solution."""
    out = tmp_path / "run"
    make_model_new_run(out, H100_KERNELBENCH / "solutions" / "19_ReLU.py", H100_KERNELBENCH / "problems" / "19_ReLU.py")
    tools = FakeTools(out, median_us=100.0).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v0", "--static-analysis"]) == 0
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {s["name"]: (s["status"], s["summary"]) for s in record["steps"]}
    assert record["state"] == "measured" and steps["racecheck"][0] == "skipped"
    assert steps["racecheck"][1].startswith("no kernel uses shared memory")
    assert steps["static_analysis"][0] == "ok" and len(tools.requests("static_analysis")) == 1
    assert record["warnings"] == []


def test_a_model_new_with_both_load_inline_and_triton_kernels_is_not_half_analysed(tmp_path, monkeypatch):
    """Half a report would let racecheck be skipped for the other half's shared memory."""
    solution = tmp_path / "19_ReLU.py"
    solution.write_text((H100_KERNELBENCH / "solutions" / "19_ReLU.py").read_text()
                        + "\n\nimport triton\n\n\n@triton.jit\ndef unused_kernel(x_ptr):\n    pass\n")
    out = tmp_path / "run"
    make_model_new_run(out, solution, H100_KERNELBENCH / "problems" / "19_ReLU.py")
    tools = FakeTools(out, median_us=100.0).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v0", "--static-analysis"]) == 0
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {s["name"]: (s["status"], s["summary"]) for s in record["steps"]}
    assert steps["racecheck"][0] == "ok" and steps["racecheck"][1].endswith(
        "it ran because the kernel may use shared memory (no static analysis of its SASS ran, so racecheck runs to "
        "be safe)")
    assert steps["static_analysis"] == ("skipped", "static analysis is not available for a ModelNew with both "
                                                   "load_inline CUDA and Triton kernels (ncu_profile.py's report "
                                                   "covers every kernel a call launches)")
    assert not tools.requests("static_analysis")


@pytest.mark.slow
def test_a_model_new_without_a_gpu_is_checked_and_lists_what_needs_one(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    make_model_new_run(out)
    monkeypatch.setattr(evaluate, "gpu_available", lambda: False)
    monkeypatch.setenv("KERNEL_OPT_EXPERIENCE_LOG", str(tmp_path / "experience.jsonl"))
    capsys.readouterr()
    assert workspace_command.main(["evaluate", str(out), "v0", "--json"]) == 4
    payload = json.loads(capsys.readouterr().out)
    assert {s["name"]: s["status"] for s in payload["steps"]} == {
        "correctness": "ok", "memcheck": "cannot_run_here", "benchmark": "cannot_run_here",
        "profile": "cannot_run_here", "static_analysis": "ok", "recommend": "ok"}
    assert payload["state"] == "needs_gpu"
    assert json.loads((out / "v0" / "correctness.json").read_text())["passed"] is True
    analysis = json.loads((out / "v0" / "static_analysis.json").read_text())
    assert [kernel["name"] for kernel in analysis["kernels"]] == ["gemm_scale_relu_kernel"]


def _identity_evaluated_without_a_gpu(tmp_path, monkeypatch, problem):
    """The problem's own Model as its ModelNew, evaluated on a machine without a GPU (exit 4: the GPU steps remain):
    the run folder and its correctness step."""
    solution = tmp_path / "identity.py"
    solution.write_text(problem.read_text() + "\n\nclass ModelNew(Model):\n    pass\n")
    out = tmp_path / "run"
    make_model_new_run(out, solution, problem)
    monkeypatch.setattr(evaluate, "gpu_available", lambda: False)
    monkeypatch.setenv("KERNEL_OPT_EXPERIENCE_LOG", str(tmp_path / "experience.jsonl"))
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 4
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    return out, next(step for step in record["steps"] if step["name"] == "correctness")


def test_without_a_gpu_a_problem_at_gpu_size_is_checked_at_sizes_the_interpreter_takes(tmp_path, monkeypatch):
    """KernelBench's L1Norm ships at 32768 x 65535 (8.6 GB per tensor): the CPU check shrinks it, and says so."""
    problem = tmp_path / "38_L1Norm_.py"
    problem.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                       "        return x / torch.mean(torch.abs(x), dim=1, keepdim=True)\n\nbatch_size = 32768\n"
                       "dim = 65535\n\ndef get_inputs():\n    return [torch.rand(batch_size, dim)]\n\n"
                       "def get_init_inputs():\n    return []\n")
    out, correctness = _identity_evaluated_without_a_gpu(tmp_path, monkeypatch, problem)  # GPU steps remain
    assert correctness["status"] == "ok"
    assert correctness["summary"].endswith("; checked under the interpreter at batch_size=1024, dim=1023, not the "
                                           "run's batch_size=32768, dim=65535 (one forward: largest tensor 1,047,552 "
                                           "elements here, largest tensor 2,147,450,880 elements there); on a GPU "
                                           "the check runs the run's own sizes")
    checked = json.loads((out / "v0" / "correctness.json").read_text())
    assert checked["passed"] and checked["dims"] == {"batch_size": 1024, "dim": 1023}


def test_without_a_gpu_a_tuple_sized_problem_is_checked_with_its_tied_sizes_halved(tmp_path, monkeypatch):
    """KernelBench's HingeLoss: 32768 x 32768 predictions whose row length is a tuple that the targets must match;
    its check at that size ran a 23 GB host out of memory and was blamed on the solution."""
    problem = tmp_path / "100_HingeLoss.py"
    problem.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                       "    def forward(self, predictions, targets):\n"
                       "        return torch.mean(torch.clamp(1 - predictions * targets, min=0))\n\n"
                       "batch_size = 32768\ninput_shape = (32768,)\ndim = 1\n\ndef get_inputs():\n"
                       "    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() "
                       "* 2 - 1]\n\ndef get_init_inputs():\n    return []\n")
    out, correctness = _identity_evaluated_without_a_gpu(tmp_path, monkeypatch, problem)
    assert correctness["status"] == "ok"
    assert "checked under the interpreter at batch_size=1024, input_shape=(1024,)" in correctness["summary"]
    checked = json.loads((out / "v0" / "correctness.json").read_text())
    assert checked["passed"] and checked["dims"] == {"batch_size": 1024, "input_shape": [1024]}


@pytest.mark.slow
@pytest.mark.nvcc
def test_without_a_gpu_a_model_new_that_builds_cuda_is_compiled_and_no_interpreter_sizes_are_claimed(tmp_path,
                                                                                                       monkeypatch):
    problem = tmp_path / "30_Softsign.py"
    problem.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                       "        return x / (1 + torch.abs(x))\n\nbatch_size = 4096\ndim = 393216\n\n"
                       "def get_inputs():\n    return [torch.rand(batch_size, dim)]\n\n"
                       "def get_init_inputs():\n    return []\n")
    out = tmp_path / "run"
    make_model_new_run(out, KERNELBENCH / "inline" / "compiles.py", problem)
    monkeypatch.setattr(evaluate, "gpu_available", lambda: False)
    monkeypatch.setenv("KERNEL_OPT_EXPERIENCE_LOG", str(tmp_path / "experience.jsonl"))
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 4
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    correctness = next(step for step in record["steps"] if step["name"] == "correctness")
    assert "compiled here for sm_90 with nvcc" in correctness["summary"]
    assert "checked under the interpreter" not in correctness["summary"]  # nothing ran under it
    checked = json.loads((out / "v0" / "correctness.json").read_text())
    assert checked["interpreter"] is False and not any("interpreter" in note for note in checked["notes"])
    assert "| device | cpu |" in (out / "v0" / "correctness.md").read_text()
    # compiled, never run: its command keeps the run's own sizes (the ones a GPU machine checks), none halved
    assert "--batch_size=" not in checked["command"] and "--dim=" not in checked["command"]
    assert checked["command"] in (out / "v0" / "correctness.md").read_text()
    static = next(step for step in record["steps"] if step["name"] == "static_analysis")
    assert static["status"] == "ok" and static["summary"].startswith("softsign: ")  # from the compile check's objects


@pytest.mark.slow
def test_a_model_new_kernel_that_only_the_interpreter_accepts_fails_without_a_gpu(tmp_path, monkeypatch):
    """Correct under TRITON_INTERPRET=1, refused by Triton's compiler: the static analysis step compiles it."""
    out = tmp_path / "run"
    make_model_new_run(out, KERNELBENCH / "gpu_only" / "2_Gemm_Multiply_ReLU_global_float.py")
    monkeypatch.setattr(evaluate, "gpu_available", lambda: False)
    monkeypatch.setenv("KERNEL_OPT_EXPERIENCE_LOG", str(tmp_path / "experience.jsonl"))
    code = workspace_command.main(["evaluate", str(out), "v0"])
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {s["name"]: (s["status"], s["summary"]) for s in record["steps"]}
    assert code == 3 and record["state"] == "failed"
    assert steps["correctness"][0] == "ok"
    assert steps["static_analysis"][0] == "solution_error"
    assert steps["static_analysis"][1].startswith("the Triton kernel failed to compile")


def test_an_edit_to_the_kernel_given_to_init_is_named_since_the_run_evaluates_its_own_copy(tmp_path):
    """v0 is OUT/v0/v0.<ext>, copied by init; a fix made in the original file never reaches the run."""
    import os
    import shutil
    import time as clock

    from kernel_opt.loop.workspace import create_run

    kernel = tmp_path / "kernel.py"
    shutil.copyfile(REPO_ROOT / "reference" / "vector_add" / "good" / "vector_add.py", kernel)
    out = tmp_path / "run"
    run = create_run(out, kernel, REPO_ROOT / "reference" / "vector_add" / "ref.py", 1, "vector_add", "triton",
                     {}, 90.0)
    v0 = out / "v0" / "v0.py"
    assert evaluate.edited_source_warning(run, v0) is None  # untouched since init
    v0.write_text(v0.read_text() + "\n# fixed in place\n")
    assert evaluate.edited_source_warning(run, v0) is None  # the fix went where the run reads it
    kernel.write_text(kernel.read_text() + "\n# fixed in the original\n")
    later = clock.time() + 5
    os.utime(kernel, (later, later))
    assert evaluate.edited_source_warning(run, v0) == (
        f"{kernel} was edited after `workspace.py init` and now differs from v0/v0.py: the run evaluates {v0} "
        f"(the copy init made), never kernel.py; put the fix in {v0}")


def test_timeout_reaches_every_check_and_a_bad_one_is_a_usage_error(tmp_path, monkeypatch, capsys):
    code, _, tools, out = evaluate_v3(tmp_path, monkeypatch, "--timeout", "600")
    assert code == 0
    checks = tools.requests("correctness_check") + tools.requests("memcheck")
    assert len(checks) == 2 and {request.check.timeout_s for request in checks} == {600.0}
    assert "--timeout 600.0" in (out / "v3" / "evaluate.log").read_text()
    assert workspace_command.main(["evaluate", str(out), "v3", "--force", "--timeout", "0"]) == 2
    assert "--timeout must be a positive number of seconds, got 0" in capsys.readouterr().err


def test_a_long_step_summary_is_cut_after_a_whole_word_and_says_so():
    from kernel_opt.loop.step_summaries import SUMMARY_CHARS, clip

    message = "environment_error: v0.py builds CUDA code " + "which runs only on an NVIDIA GPU, " * 12
    clipped = clip(message)
    assert len(clipped) <= SUMMARY_CHARS and clipped.endswith("…")
    assert message.startswith(clipped[:-1]) and message[len(clipped) - 1] in " ,"  # a word boundary, not "GP"
    assert clip("short") == "short"
