"""The final report of a run, assembled from the records the tools wrote (its charts: loop/report_charts.py).

An agent that writes its own summary remembers the numbers it liked. This module reads only
the records (run.json, env_check.json, vN/correctness.json, benchmark.json, ncu_summary.json,
static_analysis.json, hypothesis.txt, evaluation.json, OUT/benchmark.json, OUT/sweep/sweep.json) into one
`FinalReport`; a value a record does not hold stays None with the reason in `missing`, and the
report prints it as "not measured: <reason>". Nothing is estimated, and no verdict is made
here that a tool did not make: "did the expectation hold" is the benchmark's comparison
verdict, in words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.records import CorrectnessReport
from kernel_opt.core.files import read_json
from kernel_opt.loop.behind_pytorch import behind_pytorch, pipes_taking_turns
from kernel_opt.loop.hypothesis import check_hypothesis
from kernel_opt.loop.records import RunRecord, read_benchmark, read_correctness, read_profile, read_run_record
from kernel_opt.loop.workspace import HYPOTHESIS_FILE, VersionState, best_measured, list_versions, run_status
from kernel_opt.measure.records import BenchmarkReport
from kernel_opt.profile.records import NcuSummary
from kernel_opt.profile.sweep.records import SWEEP_FOLDER, SweepRecord, read_sweep

NOT_MEASURED = "not measured"
# Roof sets a benchmark records, in the order the chart draws them (benchmark_assembly._place_on_roofline).
ROOF_SOURCES = ("measured", "same-size copy", "datasheet")
FINDINGS_SHOWN = 6
READ_NEXT_SHOWN = 6

# The benchmark's comparison verdict (kernel_opt.measure.verdicts), said as an answer to "did the
# expectation hold?". Every hypothesis predicts a faster kernel, so the time verdict decides;
# which metrics moved is shown beside it for the reader to set against Expected.
EXPECTATION_BY_VERDICT = {
    "success": "held: faster beyond noise",
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


@dataclass
class BaselineRow:
    name: str  # "eager", "torch.compile (default)", ...
    median_us: float | None
    compile_s: float | None
    speedup_of_best: float | None  # baseline median / best version's median, same benchmark run
    error: str | None


@dataclass
class RooflineCeilings:
    source: str  # one of ROOF_SOURCES
    memory_bandwidth_gbps: float
    compute_tflops: float
    dtype: str | None
    description: str  # where they come from, as benchmark.json says


@dataclass
class SweepSection:
    """The run's size sweep, as its record holds it; paths relative to OUT."""

    folder: str
    record: SweepRecord
    chart: str | None  # sweep.png when it was drawn
    other_solution: str | None = None  # the file it profiled, when that is not the best version's


@dataclass
class FinalReport:
    out: str
    kernel_name: str | None
    backend: str | None
    dims: dict[str, Any]
    created_at: str | None
    iterations_budget: int | None
    iterations_used: int
    target_percent: float | None
    environment: list[tuple[str, str]]
    versions: list[VersionRow]
    best: str | None
    stop_reason: str
    remaining_from: str | None
    remaining_findings: list[str]
    remaining_read_next: list[dict[str, str]]
    remaining_missing: str | None
    final_source: str | None  # the benchmark.json the final comparison comes from
    final_baselines: list[BaselineRow]
    final_median_us: float | None  # the best version's median in that same run (the speedups divide by it)
    final_missing: str | None
    final_vs_v0: dict[str, Any] | None  # OUT/benchmark.json's interleaved comparison with v0
    speedup_vs_eager: float | None
    best_baseline: str | None
    speedup_vs_best_baseline: float | None
    benchmark_md: str | None  # relative link to OUT/benchmark.md when it exists
    ceilings: list[RooflineCeilings]
    not_on_roofline: list[str]
    notes: list[str] = field(default_factory=list)
    sweep: SweepSection | None = None
    sweep_missing: str | None = None
    behind_pytorch: list[str] = field(default_factory=list)  # why the best version trails a baseline, computed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- reading ----------------------------------------------------------------------------------


