"""Honest timing of a solution, its PyTorch baselines and another version, in the worker.

What makes the numbers trustworthy (issue 3):
- every timer flushes the L2 before each call and puts nothing but the call between its
  events: inputs are built once, nothing is cloned, allocated or synchronised in between;
- the solution is called once, its inputs are then refilled with fresh values, its outputs are
  poisoned before every timed call (outside the timed region, before the L2 flush), and the
  outputs of the last *timed* call are compared with the reference on the refilled inputs:
  a kernel that is only right on its first call, skips work on repeat calls, or returns
  results cached from earlier inputs fails here;
- baselines are the reference itself, eager and under torch.compile, timed by the same timer
  in the same precision (TF32 only where ref.py sets `allow_tf32 = True`), with compile and
  autotune time reported apart;
- two versions are compared interleaved (A B, B A, ...) in one process on the same inputs.

`run_benchmark` runs in the child process (see measure/benchmark_child.py) and reports through events;
`BenchmarkReport` and `assemble_report` turn those events into the record the CLI writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

DEFAULT_COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
DEFAULT_TARGET_PERCENT = 90.0  # of the binding roofline ceiling; the loop may stop there (issue 3)


# --- records -------------------------------------------------------------------------------


@dataclass
class TimedEntry:
    """One timed callable: the solution, another version, or a baseline."""

    name: str
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    min_us: float | None = None
    reps: int | None = None
    relative_spread: float | None = None
    compile_s: float | None = None  # torch.compile: first call, compile and autotune included
    error: str | None = None
    timing: dict[str, Any] | None = None  # TimingSamples.to_dict(): samples and method

    @classmethod
    def from_samples(cls, name: str, samples, **extra) -> "TimedEntry":
        return cls(
            name=name,
            median_us=samples.median_us,
            p20_us=samples.p20_us,
            p80_us=samples.p80_us,
            min_us=samples.min_us,
            reps=samples.reps,
            relative_spread=samples.relative_spread,
            timing=samples.to_dict(),
            **extra,
        )


@dataclass
class Comparison:
    """This solution against another version, timed interleaved."""

    against: str
    against_dir: str | None
    speedup: float  # median(other) / median(this): > 1 means this solution is faster
    ci_low: float
    ci_high: float
    confidence: float
    pairs: int
    this_median_us: float
    other_median_us: float
    verdict: str
    other_correct_after_timing: bool


@dataclass
class BenchmarkReport:
    solution: dict[str, Any]
    reference: str
    backend: str
    command: str
    dims: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    gpu: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)
    clocks_start: list[dict[str, Any]] = field(default_factory=list)
    clocks_end: list[dict[str, Any]] = field(default_factory=list)
    precision: dict[str, Any] = field(default_factory=dict)
    correctness: dict[str, Any] = field(default_factory=dict)
    post_timing_check: dict[str, Any] = field(default_factory=dict)
    cuda_graph: dict[str, Any] | None = None
    kernel_time: dict[str, Any] | None = None  # launch overhead removed, L2 flushed: comparable with ncu
    baselines: list[TimedEntry] = field(default_factory=list)
    best_baseline: str | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_best_baseline: float | None = None
    comparison: Comparison | None = None
    work: dict[str, Any] = field(default_factory=dict)
    roofline: dict[str, Any] = field(default_factory=dict)
    copy_same_bytes: dict[str, Any] | None = None  # ceilings.CopyCeiling of a copy moving the problem's bytes
    percent_of_ceiling: float | None = None
    target_percent: float = DEFAULT_TARGET_PERCENT
    target_reached: bool | None = None
    verdict: str = "not_run"  # "measured", "incorrect", "solution_error", "environment_error", "usage_error"
    error: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phases_s: dict[str, float] = field(default_factory=dict)  # where the command's wall time went

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- the parent side -----------------------------------------------------------------------


def phase_durations(events: list[dict[str, Any]], spawned: float, ended: float) -> dict[str, float]:
    """Seconds per worker phase, from the events' timestamps: where a benchmark's wall time went.

    "worker start" runs from spawning the child to its first event (interpreter, torch import);
    each phase lasts until the next one begins; the last lasts until the worker ended.
    """
    stamped = [event for event in events if isinstance(event.get("t"), (int, float))]
    if not stamped:
        return {}
    durations = {"worker start": round(stamped[0]["t"] - spawned, 2)}
    phases = [event for event in stamped if event["event"] == "phase"]
    for this, following in zip(phases, phases[1:] + [None]):
        end = following["t"] if following is not None else ended
        name = this["phase"]
        durations[name] = round(durations.get(name, 0.0) + end - this["t"], 2)
    return durations


def assemble_report(report: BenchmarkReport, outcome, against_label: str | None, against_dir: str | None) -> BenchmarkReport:
    """Fill the report from the worker's events; every derived number is computed here."""
    for event in outcome.events:
        kind = event["event"]
        if kind == "environment":
            info = event["info"]
            report.gpu = {**report.gpu, **(info.get("gpu") or {})}
            report.versions = {k: info.get(k) for k in ("python", "torch", "triton", "cuda")}
        elif kind == "precision":
            report.precision = {"allow_tf32": event["allow_tf32"], "note": event["note"]}
        elif kind == "problem":
            report.dims, report.dtypes, report.seed = event["dims"], event["dtypes"], event["seed"]
        elif kind == "work":
            report.work = {k: v for k, v in event.items() if k not in ("event", "t")}
        elif kind == "ceilings":
            report.roofline["measured_ceilings"] = event.get("measured")
            if event.get("error"):
                report.warnings.append(f"the cached ceilings could not be read: {event['error']}")
        elif kind == "timed":
            entry = TimedEntry(**event["entry"])
            if entry.name == "solution":
                report.solution.update({k: v for k, v in asdict(entry).items() if k not in ("name", "compile_s", "error")})
            else:
                report.baselines.append(entry)
        elif kind == "post_timing_check":
            report.post_timing_check[event["name"]] = {"passed": event["passed"], "outputs": event["outputs"]}
        elif kind == "cuda_graph":
            report.cuda_graph = event.get("entry") or {"error": event.get("error")}
        elif kind == "kernel_time":
            report.kernel_time = event.get("entry") or {"error": event.get("error")}
        elif kind == "copy_same_bytes":
            report.copy_same_bytes = event["copy"]
        elif kind == "interleaved":
            report.comparison = _comparison(event, report, against_label, against_dir)
        elif kind == "warning":
            report.warnings.append(event["text"])
        elif kind == "note":
            report.notes.append(event["text"])
    report.error = outcome.failure()
    if report.error is not None:
        report.verdict = {2: "usage_error", 4: "environment_error"}.get(report.error["exit_code"], "solution_error")
        return report
    if not all(check["passed"] for check in report.post_timing_check.values()):
        report.verdict = "incorrect"
        failed = [name for name, check in report.post_timing_check.items() if not check["passed"]]
        report.warnings.append(
            f"the outputs of the timed calls are wrong ({', '.join(failed)}): the kernel is right on its first call "
            "only, or returns results cached from earlier inputs; its timing is not valid"
        )
        return report
    report.verdict = "measured"
    _summarize_baselines(report)
    _place_on_roofline(report)
    return report


