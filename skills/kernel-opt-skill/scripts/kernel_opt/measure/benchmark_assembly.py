"""The benchmark's record from its worker's events: every derived number (roofline, floor, speedups) is here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel_opt.check.records import OutputComparison
from kernel_opt.core.errors import ExitCode, failure_verdict
from kernel_opt.core.records import ErrorRecord
from kernel_opt.measure.records import BenchmarkReport, Comparison, Precision, TimedEntry, TimedOutputCheck
from kernel_opt.measure.roofline_records import CopySameBytes, RoofPoint, Work
from kernel_opt.measure.timed_outputs import AGAINST, INTERLEAVED, wrong_timed_outputs_text
from kernel_opt.run.environment import GpuInfo, RunEnvironment
from kernel_opt.run.events import (
    CeilingsEvent,
    CopySameBytesEvent,
    CudaGraphEvent,
    EnvironmentEvent,
    Event,
    InterleavedEvent,
    KernelTimeEvent,
    MemoryEvent,
    NoteEvent,
    PostTimingCheckEvent,
    PrecisionEvent,
    ProblemEvent,
    TimedEvent,
    WarningEvent,
    WorkEvent,
    dispatch,
)
from kernel_opt.run.memory import add_memory_event


def _environment(report: BenchmarkReport, event: EnvironmentEvent) -> None:
    report.gpu = GpuInfo.from_dict({**report.gpu.to_dict(), **(event.info.get("gpu") or {})})
    report.versions = RunEnvironment.versions_of(event.info)


def _problem(report: BenchmarkReport, event: ProblemEvent) -> None:
    report.dims, report.dtypes, report.seed = event.dims, event.dtypes, event.seed


def _ceilings(report: BenchmarkReport, event: CeilingsEvent) -> None:
    report.roofline.measured_ceilings = event.measured
    if event.error:
        report.warnings.append(f"the cached ceilings could not be read: {event.error}")


def _timed(report: BenchmarkReport, event: TimedEvent) -> None:
    entry = TimedEntry.from_dict(event.entry)
    if entry.name == "solution":
        report.solution.take_timing(entry)
    else:
        report.baselines.append(entry)


def _post_timing_check(report: BenchmarkReport, event: PostTimingCheckEvent) -> None:
    report.post_timing_check[event.name] = TimedOutputCheck(
        event.passed, [OutputComparison.from_dict(output) for output in event.outputs])


def _precision(report: BenchmarkReport, event: PrecisionEvent) -> None:
    report.precision = Precision(allow_tf32=event.allow_tf32, note=event.note)


def _work(report: BenchmarkReport, event: WorkEvent) -> None:
    report.work = Work.from_dict(event.work)


def _cuda_graph(report: BenchmarkReport, event: CudaGraphEvent) -> None:
    report.cuda_graph = TimedEntry.from_dict(event.entry or {"error": event.error})


def _kernel_time(report: BenchmarkReport, event: KernelTimeEvent) -> None:
    report.kernel_time = TimedEntry.from_dict(event.entry or {"error": event.error})


def _copy_same_bytes(report: BenchmarkReport, event: CopySameBytesEvent) -> None:
    report.copy_same_bytes = CopySameBytes.from_dict(event.copy)


# Which events fill which part of the record (the interleaved comparison also needs the other
# version's labels, so assemble_report adds its handler); phases and done only say where the worker was.
_HANDLERS: dict[type[Event], Callable[[BenchmarkReport, Any], None]] = {
    EnvironmentEvent: _environment,
    PrecisionEvent: _precision,
    ProblemEvent: _problem,
    WorkEvent: _work,
    CeilingsEvent: _ceilings,
    TimedEvent: _timed,
    PostTimingCheckEvent: _post_timing_check,
    CudaGraphEvent: _cuda_graph,
    KernelTimeEvent: _kernel_time,
    CopySameBytesEvent: _copy_same_bytes,
    WarningEvent: lambda report, event: report.warnings.append(event.text),
    NoteEvent: lambda report, event: report.notes.append(event.text),
    MemoryEvent: add_memory_event,
}


def assemble_report(report: BenchmarkReport, outcome, against_label: str | None,
                    against_dir: str | None) -> BenchmarkReport:
    """Fill the report from the worker's events; every derived number is computed here."""
    def interleaved(record: BenchmarkReport, event: InterleavedEvent) -> None:
        record.comparison = _comparison(event, record, against_label, against_dir)

    dispatch(outcome.events, {**_HANDLERS, InterleavedEvent: interleaved}, report)
    failure = outcome.failure()
    report.error = None if failure is None else ErrorRecord.from_dict(failure)
    if report.error is not None:
        report.verdict = failure_verdict(report.error.exit_code)
        return report
    if not all(check.passed for check in report.post_timing_check.values()):
        report.verdict = "incorrect"
        report.warnings.append(wrong_timed_outputs_text(report.post_timing_check, report.launch_check()))
        return report
    report.verdict = "measured"
    _place_on_roofline(report)
    if not _mark_invalid(report):
        _summarize_baselines(report)
    return report


