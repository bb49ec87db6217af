"""The versioned workspace: init's layout and run record, the budget and overwrite rules, `next`
starting from the best version, `status` values, and `evaluate`'s order of steps.

Synthetic runs are built from the real record classes (CorrectnessReport, BenchmarkReport,
Comparison, EvaluationRecord) and real ncu_summary.json files read from the recorded
.ncu-rep fixtures, so the workspace reads exactly what the tools write."""

import json
import re
import threading
from pathlib import Path

import pytest
from conftest import REFERENCE_DIR, REPO_ROOT

from kernel_opt.check.integrity.launch_rules import LaunchCheck, LaunchedWork
from kernel_opt.check.records import CaseResult, CorrectnessReport, DeviceInfo, SanitizerRun
from kernel_opt.commands import benchmark as benchmark_command
from kernel_opt.commands import correctness_check, hypothesis_check, ncu_profile
from kernel_opt.commands import workspace as workspace_command
from kernel_opt.core.errors import EnvironmentFault, SolutionError
from kernel_opt.core.records import ErrorRecord
from kernel_opt.experience.ranking import Match, Query, Recommendation, RecommendationResult
from kernel_opt.experience.records import ExperienceRecord
from kernel_opt.experience.store import Entry
from kernel_opt.loop import check_steps, evaluate, final_report, final_report_sections, measure_steps, recommend_step
from kernel_opt.loop.records import EvaluationRecord, RunRecord, StepResult
from kernel_opt.loop.workspace import conclude_evaluation, read_run, run_status
from kernel_opt.measure.ceilings import CeilingsResult, MeasuredCeilings
from kernel_opt.measure.records import BenchmarkReport, Comparison, TimedEntry, TimedSolution
from kernel_opt.measure.roofline import Ceilings, roofline_point
from kernel_opt.measure.roofline_records import Roofline, Work
from kernel_opt.profile import profiler
from kernel_opt.profile.profiler import ProfileRequest
from kernel_opt.run.environment import GpuInfo, RunEnvironment
from kernel_opt.sass.instruction_mix import InstructionMix
from kernel_opt.sass.report import KernelStaticAnalysis, StaticReport
from kernel_opt.solution.build_record import BuildRecord

NCU_FIXTURES = REPO_ROOT / "tests" / "fixtures" / "ncu"
SOFTMAX = REFERENCE_DIR / "softmax"
GPU = {"name": "NVIDIA H200", "compute_capability": "9.0"}
# Softmax at N=D=4096 in float32: 5 FLOP and 8 bytes per element (reference/softmax/ref.py).
WORK = {"flops": 5.0 * 4096 * 4096, "bytes": 8.0 * 4096 * 4096, "dtype": "float32"}
CEILINGS = {"measured": Ceilings(4000.0, 55.0, "measured", "float32"),
            "datasheet": Ceilings(4800.0, 67.0, "datasheet: H200 SXM", "float32")}


def make_run(out: Path, iterations: int = 3, target_percent: float = 90.0) -> RunRecord:
    """A run folder as `workspace.py init` leaves it, for a CUDA softmax."""
    code = workspace_command.main(["init", str(out), "--kernel", str(SOFTMAX / "good" / "softmax.cu"),
                                   "--ref", str(SOFTMAX / "ref.py"), "--iterations", str(iterations),
                                   "--target-percent", str(target_percent), "--N=4096", "--D=4096"])
    assert code == 0
    return RunRecord.from_dict(json.loads((out / "run.json").read_text()))


