"""The final report of a run, assembled from the records the tools wrote (its charts: loop/report_charts.py).

An agent that writes its own summary remembers the numbers it liked. This module reads only
the records (run.json, env_check.json, vN/correctness.json, benchmark.json, ncu_summary.json,
static_analysis.json, hypothesis.txt, evaluation.json, OUT/benchmark.json, OUT/sweep/sweep.json) into one
`FinalReport`; a value a record does not hold stays None with the reason in `missing`, and the
report prints it as "not measured: <reason>". Nothing is estimated, and no verdict is made
here that a tool did not make: "did the expectation hold" is the benchmark's comparison
verdict, in words, set against the time Expected gave where it gave one a number. Each version's
row is read in final_report_versions.py, the run-wide sections in final_report_sections.py; this
module puts them together.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.loop.behind_pytorch import behind_pytorch
from kernel_opt.loop.final_report_sections import (
    BaselineRow,
    RooflineCeilings,
    SweepSection,
    environment_rows,
    final_comparison,
    remaining,
    roofline_ceilings,
    stop_reason,
    sweep_section,
)
from kernel_opt.loop.final_report_versions import VersionRow, outcome, version_row
from kernel_opt.loop.records import read_run_record
from kernel_opt.loop.versions import best_measured, list_versions
from kernel_opt.measure.baseline_standing import BaselineStanding


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
    kernelbench_tolerances: bool  # the run's checks judged outputs at KernelBench's atol = rtol = 1e-2
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
    # the best version against that baseline: faster, level (a tie inside the noise) or slower, with the interval
    best_baseline_standing: BaselineStanding | None
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
    rows = [version_row(out, state, v0, best) for state in states]
    stopped_because = stop_reason(out, run, best)
    left = remaining(out, best, states)
    final = final_comparison(out, best)
    ceilings, unplaced = roofline_ceilings(out, states, best)
    sweep, sweep_missing = sweep_section(out, best)
    return FinalReport(
        out=str(out),
        kernel_name=run.kernel_name if run else None,
        backend=run.backend if run else None,
        dims=dict(run.dims) if run else {},
        created_at=run.created_at if run else None,
        iterations_budget=run.iterations_budget if run else None,
        iterations_used=sum(1 for s in states if s.number >= 1),
        target_percent=run.target_percent if run else None,
        kernelbench_tolerances=bool(run and run.kernelbench_tolerances),
        environment=environment_rows(out, best),
        versions=rows,
        best=best.name if best else None,
        stop_reason=stopped_because,
        remaining_from=left["from"],
        remaining_findings=left["findings"],
        remaining_read_next=left["read_next"],
        remaining_missing=left["missing"],
        final_source=final["source"],
        final_baselines=final["baselines"],
        final_median_us=final["median_us"],
        final_missing=final["missing"],
        final_vs_v0=final["vs_v0"],
        speedup_vs_eager=final["speedup_vs_eager"],
        best_baseline=final["best_baseline"],
        speedup_vs_best_baseline=final["speedup_vs_best_baseline"],
        best_baseline_standing=final["standing"],
        benchmark_md="benchmark.md" if (out / "benchmark.md").is_file() else None,
        ceilings=ceilings,
        not_on_roofline=unplaced,
        notes=notes,
        sweep=sweep,
        sweep_missing=sweep_missing,
        behind_pytorch=behind_pytorch(final, [f"{row.name} {outcome(row)}" for row in rows if row.number >= 1],
                                      left),
    )