def build_report(out: Path) -> FinalReport:
    """Read every record under OUT into a FinalReport (no file is required but the versions)."""
    notes: list[str] = []
    run = read_run_record(out)  # a run.json that is not a valid record is bad input (exit 2), never "no run.json"
    if run is None:
        notes.append("no run.json: the run was not started with workspace.py init, so its budget and target "
                     "are not recorded")
    states = list_versions(out, run)
    best = best_measured(states)
    v0 = next((s for s in states if s.number == 0), None)
    rows = [_version_row(out, state, v0, best) for state in states]
    stop_reason = _stop_reason(out, run, best)
    remaining = _remaining(out, best, states)
    final = _final_comparison(out, best)
    ceilings, unplaced = _ceilings(out, states, best)
    sweep, sweep_missing = _sweep(out, best)
    return FinalReport(
        out=str(out),
        kernel_name=run.kernel_name if run else None,
        backend=run.backend if run else None,
        dims=dict(run.dims) if run else {},
        created_at=run.created_at if run else None,
        iterations_budget=run.iterations_budget if run else None,
        iterations_used=sum(1 for s in states if s.number >= 1),
        target_percent=run.target_percent if run else None,
        environment=_environment(out, best),
        versions=rows,
        best=best.name if best else None,
        stop_reason=stop_reason,
        remaining_from=remaining["from"],
        remaining_findings=remaining["findings"],
        remaining_read_next=remaining["read_next"],
        remaining_missing=remaining["missing"],
        final_source=final["source"],
        final_baselines=final["baselines"],
        final_median_us=final["median_us"],
        final_missing=final["missing"],
        final_vs_v0=final["vs_v0"],
        speedup_vs_eager=final["speedup_vs_eager"],
        best_baseline=final["best_baseline"],
        speedup_vs_best_baseline=final["speedup_vs_best_baseline"],
        benchmark_md="benchmark.md" if (out / "benchmark.md").is_file() else None,
        ceilings=ceilings,
        not_on_roofline=unplaced,
        notes=notes,
        sweep=sweep,
        sweep_missing=sweep_missing,
        behind_pytorch=behind_pytorch(final, [f"{row.name} {_outcome(row)}" for row in rows if row.number >= 1],
                                      remaining),
    )


def _version_row(out: Path, state: VersionState, v0: VersionState | None, best: VersionState | None) -> VersionRow:
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
            row.arithmetic_intensity_flop_per_byte = point.get("arithmetic_intensity_flop_per_byte")
            row.achieved_tflops = point.get("achieved_tflops")
            row.achieved_bandwidth_gbps = point.get("achieved_bandwidth_gbps")
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


def _pick_kernel(kernels: list[dict[str, Any]], wanted: str | None, register_key: str) -> tuple[dict | None, str]:
    """The kernel the profile names dominant, else the only one, else the one with most registers."""
    kernels = [k for k in kernels if isinstance(k.get(register_key), (int, float))]
    if not kernels:
        return None, ""
    for kernel in kernels:
        if wanted and _base_name(kernel.get("name")) == _base_name(wanted):
            return kernel, ""
    if len(kernels) == 1:
        return kernels[0], ""
    return max(kernels, key=lambda k: k[register_key]), f", the most of {len(kernels)} kernels"


def _register_fields(row: VersionRow, folder: Path, profile: NcuSummary | None, benchmark: BenchmarkReport | None,
                     correctness: CorrectnessReport | None) -> None:
    """Registers per thread: the build record, else static_analysis.json, else the profile."""
    dominant = profile.dominant() if profile else None
    wanted = dominant.name if dominant else None
    benchmark_build = (benchmark.solution.get("build") or {}) if benchmark else {}
    candidates = [
        (benchmark_build.get("kernels") or [], "registers", "nvcc build record (benchmark.json)"),
        (correctness.build_kernels() if correctness else [], "registers", "nvcc build record (correctness.json)"),
        # static_analysis.json is not one of the loop's typed records: its kernels are read as written.
        ((read_json(folder / "static_analysis.json") or {}).get("kernels") or [], "registers_per_thread",
         "static_analysis.json"),
    ]
    for kernels, register_key, source in candidates:
        kernel, qualifier = _pick_kernel(kernels, wanted, register_key)
        if kernel is not None:
            row.registers_per_thread, row.registers_source = int(kernel[register_key]), source + qualifier
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