def write_version(out: Path, number: int, *, median_us=None, ncu_fixture=None, against=None, speedup=None,
                  ci=None, verdict=None, correct=True, state="measured", registers=30, parent=None, hypothesis=None,
                  baselines=None, target_percent=90.0):
    """Records of one evaluated version, written with the tools' own record classes."""
    folder = out / f"v{number}"
    folder.mkdir(exist_ok=True)
    source = folder / f"v{number}.cu"
    if not source.exists():
        source.write_text(f"// version {number}\n" + (SOFTMAX / "good" / "softmax.cu").read_text())
    if parent is not None or not (folder / "version.json").exists():
        (folder / "version.json").write_text(json.dumps({"version": f"v{number}", "parent": parent}))
    if hypothesis is not None:
        (folder / "hypothesis.txt").write_text(hypothesis)
    correctness = CorrectnessReport(verdict="pass" if correct else "fail", solution=str(source), reference="ref.py",
                                    backend="cuda", device=DeviceInfo.from_dict({"type": "cuda", **GPU}),
                                    interpreter=False, command="correctness_check.py", dims={"N": 4096, "D": 4096},
                                    seeds=[0, 1, 2],
                                    build=BuildRecord.from_dict({"arch": "sm_90", "kernels": [
                                        {"name": "softmax_kernel(float const*, float*, int)",
                                         "registers": registers}]}))
    (folder / "correctness.json").write_text(json.dumps(correctness.to_dict()))
    if median_us is not None:
        comparison = None
        if against is not None:
            low, high = ci
            comparison = Comparison(against=f"{out}/{against}/{against}.cu", against_dir=f"{out}/{against}",
                                    speedup=speedup, ci_low=low, ci_high=high, confidence=0.95, pairs=60,
                                    this_median_us=median_us, other_median_us=median_us * speedup, verdict=verdict,
                                    other_correct_after_timing=True)
        points = {source_name: roofline_point(WORK["flops"], WORK["bytes"], median_us, ceilings).to_dict()
                  for source_name, ceilings in CEILINGS.items()}
        percent = points["measured"]["percent_of_ceiling"]
        report = BenchmarkReport(
            solution=TimedSolution.from_dict({
                "path": str(source), "backend": "cuda", "median_us": median_us, "p20_us": median_us * 0.98,
                "p80_us": median_us * 1.03, "reps": 200,
                "build": {"arch": "sm_90", "signature": [],
                          "kernels": [{"name": "softmax_kernel(float const*, float*, int)", "registers": registers}]}}),
            reference="ref.py", backend="cuda", command="benchmark.py", verdict="measured", gpu=GpuInfo.from_dict(GPU),
            versions=RunEnvironment(python="3.11.7", torch="2.9.0", triton="3.5.0", cuda="12.8"),
            dims={"N": 4096, "D": 4096}, work=Work.from_dict(WORK), roofline=Roofline.from_dict({"points": points}),
            percent_of_ceiling=percent,
            target_percent=target_percent, target_reached=percent >= target_percent, comparison=comparison,
            exit_code=0,
        )
        for name, baseline_us in (baselines or {}).items():
            report.baselines.append(TimedEntry(name, median_us=baseline_us, p20_us=baseline_us, p80_us=baseline_us,
                                               reps=100, compile_s=12.5 if "compile" in name else None))
        if report.baselines:
            fastest = min(report.baselines, key=lambda b: b.median_us)
            report.best_baseline, report.speedup_vs_best_baseline = fastest.name, fastest.median_us / median_us
            eager = next((b for b in report.baselines if b.name == "eager"), None)
            report.speedup_vs_eager = eager.median_us / median_us if eager else None
        (folder / "benchmark.json").write_text(json.dumps(report.to_dict()))
    if ncu_fixture is not None:
        argv = ["--from-report", str(NCU_FIXTURES / f"{ncu_fixture}.ncu-rep"), "--output-dir", str(folder)]
        if against is not None and (out / against / "ncu_summary.json").exists():
            argv += ["--baseline", str(out / against)]
        assert ncu_profile.main(argv) == 0
    if state is not None:
        record = EvaluationRecord(version=f"v{number}", state=state, exit_code=0,
                                  started_at="2025-01-01T00:00:00+00:00", wall_s=42.0, gpu_available=True,
                                  against=against)
        (folder / "evaluation.json").write_text(json.dumps(record.to_dict()))
    return folder


VALID_HYPOTHESIS = (
    "Hypothesis: load each row with float4 accesses instead of 32-bit loads\n"
    "Rationale: v0 is memory_bound, DRAM at 41% of peak, LDG.E 32-bit loads in SASS\n"
    "Expected: DRAM throughput rises from ~41% to >70% and time drops ~1.3x\n"
)


