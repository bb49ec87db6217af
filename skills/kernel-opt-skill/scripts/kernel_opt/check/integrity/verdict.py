"""What the integrity checks' results do to a correctness record: its verdict, its failures, its report sections.

Every function here loops over the registry, so a check added there enters the verdict, the
"Why it failed" list, the console and correctness.md without a line changed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_opt.check.integrity import registry
from kernel_opt.check.integrity.protocol import IntegrityCheck, When
from kernel_opt.check.records import (
    KERNELBENCH_WOULD_PASS,
    CaseResult,
    CorrectnessReport,
    OutputComparison,
    output_failure_text,
)


def results(report: CorrectnessReport) -> list[tuple[type[IntegrityCheck], Any]]:
    """Each check that ran after the cases and left a result in the record, with that result read back."""
    return [(check, check.read(report.integrity[check.record_key])) for check in registry.checks(When.AFTER_CASES)
            if isinstance(report.integrity.get(check.record_key), dict)]


def integrity_passed(report: CorrectnessReport) -> bool:
    """Whether every check's result lets the record pass (the cases are judged apart)."""
    return all(check.passed(result, report) for check, result in results(report))


def case_problems(case: CaseResult, downgrades: set[str] | None = None) -> list[tuple[str, str]]:
    """(subject, what is wrong) for one case: what the checks around its call found, then its failing outputs.

    `downgrades`: the outputs the rounding probe shows computed in a lower precision (None: not known here).
    """
    problems = [problem for check in registry.checks(When.AROUND_CASE) if check.record_key is not None
                for problem in check.case_problems(case.finding(check.record_key))]
    return problems + [(f"output {output.name!r}",
                        output_failure_text(output, None if downgrades is None else output.name in downgrades))
                       for output in case.outputs if not output.passed]


def summarize_failures(cases: list[CaseResult], downgrades: set[str] | None = None) -> list[str]:
    """One sentence per failing (shape, subject), its seeds merged: the evidence without the repeats."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for case in cases:
        if case.passed:
            continue
        shape = ", ".join(f"{k}={v}" for k, v in case.dims.items())
        for subject, text in case_problems(case, downgrades):
            entry = grouped.setdefault((shape, subject), {"text": text, "seeds": []})
            entry["seeds"].append(case.seed)
    sentences = []
    for (shape, subject), entry in grouped.items():
        seeds = ", ".join(str(seed) for seed in entry["seeds"])
        label = "seed" if len(entry["seeds"]) == 1 else "seeds"
        sentences.append(f"{subject}: {entry['text']} ({shape or 'default shape'}; {label} {seeds})")
    return sentences


def correctness_failures(report: CorrectnessReport) -> list[str]:
    """Every reason a correctness record failed: its cases' (summarize_failures), the outputs that pass only at
    KernelBench's tolerance (tolerance_failures), then each check's, in order."""
    return summarize_failures(report.cases, probe_downgrades(report)) + tolerance_failures(report) + [
        sentence for check, result in results(report) for sentence in check.failures(result, report)]


def probe_downgrades(report: CorrectnessReport) -> set[str] | None:
    """The outputs the rounding probe shows computed in a lower precision; None where it did not run (no evidence
    either way, so a failure text names no cause)."""
    probe = report.integrity.get("rounding_probe")
    return set(report.rounding_downgrades) if isinstance(probe, dict) and probe.get("ran") else None


def unshown_kernelbench_passes(report: CorrectnessReport) -> list[str]:
    """Under --kernelbench-tolerances: the outputs that pass only at KernelBench's atol = rtol = 1e-2 and that the
    rounding probe does not show computed from inputs in a lower precision. Without that evidence the error is no
    precision downgrade but a wrong result: such an output fails the record."""
    return [name for name in report.kernelbench_only_outputs if name not in report.rounding_downgrades]


def tolerance_failures(report: CorrectnessReport) -> list[str]:
    """One sentence per output of unshown_kernelbench_passes: its error by the strict rule, and what the probe said."""
    sentences = []
    for name in unshown_kernelbench_passes(report):
        worst = max((output for case in report.cases for output in case.outputs
                     if output.name == name and output.kernelbench_only), key=_strict_error)
        sentences.append(f"output {name!r} passes only at KernelBench's atol = rtol = 1e-2: {_strict_text(worst)}; "
                         f"{_probe_text(report)}, so this is a wrong result, not a precision downgrade "
                         f"({KERNELBENCH_WOULD_PASS})")
    return sentences


def _strict_error(output: OutputComparison) -> float:
    return output.solution_error if isinstance(output.solution_error, (int, float)) else 0.0


def _strict_text(output: OutputComparison) -> str:
    if isinstance(output.solution_error, (int, float)) and isinstance(output.allowed_error, (int, float)):
        times = (f", {output.solution_error / output.reference_error:.3g}x the reference's own error"
                 if isinstance(output.reference_error, (int, float)) and output.reference_error > 0 else "")
        return (f"its normwise error from the float64 truth is {output.solution_error:.3g} against "
                f"{output.allowed_error:.3g} allowed by the reference-error rule{times}")
    return "it fails the problem's own atol/rtol"


def _probe_text(report: CorrectnessReport) -> str:
    probe = report.integrity.get("rounding_probe")
    if not isinstance(probe, dict):
        return "the rounding probe did not run"
    if not probe.get("ran"):
        return f"the rounding probe did not run ({probe.get('note') or 'no reason given'})"
    return "the rounding probe found no input whose low bits it ignores"


def kernelbench_would_pass(report: CorrectnessReport) -> bool:
    """Under --kernelbench-tolerances: the record fails, yet every output of every case is within KernelBench's atol =
    rtol = 1e-2 of the reference (with KernelBench's seed-42 weights): KernelBench's own verdict would be pass."""
    outputs = [output for case in report.cases for output in case.outputs]
    return (report.kernelbench_tolerances and report.error is None and not report.passed and bool(outputs)
            and len(report.cases) == report.planned_cases
            and all(output.passed if output.kernelbench_would_pass is None else output.kernelbench_would_pass
                    for output in outputs))


def failure_headline(report: CorrectnessReport, total: int, mode: str) -> str | None:
    """The console's first line for a record whose cases all matched but a check failed it; None: none applies."""
    unshown = unshown_kernelbench_passes(report)
    if unshown:
        return (f"FAIL{mode}: all {total} cases are within KernelBench's atol = rtol = 1e-2, but output "
                f"{', '.join(map(repr, unshown))} passes only there and the rounding probe shows no precision "
                f"downgrade: a wrong result ({KERNELBENCH_WOULD_PASS}).")
    return next((line for check, result in results(report)
                 if (line := check.headline(result, report, total, mode)) is not None), None)


def pass_lines(report: CorrectnessReport) -> list[str]:
    """What the checks add to the console under a PASS."""
    return [line for check, result in results(report) for line in check.pass_lines(result, report)]


@dataclass(frozen=True)
class Section:
    """One check's section of correctness.md: rendered by the template's one loop over them."""

    title: str
    body: str


def report_sections(report: CorrectnessReport) -> list[Section]:
    return [Section(check.title, check.section(result, report)) for check, result in results(report)
            if check.title is not None]
