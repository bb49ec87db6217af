"""correctness.md and the console summary, rendered from a CorrectnessReport (formatting only)."""

from __future__ import annotations

from pathlib import Path

from kernel_opt.check.records import CORRECTNESS_FILE, CaseResult, CorrectnessReport, summarize_failures
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import format_number, markdown_table, render


def write_correctness_reports(report: CorrectnessReport, output_dir: Path, exit_code: int) -> None:
    """DIR/correctness.json (the record) and DIR/correctness.md (its tables and evidence)."""
    payload = report.to_dict()
    failures = summarize_failures(report.cases)
    markdown = render(
        "correctness.md.j2",
        report=report,
        failures=failures,
        exit_code=exit_code,
        tables=_tables(report),
        versions=", ".join(
            f"{key} {report.environment[key]}" for key in ("python", "torch", "triton", "cuda")
            if report.environment.get(key)
        ),
    )
    write_json_atomic(output_dir / CORRECTNESS_FILE, payload)
    write_text_atomic(output_dir / "correctness.md", markdown)


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
    return {"tolerances": tolerances, "cases": cases, "mismatches": mismatches, "kernels": kernels}


def correctness_summary(report: CorrectnessReport, output_dir: Path) -> str:
    """What correctness_check.py prints: the verdict, the evidence in brief, and the next step."""
    where = output_dir / "correctness.md"
    mode = " (Triton interpreter on the CPU)" if report.interpreter else ""
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
    if report.passed:
        shapes = len({str(case.dims) for case in report.cases})
        text = f"PASS{mode}: all {total} cases ({shapes} shapes x {len(report.seeds)} seeds) match the reference."
        if report.kernelbench_tolerances:
            text += "\n(judged at KernelBench's atol = rtol = 1e-2, --kernelbench-tolerances)"
        if report.precision_downgrades:
            text += (f"\nPRECISION DOWNGRADE: output {', '.join(report.precision_downgrades)} passes only at "
                     "KernelBench's tolerance and fails the reference-error rule (see correctness.md)")
        if report.warnings:
            text += f"\n{len(report.warnings)} warning(s), read them in {where}"
        return text + f"\nreport: {where}\nnext: time and profile this version (SKILL.md, the profile step)"
    failed = [case for case in report.cases if not case.passed]
    lines = [f"FAIL{mode}: {len(failed)} of {total} cases differ from the reference."]
    lines += [f"  - {sentence}" for sentence in summarize_failures(report.cases)[:5]]
    lines.append(f"report: {where}")
    lines.append("next: fix the solution and re-run this command")
    return "\n".join(lines)
