"""The final report's run-wide sections: why the run stopped, what remains, the best version against PyTorch,
the size sweep, the environment and the roofs, each read from the records."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.files import read_json
from kernel_opt.loop.behind_pytorch import pipes_taking_turns
from kernel_opt.loop.final_report_versions import NOT_MEASURED
from kernel_opt.loop.records import RunRecord
from kernel_opt.loop.versions import VersionState
from kernel_opt.loop.workspace import run_status
from kernel_opt.measure.baseline_standing import baseline_standing
from kernel_opt.measure.records import read_benchmark
from kernel_opt.profile.records import NcuSummary, read_profile
from kernel_opt.profile.sweep.records import SWEEP_FOLDER, SweepRecord, read_sweep

# Roof sets a benchmark records, in the order the chart draws them (benchmark_assembly._place_on_roofline).
ROOF_SOURCES = ("measured", "same-size copy", "datasheet")
FINDINGS_SHOWN = 6
READ_NEXT_SHOWN = 6


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


def stop_reason(out: Path, run: RunRecord | None, best: VersionState | None) -> str:
    """Why the run ended (or where it stands): target, budget, a choice to go on, or a pending version."""
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
    pending = (f"; {status.newest.name} is not evaluated ({_unevaluated(status.newest)})"
               if status.newest_pending and status.newest is not None else "")
    return (f"not finished: {status.budget.iterations_left} of {status.budget.iterations_total} iteration(s) left, "
            f"{target_text}{pending}")


def _unevaluated(version: VersionState) -> str:
    """How far a version's evaluation got: its state, or the records an evaluate that never finished left."""
    if version.evaluation_state:
        return version.evaluation_state
    if version.correct is not None:
        return (f"its evaluate did not finish: correctness {'passed' if version.correct else 'failed'} and is "
                "recorded, nothing was timed")
    return "never run"


def remaining(out: Path, best: VersionState | None, states: list[VersionState]) -> dict[str, Any]:
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


def final_comparison(out: Path, best: VersionState | None) -> dict[str, Any]:
    """PyTorch eager and torch.compile against the best version, from one benchmark run.

    OUT/benchmark.json (SKILL.md's Finish step: the best version against v0) is preferred when
    it timed the best version; otherwise the best version's own benchmark.json. `standing` says
    whether the fastest baseline is ahead beyond the noise, level, or behind (measure/baseline_standing.py).
    """
    empty = {"source": None, "baselines": [], "median_us": None, "missing": None, "vs_v0": None,
             "speedup_vs_eager": None, "best_baseline": None, "speedup_vs_best_baseline": None, "record": None,
             "standing": None, "best": None if best is None else best.name}
    if best is None:
        return {**empty, "missing": "no version was timed correct, so there is nothing to compare with PyTorch"}
    final = read_benchmark(out)
    if (final and final.verdict == "measured"
            and Path(final.solution.path if final.solution.has("path") else "").name == Path(best.solution).name):
        record, source = final, "benchmark.json"
    else:
        record, source = read_benchmark(out / best.name), f"{best.name}/benchmark.json"
    median = record.median_us
    baselines = [BaselineRow(entry.name, entry.median_us, entry.compile_s,
                             entry.median_us / entry.solution_us_beside(median)
                             if entry.median_us and median else None, entry.error)
                 for entry in record.baselines]
    comparison = asdict(record.comparison) if source == "benchmark.json" and record.comparison else None
    result = {**empty, "source": source, "baselines": baselines, "median_us": median,
              "speedup_vs_eager": record.speedup_vs_eager, "best_baseline": record.best_baseline,
              "speedup_vs_best_baseline": record.speedup_vs_best_baseline, "vs_v0": comparison, "record": record,
              "standing": baseline_standing(record)}
    if not baselines:
        result["missing"] = f"{source} timed no PyTorch baseline (the benchmark ran with --baseline none)"
    return result


def sweep_section(out: Path, best: VersionState | None) -> tuple[SweepSection | None, str | None]:
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


def environment_rows(out: Path, best: VersionState | None) -> list[tuple[str, str]]:
    """The machine as env_check.json and the best version's benchmark.json describe it: tools, GPU, clocks."""
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
        name = gpu.name or "unknown"
        if gpu.compute_capability:
            name += f" (compute capability {gpu.compute_capability})"
        rows.append(("GPU of the timings", f"{name}, from {best.name}/benchmark.json"))
        described = ", ".join(f"{k} {v}" for k, v in benchmark.versions.described_versions())
        if described:
            rows.append(("versions of the timings", described))
        # nvidia-smi's readings around the benchmark: before it, an idle GPU reads its idle clock.
        readings = [(when, clocks[0].sm_clock_mhz if clocks else None, clocks[0] if clocks else None)
                    for when, clocks in (("before", benchmark.clocks_start), ("after", benchmark.clocks_end))]
        shown = [f"{mhz} MHz {when}" for when, mhz, _ in readings if mhz is not None]
        if shown:
            maximum = next((gpu.max_sm_clock_mhz for _, mhz, gpu in readings if mhz is not None), None)
            rows.append(("SM clock around the timing (nvidia-smi, not locked)",
                         ", ".join(shown) + (f" (max {maximum} MHz)" if maximum else "")))
    return rows


def roofline_ceilings(out: Path, states: list[VersionState],
              best: VersionState | None) -> tuple[list[RooflineCeilings], list[str]]:
    """The roofs every version's benchmark placed it under (the best version's first), and who is off the chart."""
    ordered = ([best] if best is not None else []) + [s for s in states if s is not best]
    ceilings: dict[str, RooflineCeilings] = {}
    unplaced = []
    for state in ordered:
        benchmark = read_benchmark(out / state.name)
        points = benchmark.roofline_points() if benchmark else {}
        for source, point in points.items():
            roof = point.ceilings
            if source not in ceilings and roof and roof.memory_bandwidth_gbps and roof.compute_tflops:
                ceilings[source] = RooflineCeilings(source, roof.memory_bandwidth_gbps, roof.compute_tflops,
                                                    roof.dtype, roof.source or source)
    for state in states:
        benchmark = read_benchmark(out / state.name)
        _, point = benchmark.primary_point() if benchmark else (None, None)
        if not state.measured:
            invalid = benchmark is not None and benchmark.verdict == "invalid"
            unplaced.append(f"{state.name}: {'invalid (faster than the physical floor)' if invalid else 'not timed'}")
        elif point is None:
            unplaced.append(f"{state.name}: no roofline point in its benchmark.json")
        elif point.arithmetic_intensity_flop_per_byte is None or point.achieved_tflops is None:
            unplaced.append(f"{state.name}: its FLOP count is unknown (ref.py has no flops() and torch could not "
                            "count it)")
    return [ceilings[s] for s in ROOF_SOURCES if s in ceilings], unplaced
