"""The final report of a run, assembled from the files the tools wrote, and its two charts.

An agent that writes its own summary remembers the numbers it liked. This module reads only
the records (run.json, env_check.json, vN/correctness.json, benchmark.json, ncu_summary.json,
static_analysis.json, hypothesis.txt, evaluation.json, OUT/benchmark.json) into one
`FinalReport`; a value a record does not hold stays None with the reason in `missing`, and the
report prints it as "not measured: <reason>". Nothing is estimated, and no verdict is made
here that a tool did not make: "did the expectation hold" is the benchmark's comparison
verdict, in words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import KernelOptError
from kernel_opt.loop.hypothesis import check_hypothesis
from kernel_opt.loop.workspace import (
    HYPOTHESIS_FILE,
    RunRecord,
    VersionState,
    best_measured,
    list_versions,
    read_json,
    read_run,
    run_status,
)

NOT_MEASURED = "not measured"
TIME_CHART = "time_per_version.png"
ROOFLINE_CHART = "roofline.png"
# Roof sets a benchmark records, in the order the chart draws them (benchmark._place_on_roofline).
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- reading ----------------------------------------------------------------------------------


def build_report(out: Path) -> FinalReport:
    """Read every record under OUT into a FinalReport (no file is required but the versions)."""
    notes: list[str] = []
    try:
        run: RunRecord | None = read_run(out)
    except KernelOptError:
        run = None
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
    )


def _primary_point(benchmark: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """The roofline point benchmark.json's percent_of_ceiling came from (older records: measured first)."""
    roofline = benchmark.get("roofline") or {}
    points = roofline.get("points") or {}
    if roofline.get("primary") in points:
        return roofline["primary"], points[roofline["primary"]]
    for source in ("measured", "datasheet"):
        if points.get(source):
            return source, points[source]
    return None, None


def _version_row(out: Path, state: VersionState, v0: VersionState | None, best: VersionState | None) -> VersionRow:
    folder = out / state.name
    row = VersionRow(name=state.name, number=state.number, parent=state.parent, is_best=best is state,
                     evaluation_state=state.evaluation_state)
    missing = row.missing
    correctness = read_json(folder / "correctness.json")
    row.correctness = correctness.get("verdict") if correctness else None
    benchmark = read_json(folder / "benchmark.json")
    not_timed = _why_not_timed(folder, state, benchmark)
    if not_timed is None:
        solution = benchmark["solution"]
        row.benchmark_verdict = "measured"
        row.median_us, row.p20_us, row.p80_us = solution.get("median_us"), solution.get("p20_us"), solution.get("p80_us")
        if v0 is not None and v0.measured:
            row.speedup_vs_v0 = v0.median_us / row.median_us
        else:
            missing["speedup_vs_v0"] = "v0 was not timed"
        _comparison_fields(row, benchmark)
        row.percent_of_ceiling = benchmark.get("percent_of_ceiling")
        source, point = _primary_point(benchmark)
        if point is not None:
            row.ceiling_source = source
            row.arithmetic_intensity_flop_per_byte = point.get("arithmetic_intensity_flop_per_byte")
            row.achieved_tflops = point.get("achieved_tflops")
            row.achieved_bandwidth_gbps = point.get("achieved_bandwidth_gbps")
        if row.percent_of_ceiling is None:
            missing["percent_of_ceiling"] = "no roofline point (no byte count, or no ceilings for this GPU)"
    else:
        row.benchmark_verdict = benchmark.get("verdict") if benchmark else None
        for name in ("median_us", "speedup_vs_v0", "speedup_vs_previous_best", "percent_of_ceiling"):
            missing[name] = not_timed
        if (benchmark and benchmark.get("verdict") == "incorrect") or row.correctness in ("fail", "solution_error"):
            row.expectation = "did not hold: the version is not correct"
    if state.number == 0:
        row.not_applicable["speedup_vs_previous_best"] = "v0 is the starting point"
    _profile_fields(row, folder, state)
    _register_fields(row, folder, benchmark, correctness)
    _hypothesis_fields(row, folder)
    return row


def _why_not_timed(folder: Path, state: VersionState, benchmark: dict[str, Any] | None) -> str | None:
    """None when benchmark.json holds a valid measurement, else why there is no time."""
    if benchmark is None:
        if state.evaluation_state == "needs_gpu":
            return "no benchmark.json (evaluated without a GPU)"
        if state.evaluation_state in ("failed", "invalid_hypothesis"):
            return f"no benchmark.json (evaluation stopped: {state.evaluation_state.replace('_', ' ')})"
        return "no benchmark.json"
    if benchmark.get("verdict") != "measured":
        return f"benchmark verdict {benchmark.get('verdict')}: not timed"
    median = (benchmark.get("solution") or {}).get("median_us")
    if not isinstance(median, (int, float)) or not median > 0:
        return "benchmark.json holds no median"
    if state.correct is False:
        return "correctness.json says the version is wrong"
    return None


