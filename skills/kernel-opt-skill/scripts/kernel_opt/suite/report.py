"""eval.md, eval.json and eval.png from an EvalReport, and the console summary (formatting only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import format_number, markdown_cell, markdown_table, render
from kernel_opt.measure.records import compile_mode_of
from kernel_opt.suite.records import EVAL_FILE, FAST_P_THRESHOLDS, EvalEntry, EvalReport, EvalSummary

EVAL_MARKDOWN = "eval.md"
EVAL_CHART = "eval.png"


def write_eval_reports(report: EvalReport, output_dir: Path) -> list[Path]:
    """OUT/eval.json, OUT/eval.md and, where anything was timed, OUT/eval.png."""
    written = [write_json_atomic(output_dir / EVAL_FILE, report.to_dict())]
    chart = draw_speedup_chart(report, output_dir / EVAL_CHART) if report.summary.timed else None
    options = report.options
    markdown = render(
        "eval.md.j2", report=report, tables=_tables(report), chart=chart.name if chart else None,
        failures=[_failure_line(entry) for entry in report.entries
                  if not entry.correct and not entry.kernelbench_would_pass],
        kernelbench_would_pass=[_failure_line(entry) for entry in report.entries
                                if not entry.correct and entry.kernelbench_would_pass],
        device=describe_device(report.device), spread=describe_execution(report),
        tolerances=("KernelBench's atol = rtol = 1e-2 (--kernelbench-tolerances); the reference-error rule measured "
                    "too" if options.get("kernelbench_tolerances") else
                    "the reference-error rule (skills/kernel-opt-skill/profiling/CORRECTNESS.md)"),
        baselines=describe_baselines(options),
    )
    written.append(write_text_atomic(output_dir / EVAL_MARKDOWN, markdown))
    return written + ([chart] if chart else [])


def describe_baselines(options: dict) -> str:
    """eval.md's baselines line; torch.compile's modes only where torch.compile was one of them."""
    baselines = options.get("baselines") or []
    modes = ", ".join(options.get("compile_modes") or [])
    named = ", ".join(baselines) or "none"
    return f"{named}; torch.compile modes: {modes}" if "compile" in baselines else named


def _failure_line(entry: EvalEntry) -> str:
    kind = f" ({entry.error_kind})" if entry.error_kind else ""
    return f"{entry.name}: {entry.verdict}{kind}: {entry.message or ''}".rstrip(": ")


def describe_device(device: dict) -> str:
    """eval.md's device line: the GPU by name and driver where one timed the entries, and the software."""
    if device.get("type") == "cuda" and device.get("gpu"):
        where = f"{device['gpu']} (driver {device.get('driver') or 'unknown'})"
    else:
        where = str(device.get("type") or "unknown") + (": nothing timed" if device.get("type") == "cpu" else "")
    software = [f"{name} {device[name]}" for name in ("torch", "triton") if device.get(name)]
    return ", ".join([where, *software])


def describe_execution(report: EvalReport) -> str | None:
    """How the run was spread and what it bought: the workers, the GPUs used, wall time against the pairs' sum."""
    execution = report.execution
    if execution is None:
        return None
    several_hosts = len({gpu.get("host") for gpu in execution.gpus}) > 1
    gpus = ", ".join(f"{gpu_label(gpu, several_hosts)}: {gpu.get('name')}, {_count(gpu.get('pairs'), 'pair')}"
                     for gpu in execution.gpus)
    workers = {"one process": "one process",
               "local workers": _count(execution.workers, "worker process", "worker processes"),
               "ray": f"Ray, up to {execution.workers} tasks at once"}.get(execution.mode, execution.mode)
    count = len(execution.gpus)
    used = f"{_count(count, 'GPU')} ({gpus})" if count else "no GPU"
    speedup = execution.parallel_speedup
    timing = (f"wall {execution.wall_s:.0f} s for {execution.pair_s:.0f} s of pair time"
              f"{f' ({speedup:.2f}x)' if speedup else ''}")
    reused = f"; {execution.pairs_reused} reused from an earlier run" if execution.pairs_reused else ""
    return f"{workers}, {used}: {_count(execution.pairs_run, 'pair')} run, {timing}{reused}"


