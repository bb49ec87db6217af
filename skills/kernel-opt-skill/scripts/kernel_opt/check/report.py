"""correctness.md and the console summary, rendered from a CorrectnessReport (formatting only)."""

from __future__ import annotations

from pathlib import Path

from kernel_opt.check.integrity.verdict import (
    correctness_failures,
    failure_headline,
    kernelbench_would_pass,
    pass_lines,
    report_sections,
)
from kernel_opt.check.records import CaseResult, CorrectnessReport
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import format_number, markdown_cell, markdown_table, render


def write_correctness_reports(report: CorrectnessReport, output_dir: Path, exit_code: int) -> None:
    """DIR/correctness.json (the record) and DIR/correctness.md (its tables and evidence).

    A --sanitize run writes DIR/correctness_<tool>.json and .md: its one case never replaces the full check.
    """
    payload = report.to_dict()
    markdown = render(
        "correctness.md.j2",
        report=report,
        failures=correctness_failures(report),
        exit_code=exit_code,
        tables=_tables(report),
        integrity=report_sections(report),
        kernelbench_would_pass=kernelbench_would_pass(report),
        tolerance_cannot_judge=any(output.tolerance_cannot_judge for case in report.cases
                                   for output in case.outputs),
        versions=", ".join(f"{name} {version}" for name, version in report.environment.described_versions()),
    )
    write_json_atomic(output_dir / f"{report.file_stem}.json", payload)
    write_text_atomic(output_dir / f"{report.file_stem}.md", markdown)


def _shape_text(dims: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in dims.items()) or "default"


def _tables(report: CorrectnessReport) -> dict:
    """The report's tables as Markdown (formatting only: every value is already in the record)."""
    tolerances = markdown_table(
        [[t.output, t.dtype, t.rule or "atol/rtol", format_number(t.atol), format_number(t.rtol),
          format_number(t.multiple), format_number(t.floor), t.source]
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
                [k.name, k.arch, k.registers, k.shared_memory_bytes, k.stack_frame_bytes, k.spill_stores_bytes,
                 k.spill_loads_bytes]
                for k in report.build_kernels()
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
    mode = ""
    if report.interpreter:  # a ModelNew runs its torch code on the CPU and any Triton kernel it has interpreted
        mode = " (on the CPU, Triton under its interpreter)" if report.backend == "modelnew" else \
            " (Triton interpreter on the CPU)"
    if report.sanitizer is not None:
        mode = f" under compute-sanitizer {report.sanitizer.tool}"
    if report.error is not None:
        error = report.error
        lines = [f"{report.verdict.upper().replace('_', ' ')} ({error.kind}): {error.message}"]
        if error.hint and error.kind not in ("crash", "internal_error"):
            lines.append(f"hint: {error.hint.splitlines()[0]}")
        lines.append(f"report: {where}")
        return "\n".join(lines)
    if report.passed and report.build and not report.cases:
        return f"COMPILED for {report.build.arch}: correctness not run (--compile-only). report: {where}"
    total = len(report.cases)
    if report.passed and report.sanitizer is not None:
        sanitizer = report.sanitizer
        shape = ", ".join(f"{key}={value}" for key, value in report.cases[0].dims.items()) or "default shape"
        return (f"PASS{mode}: no errors, and the smallest case ({shape}, seed 0) matches the reference.\n"
                f"report: {where} (the tool's output: {sanitizer.log_file})\n"
                "next: this checked one case; the full check is the same command without --sanitize")
    sizes = f"sizes: {report.sizes_note}" if report.sizes_note else None
    if report.passed:
        shapes = len({str(case.dims) for case in report.cases})
        text = f"PASS{mode}: all {total} cases ({shapes} shapes x {len(report.seeds)} seeds) match the reference."
        text += f"\n{sizes}" if sizes else ""
        text += "".join(f"\n{line}" for line in pass_lines(report))
        if report.kernelbench_tolerances:
            text += "\n(judged at KernelBench's atol = rtol = 1e-2, --kernelbench-tolerances)"
        if report.precision_downgrades:
            text += (f"\nPRECISION DOWNGRADE: output {', '.join(report.precision_downgrades)} passes only at "
                     "KernelBench's tolerance, and the rounding probe shows it computes from inputs in a lower "
                     "precision (see correctness.md)")
        if report.warnings:
            text += f"\n{len(report.warnings)} warning(s), read them in {where}"
        return text + f"\nreport: {where}\nnext: time and profile this version (SKILL.md, the profile step)"
    failed = [case for case in report.cases if not case.passed]
    headline = failure_headline(report, total, mode) if not failed else None
    lines = [headline or f"FAIL{mode}: {len(failed)} of {total} cases differ from the reference."]
    lines += [sizes] if sizes else []
    lines += [f"  - {sentence}" for sentence in correctness_failures(report)[:5]]
    if kernelbench_would_pass(report):
        lines.append("  (KernelBench's own verdict: pass. Its rule, atol = rtol = 1e-2 with its seed-42 weights, "
                     "would pass every output)")
    lines.append(f"report: {where}")
    lines.append("next: fix the solution and re-run this command")
    return "\n".join(lines)