def _comparison_fields(row: VersionRow, benchmark: dict[str, Any]) -> None:
    comparison = benchmark.get("comparison")
    if not comparison:
        row.missing["speedup_vs_previous_best"] = "the benchmark ran without --against"
        return
    against_dir = comparison.get("against_dir") or str(Path(comparison.get("against") or "").parent)
    row.compared_with = Path(against_dir).name or comparison.get("against")
    row.speedup_vs_previous_best = comparison.get("speedup")
    row.speedup_ci_low, row.speedup_ci_high = comparison.get("ci_low"), comparison.get("ci_high")
    row.comparison_verdict = comparison.get("verdict")
    row.expectation = EXPECTATION_BY_VERDICT.get(row.comparison_verdict)


def _profile_fields(row: VersionRow, folder: Path, state: VersionState) -> None:
    profile = read_json(folder / "ncu_summary.json")
    if profile is None:
        reason = "no ncu_summary.json"
        if state.evaluation_state == "needs_gpu":
            reason += " (evaluated without a GPU)"
        for name in ("bottleneck", "achieved_occupancy_pct", "top_stall"):
            row.missing[name] = reason
        return
    row.bottleneck = profile.get("bottleneck")
    row.memory_limiter = profile.get("memory_limiter")
    row.achieved_occupancy_pct = (profile.get("metrics") or {}).get("achieved_occupancy_pct")
    if row.achieved_occupancy_pct is None:
        row.missing["achieved_occupancy_pct"] = "ncu reported no achieved occupancy"
    row.top_stall = profile.get("top_stall")
    dominant = _dominant_kernel(profile)
    stalls = (dominant or {}).get("top_stalls") or []
    if stalls and stalls[0].get("reason") == row.top_stall:
        row.top_stall_share_pct = stalls[0].get("share_pct")
    if row.top_stall is None:
        row.missing["top_stall"] = "ncu reported no stall samples"
    baseline = profile.get("baseline") or {}
    row.metrics_moved = [change for change in baseline.get("changes") or [] if change.get("moved")]


def _dominant_kernel(profile: dict[str, Any]) -> dict[str, Any] | None:
    name = (profile.get("dominant_kernel") or {}).get("name")
    kernels = profile.get("kernels") or []
    return next((k for k in kernels if k.get("name") == name), kernels[0] if kernels else None)


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


def _register_fields(row: VersionRow, folder: Path, benchmark: dict | None, correctness: dict | None) -> None:
    """Registers per thread: the build record, else static_analysis.json, else the profile."""
    profile = read_json(folder / "ncu_summary.json") or {}
    dominant = _dominant_kernel(profile) if profile else None
    wanted = (dominant or {}).get("name")
    candidates = [
        (((benchmark or {}).get("solution") or {}).get("build") or {}, "kernels", "registers", "nvcc build record (benchmark.json)"),
        ((correctness or {}).get("build") or {}, "kernels", "registers", "nvcc build record (correctness.json)"),
        (read_json(folder / "static_analysis.json") or {}, "kernels", "registers_per_thread", "static_analysis.json"),
    ]
    for record, key, register_key, source in candidates:
        kernel, qualifier = _pick_kernel(record.get(key) or [], wanted, register_key)
        if kernel is not None:
            row.registers_per_thread, row.registers_source = int(kernel[register_key]), source + qualifier
            return
    registers = ((dominant or {}).get("metrics") or {}).get("registers_per_thread")
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
    reached = (f"{best.name} at {best.percent_of_ceiling:.1f}%" if best is not None and best.percent_of_ceiling is not None
               else "no version placed on the roofline")
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
    if status.stop_reason == "budget_spent":
        return (f"budget spent: {status.budget.iterations_used} of {status.budget.iterations_total} iteration(s) used; "
                f"target {target} not reached ({reached})")
    pending = (f"; {status.newest.name} is not evaluated ({status.newest.evaluation_state or 'never run'})"
               if status.newest_pending and status.newest is not None else "")
    return (f"not finished: {status.budget.iterations_left} of {status.budget.iterations_total} iteration(s) left, "
            f"target {target} not reached ({reached}){pending}")


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
    profile = read_json(out / source.name / "ncu_summary.json") or {}
    findings = [f.get("text") for f in profile.get("findings") or [] if f.get("text")][:FINDINGS_SHOWN]
    read_next = [{"link": r.get("link"), "why": r.get("why")} for r in profile.get("read_next") or [] if r.get("link")]
    return {"from": source.name, "findings": findings, "read_next": read_next[:READ_NEXT_SHOWN], "missing": None}


