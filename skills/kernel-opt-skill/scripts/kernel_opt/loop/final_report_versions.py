"""The final report's row for one version, read from that version's records alone."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.records import CorrectnessReport, read_correctness
from kernel_opt.core.files import read_json
from kernel_opt.experience.hypothesis import check_hypothesis
from kernel_opt.experience.time_prediction import prediction_verdict
from kernel_opt.loop.versions import VersionState
from kernel_opt.loop.workspace import HYPOTHESIS_FILE
from kernel_opt.measure.records import BenchmarkReport, read_benchmark
from kernel_opt.profile.records import NcuSummary, read_profile

NOT_MEASURED = "not measured"

# The benchmark's comparison verdict (kernel_opt.measure.verdicts), said as an answer to "did the
# expectation hold?". Every hypothesis predicts a faster kernel, so the time verdict decides; where
# Expected gives the time a number, a success is set against it (experience/time_prediction.py).
# The other metrics Expected names are free text, so which moved is shown beside it for the reader.
EXPECTATION_BY_VERDICT = {
    "success": "held for the time: faster beyond noise (its metrics: set Expected against what moved, below)",
    "neutral": "not shown: the difference is within noise",
    "failure": "did not hold: slower beyond noise, or wrong",
}


@dataclass
class VersionRow:
    """One version as the records describe it; None fields have their reason in `missing`."""

    name: str
    number: int
    parent: str | None = None
    is_best: bool = False
    evaluation_state: str | None = None
    correctness: str | None = None  # correctness.json verdict: pass, fail, solution_error, ...
    benchmark_verdict: str | None = None
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    speedup_vs_v0: float | None = None  # v0's median / this median, from their own runs
    compared_with: str | None = None
    speedup_vs_previous_best: float | None = None  # interleaved comparison with `compared_with`
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    comparison_verdict: str | None = None
    expectation: str | None = None
    percent_of_ceiling: float | None = None
    ceiling_source: str | None = None  # "measured", "same-size copy" or "datasheet" ceilings
    arithmetic_intensity_flop_per_byte: float | None = None
    achieved_tflops: float | None = None
    achieved_bandwidth_gbps: float | None = None
    bottleneck: str | None = None
    memory_limiter: str | None = None
    achieved_occupancy_pct: float | None = None
    tensor_pipe_pct: float | None = None  # the tensor pipe's busy share (ncu): the roof of an MMA kernel
    registers_per_thread: int | None = None
    registers_source: str | None = None
    top_stall: str | None = None
    top_stall_share_pct: float | None = None
    hypothesis: str | None = None
    rationale: str | None = None
    expected: str | None = None
    hypothesis_problems: list[str] = field(default_factory=list)
    metrics_moved: list[dict[str, Any]] = field(default_factory=list)  # ncu_summary baseline changes that moved
    missing: dict[str, str] = field(default_factory=dict)  # field -> why the records do not hold it
    not_applicable: dict[str, str] = field(default_factory=dict)  # field -> why it has no meaning here

    def why_missing(self, field_name: str) -> str:
        if field_name in self.not_applicable:
            return f"n/a: {self.not_applicable[field_name]}"
        return f"{NOT_MEASURED}: {self.missing.get(field_name, 'not in the records')}"


def version_row(out: Path, state: VersionState, v0: VersionState | None, best: VersionState | None) -> VersionRow:
    """vN's row: its correctness, time, comparison, roofline point, profile, registers and hypothesis."""
    folder = out / state.name
    row = VersionRow(name=state.name, number=state.number, parent=state.parent, is_best=best is state,
                     evaluation_state=state.evaluation_state)
    missing = row.missing
    correctness = read_correctness(folder)
    row.correctness = correctness.verdict if correctness else None
    benchmark = read_benchmark(folder)
    not_timed = _why_not_timed(state, benchmark)
    if not_timed is None:
        row.benchmark_verdict = "measured"
        row.median_us, row.p20_us, row.p80_us = benchmark.median_us, benchmark.p20_us, benchmark.p80_us
        if v0 is not None and v0.measured:
            row.speedup_vs_v0 = v0.median_us / row.median_us
        else:
            missing["speedup_vs_v0"] = "v0 was not timed"
        _comparison_fields(row, benchmark)
        row.percent_of_ceiling = benchmark.percent_of_ceiling
        source, point = benchmark.primary_point()
        if point is not None:
            row.ceiling_source = source
            row.arithmetic_intensity_flop_per_byte = point.arithmetic_intensity_flop_per_byte
            row.achieved_tflops = point.achieved_tflops
            row.achieved_bandwidth_gbps = point.achieved_bandwidth_gbps
        if row.percent_of_ceiling is None:
            missing["percent_of_ceiling"] = "no roofline point (no byte count, or no ceilings for this GPU)"
    else:
        row.benchmark_verdict = benchmark.verdict if benchmark else None
        for name in ("median_us", "speedup_vs_v0", "speedup_vs_previous_best", "percent_of_ceiling"):
            missing[name] = not_timed
        if (benchmark and benchmark.verdict == "incorrect") or row.correctness in ("fail", "solution_error"):
            row.expectation = "did not hold: the version is not correct"
        elif benchmark and benchmark.verdict == "invalid":
            row.expectation = "did not hold: its time is invalid (faster than the physical floor)"
    if state.number == 0:
        row.not_applicable["speedup_vs_previous_best"] = "v0 is the starting point"
    profile = read_profile(folder)
    _profile_fields(row, profile, state)
    _register_fields(row, folder, profile, benchmark, correctness)
    _hypothesis_fields(row, folder)
    return row