def _stop_reason(out: Path, run: RunRecord | None, best: VersionState | None) -> str:
    if run is None:
        return "not recorded: no run.json, so neither the budget nor the target is known"
    status = run_status(out)
    target = f"{run.target_percent:g}%"
    placed = best is not None and best.percent_of_ceiling is not None
    reached = f"{best.name} at {best.percent_of_ceiling:.1f}%" if placed else "no version placed on the roofline"
    past = [state.name for state in status.versions if state.continued_past_target]
    if past:
        # The agent chose to go on past the target (next --ignore-target): say so, then why it ended.
        budget = status.budget
        ended = (f"budget spent: {budget.iterations_used} of {budget.iterations_total} iteration(s) used"
                 if budget.iterations_left <= 0 else
                 f"not finished: {budget.iterations_left} of {budget.iterations_total} iteration(s) left")
        return (f"{ended}; the target {target} was reached earlier and the run went on past it by choice "
                f"(--ignore-target from {past[0]}); best: {reached} of the roofline ceiling")
    if status.stop_reason == "target_reached":
        return f"target reached: {reached} of the roofline ceiling (target {target})"
    # At the target while PyTorch is still faster, the target does not end a run (workspace.behind_baseline).
    target_text = (f"target {target} reached ({reached}), but {status.behind_baseline} is still faster, so the "
                   "target did not end the run" if status.target_reached and status.behind_baseline
                   else f"target {target} not reached ({reached})")
    if status.stop_reason == "budget_spent":
        return (f"budget spent: {status.budget.iterations_used} of {status.budget.iterations_total} iteration(s) used; "
                f"{target_text}")
    pending = (f"; {status.newest.name} is not evaluated ({status.newest.evaluation_state or 'never run'})"
               if status.newest_pending and status.newest is not None else "")
    return (f"not finished: {status.budget.iterations_left} of {status.budget.iterations_total} iteration(s) left, "
            f"{target_text}{pending}")


def _remaining(out: Path, best: VersionState | None, states: list[VersionState]) -> dict[str, Any]:
    """Findings and guide sections from the best version's profile: where the next step would start.

    The newest profile may belong to a version that lost; its advice is about a kernel the run
    discarded, so the best version's profile speaks for what is left (falling back to the
    newest profile when the best has none).
    """
    source = best if best is not None and (out / best.name / "ncu_summary.json").is_file() else None
    if source is None:
        source = next((s for s in reversed(states) if (out / s.name / "ncu_summary.json").is_file()), None)
    if source is None:
        return {"from": None, "findings": [], "read_next": [],
                "missing": "no version was profiled (ncu_summary.json): run the profile step on a GPU"}
    profile = read_profile(out / source.name) or NcuSummary()
    findings = [finding.text for finding in profile.findings if finding.text][:FINDINGS_SHOWN]
    read_next = [{"link": item.link, "why": item.why} for item in profile.read_next if item.link]
    at_roof = next((f.evidence for f in profile.findings if f.key == "pipe_at_roof" and f.evidence.get("pipe_pct")),
                   None)
    return {"from": source.name, "findings": findings, "read_next": read_next[:READ_NEXT_SHOWN], "missing": None,
            "pipe_at_roof": at_roof, "pipes_taking_turns": pipes_taking_turns(profile)}


def _final_comparison(out: Path, best: VersionState | None) -> dict[str, Any]:
    """PyTorch eager and torch.compile against the best version, from one benchmark run.

    OUT/benchmark.json (SKILL.md's Finish step: the best version against v0) is preferred when
    it timed the best version; otherwise the best version's own benchmark.json.
    """
    empty = {"source": None, "baselines": [], "median_us": None, "missing": None, "vs_v0": None,
             "speedup_vs_eager": None, "best_baseline": None, "speedup_vs_best_baseline": None, "record": None,
             "best": None if best is None else best.name}
    if best is None:
        return {**empty, "missing": "no version was timed correct, so there is nothing to compare with PyTorch"}
    final = read_benchmark(out)
    if (final and final.verdict == "measured"
            and Path(final.solution.get("path", "")).name == Path(best.solution).name):
        record, source = final, "benchmark.json"
    else:
        record, source = read_benchmark(out / best.name), f"{best.name}/benchmark.json"
    median = record.median_us
    baselines = [BaselineRow(entry.name, entry.median_us, entry.compile_s,
                             entry.median_us / median if entry.median_us and median else None, entry.error)
                 for entry in record.baselines]
    comparison = asdict(record.comparison) if source == "benchmark.json" and record.comparison else None
    result = {**empty, "source": source, "baselines": baselines, "median_us": median,
              "speedup_vs_eager": record.speedup_vs_eager, "best_baseline": record.best_baseline,
              "speedup_vs_best_baseline": record.speedup_vs_best_baseline, "vs_v0": comparison, "record": record}
    if not baselines:
        result["missing"] = f"{source} timed no PyTorch baseline (the benchmark ran with --baseline none)"
    return result


def _outcome(row: VersionRow) -> str:
    """A later version's outcome in a few words: its interleaved comparison, else why it has none."""
    if row.comparison_verdict and row.speedup_vs_previous_best is not None:
        return f"{row.comparison_verdict} ({row.speedup_vs_previous_best:.3f}x against {row.compared_with})"
    if row.correctness and row.correctness != "pass":
        return "incorrect" if row.correctness == "fail" else row.correctness
    return row.benchmark_verdict or row.evaluation_state or "not evaluated"