def synthetic_run(out: Path, iterations: int = 3) -> None:
    """v0 100 us; v1 80 us (success vs v0); v2 90 us (failure vs v1): v1 is the best."""
    make_run(out, iterations)
    write_version(out, 0, median_us=100.0, ncu_fixture="naive_gemm_l1")
    write_version(out, 1, median_us=80.0, ncu_fixture="memory_streaming", against="v0", speedup=1.25,
                  ci=(1.22, 1.28), verdict="success", parent="v0", hypothesis=VALID_HYPOTHESIS)
    write_version(out, 2, median_us=90.0, ncu_fixture="memory_streaming", against="v1", speedup=0.889,
                  ci=(0.87, 0.90), verdict="failure", parent="v1", hypothesis=VALID_HYPOTHESIS)


# --- init ----------------------------------------------------------------------------------------


def test_init_creates_the_layout_and_the_run_record(tmp_path):
    out = tmp_path / "run"
    code = workspace_command.main(["init", str(out), "--kernel", str(SOFTMAX / "good" / "softmax.py"),
                                   "--ref", str(SOFTMAX / "ref.py"), "--iterations", "3", "--name", "softmax",
                                   "--target-percent", "85", "--N=64", "--D=1000", "--scale=2.5"])
    assert code == 0
    assert (out / "ref.py").read_text() == (SOFTMAX / "ref.py").read_text()
    assert (out / "v0" / "v0.py").read_text() == (SOFTMAX / "good" / "softmax.py").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["ref.py", "run.json", "v0"]
    record = json.loads((out / "run.json").read_text())
    assert record["kernel_name"] == "softmax" and record["backend"] == "triton"
    assert record["solution_pattern"] == "v{n}/v{n}.py" and record["reference_file"] == "ref.py"
    assert record["dims"] == {"N": 64, "D": 1000, "scale": 2.5}
    assert record["iterations_budget"] == 3 and record["target_percent"] == 85.0
    assert record["created_at"].endswith("+00:00") and record["schema"] == "kernel_opt.run/1"
    assert json.loads((out / "v0" / "version.json").read_text())["parent"] is None
    run = RunRecord.from_dict(record)
    assert run.dim_arguments() == ["--N=64", "--D=1000", "--scale=2.5"]


