"""correctness.md and the console summary, rendered from a CorrectnessReport (formatting only)."""

from __future__ import annotations

from pathlib import Path

from kernel_opt.check.launches import OWN, LaunchCheck, correctness_failures, kernel_base_name, launch_check_of
from kernel_opt.check.records import CaseResult, CorrectnessReport
from kernel_opt.check.rounding_probe import IGNORED_RATIO, MIN_REFERENCE_CHANGE, RoundingProbe
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import format_number, markdown_cell, markdown_table, render

KERNEL_NAME_SHOWN = 110  # characters of a kernel's name in a table: torch's template names run to hundreds


def write_correctness_reports(report: CorrectnessReport, output_dir: Path, exit_code: int) -> None:
    """DIR/correctness.json (the record) and DIR/correctness.md (its tables and evidence).

    A --sanitize run writes DIR/correctness_<tool>.json and .md: its one case never replaces the full check.
    """
    payload = report.to_dict()
    failures = correctness_failures(report)
    launches = launch_check_of(report)
    markdown = render(
        "correctness.md.j2",
        report=report,
        failures=failures,
        exit_code=exit_code,
        tables=_tables(report),
        launches=launches,
        launch_table=launch_table(launches) if launches is not None else "",
        rounding=RoundingProbe.from_dict(report.rounding_probe) if report.rounding_probe else None,
        rounding_table=rounding_table(report),
        rounding_rule={"ratio": f"{IGNORED_RATIO:g}", "units": f"{MIN_REFERENCE_CHANGE / 2.0**-24:g}"},
        versions=", ".join(
            f"{key} {report.environment[key]}" for key in ("python", "torch", "triton", "cuda")
            if report.environment.get(key)
        ),
    )
    write_json_atomic(output_dir / f"{report.file_stem}.json", payload)
    write_text_atomic(output_dir / f"{report.file_stem}.md", markdown)


def launch_table(check: LaunchCheck) -> str:
    """The profiled call's kernels and copies, one row per name and stream (correctness.md and benchmark.md)."""
    def whose(origin: str) -> str:
        return {OWN: "the solution's own", "copy": "copy", "unknown": "unknown"}.get(origin, f"library ({origin})")

    rows = [[markdown_cell(_shortened(row.name)), row.kind, whose(row.origin),
             f"caller's ({row.stream})" if row.on_caller_stream else f"other ({row.stream})", row.count,
             format_number(row.total_us)] for row in check.work]
    return markdown_table(rows, ["kernel or copy", "kind", "whose", "stream", "runs", "GPU µs"])


def rounding_table(report: CorrectnessReport) -> str:
    """The rounding probe's rows: each input rounded, and how far reference and solution moved."""
    if not report.rounding_probe:
        return ""
    probe = RoundingProbe.from_dict(report.rounding_probe)
    rows = [[f"`{row.input}`", row.rounding, f"`{row.output}`", f"{row.reference_change:.3g}",
             f"{row.solution_change:.3g}", "—" if row.ratio is None else f"{row.ratio:.3g}", row.verdict]
            for row in probe.probes]
    return markdown_table(rows, ["input", "rounded to", "output", "reference moved", "solution moved",
                                 "solution / reference", "verdict"])


def _shortened(name: str) -> str:
    return name if len(name) <= KERNEL_NAME_SHOWN else name[:KERNEL_NAME_SHOWN - 1] + "…"


def launch_summary_line(check: LaunchCheck | None) -> str | None:
    """One console line on what the profiled call ran; None when nothing was profiled."""
    if check is None or not check.profiled:
        return None
    own = sorted({kernel_base_name(row.name) for row in check.work if row.origin == OWN})
    if check.library_only:
        return ("NOTE: no kernel of the solution's own ran: every kernel it launched is library code, so the timed "
                "work is library code")
    if check.own_kernels is None:
        return f"launched: {len(check.work)} kernel(s) and copies (which are its own is unknown for this backend)"
    mine = f" ({', '.join(own)})" if own else ""
    return f"launched: {check.own_kernels} kernel(s) of its own{mine}, {check.library_kernels} library kernel(s)"


def _shape_text(dims: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in dims.items()) or "default"