def _sweep(out: Path, best: VersionState | None) -> tuple[SweepSection | None, str | None]:
    """The run's size sweep (OUT/sweep, where SKILL.md's Finish step puts it, else the best version's sweep/)."""
    folders = [SWEEP_FOLDER] + ([f"{best.name}/{SWEEP_FOLDER}"] if best is not None else [])
    for folder in folders:
        record = read_sweep(out / folder)
        if record is None:
            continue
        png = record.files.get("png")
        chart = f"{folder}/{png}" if png and (out / folder / png).is_file() else None
        profiled = Path(record.solution).name
        other = profiled if best is not None and profiled != Path(best.solution).name else None
        return SweepSection(folder, record, chart, other), None
    return None, (f"no {SWEEP_FOLDER}/sweep.json: SKILL.md's Finish step makes one with ncu_profile.py "
                  f"--sweep NAME=V1,V2,... --output-dir OUT/{SWEEP_FOLDER} (GPU and nsight-python)")


def _environment(out: Path, best: VersionState | None) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    env = read_json(out / "env_check.json")
    if env is None:
        rows.append(("environment check", f"{NOT_MEASURED}: no env_check.json in this folder "
                                           "(run env_check.py --output-dir OUT)"))
    else:
        rows.append(("environment check", f"{env.get('verdict')}: {env.get('headline')}"))
        probes = env.get("probes") or {}
        for tool in ("torch", "triton", "nvcc", "ncu"):
            probe = probes.get(tool) or {}
            found = probe.get("installed", probe.get("found"))
            rows.append((tool, probe.get("version") or ("not found" if found is False else "unknown")))
    benchmark = read_benchmark(out / best.name) if best is not None else None
    if benchmark is None:
        rows.append(("GPU of the timings", f"{NOT_MEASURED}: no version was timed"))
    else:
        gpu = benchmark.gpu
        name = gpu.get("name") or "unknown"
        if gpu.get("compute_capability"):
            name += f" (compute capability {gpu['compute_capability']})"
        rows.append(("GPU of the timings", f"{name}, from {best.name}/benchmark.json"))
        described = ", ".join(f"{k} {v}" for k, v in benchmark.versions.items() if v)
        if described:
            rows.append(("versions of the timings", described))
        # nvidia-smi's readings around the benchmark: before it, an idle GPU reads its idle clock.
        readings = [(when, (clocks or [{}])[0].get("sm_clock_mhz"), (clocks or [{}])[0])
                    for when, clocks in (("before", benchmark.clocks_start), ("after", benchmark.clocks_end))]
        shown = [f"{mhz} MHz {when}" for when, mhz, _ in readings if mhz is not None]
        if shown:
            maximum = next((gpu.get("max_sm_clock_mhz") for _, mhz, gpu in readings if mhz is not None), None)
            rows.append(("SM clock around the timing (nvidia-smi, not locked)",
                         ", ".join(shown) + (f" (max {maximum} MHz)" if maximum else "")))
    return rows


def _ceilings(out: Path, states: list[VersionState],
              best: VersionState | None) -> tuple[list[RooflineCeilings], list[str]]:
    """The roofs every version's benchmark placed it under (the best version's first), and who is off the chart."""
    ordered = ([best] if best is not None else []) + [s for s in states if s is not best]
    ceilings: dict[str, RooflineCeilings] = {}
    unplaced = []
    for state in ordered:
        benchmark = read_benchmark(out / state.name)
        points = benchmark.roofline_points() if benchmark else {}
        for source, point in points.items():
            roof = point.get("ceilings") or {}
            if source not in ceilings and roof.get("memory_bandwidth_gbps") and roof.get("compute_tflops"):
                ceilings[source] = RooflineCeilings(source, roof["memory_bandwidth_gbps"], roof["compute_tflops"],
                                                    roof.get("dtype"), roof.get("source") or source)
    for state in states:
        benchmark = read_benchmark(out / state.name)
        _, point = benchmark.primary_point() if benchmark else (None, None)
        if not state.measured:
            invalid = benchmark is not None and benchmark.verdict == "invalid"
            unplaced.append(f"{state.name}: {'invalid (faster than the physical floor)' if invalid else 'not timed'}")
        elif point is None:
            unplaced.append(f"{state.name}: no roofline point in its benchmark.json")
        elif point.get("arithmetic_intensity_flop_per_byte") is None or point.get("achieved_tflops") is None:
            unplaced.append(f"{state.name}: its FLOP count is unknown (ref.py has no flops() and torch could not "
                            "count it)")
    return [ceilings[s] for s in ROOF_SOURCES if s in ceilings], unplaced