def _comparison(event: InterleavedEvent, report: BenchmarkReport, against_label, against_dir) -> Comparison:
    from kernel_opt.measure.statistics import speedup_interval
    from kernel_opt.measure.verdicts import comparison_verdict

    this, other = event.this["samples_us"], event.other["samples_us"]
    interval = speedup_interval(other, this)  # baseline = the other version; > 1: this one is faster
    this_ok = _passed_after_timing(report, INTERLEAVED)
    other_ok = _passed_after_timing(report, AGAINST)
    return Comparison(
        against=against_label or "",
        against_dir=against_dir,
        speedup=interval.speedup,
        ci_low=interval.ci_low,
        ci_high=interval.ci_high,
        confidence=interval.confidence,
        pairs=len(this),
        this_median_us=interval.candidate_median_us,
        other_median_us=interval.baseline_median_us,
        verdict=comparison_verdict(interval.speedup, interval.ci_low, interval.ci_high, this_ok),
        other_correct_after_timing=other_ok,
    )


def _passed_after_timing(report: BenchmarkReport, kind: str) -> bool:
    """Whether that kind of timed call's outputs were checked and right (False where they were not checked)."""
    check = report.post_timing_check.get(kind)
    return check.passed if check is not None else False


def _summarize_baselines(report: BenchmarkReport) -> None:
    timed = [b for b in report.baselines if b.median_us]
    median = report.solution.median_us
    if not timed or not median:
        return
    best = min(timed, key=lambda b: b.median_us)
    report.best_baseline = best.name
    report.speedup_vs_best_baseline = best.median_us / best.solution_us_beside(median)
    eager = next((b for b in timed if b.name == "eager"), None)
    report.speedup_vs_eager = None if eager is None else eager.median_us / eager.solution_us_beside(median)