def _why_not_timed(state: VersionState, benchmark: BenchmarkReport | None) -> str | None:
    """None when benchmark.json holds a valid measurement, else why there is no time."""
    if benchmark is None:
        if state.evaluation_state == "needs_gpu":
            return "no benchmark.json (evaluated without a GPU)"
        if state.evaluation_state in ("failed", "invalid_hypothesis"):
            return f"no benchmark.json (evaluation stopped: {state.evaluation_state.replace('_', ' ')})"
        return "no benchmark.json"
    if benchmark.verdict == "invalid":
        return "invalid: faster than the physical floor, so its time counts for nothing (see its benchmark.md)"
    if benchmark.verdict != "measured":
        return f"benchmark verdict {benchmark.verdict}: not timed"
    if not benchmark.measured:
        return "benchmark.json holds no median"
    if state.correct is False:
        return "correctness.json says the version is wrong"
    return None


def _comparison_fields(row: VersionRow, benchmark: BenchmarkReport) -> None:
    comparison = benchmark.comparison
    if not comparison:
        row.missing["speedup_vs_previous_best"] = "the benchmark ran without --against"
        return
    row.compared_with = comparison.against_folder() or comparison.against
    row.speedup_vs_previous_best = comparison.speedup
    row.speedup_ci_low, row.speedup_ci_high = comparison.ci_low, comparison.ci_high
    row.comparison_verdict = comparison.verdict
    row.expectation = EXPECTATION_BY_VERDICT.get(row.comparison_verdict)


def _profile_fields(row: VersionRow, profile: NcuSummary | None, state: VersionState) -> None:
    if profile is None:
        reason = "no ncu_summary.json"
        if state.evaluation_state == "needs_gpu":
            reason += " (evaluated without a GPU)"
        for name in ("bottleneck", "achieved_occupancy_pct", "top_stall"):
            row.missing[name] = reason
        return
    row.bottleneck = profile.bottleneck
    row.memory_limiter = profile.memory_limiter
    row.achieved_occupancy_pct = profile.metric("achieved_occupancy_pct")
    if row.achieved_occupancy_pct is None:
        row.missing["achieved_occupancy_pct"] = "ncu reported no achieved occupancy"
    row.tensor_pipe_pct = profile.metric("tensor_pipe_pct")
    row.top_stall = profile.top_stall
    dominant = profile.dominant()
    stalls = dominant.top_stalls if dominant else []
    if stalls and stalls[0].get("reason") == row.top_stall:
        row.top_stall_share_pct = stalls[0].get("share_pct")
    if row.top_stall is None:
        row.missing["top_stall"] = "ncu reported no stall samples"
    row.metrics_moved = [asdict(change) for change in profile.moved()]


