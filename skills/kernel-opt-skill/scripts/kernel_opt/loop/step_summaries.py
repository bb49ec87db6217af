"""One line per step of `workspace.py evaluate`, from the step's record: its summary in evaluation.json and the table.

Renderers only: each reads fields the tool's record already holds and decides nothing.
"""

from __future__ import annotations

from kernel_opt.check.records import CorrectnessReport
from kernel_opt.measure.records import BenchmarkReport
from kernel_opt.profile.records import NcuSummary
from kernel_opt.sass.report import StaticReport

SUMMARY_CHARS = 300  # a step's one-line summary in evaluation.json and the table evaluate prints


def clip(text: str, limit: int = SUMMARY_CHARS) -> str:
    """`text` within `limit` characters, cut after a whole word and marked with an ellipsis where it was cut (the
    whole message stays in the step's own record)."""
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "…"


def correctness_line(report: CorrectnessReport) -> str:
    if report.error:
        return clip(f"{report.verdict}: {_message(report)}")
    failed = sum(1 for case in report.cases if not case.passed)
    mode = " (Triton interpreter)" if report.interpreter else ""
    return (f"pass{mode}: {len(report.cases)} cases" if report.passed
            else f"FAIL: {failed} of {len(report.cases)} cases differ from the reference")


def sanitizer_line(report: CorrectnessReport) -> str:
    if report.error:
        return f"{report.verdict}: {_message(report)}"
    case = report.cases[0] if report.cases else None
    shape = ", ".join(f"{key}={value}" for key, value in case.dims.items()) if case else "no case"
    warnings = f", {report.sanitizer.warnings} warnings" if report.sanitizer and report.sanitizer.warnings else ""
    if report.passed:
        return f"no errors{warnings} (smallest case {shape}, seed 0)"
    return f"FAIL: no sanitizer errors, but the smallest case ({shape}) differs from the reference"


def compile_line(report: CorrectnessReport) -> str:
    if not report.build or report.error:
        return correctness_line(report)
    registers = ", ".join(f"{(kernel.name if kernel.has('name') else '?').split('(')[0]}: {kernel.registers} registers"
                          for kernel in report.build_kernels())
    return f"compiled for {report.build.arch}; {registers}"


def _message(report: CorrectnessReport) -> str:
    """The error's message ("" where the error names none)."""
    return report.error.message if report.error.has("message") else ""


def benchmark_line(report: BenchmarkReport) -> str:
    floor = report.roofline.physical_floor
    if report.verdict == "invalid" and floor:
        return (f"invalid: {floor.time_us:.2f} us is faster than the physical {floor.bound} floor of "
                f"{floor.floor_us:.2f} us: work skipped, or ref.py's flops()/bytes() overstate it")
    if report.verdict != "measured":
        return clip(f"{report.verdict}: {report.failure_reason()}")
    parts = [f"{report.median_us:.2f} us"]
    comparison = report.comparison
    if comparison:
        parts.append(f"vs {comparison.against_folder() or comparison.against} {comparison.speedup:.3f}x "
                     f"[{comparison.ci_low:.3f}, {comparison.ci_high:.3f}] {comparison.verdict}")
    if report.speedup_vs_best_baseline is not None:
        parts.append(f"{report.speedup_vs_best_baseline:.2f}x vs {report.best_baseline}")
    if report.percent_of_ceiling is not None:
        basis = report.ceiling_basis()
        parts.append(f"{report.percent_of_ceiling:.1f}% of ceiling" + (f" ({basis.name} basis)" if basis else ""))
    return "; ".join(parts)


def profile_line(summary: NcuSummary) -> str:
    limiter = f" ({summary.memory_limiter})" if summary.memory_limiter else ""
    occupancy = summary.metric("achieved_occupancy_pct")
    return (f"{summary.bottleneck}{limiter}, top stall {summary.top_stall}"
            + (f", achieved occupancy {occupancy:.0f}%" if occupancy is not None else ""))


def static_line(report: StaticReport) -> str:
    return "; ".join(
        f"{kernel.name.split('(')[0]}: {kernel.registers_per_thread} registers, "
        + (f"{kernel.spill_stores_bytes} B spilled, " if kernel.spill_stores_bytes is not None else "")
        + f"{len(kernel.findings)} finding(s)"
        for kernel in report.kernels) or "no kernels found"