def _place_on_roofline(report: BenchmarkReport) -> None:
    """The solution on every known roof, the physical floor it must not beat, and its % of ceiling.

    measure/placement.py says which roofs answer which question: true limits for the floor
    (datasheet and best measured), the best measured roofs for the % of ceiling (the datasheet
    where the solution beat them all); roofline.basis records the one used.
    """
    from kernel_opt.measure import placement
    from kernel_opt.measure.ceilings import MeasuredCeilings
    from kernel_opt.measure.datasheet import lookup_gpu

    time_us, work = report.solution.median_us, report.work
    traffic, flops, dtype = work.bytes, work.flops, work.dtype if work.has("dtype") else "float32"
    if not time_us or not traffic:
        return
    downgraded = _accepted_downgrades(report, dtype)
    if downgraded:
        report.notes.append(f"placed on the TF32 roofs: under KernelBench's tolerance the check accepted "
                            f"{', '.join(map(repr, downgraded))} computed at a lower precision than FP32")
    allow_tf32 = bool(report.precision.allow_tf32) or bool(downgraded)
    payload = report.roofline.measured_ceilings
    measured = MeasuredCeilings.from_dict(payload) if payload else None
    measured_roofs = measured.roofline_ceilings(dtype, allow_tf32) if measured else None
    if measured is None:
        report.notes.append(
            "no measured ceilings are cached for this GPU: run measure_ceilings.py once to compare against "
            "what this GPU really achieves (the datasheet's peaks are higher than any kernel reaches)"
        )
    sheet = lookup_gpu(report.gpu.name)
    sheet_roofs = placement.datasheet_roofs(sheet, dtype, allow_tf32)
    copy_bandwidth = report.copy_same_bytes.bandwidth_gbps if report.copy_same_bytes else None
    points, primary, reason, flops_set_aside = placement.place_on_roofs(flops, traffic, time_us, measured_roofs,
                                                                          sheet_roofs, copy_bandwidth)
    if flops_set_aside:
        report.notes.append(flops_set_aside)
    report.roofline.points = {name: RoofPoint.from_dict(point) for name, point in points.items()}
    bandwidths = {"measured copy": measured.memory_bandwidth_gbps if measured else None,
                  "same-size copy": copy_bandwidth}
    floor = placement.physical_floor(time_us, work.floor_flops(), traffic, dtype, sheet,
                                     {name: value for name, value in bandwidths.items() if value},
                                     measured.peak_tflops(dtype, allow_tf32) if measured else None)
    if floor is None:
        report.notes.append(f"no datasheet entry for {report.gpu.name!r}: whether this time is physically "
                            "possible was not checked (measured roofs are not limits)")
    else:
        floor.message = floor.invalid_message() if floor.beaten else None
        report.roofline.physical_floor = floor
    if primary is None:
        return
    report.roofline.primary, point = primary, report.roofline.points[primary]
    report.roofline.basis = placement.basis_record(primary, point, reason, measured.measured_at if measured else None)
    report.percent_of_ceiling = point.percent_of_ceiling
    # Faster than every roof measured on this GPU, it is placed against the datasheet's peaks (placement.choose_basis)
    # and can read under the target there: it is at the practical roof all the same, so the target is reached.
    beat_measured = primary == "datasheet" and any(source in points for source in placement.MEASURED_SOURCES)
    report.target_reached = report.percent_of_ceiling >= report.target_percent or beat_measured


def _accepted_downgrades(report: BenchmarkReport, dtype: str) -> list[str]:
    """The outputs of a float32 problem the check accepted at a lower precision (KernelBench's atol = rtol = 1e-2, the
    rounding probe showing rounded inputs): such a problem is placed on the TF32 roofs, since against the strict-FP32
    ones its kernel beats the counted FLOPs' roof and reads a few % of the memory roof alone."""
    gate = report.correctness
    downgrades = getattr(gate, "precision_downgrades", None)  # fields written only where set (UNSET otherwise)
    if dtype.removeprefix("torch.") != "float32" or getattr(gate, "kernelbench_tolerances", None) is not True:
        return []
    return list(downgrades) if isinstance(downgrades, list) else []


def _mark_invalid(report: BenchmarkReport) -> bool:
    """A time under the physical floor counts for nothing: verdict invalid, no %, no target, no win."""
    floor = report.roofline.physical_floor
    if not (floor and floor.beaten):
        return False
    report.verdict = "invalid"
    report.percent_of_ceiling = report.target_reached = None
    report.best_baseline = report.speedup_vs_eager = report.speedup_vs_best_baseline = None
    if report.comparison is not None:
        report.comparison.verdict = "failure"
    report.warnings.append(floor.message)
    return True


def exit_code_for(report: BenchmarkReport) -> int:
    """benchmark.py's exit code: 0 measured, 1 incorrect or invalid, else the error's (3 when it has none)."""
    fallback = report.error.code() if report.error else ExitCode.SOLUTION_FAULT
    return int({"measured": 0, "incorrect": 1, "invalid": 1}.get(report.verdict, fallback))