def _base_name(name: str | None) -> str:
    return (name or "").split("(")[0].strip()


def _pick_kernel(kernels: list[tuple[str | None, Any]], wanted: str | None) -> tuple[Any, str]:
    """Of (name, registers) per kernel, the registers of the kernel the profile names dominant, else of the only
    one, else the most; and how it was chosen. None where no kernel has a register count."""
    kernels = [(name, registers) for name, registers in kernels if isinstance(registers, (int, float))]
    if not kernels:
        return None, ""
    for name, registers in kernels:
        if wanted and _base_name(name) == _base_name(wanted):
            return registers, ""
    if len(kernels) == 1:
        return kernels[0][1], ""
    return max(registers for _, registers in kernels), f", the most of {len(kernels)} kernels"


def _register_fields(row: VersionRow, folder: Path, profile: NcuSummary | None, benchmark: BenchmarkReport | None,
                     correctness: CorrectnessReport | None) -> None:
    """Registers per thread: the build record, else static_analysis.json, else the profile."""
    dominant = profile.dominant() if profile else None
    wanted = dominant.name if dominant else None
    benchmark_build = benchmark.solution.build if benchmark else None
    static = (read_json(folder / "static_analysis.json") or {}).get("kernels") or []
    candidates = [
        ([(k.name, k.registers) for k in (benchmark_build.kernels if benchmark_build else None) or []],
         "nvcc build record (benchmark.json)"),
        ([(k.name, k.registers) for k in correctness.build_kernels()] if correctness else [],
         "nvcc build record (correctness.json)"),
        # static_analysis.json is not one of the loop's typed records: its kernels are read as written.
        ([(k.get("name"), k.get("registers_per_thread")) for k in static], "static_analysis.json"),
    ]
    for kernels, source in candidates:
        registers, qualifier = _pick_kernel(kernels, wanted)
        if registers is not None:
            row.registers_per_thread, row.registers_source = int(registers), source + qualifier
            return
    registers = dominant.metrics.get("registers_per_thread") if dominant else None
    if registers is not None:
        row.registers_per_thread, row.registers_source = int(registers), "ncu (dominant kernel)"
        return
    row.missing["registers_per_thread"] = "no build record, static_analysis.json or profile"


def _hypothesis_fields(row: VersionRow, folder: Path) -> None:
    path = folder / HYPOTHESIS_FILE
    if row.number == 0:
        return
    if not path.is_file():
        row.missing["hypothesis"] = f"no {HYPOTHESIS_FILE} in {folder.name}"
        return
    check = check_hypothesis(path.read_text(encoding="utf-8", errors="replace"), str(path))
    row.hypothesis = check.fields.get("hypothesis") or None
    row.rationale = check.fields.get("rationale") or None
    row.expected = check.fields.get("expected") or None
    row.hypothesis_problems = list(check.problems)
    if row.comparison_verdict == "success":
        said = prediction_verdict(row.expected, row.median_us, row.speedup_vs_previous_best, row.compared_with)
        if said:
            row.expectation = f"{said} (its metrics: set Expected against what moved, below)"


def outcome(row: VersionRow) -> str:
    """A later version's outcome in a few words: its interleaved comparison, else why it has none."""
    if row.comparison_verdict and row.speedup_vs_previous_best is not None:
        return f"{row.comparison_verdict} ({row.speedup_vs_previous_best:.3f}x against {row.compared_with})"
    if row.correctness and row.correctness != "pass":
        return "incorrect" if row.correctness == "fail" else row.correctness
    return row.benchmark_verdict or row.evaluation_state or "not evaluated"