def test_init_names_the_run_after_the_kernel_and_accepts_an_empty_folder(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    run = make_run(out, iterations=2)
    assert (run.kernel_name, run.backend, run.solution_pattern) == ("softmax", "cuda", "v{n}/v{n}.cu")


def test_init_refuses_a_folder_that_holds_anything(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("an earlier run")
    code = workspace_command.main(["init", str(out), "--kernel", str(SOFTMAX / "good" / "softmax.cu"),
                                   "--ref", str(SOFTMAX / "ref.py"), "--iterations", "3"])
    assert code == 2
    assert "not empty" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_dims_after_init_are_refused(tmp_path, capsys):
    make_run(tmp_path / "run")
    assert workspace_command.main(["status", str(tmp_path / "run"), "--N=8"]) == 2
    assert "fixed by init" in capsys.readouterr().err


# --- next: budget, best version, refusals ------------------------------------------------------------


def test_next_refuses_until_v0_is_evaluated(tmp_path, capsys):
    make_run(tmp_path / "run")
    assert workspace_command.main(["next", str(tmp_path / "run")]) == 2
    assert "v0 has not been evaluated yet" in capsys.readouterr().err
    assert not (tmp_path / "run" / "v1").exists()


def test_next_starts_from_the_best_version_not_the_newest(tmp_path):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    assert workspace_command.main(["next", str(out)]) == 0
    assert (out / "v3" / "v3.cu").read_text() == (out / "v1" / "v1.cu").read_text()
    assert json.loads((out / "v3" / "version.json").read_text())["parent"] == "v1"
    template = (out / "v3" / "hypothesis.txt").read_text()
    assert "copy of v1" in template and "80.00 us" in template and "memory_bound (DRAM)" in template
    # The untouched template is not a hypothesis: every slot is reported.
    assert hypothesis_check.main([str(out / "v3"), "--json"]) == 1


def test_a_neutral_version_does_not_replace_the_best_whatever_its_median(tmp_path):
    # The H100 softmax case: v3 read 42.27 us in its own run against v2's 42.82 us, but timed
    # interleaved against v2 it was 0.981x [0.980, 0.983], neutral. v2 stays the best.
    out = tmp_path / "run"
    make_run(out, iterations=3)
    write_version(out, 0, median_us=50.0, ncu_fixture="memory_streaming")
    write_version(out, 1, median_us=42.82, ncu_fixture="memory_streaming", against="v0", speedup=1.17,
                  ci=(1.16, 1.18), verdict="success", parent="v0")
    write_version(out, 2, median_us=42.27, ncu_fixture="memory_streaming", against="v1", speedup=0.981,
                  ci=(0.980, 0.983), verdict="neutral", parent="v1")
    assert run_status(out).best.name == "v1"
    assert workspace_command.main(["next", str(out)]) == 0
    assert json.loads((out / "v3" / "version.json").read_text())["parent"] == "v1"


@pytest.mark.parametrize("speedup, ci, best", [
    (1.040, (1.039, 1.041), "v1"),  # H100 smooth-L1, one kernel for three: past the 2% bias, kept
    (1.040, (0.990, 1.090), "v0"),  # the same estimate with an interval reaching 1: no evidence
    (1.015, (1.014, 1.016), "v0"),  # inside the comparison's own 2% bias
])
def test_a_neutral_gain_past_the_comparison_s_bias_becomes_the_best(tmp_path, speedup, ci, best):
    out = tmp_path / "run"
    make_run(out, iterations=3)
    write_version(out, 0, median_us=183.1, ncu_fixture="memory_streaming")
    write_version(out, 1, median_us=176.6, ncu_fixture="memory_streaming", against="v0", speedup=speedup,
                  ci=ci, verdict="neutral", parent="v0")
    assert run_status(out).best.name == best


def test_unfilled_template_names_each_slot(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    capsys.readouterr()
    hypothesis_check.main([str(out / "v3"), "--json"])
    problems = json.loads(capsys.readouterr().out)["problems"]
    slots = [p.split(":")[0] for p in problems if "still holds a template slot" in p]
    assert slots == ["Hypothesis", "Rationale", "Expected"]


def test_next_refuses_while_the_newest_version_is_not_evaluated(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    write_version(out, 3, state=None, parent="v1")
    assert workspace_command.main(["next", str(out)]) == 2
    assert "v3 has not been evaluated yet" in capsys.readouterr().err
    assert not (out / "v4").exists()


def test_next_refuses_beyond_the_budget(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=2)
    assert workspace_command.main(["next", str(out)]) == 2
    assert "budget spent: all 2 iteration(s)" in capsys.readouterr().err
    assert not (out / "v3").exists()
    assert run_status(out).stop_reason == "budget_spent"


def test_status_at_finish_names_the_final_benchmark_the_size_sweep_and_the_report(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=2)
    capsys.readouterr()
    assert workspace_command.main(["status", str(out)]) == 0
    lines = capsys.readouterr().out.split("finish (budget spent):\n")[1].splitlines()
    assert "benchmark.py" in lines[0] and f"--against {out / 'v0' / 'v0.cu'}" in lines[0]
    assert lines[1].split("ncu_profile.py ")[1] == (
        f"{out / 'v1' / 'v1.cu'} --ref {out / 'ref.py'} --output-dir {out / 'sweep'} --sweep N=512,1024,2048,4096 "
        "--D=4096   # size sweep (nsight-python 0.9.6)")
    assert lines[2].endswith(f"final_report.py {out}")


def test_next_refuses_once_the_target_is_reached_unless_told(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out, iterations=3, target_percent=50.0)
    # 40 us at 4000 GB/s for 134 MB: the floor is 33.6 us, so 83.9% of the measured ceiling.
    write_version(out, 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0)
    status = run_status(out)
    assert status.target_reached is True and status.stop_reason == "target_reached"
    assert workspace_command.main(["next", str(out)]) == 2
    assert "target reached: v0 runs at 83.9%" in capsys.readouterr().err
    assert workspace_command.main(["next", str(out), "--ignore-target"]) == 0
    assert (out / "v1" / "v1.cu").exists()
    assert json.loads((out / "v1" / "version.json").read_text())["continued_past_target"] is True
    assert run_status(out).versions[1].continued_past_target is True


def test_a_version_at_its_target_that_pytorch_still_beats_does_not_end_the_run(tmp_path, capsys):
    """torch.compile moving the same bytes faster shows the ceiling is beatable: the target is no reason to stop."""
    out = tmp_path / "run"
    make_run(out, iterations=3, target_percent=50.0)
    write_version(out, 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0,
                  baselines={"eager": 130.0, "torch.compile (default)": 38.0})
    status = run_status(out)
    assert status.target_reached is True and status.stop_reason is None
    assert status.behind_baseline == "torch.compile (default)"
    assert workspace_command.main(["status", str(out)]) == 0
    assert ("target 50% of the roofline ceiling: reached, but torch.compile (default) is still faster: the run "
            "goes on") in capsys.readouterr().out
    assert workspace_command.main(["next", str(out)]) == 0  # no --ignore-target needed
    assert json.loads((out / "v1" / "version.json").read_text())["continued_past_target"] is False
    # ahead of every baseline (or level with none timed), the target ends the run as before
    make_run(tmp_path / "ahead", iterations=3, target_percent=50.0)
    write_version(tmp_path / "ahead", 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0,
                  baselines={"eager": 130.0, "torch.compile (default)": 40.5})
    assert run_status(tmp_path / "ahead").stop_reason == "target_reached"
    # behind, with the budget spent: it says so, and that the run ends
    make_run(tmp_path / "spent", iterations=0, target_percent=50.0)
    write_version(tmp_path / "spent", 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0,
                  baselines={"torch.compile (default)": 38.0})
    capsys.readouterr()
    assert workspace_command.main(["status", str(tmp_path / "spent")]) == 0
    printed = capsys.readouterr().out
    assert "reached, but torch.compile (default) is still faster\n" in printed and "finish (budget spent)" in printed


def test_going_past_the_target_is_named_in_the_final_reports_stop_reason(tmp_path):
    out = tmp_path / "run"
    make_run(out, iterations=1, target_percent=50.0)
    write_version(out, 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0)
    assert workspace_command.main(["next", str(out), "--ignore-target"]) == 0
    write_version(out, 1, median_us=38.0, ncu_fixture="memory_streaming", against="v0", speedup=40 / 38,
                  ci=(1.04, 1.06), verdict="success", target_percent=50.0)
    reason = final_report_sections.stop_reason(out, read_run(out), run_status(out).best)
    assert reason.startswith("budget spent: 1 of 1 iteration(s) used; the target 50% was reached earlier")
    assert "(--ignore-target from v1)" in reason and "best: v1 at" in reason


def test_a_version_made_within_the_target_is_not_marked(tmp_path):
    out = tmp_path / "run"
    make_run(out, iterations=2)
    write_version(out, 0, median_us=100.0, ncu_fixture="memory_streaming")
    assert workspace_command.main(["next", str(out), "--ignore-target"]) == 0
    assert json.loads((out / "v1" / "version.json").read_text())["continued_past_target"] is False


def test_next_refuses_when_v0_is_wrong(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out)
    write_version(out, 0, correct=False, state="failed")
    assert workspace_command.main(["next", str(out)]) == 2
    assert "v0 has not passed its correctness check" in capsys.readouterr().err


# --- status ---------------------------------------------------------------------------------------


def test_status_reports_versions_best_budget_and_target(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=3)
    capsys.readouterr()
    assert workspace_command.main(["status", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    versions = {v["name"]: v for v in payload["versions"]}
    assert [versions[name]["speedup_vs_v0"] for name in ("v0", "v1", "v2")] == [1.0, 100.0 / 80.0, 100.0 / 90.0]
    assert versions["v1"]["comparison_verdict"] == "success" and versions["v1"]["compared_with"] == "v0"
    assert versions["v2"]["comparison_verdict"] == "failure" and versions["v2"]["compared_with"] == "v1"
    assert versions["v1"]["bottleneck"] == "memory_bound" and versions["v0"]["bottleneck"] == "memory_bound"
    assert payload["best"] == "v1"
    assert payload["budget"] == {"iterations_total": 3, "iterations_used": 2, "iterations_left": 1, "spent": False}
    assert payload["target_reached"] is False and payload["stop_reason"] is None
    assert workspace_command.main(["status", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| v1 (best)" in text and "1.25x" in text and "1.250x vs v0: success" in text
    assert "2 of 3 iteration(s) used, 1 left" in text and "next:" in text and "workspace.py next" in text


def test_status_needs_a_run_folder(tmp_path, capsys):
    assert workspace_command.main(["status", str(tmp_path)]) == 2
    assert "no run.json" in capsys.readouterr().err


# --- evaluate ------------------------------------------------------------------------------------------


def test_conclusions_of_an_evaluation():
    ok = lambda name: StepResult(name, "ok", 1.0, 0)  # noqa: E731
    no_gpu = lambda name: StepResult(name, "cannot_run_here", 0.0, 4)  # noqa: E731
    assert conclude_evaluation([ok("correctness"), ok("benchmark"), ok("profile"), ok("recommend")]) == ("measured", 0)
    assert conclude_evaluation([ok("correctness"), ok("benchmark"), no_gpu("profile")]) == ("measured", 4)
    assert conclude_evaluation([StepResult("correctness", "failed", 1.0, 1)]) == ("failed", 1)
    assert conclude_evaluation([ok("correctness"), StepResult("benchmark", "solution_error", 1.0, 3)]) == ("failed", 3)
    assert conclude_evaluation([ok("correctness"), StepResult("hypothesis", "failed", 0.0, 1)]) == (
        "invalid_hypothesis", 1
    )
    assert conclude_evaluation([ok("correctness"), no_gpu("benchmark"), no_gpu("profile"), ok("static_analysis")]) == (
        "needs_gpu", 4
    )
    assert conclude_evaluation([StepResult("correctness", "usage_error", 0.1, 2)]) == ("error", 2)
    # Without a GPU a CUDA kernel is only compiled: a compile error is still the solution's fault.
    assert conclude_evaluation([no_gpu("correctness"), StepResult("compile_check", "solution_error", 2.0, 3)]) == (
        "failed", 3
    )


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
        return profiler.profile_solution(ProfileRequest(request.output_dir, baseline=request.baseline,
                                                        from_report=NCU_FIXTURES / "memory_streaming.ncu-rep"))

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


def test_a_load_inline_model_new_on_a_gpu_gets_racecheck_without_static_analysis(tmp_path, monkeypatch):
    """The racecheck decision once asked static_analysis for a ModelNew and crashed on its missing request."""
    out = tmp_path / "run"
    make_model_new_run(out, H100_KERNELBENCH / "solutions" / "19_ReLU.py", H100_KERNELBENCH / "problems" / "19_ReLU.py")
    tools = FakeTools(out, median_us=100.0).install(monkeypatch)
    assert workspace_command.main(["evaluate", str(out), "v0", "--static-analysis"]) == 0
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {s["name"]: (s["status"], s["summary"]) for s in record["steps"]}
    assert record["state"] == "measured" and steps["racecheck"][0] == "ok"
    assert steps["racecheck"][1].endswith("it ran because the kernel may use shared memory (no static analysis of "
                                          "its SASS ran, so racecheck runs to be safe)")
    assert steps["static_analysis"][0] == "skipped"
    assert steps["static_analysis"][1].startswith("static analysis is not available for a ModelNew that builds CUDA "
                                                  "with load_inline")
    assert not tools.requests("static_analysis") and record["warnings"] == []


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
