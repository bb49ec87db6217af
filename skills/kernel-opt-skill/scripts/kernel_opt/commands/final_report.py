"""Write OUT/final_report.md and its charts from what the run recorded, never from memory.

Reads run.json, env_check.json, every vN/ (correctness.json, benchmark.json, ncu_summary.json,
static_analysis.json, hypothesis.txt, evaluation.json), OUT/benchmark.json when SKILL.md's
Finish step wrote it, and OUT/sweep/sweep.json (ncu_profile.py --sweep) when there is one. The
report holds the environment; a table of every version (time, speedup vs v0 and vs the best
version before it, % of the roofline ceiling, bottleneck, occupancy, registers, top stall);
each version's hypothesis and whether its expectation held (the benchmark's comparison
verdict); the best version and why the run stopped; what the best version's profile says is
left; the best version against PyTorch eager and torch.compile; the size sweep's table and
chart. Charts: OUT/time_per_version.png and OUT/roofline.png (matplotlib). A number the records do
not hold is written "not measured: <why>".

Usage:
  final_report.py out/softmax
  final_report.py out/softmax --json
  final_report.py out/softmax --no-charts

Exit codes: 0 written; 2 OUT holds no version folders, or a record (run.json included) is not
valid JSON or not the record it should be: the message names the file. A run without run.json
is reported, with its budget and target "not recorded".
Runs anywhere: no GPU is needed to read records.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from kernel_opt.core.cli import make_parser, print_json, run_command
from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import write_text_atomic
from kernel_opt.core.render import format_number, markdown_table, render
from kernel_opt.loop.final_report import FinalReport, build_report
from kernel_opt.loop.final_report_versions import NOT_MEASURED, VersionRow
from kernel_opt.loop.report_charts import (
    ROOFLINE_CHART,
    TIME_CHART,
    chart_blockers,
    draw_roofline_chart,
    draw_time_chart,
)
from kernel_opt.measure.placement import CEILING_BASIS_RULE
from kernel_opt.profile.sweep.report import size_notes, sweep_table

REPORT_FILE = "final_report.md"


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser("final_report.py", __doc__)
    parser.add_argument("out", type=Path, help="the run folder (holds v0/, v1/, ...)")
    parser.add_argument("--no-charts", action="store_true", help="write the Markdown only")
    parser.add_argument("--json", action="store_true", help="print the report's record as one JSON object")
    return parser


def _main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    out: Path = args.out
    if not out.is_dir() or not any(p.is_dir() and p.name.startswith("v") for p in out.iterdir()):
        raise UsageError(f"{out} holds no version folders (v0/, v1/, ...)",
                         hint="pass the run folder made by `workspace.py init`")
    report = build_report(out)
    charts = _charts(report, out, args.no_charts)
    markdown = render_report(report, charts, generated_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
    path = write_text_atomic(out / REPORT_FILE, markdown)
    if args.json:
        print_json({"ok": True, "report": str(path), "charts": charts, **report.to_dict()})
        return 0
    best = next((row for row in report.versions if row.is_best), None)
    if best is not None:
        speedup = f", {best.speedup_vs_v0:.2f}x vs v0" if best.speedup_vs_v0 else ""
        print(f"best: {best.name} at {best.median_us:.2f} us{speedup}; {report.stop_reason}")
    else:
        print(f"no version was timed correct; {report.stop_reason}")
    for name, chart in charts.items():
        print(f"chart {name}: {chart['path'] or NOT_MEASURED + ': ' + chart['missing']}")
    print(f"report: {path}")
    return 0


def _charts(report: FinalReport, out: Path, skip: bool) -> dict[str, dict[str, str | None]]:
    """Draw what the records allow; each chart is a file name or the reason it is absent."""
    blockers = chart_blockers(report)
    charts: dict[str, dict[str, str | None]] = {}
    for name, file_name, draw in (("time", TIME_CHART, draw_time_chart),
                                  ("roofline", ROOFLINE_CHART, draw_roofline_chart)):
        reason = "not drawn (--no-charts)" if skip else blockers[name]
        if reason is None:
            try:
                draw(report, out / file_name)
            except ImportError as error:  # the report stays useful without its pictures
                reason = f"matplotlib is not importable ({error}); pip install matplotlib"
        charts[name] = {"path": None if reason else file_name, "missing": reason}
    return charts


# --- formatting (every value was read by kernel_opt.loop.final_report) ------------------------------------


def _cell(row: VersionRow, field_name: str, text: str | None) -> str:
    return text if text is not None else row.why_missing(field_name)


def _median_text(row: VersionRow) -> str | None:
    if row.median_us is None:
        return None
    spread = f" ({row.p20_us:.2f}–{row.p80_us:.2f})" if row.p20_us is not None and row.p80_us is not None else ""
    return f"{row.median_us:.2f}{spread}"


def _comparison_text(row: VersionRow) -> str | None:
    if row.speedup_vs_previous_best is None:
        return None
    interval = (f" [{row.speedup_ci_low:.3f}, {row.speedup_ci_high:.3f}]"
                if row.speedup_ci_low is not None and row.speedup_ci_high is not None else "")
    return f"{row.speedup_vs_previous_best:.3f}x vs {row.compared_with}{interval} {row.comparison_verdict}"


# A run whose kernels keep the tensor pipe at least this busy is read against that pipe (HOPPER.md): its
# table gets the column, so the pipe's share can be followed version by version.
TENSOR_PIPE_COLUMN_PCT = 5.0


def version_table(report: FinalReport) -> str:
    tensor = any((row.tensor_pipe_pct or 0.0) >= TENSOR_PIPE_COLUMN_PCT for row in report.versions)
    rows = []
    for row in report.versions:
        bottleneck = None
        if row.bottleneck:
            bottleneck = row.bottleneck + (f" ({row.memory_limiter})" if row.memory_limiter else "")
        stall = None
        if row.top_stall:
            stall = row.top_stall + (f" ({row.top_stall_share_pct:.0f}%)"
                                     if row.top_stall_share_pct is not None else "")
        tensor_cell = [f"{row.tensor_pipe_pct:.1f}%" if row.tensor_pipe_pct is not None
                       else "not measured: no tensor pipe metric in the profile"] if tensor else []
        rows.append([
            row.name + (" (best)" if row.is_best else ""),
            _cell(row, "median_us", _median_text(row)),
            _cell(row, "speedup_vs_v0", f"{row.speedup_vs_v0:.2f}x" if row.speedup_vs_v0 is not None else None),
            _cell(row, "speedup_vs_previous_best", _comparison_text(row)),
            _cell(row, "percent_of_ceiling", f"{row.percent_of_ceiling:.1f}% ({row.ceiling_source})"
                  if row.percent_of_ceiling is not None else None),
            _cell(row, "bottleneck", bottleneck),
            *tensor_cell,
            _cell(row, "achieved_occupancy_pct", f"{row.achieved_occupancy_pct:.1f}%"
                  if row.achieved_occupancy_pct is not None else None),
            _cell(row, "registers_per_thread", str(row.registers_per_thread)
                  if row.registers_per_thread is not None else None),
            _cell(row, "top_stall", stall),
        ])
    return markdown_table(rows, ["version", "median µs (p20–p80)", "vs v0", "vs the best before it", "% of ceiling",
                                 "bottleneck", *(["tensor pipe busy"] if tensor else []), "achieved occupancy",
                                 "registers/thread", "top stall"])


def _moved_text(change: dict) -> str:
    unit = change.get("unit") or ""
    before, after = change.get("before"), change.get("after")
    if isinstance(before, (int, float)) and isinstance(after, (int, float)):
        return f"{change.get('label')}: {format_number(before)} → {format_number(after)} {unit}".rstrip()
    return f"{change.get('label')}: {before} → {after}"


def baseline_table(report: FinalReport) -> str:
    best = next((row for row in report.versions if row.is_best), None)
    rows = []
    if best is not None:  # its median from the same run as the baselines
        median = report.final_median_us if report.final_median_us is not None else best.median_us
        rows.append([f"{best.name} (best)", f"{median:.2f}", "—", "1.00x"])
    for baseline in report.final_baselines:
        if baseline.error:
            rows.append([baseline.name, f"failed: {baseline.error}", "—", "—"])
            continue
        rows.append([baseline.name, f"{baseline.median_us:.2f}",
                     f"{baseline.compile_s:.1f}" if baseline.compile_s is not None else "—",
                     f"{baseline.speedup_of_best:.2f}x" if baseline.speedup_of_best is not None else "—"])
    return markdown_table(rows, ["what", "median µs", "compile s", "best version's speedup over it"])


def render_report(report: FinalReport, charts: dict, generated_at: str) -> str:
    """The Markdown text: formatting only, so the same records give the same report."""
    best = next((row for row in report.versions if row.is_best), None)
    return render(
        "final_report.md.j2",
        report=report,
        best=best,
        charts=charts,
        generated_at=generated_at,
        versions_table=version_table(report),
        basis_rule=CEILING_BASIS_RULE,
        environment_table=markdown_table([list(item) for item in report.environment], ["what", "value"]),
        baselines_table=baseline_table(report) if best is not None else "",
        ceilings_table=markdown_table(
            [[c.source, c.description, f"{c.memory_bandwidth_gbps:.0f}", f"{c.compute_tflops:.1f}", c.dtype or "—"]
             for c in report.ceilings],
            ["roofs", "from", "GB/s", "TFLOP/s", "dtype"]),
        moved={row.name: [_moved_text(change) for change in row.metrics_moved] for row in report.versions},
        comparison_text={row.name: _comparison_text(row) for row in report.versions},
        shape=" ".join(f"{k}={v}" for k, v in report.dims.items()) or "ref.py's defaults",
        sweep_table=sweep_table(report.sweep.record) if report.sweep else "",
        sweep_notes=size_notes(report.sweep.record) if report.sweep else [],
    )