def _comparison(event, report: BenchmarkReport, against_label, against_dir) -> Comparison:
    from kernel_opt.measure.statistics import speedup_interval
    from kernel_opt.measure.verdicts import comparison_verdict

    this, other = event["this"]["samples_us"], event["other"]["samples_us"]
    interval = speedup_interval(other, this)  # baseline = the other version; > 1: this one is faster
    this_ok = report.post_timing_check.get("solution (interleaved)", {}).get("passed", False)
    other_ok = report.post_timing_check.get("against", {}).get("passed", False)
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


def _summarize_baselines(report: BenchmarkReport) -> None:
    timed = [b for b in report.baselines if b.median_us]
    median = report.solution.get("median_us")
    if not timed or not median:
        return
    best = min(timed, key=lambda b: b.median_us)
    report.best_baseline = best.name
    report.speedup_vs_best_baseline = best.median_us / median
    eager = next((b for b in timed if b.name == "eager"), None)
    report.speedup_vs_eager = None if eager is None else eager.median_us / median


def _place_on_roofline(report: BenchmarkReport) -> None:
    """Achieved rates against the measured ceilings, a copy of the same bytes, and the datasheet.

    The % of ceiling (the loop's target) comes from the stricter of the two measured memory
    roofs: the cached large-copy bandwidth or the same-size copy timed beside the solution.
    """
    from kernel_opt.measure import roofline
    from kernel_opt.measure.datasheet import lookup_gpu

    time_us = report.solution.get("median_us")
    traffic, flops, dtype = report.work.get("bytes"), report.work.get("flops"), report.work.get("dtype", "float32")
    if not time_us or not traffic:
        return
    allow_tf32 = bool(report.precision.get("allow_tf32"))
    points: dict[str, Any] = {}
    measured = report.roofline.get("measured_ceilings")
    measured_roofs = None
    if measured:
        from kernel_opt.measure.ceilings import MeasuredCeilings

        measured_roofs = MeasuredCeilings.from_dict(measured).roofline_ceilings(dtype, allow_tf32)
        if measured_roofs is not None:
            points["measured"] = roofline.roofline_point(flops, traffic, time_us, measured_roofs).to_dict()
    else:
        report.notes.append(
            "no measured ceilings are cached for this GPU: run measure_ceilings.py once to compare against "
            "what this GPU really achieves (the datasheet's peaks are higher than any kernel reaches)"
        )
    sheet = lookup_gpu(report.gpu.get("name"))
    sheet_roofs = None
    if sheet is not None and sheet.memory_bandwidth_gbps and sheet.peak_tflops(dtype, allow_tf32):
        sheet_roofs = roofline.Ceilings(sheet.memory_bandwidth_gbps, sheet.peak_tflops(dtype, allow_tf32),
                                        source=f"datasheet: {sheet.display_name}", dtype=dtype)
    copy = report.copy_same_bytes or {}
    compute_roofs = measured_roofs or sheet_roofs
    if copy.get("bandwidth_gbps") and compute_roofs is not None:
        same_size = roofline.Ceilings(copy["bandwidth_gbps"], compute_roofs.compute_tflops, source="copy of the same bytes",
                                      dtype=compute_roofs.dtype)
        points["same-size copy"] = roofline.roofline_point(flops, traffic, time_us, same_size).to_dict()
    if sheet_roofs is not None:
        points["datasheet"] = roofline.roofline_point(flops, traffic, time_us, sheet_roofs).to_dict()
    report.roofline["points"] = points
    candidates = [points[name] for name in ("measured", "same-size copy") if name in points] or list(points.values())
    if not candidates:
        return
    primary = min(candidates, key=lambda point: point["percent_of_ceiling"])
    report.roofline["primary"] = next(name for name, point in points.items() if point is primary)
    report.percent_of_ceiling = primary["percent_of_ceiling"]
    report.target_reached = report.percent_of_ceiling >= report.target_percent
    for source, point in points.items():
        if point["faster_than_floor"]:
            report.warnings.append(
                f"SUSPICIOUS: {time_us:.2f} us is faster than the physical floor of {point['floor_time_us']:.2f} us "
                f"({source} ceilings): the kernel skips work, the byte/FLOP count is wrong, or the timing is broken"
            )