def gpu_label(gpu: dict | None, with_host: bool = False) -> str | None:
    """"GPU 1" (nvidia-smi's index), or "host GPU 1" where the run's GPUs span hosts."""
    if not gpu:
        return None
    return f"{gpu.get('host')} GPU {gpu.get('index')}" if with_host else f"GPU {gpu.get('index')}"


def _count(number: int | None, noun: str, plural: str | None = None) -> str:
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _speedup(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def summary_rows(summary: EvalSummary) -> list[list[str]]:
    """The summary table's rows: one per figure, a column per baseline."""
    rows = [["correct", f"{summary.correct} / {summary.problems} ({_rate(summary.correct_rate)})", ""]]
    for p in FAST_P_THRESHOLDS:
        key = f"{p:g}"
        rows.append([f"fast_{key}", *(_rate((summary.fast_p[b] or {}).get(key)) for b in ("eager", "compile"))])
    for p in FAST_P_THRESHOLDS:
        key = f"{p:g}"
        rows.append([f"fast_{key}, own kernels only",
                     *(_rate((summary.fast_p_own_kernels[b] or {}).get(key)) for b in ("eager", "compile"))])
    rows.append(["geometric-mean speedup", *(f"{_speedup(summary.geomean_speedup[b])} over "
                                             f"{summary.geomean_count[b]}" for b in ("eager", "compile"))])
    rows.append(["precision downgrades", str(summary.precision_downgrades), ""])
    if summary.kernelbench_would_pass:  # only under --kernelbench-tolerances
        rows.append(["incorrect, though KernelBench's rule would pass", str(summary.kernelbench_would_pass), ""])
    rows.append(["correct, library calls only", str(summary.library_only), ""])
    return rows


def _flags(entry: EvalEntry) -> str:
    flags = (["PRECISION DOWNGRADE"] if entry.precision_downgrade else []) + (
        ["library only"] if entry.library_only else []) + (
        ["KernelBench's rule would pass it"] if entry.kernelbench_would_pass and not entry.correct else [])
    return ", ".join(flags)


def several_gpus(report: EvalReport) -> tuple[bool, bool]:
    """Whether the entries ran on more than one GPU (then the tables name each entry's), and on more than one host."""
    used = {(entry.gpu.get("host"), entry.gpu.get("index"), entry.gpu.get("uuid")) for entry in report.entries
            if entry.gpu}
    return len(used) > 1, len({host for host, _, _ in used}) > 1


def problem_rows(report: EvalReport) -> list[list[object]]:
    """One row per problem; a last column names its GPU where the run used several."""
    several, with_host = several_gpus(report)
    return [row + ([gpu_label(entry.gpu, with_host)] if several else [])
            for row, entry in zip(_problem_cells(report), report.entries, strict=True)]


def _problem_cells(report: EvalReport) -> list[list[object]]:
    return [[entry.name, entry.verdict, _flags(entry) or None,
             format_number(entry.solution_us), format_number(entry.eager_us), format_number(entry.compile_us),
             _speedup(entry.speedup_vs_eager), _speedup(entry.speedup_vs_compile),
             None if entry.percent_of_ceiling is None else f"{entry.percent_of_ceiling:.1f}%",
             entry.bottleneck, markdown_cell(_solution_text(entry)),
             compile_mode_of(entry.compile_mode) if entry.compile_mode else None]
            for entry in report.entries]


def _solution_text(entry: EvalEntry) -> str | None:
    if entry.solution is None:
        return None
    where = f"{entry.run_version} of run folder" if entry.source == "run folder" else entry.backend or ""
    return f"{Path(entry.solution).name} ({where})"


PROBLEM_COLUMNS = ["problem", "verdict", "flags", "solution µs", "eager µs", "compile µs", "vs eager", "vs compile",
                   "% of ceiling", "bottleneck", "solution", "fastest compile mode"]
SUMMARY_COLUMNS = ["", "vs eager", "vs best torch.compile"]


def _tables(report: EvalReport) -> dict[str, Any]:
    return {
        "summary": markdown_table(summary_rows(report.summary), SUMMARY_COLUMNS),
        "problems": markdown_table(problem_rows(report),
                                   PROBLEM_COLUMNS + (["GPU"] if several_gpus(report)[0] else [])),
        "by_gpu_model": {model: markdown_table(summary_rows(summary), SUMMARY_COLUMNS)
                         for model, summary in report.by_gpu_model.items()},
    }


def eval_summary(report: EvalReport, output_dir: Path, exit_code: int) -> str:
    """What `kernel-opt eval` prints: the summary table, the problem table and where the records are."""
    summary = report.summary
    several = several_gpus(report)[0]
    lines = [f"EVAL: {summary.correct} of {summary.problems} correct, {summary.timed} timed "
             f"(exit {exit_code})", "",
             markdown_table(summary_rows(summary), SUMMARY_COLUMNS), ""]
    for model, figures in report.by_gpu_model.items():
        lines += [f"on {model} alone:", markdown_table(summary_rows(figures), SUMMARY_COLUMNS), ""]
    lines += [markdown_table([row[:9] + (row[-1:] if several else []) for row in problem_rows(report)],
                             PROBLEM_COLUMNS[:9] + (["GPU"] if several else [])), ""]
    spread = describe_execution(report)
    if spread and report.execution.mode != "one process":
        lines += [f"spread: {spread}", ""]
    lines.append(f"report: {output_dir / EVAL_MARKDOWN}")
    return "\n".join(lines)


def draw_speedup_chart(report: EvalReport, path: Path) -> Path:
    """Each problem's speedup over eager and over the best torch.compile mode; the fast_p thresholds as lines."""
    from kernel_opt.loop.report_charts import load_pyplot, save_figure

    pyplot = load_pyplot()
    entries = report.entries
    figure, axes = pyplot.subplots(figsize=(max(5.0, 1.2 + 0.7 * len(entries)), 3.8))
    positions = list(range(len(entries)))
    width = 0.38
    for offset, baseline, colour in ((-width / 2, "eager", "tab:blue"), (width / 2, "compile", "tab:orange")):
        heights = [entry.speedup(baseline) if entry.correct and entry.speedup(baseline) else 0.0 for entry in entries]
        axes.bar([p + offset for p in positions], heights, width, color=colour,
                 label=f"vs {'eager' if baseline == 'eager' else 'best torch.compile'}")
    for position, entry in zip(positions, entries, strict=True):
        if not entry.correct:
            axes.text(position, 0.05, entry.verdict.replace("_", "\n"), ha="center", va="bottom", fontsize=7,
                      color="tab:red")
        elif entry.precision_downgrade:
            axes.text(position, 0.05, "downgrade", ha="center", va="bottom", fontsize=7, color="tab:red")
    for p in FAST_P_THRESHOLDS:
        axes.axhline(p, linestyle=":" if p > 1 else "--", color="gray", linewidth=1)
    axes.set_xticks(positions, [entry.name for entry in entries], rotation=30, ha="right", fontsize=8)
    axes.set_ylabel("speedup (baseline time / solution time)")
    axes.set_title(f"{report.summary.correct} of {report.summary.problems} correct; lines at p = "
                   f"{', '.join(f'{p:g}' for p in FAST_P_THRESHOLDS)}")
    axes.legend(fontsize=8)
    save_figure(figure, path)
    pyplot.close(figure)
    return path