def _tables(report: CorrectnessReport) -> dict:
    """The report's tables as Markdown (formatting only: every value is already in the record)."""
    tolerances = markdown_table(
        [[t["output"], t["dtype"], t.get("rule") or "atol/rtol", format_number(t["atol"]), format_number(t["rtol"]),
          format_number(t.get("multiple")), format_number(t.get("floor")), t["source"]]
         for t in report.tolerances],
        ["output", "dtype", "rule", "atol", "rtol", "x reference error", "relative floor", "from"],
    )
    cases = markdown_table(
        [
            [
                _shape_text(case.dims), case.seed, "pass" if case.passed else "FAIL", o.name,
                f"{o.mismatches} / {o.numel}", o.nan_unexpected, format_number(o.max_abs_error),
                format_number(o.max_rel_error), format_number(o.norm_rel_error),
                format_number(o.solution_error), format_number(o.reference_error), format_number(o.allowed_error),
                ", ".join(case.modified_inputs) or "none",
            ]
            for case in report.cases
            for o in case.outputs
        ],
        ["shape", "seed", "result", "output", "mismatches", "unexpected NaN", "max abs err", "max rel err",
         "norm rel err", "solution error", "reference error", "allowed", "inputs modified"],
    )
    first_failing_seed: dict[str, CaseResult] = {}
    for case in report.cases:
        if not case.passed:
            first_failing_seed.setdefault(_shape_text(case.dims), case)
    mismatches = [
        {
            "output": o.name,
            "dtype": o.dtype,
            "shape": o.shape,
            "where": f"{_shape_text(case.dims)}, seed {case.seed}",
            "table": markdown_table(
                [[m.index, format_number(m.actual, 8), format_number(m.expected, 8)] for m in o.first_mismatches],
                ["index", "actual", "expected"],
            ),
        }
        for case in first_failing_seed.values()
        for o in case.outputs
        if o.first_mismatches
    ][:8]
    kernels = ""
    if report.build:
        kernels = markdown_table(
            [
                [k["name"], k["arch"], k["registers"], k["shared_memory_bytes"], k["stack_frame_bytes"],
                 k["spill_stores_bytes"], k["spill_loads_bytes"]]
                for k in report.build["kernels"]
            ],
            ["kernel", "arch", "registers/thread", "static shared B/block", "stack B/thread", "spill stores B",
             "spill loads B"],
        )
    return {"tolerances": tolerances, "cases": cases, "mismatches": mismatches, "kernels": kernels,
            "sanitizer": _sanitizer_table(report)}


def _sanitizer_table(report: CorrectnessReport) -> str:
    """compute-sanitizer's findings, one row per kind, kernel and place (formatting only)."""
    if report.sanitizer is None or not report.sanitizer.findings:
        return ""
    return markdown_table(
        [[markdown_cell(f.kind), f.severity, markdown_cell(f.kernel), f.location or f.pc_offset,
          " / ".join(part for part in (f.thread, f.block) if part) or None, f.address, markdown_cell(f.detail), f.count]
         for f in report.sanitizer.findings],
        ["kind", "severity", "kernel", "where", "first thread / block", "address", "detail", "reports"],
    )


def correctness_summary(report: CorrectnessReport, output_dir: Path) -> str:
    """What correctness_check.py prints: the verdict, the evidence in brief, and the next step."""
    where = output_dir / f"{report.file_stem}.md"
    mode = " (Triton interpreter on the CPU)" if report.interpreter else ""
    if report.sanitizer is not None:
        mode = f" under compute-sanitizer {report.sanitizer.tool}"
    if report.error is not None:
        error = report.error
        lines = [f"{report.verdict.upper().replace('_', ' ')} ({error['kind']}): {error['message']}"]
        if error.get("hint") and error["kind"] not in ("crash", "internal_error"):
            lines.append(f"hint: {error['hint'].splitlines()[0] if error['hint'] else ''}")
        lines.append(f"report: {where}")
        return "\n".join(lines)
    if report.passed and report.build and not report.cases:
        return f"COMPILED for {report.build['arch']}: correctness not run (--compile-only). report: {where}"
    total = len(report.cases)
    if report.passed and report.sanitizer is not None:
        sanitizer = report.sanitizer
        shape = ", ".join(f"{key}={value}" for key, value in report.cases[0].dims.items()) or "default shape"
        return (f"PASS{mode}: no errors, and the smallest case ({shape}, seed 0) matches the reference.\n"
                f"report: {where} (the tool's output: {sanitizer.log_file})\n"
                "next: this checked one case; the full check is the same command without --sanitize")
    launches = launch_check_of(report)
    if report.passed:
        shapes = len({str(case.dims) for case in report.cases})
        text = f"PASS{mode}: all {total} cases ({shapes} shapes x {len(report.seeds)} seeds) match the reference."
        text += "".join(f"\n{line}" for line in [launch_summary_line(launches)] if line)
        if report.kernelbench_tolerances:
            text += "\n(judged at KernelBench's atol = rtol = 1e-2, --kernelbench-tolerances)"
        if report.precision_downgrades:
            text += (f"\nPRECISION DOWNGRADE: output {', '.join(report.precision_downgrades)} passes only at "
                     "KernelBench's tolerance: it fails the reference-error rule or the rounding probe "
                     "(see correctness.md)")
        if report.warnings:
            text += f"\n{len(report.warnings)} warning(s), read them in {where}"
        return text + f"\nreport: {where}\nnext: time and profile this version (SKILL.md, the profile step)"
    failed = [case for case in report.cases if not case.passed]
    if not failed and launches is not None and not launches.passed:
        lines = [f"FAIL: all {total} cases match the reference, but the profiled call failed the launch check."]
    elif not failed and report.rounding_downgrades:
        lines = [f"FAIL{mode}: all {total} cases are within the tolerance, but the rounding probe found output "
                 f"{', '.join(map(repr, report.rounding_downgrades))} computed from inputs in a lower precision."]
    else:
        lines = [f"FAIL{mode}: {len(failed)} of {total} cases differ from the reference."]
    lines += [f"  - {sentence}" for sentence in correctness_failures(report)[:5]]
    lines.append(f"report: {where}")
    lines.append("next: fix the solution and re-run this command")
    return "\n".join(lines)
