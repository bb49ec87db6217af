"""The sweep's record computed from what was recorded: the correctness check, the child's events, the frame.

Pure functions (no GPU, no nsight-python): every verdict of the sweep is made here and tested
with records built by hand. A size is profiled only after the correctness check passed it;
the numbers of a profiled size come from nsight-python's frame, the work counts the profiled
program reported (the benchmark's: ref.py's flops()/bytes(), else counted), and the same
ceilings the benchmark places a solution under (measure/placement.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel_opt.check.integrity.verdict import summarize_failures
from kernel_opt.check.records import CorrectnessReport
from kernel_opt.core.errors import ExitCode, failure_verdict
from kernel_opt.measure import placement
from kernel_opt.measure.ceilings import MeasuredCeilings
from kernel_opt.measure.datasheet import GpuDatasheet, lookup_gpu
from kernel_opt.measure.roofline_records import Work
from kernel_opt.profile.sweep.frame import AnnotationFrame
from kernel_opt.profile.sweep.plan import (
    COPY_ANNOTATION,
    DRAM_METRICS,
    REFERENCE_ANNOTATION,
    SIZE_PHASE,
    SOLUTION_ANNOTATION,
    TIME_METRIC,
    SweepPlan,
)
from kernel_opt.profile.sweep.records import Measurement, SweepPoint
from kernel_opt.run.events import (
    EnvironmentEvent,
    ErrorEvent,
    Event,
    PhaseEvent,
    SweepOutcomeEvent,
    SweepSizeEvent,
)

NO_SOLUTION_KERNEL = (
    "no kernel ran inside the solution's annotation: a solution must launch its kernels on every call "
    "(no caching of results)"
)


@dataclass(frozen=True)
class SizeCheck:
    """What the correctness check said about one size."""

    passed: bool
    status: str  # "profiled" (passed: to be profiled), "incorrect", "solution_error", "not_checked", ...
    exit_code: int
    message: str | None = None


def checked_sizes(report: CorrectnessReport | None, plan: SweepPlan) -> dict[int, SizeCheck]:
    """Each size's correctness, from the sweep's check (its cases are exactly the sweep's sizes, seed 0).

    The check runs the sizes in order and stops at an error (a crash, a compile error): that error
    belongs to the first size without a result, and the sizes after it were never checked.
    """
    checks: dict[int, SizeCheck] = {}
    for case in report.cases if report else []:
        value = case.dims.get(plan.name)
        if value not in plan.values or value in checks:
            continue
        if case.passed:
            checks[value] = SizeCheck(True, "profiled", int(ExitCode.OK))
        else:
            reasons = "; ".join(summarize_failures([case])) or "the outputs do not match the reference"
            checks[value] = SizeCheck(False, "incorrect", int(ExitCode.CHECK_FAILED), f"wrong results: {reasons}")
    error = report.error if report else None
    stopped = False
    for value in plan.values:
        if value in checks:
            continue
        if error and not stopped:
            code = error.code()
            checks[value] = SizeCheck(False, failure_verdict(code), code,
                                      f"the correctness check failed here: {error.message}")
            stopped = True
        else:
            code = error.code() if error else int(ExitCode.SOLUTION_FAULT)
            checks[value] = SizeCheck(False, "not_checked", code,
                                      "not checked: the correctness check stopped at an earlier size")
    return checks


def size_segments(events: list[Event], dim: str) -> dict[int, list[Event]]:
    """The child's events per size: each size's run from its `sweep_size` phase to the next one.

    Sizes run one after another (one ncu process each), so what the profiled program reported
    about a size lies between its phase and the next size's.
    """
    segments: dict[int, list[Event]] = {}
    current: list[Event] | None = None
    for event in events:
        if isinstance(event, PhaseEvent) and event.phase == SIZE_PHASE and event.dims and dim in event.dims:
            current = segments.setdefault(event.dims[dim], [])
            continue
        if current is not None:
            current.append(event)
    return segments


def first_event(events: list[Event], kind: type[Event]) -> Any:
    return next((event for event in events if isinstance(event, kind)), None)


def gpu_name(events: list[Event]) -> str | None:
    """The GPU the profiled program ran on, as torch names it (the datasheet and the ceilings cache are keyed on it)."""
    environment = first_event(events, EnvironmentEvent)
    return ((environment.info if environment else {}).get("gpu") or {}).get("name")


@dataclass(frozen=True)
class Roofs:
    """The ceilings a sweep is placed under: the GPU's cached measured ones and its datasheet entry."""

    measured: MeasuredCeilings | None
    sheet: GpuDatasheet | None

    @classmethod
    def for_gpu(cls, gpu: str | None, measured: MeasuredCeilings | None,
                lookup: Callable[[str | None], GpuDatasheet | None] = lookup_gpu) -> Roofs:
        return cls(measured, lookup(gpu))

    def described(self, dtype: str, allow_tf32: bool) -> list[dict[str, Any]]:
        """The roofs for one dtype, as the record lists them."""
        measured = self.measured.roofline_ceilings(dtype, allow_tf32) if self.measured else None
        sheet = placement.datasheet_roofs(self.sheet, dtype, allow_tf32)
        return [{"basis": basis, **roofs.to_dict()} for basis, roofs in (("measured", measured), ("datasheet", sheet))
                if roofs is not None]


def measure(frame: AnnotationFrame | None, work: dict[str, Any], roofs: Roofs,
            copy_bandwidth_gbps: float | None = None) -> Measurement | None:
    """One annotation's numbers: nsight-python's statistics (ns -> us), the rates, and its % of ceiling.

    `copy_bandwidth_gbps`: the same-size copy's rate at this size (plan.COPY_ANNOTATION), a roof of its own.
    """
    if frame is None or TIME_METRIC not in frame.metrics or frame.metrics[TIME_METRIC].mean is None:
        return None
    time = frame.metrics[TIME_METRIC]

    def microseconds(value: float | None) -> float | None:
        return None if value is None else value / 1e3

    dram = [frame.metrics[name].mean for name in DRAM_METRICS if name in frame.metrics]
    dram_bytes = sum(dram) if dram and None not in dram else None
    measurement = Measurement(
        time_us=microseconds(time.mean), time_min_us=microseconds(time.minimum),
        time_max_us=microseconds(time.maximum), time_stddev_us=microseconds(time.stddev), runs=time.runs,
        stable=time.stable, dram_bytes=dram_bytes, kernels=list(frame.kernels),
    )
    seconds = measurement.time_us / 1e6
    if seconds <= 0:
        return measurement
    if dram_bytes is not None:
        measurement.dram_bandwidth_gbps = dram_bytes / seconds / 1e9
    _place(measurement, work, roofs, copy_bandwidth_gbps)
    return measurement


def copy_bandwidth(frame: AnnotationFrame | None, work: dict[str, Any]) -> float | None:
    """The same-size copy's rate: the problem's minimum bytes over the copy's time, in GB/s (None: no copy ran)."""
    traffic = work.get("bytes")
    if not traffic or frame is None or TIME_METRIC not in frame.metrics or not frame.metrics[TIME_METRIC].mean:
        return None
    return traffic / (frame.metrics[TIME_METRIC].mean / 1e9) / 1e9


def _place(measurement: Measurement, work: dict[str, Any], roofs: Roofs, copy_gbps: float | None) -> None:
    """The rates from the counted work, the % of ceiling on the benchmark's basis, and the physical floor."""
    traffic, flops = work.get("bytes"), work.get("flops")
    dtype, allow_tf32 = work.get("dtype") or "float32", bool(work.get("allow_tf32"))
    seconds = measurement.time_us / 1e6
    if traffic:
        measurement.achieved_bandwidth_gbps = traffic / seconds / 1e9
    if flops:
        measurement.achieved_tflops = flops / seconds / 1e12
    if not traffic:
        return
    measured = roofs.measured.roofline_ceilings(dtype, allow_tf32) if roofs.measured else None
    points, basis, _, _ = placement.place_on_roofs(flops, traffic, measurement.time_us, measured,
                                                   placement.datasheet_roofs(roofs.sheet, dtype, allow_tf32), copy_gbps)
    if basis is not None:
        measurement.percent_of_ceiling = points[basis]["percent_of_ceiling"]
        measurement.ceiling_basis, measurement.bound = basis, points[basis]["bound"]
        measurement.compute_roof = placement.compute_roof(points, basis)
    bandwidths = {"measured copy": roofs.measured.memory_bandwidth_gbps if roofs.measured else None,
                  "same-size copy": copy_gbps}
    floor = placement.physical_floor(
        measurement.time_us, Work.from_dict(work).floor_flops(), traffic, dtype, roofs.sheet,
        {name: value for name, value in bandwidths.items() if value},
        roofs.measured.peak_tflops(dtype, allow_tf32) if roofs.measured else None)
    if floor is not None and floor.beaten:
        measurement.below_floor, measurement.floor_message = True, floor.invalid_message()
        measurement.percent_of_ceiling = None


def _profile_failure(segment: list[Event], outcome: SweepOutcomeEvent | None,
                     child_failure: dict[str, Any] | None) -> tuple[str, int, str] | None:
    """(status, exit code, message) of a size whose profile did not come back; None when it did."""
    if outcome is not None and outcome.profiled:
        return None
    error = first_event(segment, ErrorEvent)
    if error is not None:  # the profiled program said what went wrong
        return failure_verdict(error.exit_code), error.exit_code, f"the profiled program failed: {error.message}"
    if outcome is not None:  # nsight-python or ncu failed without the program reporting anything
        return "profile_failed", int(ExitCode.ENVIRONMENT_FAULT), f"nsight-python could not profile it: {outcome.error}"
    if child_failure is not None:
        return "profile_failed", int(child_failure.get("exit_code", ExitCode.SOLUTION_FAULT)), (
            f"the sweep's process stopped before this size was profiled: {child_failure.get('message')}")
    return "profile_failed", int(ExitCode.ENVIRONMENT_FAULT), "the sweep's process reported nothing about this size"


def build_points(plan: SweepPlan, checks: dict[int, SizeCheck], events: list[Event],
                 frames: dict[tuple[str, int], AnnotationFrame], roofs: Roofs,
                 child_failure: dict[str, Any] | None = None) -> list[SweepPoint]:
    """Every size of the plan, in order, with its status, exit code and measurements."""
    segments = size_segments(events, plan.name)
    outcomes = {event.value: event for event in events if isinstance(event, SweepOutcomeEvent)}
    points = []
    for value in plan.values:
        check = checks[value]
        point = SweepPoint(value=value, dims=plan.dims_at(value), status=check.status, exit_code=check.exit_code,
                           message=check.message)
        points.append(point)
        if not check.passed:
            continue
        segment = segments.get(value, [])
        size = first_event(segment, SweepSizeEvent)
        if size is not None:
            point.dims, point.work = dict(size.dims), dict(size.work)
        failure = _profile_failure(segment, outcomes.get(value), child_failure)
        if failure is not None:
            point.status, point.exit_code, point.message = failure
            continue
        point.copy_bandwidth_gbps = copy_bandwidth(frames.get((COPY_ANNOTATION, value)), point.work)
        point.solution = measure(frames.get((SOLUTION_ANNOTATION, value)), point.work, roofs, point.copy_bandwidth_gbps)
        point.reference = measure(frames.get((REFERENCE_ANNOTATION, value)), point.work, roofs,
                                  point.copy_bandwidth_gbps)
        _judge(point)
    return points


def _judge(point: SweepPoint) -> None:
    """A profiled size's status: no solution kernel (its fault), a time under the floor (invalid), or profiled."""
    solution, reference = point.solution, point.reference
    if solution is None or solution.time_us is None:
        point.status, point.exit_code = "profile_failed", int(ExitCode.SOLUTION_FAULT)
        point.message = NO_SOLUTION_KERNEL
        return
    if solution.below_floor:
        point.status, point.exit_code, point.message = "invalid", int(ExitCode.CHECK_FAILED), solution.floor_message
        return
    point.status, point.exit_code = "profiled", int(ExitCode.OK)
    if reference is None or not reference.time_us:
        point.message = "the reference launched no GPU kernel inside its annotation: no PyTorch time at this size"
        return
    point.speedup_vs_reference = reference.time_us / solution.time_us


def sweep_verdict(points: list[SweepPoint]) -> tuple[str, int]:
    """profiled (every size), partial (some) or failed (none); the exit code is the worst size's.

    Worst is the highest code: this machine (4) before the solution (3) before a failed check (1).
    """
    profiled = sum(point.status == "profiled" for point in points)
    verdict = "profiled" if points and profiled == len(points) else "partial" if profiled else "failed"
    return verdict, max((point.exit_code for point in points), default=int(ExitCode.OK))


def chart_rate(points: list[SweepPoint]) -> str:
    """The achieved rate worth charting: FLOP/s where the solution is compute-bound at most sizes, else bandwidth."""
    bounds = [point.solution.bound for point in points if point.charted and point.solution.bound]
    computes = sum(bound == "compute" for bound in bounds)
    return "flops" if bounds and computes * 2 > len(bounds) else "bandwidth"
