"""What the integrity checks' results do to a correctness record: its verdict, its failures, its report sections.

Every function here loops over the registry, so a check added there enters the verdict, the
"Why it failed" list, the console and correctness.md without a line changed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_opt.check.integrity import registry
from kernel_opt.check.integrity.protocol import IntegrityCheck, When
from kernel_opt.check.records import CaseResult, CorrectnessReport, output_failure_text


def results(report: CorrectnessReport) -> list[tuple[type[IntegrityCheck], Any]]:
    """Each check that ran after the cases and left a result in the record, with that result read back."""
    return [(check, check.read(report.integrity[check.record_key])) for check in registry.checks(When.AFTER_CASES)
            if isinstance(report.integrity.get(check.record_key), dict)]


def integrity_passed(report: CorrectnessReport) -> bool:
    """Whether every check's result lets the record pass (the cases are judged apart)."""
    return all(check.passed(result, report) for check, result in results(report))


def case_problems(case: CaseResult) -> list[tuple[str, str]]:
    """(subject, what is wrong) for one case: what the checks around its call found, then its failing outputs."""
    problems = [problem for check in registry.checks(When.AROUND_CASE) if check.record_key is not None
                for problem in check.case_problems(case.finding(check.record_key))]
    return problems + [(f"output {output.name!r}", output_failure_text(output))
                       for output in case.outputs if not output.passed]


def summarize_failures(cases: list[CaseResult]) -> list[str]:
    """One sentence per failing (shape, subject), its seeds merged: the evidence without the repeats."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for case in cases:
        if case.passed:
            continue
        shape = ", ".join(f"{k}={v}" for k, v in case.dims.items())
        for subject, text in case_problems(case):
            entry = grouped.setdefault((shape, subject), {"text": text, "seeds": []})
            entry["seeds"].append(case.seed)
    sentences = []
    for (shape, subject), entry in grouped.items():
        seeds = ", ".join(str(seed) for seed in entry["seeds"])
        label = "seed" if len(entry["seeds"]) == 1 else "seeds"
        sentences.append(f"{subject}: {entry['text']} ({shape or 'default shape'}; {label} {seeds})")
    return sentences


def correctness_failures(report: CorrectnessReport) -> list[str]:
    """Every reason a correctness record failed: its cases' (summarize_failures), then each check's, in order."""
    return summarize_failures(report.cases) + [sentence for check, result in results(report)
                                               for sentence in check.failures(result, report)]


def failure_headline(report: CorrectnessReport, total: int, mode: str) -> str | None:
    """The console's first line for a record whose cases all matched but a check failed it; None: none applies."""
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
