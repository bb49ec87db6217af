"""A synthetic optimization run, built from the tools' own record classes.

Shared by the workspace, evaluate, final report and exit-code tests: make_run leaves a run folder as
`workspace.py init` does; write_version writes one evaluated version's records (CorrectnessReport,
BenchmarkReport, Comparison, EvaluationRecord) and real ncu_summary.json files read from the recorded
.ncu-rep fixtures, so the loop reads exactly what the tools write.
"""

import json
from pathlib import Path

from conftest import REFERENCE_DIR, REPO_ROOT

from kernel_opt.check.records import CorrectnessReport, DeviceInfo
from kernel_opt.commands import ncu_profile
from kernel_opt.commands import workspace as workspace_command
from kernel_opt.loop.records import EvaluationRecord, RunRecord
from kernel_opt.measure.records import BenchmarkReport, Comparison, TimedEntry, TimedSolution
from kernel_opt.measure.roofline import Ceilings, roofline_point
from kernel_opt.measure.roofline_records import Roofline, Work
from kernel_opt.run.environment import GpuInfo, RunEnvironment
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


def spread_samples(median_us: float, count: int = 400, spread: float = 0.008) -> list[float]:
    """`count` timings spread evenly over +-spread/2 around `median_us`: a deterministic stand-in for a timer."""
    return [median_us * (1 + spread * ((i * 37 % 101) / 100 - 0.5)) for i in range(count)]


def add_timing_samples(folder: Path) -> None:
    """Give a version's benchmark.json the timed samples a real benchmark keeps, around each recorded median."""
    record = json.loads((folder / "benchmark.json").read_text())
    record["solution"]["timing"] = {"samples_us": spread_samples(record["solution"]["median_us"])}
    for baseline in record["baselines"]:
        baseline["timing"] = {"samples_us": spread_samples(baseline["median_us"])}
    (folder / "benchmark.json").write_text(json.dumps(record))


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