def _final_comparison(out: Path, best: VersionState | None) -> dict[str, Any]:
    """PyTorch eager and torch.compile against the best version, from one benchmark run.

    OUT/benchmark.json (SKILL.md's Finish step: the best version against v0) is preferred when
    it timed the best version; otherwise the best version's own benchmark.json.
    """
    empty = {"source": None, "baselines": [], "median_us": None, "missing": None, "vs_v0": None, "speedup_vs_eager": None,
             "best_baseline": None, "speedup_vs_best_baseline": None}
    if best is None:
        return {**empty, "missing": "no version was timed correct, so there is nothing to compare with PyTorch"}
    record, source = None, None
    final = read_json(out / "benchmark.json")
    if final and final.get("verdict") == "measured" and Path((final.get("solution") or {}).get("path", "")).name == Path(best.solution).name:
        record, source = final, "benchmark.json"
    else:
        record, source = read_json(out / best.name / "benchmark.json"), f"{best.name}/benchmark.json"
    median = (record.get("solution") or {}).get("median_us")
    baselines = []
    for entry in record.get("baselines") or []:
        timed = entry.get("median_us")
        baselines.append(BaselineRow(entry.get("name"), timed, entry.get("compile_s"),
                                     timed / median if timed and median else None, entry.get("error")))
    comparison = record.get("comparison") if source == "benchmark.json" else None
    result = {**empty, "source": source, "baselines": baselines, "median_us": median,
              "speedup_vs_eager": record.get("speedup_vs_eager"), "best_baseline": record.get("best_baseline"),
              "speedup_vs_best_baseline": record.get("speedup_vs_best_baseline"), "vs_v0": comparison}
    if not baselines:
        result["missing"] = f"{source} timed no PyTorch baseline (the benchmark ran with --baseline none)"
    return result


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
    benchmark = read_json(out / best.name / "benchmark.json") if best is not None else None
    if benchmark is None:
        rows.append(("GPU of the timings", f"{NOT_MEASURED}: no version was timed"))
    else:
        gpu = benchmark.get("gpu") or {}
        name = gpu.get("name") or "unknown"
        if gpu.get("compute_capability"):
            name += f" (compute capability {gpu['compute_capability']})"
        rows.append(("GPU of the timings", f"{name}, from {best.name}/benchmark.json"))
        versions = benchmark.get("versions") or {}
        described = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
        if described:
            rows.append(("versions of the timings", described))
        # nvidia-smi's readings around the benchmark: before it, an idle GPU reads its idle clock.
        readings = [(when, (benchmark.get(key) or [{}])[0].get("sm_clock_mhz"), (benchmark.get(key) or [{}])[0])
                    for when, key in (("before", "clocks_start"), ("after", "clocks_end"))]
        shown = [f"{mhz} MHz {when}" for when, mhz, _ in readings if mhz is not None]
        if shown:
            maximum = next((gpu.get("max_sm_clock_mhz") for _, mhz, gpu in readings if mhz is not None), None)
            rows.append(("SM clock around the timing (nvidia-smi, not locked)",
                         ", ".join(shown) + (f" (max {maximum} MHz)" if maximum else "")))
    return rows


def _ceilings(out: Path, states: list[VersionState], best: VersionState | None) -> tuple[list[RooflineCeilings], list[str]]:
    """The roofs every version's benchmark placed it under (the best version's first), and who is off the chart."""
    ordered = ([best] if best is not None else []) + [s for s in states if s is not best]
    ceilings: dict[str, RooflineCeilings] = {}
    unplaced = []
    for state in ordered:
        benchmark = read_json(out / state.name / "benchmark.json")
        points = ((benchmark or {}).get("roofline") or {}).get("points") or {}
        for source, point in points.items():
            roof = point.get("ceilings") or {}
            if source not in ceilings and roof.get("memory_bandwidth_gbps") and roof.get("compute_tflops"):
                ceilings[source] = RooflineCeilings(source, roof["memory_bandwidth_gbps"], roof["compute_tflops"],
                                                    roof.get("dtype"), roof.get("source") or source)
    for state in states:
        benchmark = read_json(out / state.name / "benchmark.json")
        _, point = _primary_point(benchmark or {})
        if not state.measured:
            unplaced.append(f"{state.name}: not timed")
        elif point is None:
            unplaced.append(f"{state.name}: no roofline point in its benchmark.json")
        elif point.get("arithmetic_intensity_flop_per_byte") is None or point.get("achieved_tflops") is None:
            unplaced.append(f"{state.name}: its FLOP count is unknown (ref.py has no flops() and torch could not count it)")
    return [ceilings[s] for s in ROOF_SOURCES if s in ceilings], unplaced


# --- charts (they draw the records; every number was read above) ----------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display on a GPU server; the same bytes everywhere
    import matplotlib.pyplot as pyplot

    return pyplot


def _save(figure, path: Path) -> Path:
    # No "Software" stamp: the PNG depends on the records only (and the matplotlib version).
    figure.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    return path


def draw_time_chart(report: FinalReport, path: Path) -> Path:
    """Bars of each version's median (p20-p80 whiskers), PyTorch baselines as lines."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(max(5.0, 1.0 + 0.8 * len(report.versions)), 3.6))
    names = [row.name for row in report.versions]
    positions = list(range(len(names)))
    tallest = max([row.p80_us or row.median_us or 0 for row in report.versions]
                  + [b.median_us or 0 for b in report.final_baselines] + [1e-9])
    for position, row in zip(positions, report.versions):
        if row.median_us is None:
            axes.text(position, tallest * 0.02, "not\nmeasured", ha="center", va="bottom", fontsize=8, color="gray")
            continue
        low = row.median_us - row.p20_us if row.p20_us is not None else 0
        high = row.p80_us - row.median_us if row.p80_us is not None else 0
        axes.bar(position, row.median_us, color="tab:green" if row.is_best else "tab:blue",
                 yerr=[[max(low, 0)], [max(high, 0)]], capsize=4)
        label_at = row.p80_us if row.p80_us is not None and row.p80_us > row.median_us else row.median_us
        axes.text(position, label_at + tallest * 0.01, f"{row.median_us:.3g}", ha="center", va="bottom", fontsize=8)
    styles = iter(["--", ":", "-."] * 4)
    for baseline in report.final_baselines:
        if baseline.median_us:
            axes.axhline(baseline.median_us, linestyle=next(styles), color="tab:red", linewidth=1,
                         label=f"{baseline.name}: {baseline.median_us:.3g} µs")
    axes.set_xticks(positions, names)
    axes.set_ylabel("median time per call (µs)")
    axes.set_ylim(0, tallest * 1.15)
    title = f"{report.kernel_name or 'kernel'}: time per version"
    axes.set_title(title + (" (green: best)" if report.best else ""))
    if report.final_baselines:  # below the axes: inside, it covered the bars' labels
        axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    _save(figure, path)
    pyplot.close(figure)
    return path


def draw_roofline_chart(report: FinalReport, path: Path) -> Path:
    """Log-log roofline: each set of recorded roofs, and every version placed by its achieved FLOP/s."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(6.0, 4.2))
    placed = [row for row in report.versions
              if row.arithmetic_intensity_flop_per_byte and row.achieved_tflops and row.median_us is not None]
    intensities = [row.arithmetic_intensity_flop_per_byte for row in placed]
    ridges = [c.compute_tflops * 1e3 / c.memory_bandwidth_gbps for c in report.ceilings]
    low = min(intensities + ridges + [1.0]) / 10
    high = max(intensities + ridges + [1.0]) * 10
    xs = [low * (high / low) ** (i / 199) for i in range(200)]
    for ceilings, style in zip(report.ceilings, ("-", ":", "--")):
        ys = [min(ceilings.compute_tflops, x * ceilings.memory_bandwidth_gbps / 1e3) for x in xs]
        axes.plot(xs, ys, style, color="black", linewidth=1.2,
                  label=f"{ceilings.source} roofs: {ceilings.memory_bandwidth_gbps:.0f} GB/s, "
                        f"{ceilings.compute_tflops:.0f} TFLOP/s ({ceilings.dtype})")
    for index, row in enumerate(placed):
        axes.plot(row.arithmetic_intensity_flop_per_byte, row.achieved_tflops, "o",
                  color="tab:green" if row.is_best else "tab:blue")
        # Versions of one problem share its intensity, so their labels are staggered sideways.
        axes.annotate(row.name, (row.arithmetic_intensity_flop_per_byte, row.achieved_tflops),
                      textcoords="offset points", xytext=(6 + 16 * (index % 4), -3), fontsize=8)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_xlabel("arithmetic intensity (FLOP/byte, minimum traffic)")
    axes.set_ylabel("achieved TFLOP/s")
    axes.set_title(f"{report.kernel_name or 'kernel'}: roofline (green: best)")
    if report.ceilings:
        axes.legend(fontsize=7, loc="lower right")
    axes.grid(True, which="both", linewidth=0.3)
    _save(figure, path)
    pyplot.close(figure)
    return path


def chart_blockers(report: FinalReport) -> dict[str, str | None]:
    """Why a chart cannot be drawn from these records (None: it can)."""
    timed = any(row.median_us is not None for row in report.versions)
    placed = any(row.arithmetic_intensity_flop_per_byte and row.achieved_tflops and row.median_us is not None
                 for row in report.versions)
    return {
        "time": None if timed else "no version was timed",
        "roofline": None if placed and report.ceilings else (
            "no version has a roofline point with a known FLOP count" if not placed else "no ceilings were recorded"),
    }
