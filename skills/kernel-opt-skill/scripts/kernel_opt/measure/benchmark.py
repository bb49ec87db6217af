"""Honest timing of a solution, its PyTorch baselines and another version, in the worker.

What makes the numbers trustworthy:
- every timer flushes the L2 before each call and puts nothing but the call between its
  events: inputs are built once, nothing is cloned, allocated or synchronised in between;
- the solution is called once, then the timed calls rotate through a pool of input buffers and
  value sets (measure/input_pool.py): before every timed call (outside the timed region, before
  the L2 flush) fresh values are copied in and the outputs poisoned, and every buffer set's last
  outputs are compared with the reference for the values that call received: a kernel that is
  only right on its first call, skips work on repeat calls, or returns results cached by
  pointer, version or contents fails here or pays its true cost;
- baselines are the reference itself, eager and under torch.compile, timed by the same timer
  in the same precision (TF32 only where ref.py sets `allow_tf32 = True`), with compile and
  autotune time reported apart;
- two versions are compared interleaved (A B, B A, ...) in one process on the same inputs;
- a time under the physical floor from true limits is `invalid` (exit 1) and counts for nothing,
  and the % of ceiling names the basis it used (measure/placement.py).

`run_benchmark` runs in the child process (see measure/benchmark_child.py) and reports through events;
`assemble_report` turns those events into the record (measure/records.py) that `benchmark_solution`,
benchmark.py as a library call, writes and returns. `workspace.py evaluate` starts that child ahead,
beside its checks (`hold_benchmark_worker`): it prepares untimed and waits; `benchmark_solution`
releases it after the same correctness gate, telling it then what it would have read at its start.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_opt.check.correctness import (
    BuildOptions,
    CheckOptions,
    check_correctness,
    check_tolerance_options,
    exit_code_of,
)
from kernel_opt.check.integrity.verdict import correctness_failures
from kernel_opt.check.reuse import check_subject, reusable_check
from kernel_opt.core.cli import dim_arguments
from kernel_opt.core.errors import EnvironmentFault, ExitCode, KernelOptError, UsageError, failure_verdict
from kernel_opt.core.files import file_sha256
from kernel_opt.env.device import resolve_device
from kernel_opt.measure.benchmark_report import write_benchmark_reports
from kernel_opt.measure.records import DEFAULT_TARGET_PERCENT, BenchmarkReport, Comparison, TimedEntry
from kernel_opt.measure.reference_cache import ReferenceCache, baseline_names, reference_key, still_to_time, visible_gpu
from kernel_opt.run.events import (
    CeilingsEvent,
    CopySameBytesEvent,
    CudaGraphEvent,
    EnvironmentEvent,
    Event,
    InterleavedEvent,
    KernelTimeEvent,
    NoteEvent,
    PhaseEvent,
    PostTimingCheckEvent,
    PrecisionEvent,
    ProblemEvent,
    TimedEvent,
    WarningEvent,
    WorkEvent,
    dispatch,
)
from kernel_opt.run.release import WAITING_PHASE
from kernel_opt.run.request import BenchmarkPart, ChildRequest, Tolerances
from kernel_opt.solution import registry
from kernel_opt.solution.spec import solution_spec

if TYPE_CHECKING:
    from kernel_opt.run.runner import WorkerProcess

PROG = "benchmark.py"
DEFAULT_COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
DEFAULT_BASELINES = ("eager", "compile")
DEFAULT_SEED = 0
DEFAULT_CHECK_SEEDS = 3
DEFAULT_TIMEOUT_S = 900.0  # max-autotune compiles of a matmul baseline can take minutes
CHECK_TIMEOUT_CAP_S = 300.0  # the correctness check before timing runs no baselines: it needs less
PREPARE_WAIT_S = 300.0  # the longest evaluate waits for a held worker to prepare before measuring ceilings


@dataclass
class BenchmarkRequest:
    """What benchmark.py is asked to do, as typed options."""

    solution: Path
    reference: Path
    output_dir: Path
    dims: dict[str, Any] = field(default_factory=dict)
    against: Path | None = None
    baselines: list[str] = field(default_factory=lambda: list(DEFAULT_BASELINES))
    compile_modes: list[str] = field(default_factory=lambda: list(DEFAULT_COMPILE_MODES))
    backend: str = "auto"
    seed: int = DEFAULT_SEED
    check_seeds: int = DEFAULT_CHECK_SEEDS  # seeds of the correctness check run first
    atol: float | None = None
    rtol: float | None = None
    target_percent: float = DEFAULT_TARGET_PERCENT
    timeout_s: float = DEFAULT_TIMEOUT_S
    build: BuildOptions = field(default_factory=BuildOptions)
    checked_by: Path | None = None  # a correctness.json to rely on instead of the gate's check (check/reuse.py)
    reference_cache: Path | None = None  # a run's reference_cache.json: reuse baselines and work measured there
    kernelbench_tolerances: bool = False  # outputs judged at KernelBench's atol = rtol = 1e-2 (check/tolerance.py)

    def argv(self) -> list[str]:
        """The same request as benchmark.py's arguments; the loop's choices are always spelled out."""
        arguments = [str(self.solution), "--ref", str(self.reference), "--output-dir", str(self.output_dir),
                     *self.build.arguments(), "--target-percent", f"{self.target_percent:g}",
                     "--baseline", ",".join(self.baselines) or "none", "--compile-modes", ",".join(self.compile_modes),
                     "--seeds", str(self.check_seeds)]
        arguments += [] if self.against is None else ["--against", str(self.against)]
        arguments += [] if self.backend == "auto" else ["--backend", self.backend]
        arguments += [] if self.seed == DEFAULT_SEED else ["--seed", str(self.seed)]
        arguments += [] if self.atol is None else ["--atol", str(self.atol)]
        arguments += [] if self.rtol is None else ["--rtol", str(self.rtol)]
        arguments += ["--kernelbench-tolerances"] if self.kernelbench_tolerances else []
        arguments += [] if self.timeout_s == DEFAULT_TIMEOUT_S else ["--timeout", str(self.timeout_s)]
        arguments += [] if self.checked_by is None else ["--checked-by", str(self.checked_by)]
        arguments += [] if self.reference_cache is None else ["--reference-cache", str(self.reference_cache)]
        return arguments + dim_arguments(self.dims)


def benchmark_solution(request: BenchmarkRequest, command: str | None = None,
                       held: HeldBenchmarkWorker | None = None) -> BenchmarkReport:
    """Check, then time a solution as benchmark.py does; write DIR/benchmark.json and .md; return the record.

    Bad options raise UsageError (exit 2), a machine without a GPU EnvironmentFault (exit 4);
    everything that happens to the solution is in the record, with its exit code. `held` is this
    request's worker from hold_benchmark_worker: released once the correctness gate has passed,
    and stopped here whatever happens (the record is the one a worker started now would give).
    """
    try:
        return _check_then_time(request, command, held)
    finally:
        if held is not None:
            held.stop()


def _check_then_time(request: BenchmarkRequest, command: str | None,
                     held: HeldBenchmarkWorker | None) -> BenchmarkReport:
    solution, reference = _validated(request)
    backend = registry.detect(solution, request.backend)
    if resolve_device("auto") != "cuda":
        raise EnvironmentFault(
            "the benchmark times kernels on an NVIDIA GPU and torch sees none on this machine; "
            "here you can run correctness_check.py (Triton interpreter, or --compile-only for CUDA)"
        )
    command = command or f"{PROG} {shlex.join(request.argv())}"
    report = BenchmarkReport(solution={"path": str(request.solution), "backend": backend},
                             reference=str(request.reference), backend=backend, command=command,
                             target_percent=request.target_percent)
    if _check_first(report, request, solution, reference):
        try:
            _time_in_worker(report, request, solution, reference, held)
        except KernelOptError as error:
            report.error = error.to_dict()
            report.verdict = failure_verdict(error.exit_code)
        report.exit_code = exit_code_for(report)
    write_benchmark_reports(report, request.output_dir)
    return report


@dataclass(eq=False)
class HeldBenchmarkWorker:
    """A benchmark worker started ahead (hold_benchmark_worker): preparing, then waiting to be released."""

    request: BenchmarkRequest
    subject: dict[str, str | None]  # sha256 of the files it loaded, read before it started
    planned: BenchmarkReport  # what planning noted (build, notes, warnings): moved into the record at release
    plan: WorkerPlan
    worker: WorkerProcess

    def serves(self, request: BenchmarkRequest, solution: Path, reference: Path) -> bool:
        """Whether it may time this request: started for it and these very files, and still running.

        An edit since it loaded the files, or a worker that ended while held (an error, or memory
        the checks beside it took), means a fresh worker: the record is always one a worker started
        after the checks would give.
        """
        return (request == self.request and _files_sha256(request, solution, reference) == self.subject
                and self.worker.alive())

    def wait_until_prepared(self, timeout_s: float = PREPARE_WAIT_S) -> bool:
        """Block until it waits for its release (or ended, or `timeout_s` passed); whether it is waiting.

        Its preparation puts work on the GPU (the instance's inputs, the work count): evaluate waits for
        it before the GPU's ceilings are measured, which must have the GPU to themselves.
        """
        return self.worker.wait_for_phase(WAITING_PHASE, timeout_s)

    def stop(self) -> None:
        """End it unless it already ended; nothing of it is recorded. Safe to call again."""
        self.worker.stop()


def hold_benchmark_worker(request: BenchmarkRequest) -> HeldBenchmarkWorker | None:
    """Start this request's worker now, to prepare while `workspace.py evaluate`'s checks run; None where it cannot.

    It starts Python and torch, loads the reference, the solution and --against, builds the
    problem instance and counts its work unless the run's cache holds it; then it waits, timing
    nothing, until benchmark_solution(request, held=...) releases it after its correctness gate.
    Whatever fails here fails again, in its usual place and record, when benchmark_solution starts
    a worker itself: a failure only loses the head start.
    """
    from kernel_opt.run.runner import WorkerProcess

    try:
        solution, reference = _validated(request)
        backend = registry.detect(solution, request.backend)
        if resolve_device("auto") != "cuda":
            return None
        subject = _files_sha256(request, solution, reference)
        planned = BenchmarkReport(solution={}, reference=str(request.reference), backend=backend, command="")
        plan = _plan_worker(planned, request, solution, reference)
        worker = WorkerProcess(plan.request.with_part(wait_for_release=True), held=True)
    except (KernelOptError, OSError):
        return None
    return HeldBenchmarkWorker(request, subject, planned, plan, worker)


def _files_sha256(request: BenchmarkRequest, solution: Path, reference: Path) -> dict[str, str | None]:
    files = {"solution": solution, "reference": reference, "against": request.against}
    return {role: file_sha256(Path(path)) if path is not None else None for role, path in files.items()}


def _validated(request: BenchmarkRequest) -> tuple[Path, Path]:
    unknown = set(request.baselines) - set(DEFAULT_BASELINES)
    if unknown:
        raise UsageError(f"unknown --baseline {sorted(unknown)}; use eager, compile, eager,compile or none")
    if not 0 < request.target_percent <= 100:
        raise UsageError("--target-percent must be in (0, 100]")
    check_tolerance_options(request.atol, request.rtol, request.kernelbench_tolerances)
    solution, reference = request.solution.resolve(), request.reference.resolve()
    for path, role in ((solution, "solution"), (reference, "reference"), (request.against, "--against")):
        if path is not None and not Path(path).is_file():
            raise UsageError(f"{role} file not found: {path}")
    return solution, reference


def _check_first(report: BenchmarkReport, request: BenchmarkRequest, solution: Path, reference: Path) -> bool:
    """The same correctness check as correctness_check.py, or its record where --checked-by allows; False (and
    the record final) when it fails."""
    started = time.time()
    correctness = None
    if request.checked_by is not None and request.atol is None and request.rtol is None:
        correctness, reason = reusable_check(request.checked_by, check_subject(solution, reference, request.build),
                                             request.dims, request.kernelbench_tolerances)
        report.notes.append(f"correctness check: {reason}" if correctness is not None
                            else f"correctness check run again: {reason}")
    if correctness is None:
        correctness = check_correctness(solution, reference, report.backend, "cuda", request.dims,
                                        CheckOptions(request.check_seeds, request.atol, request.rtol,
                                                     min(request.timeout_s, CHECK_TIMEOUT_CAP_S),
                                                     kernelbench_tolerances=request.kernelbench_tolerances),
                                        request.build, request.output_dir / "build", report.command)
    report.correctness = {
        "passed": correctness.passed,
        "verdict": correctness.verdict,
        "cases": len(correctness.cases),
        "failures": correctness_failures(correctness)[:5],
        "error": correctness.error,
        "launches": correctness.integrity.get("launches"),  # what the checked call ran on the GPU: in benchmark.md
    }
    if correctness.kernelbench_tolerances or correctness.precision_downgrades:
        report.correctness.update(kernelbench_tolerances=correctness.kernelbench_tolerances,
                                  precision_downgrades=correctness.precision_downgrades)
    report.warnings += correctness.warnings
    report.phases_s["correctness check"] = round(time.time() - started, 2)
    if correctness.passed:
        return True
    report.verdict = "incorrect" if correctness.verdict == "fail" else correctness.verdict
    report.error = correctness.error
    report.exit_code = exit_code_of(correctness)
    return False


@dataclass
class WorkerPlan:
    """What the parent settles before the worker starts: its request, and what the run's cache held then."""

    request: ChildRequest | None = None  # the worker's request, less what it is told when released (_release_fields)
    cache: ReferenceCache | None = None
    key: dict[str, Any] | None = None
    work: tuple[dict[str, Any], str] | None = None  # counted by an earlier version (ReferenceCache.work)


def _plan_worker(report: BenchmarkReport, request: BenchmarkRequest, solution: Path, reference: Path) -> WorkerPlan:
    """Build the solution (and --against) and read the run's cached work: the worker's request.

    Notes, warnings, the build and the clocks go to `report` (for a held worker, a scratch record
    whose clocks are read again at its release).
    """
    from kernel_opt.env.probes import probe_nvidia_smi

    build_dir = request.output_dir / "build"
    spec, build_record = solution_spec(solution, report.backend, "cuda", build_dir, request.build, report.notes)
    if build_record:
        report.solution["build"] = {k: build_record[k] for k in ("arch", "kernels", "signature") if k in build_record}
    report.warnings += registry.get(report.backend).source_warnings(solution)
    against_spec = None
    if request.against is not None:
        other = request.against.resolve()
        against_spec, _ = solution_spec(other, registry.detect(other), "cuda", build_dir, request.build, report.notes)
    smi = probe_nvidia_smi()
    report.clocks_start = [asdict(gpu) for gpu in smi.gpus]
    plan = WorkerPlan()
    if request.reference_cache is not None:
        plan.cache = ReferenceCache(request.reference_cache)
        plan.key = reference_key(reference, request.dims, request.seed, visible_gpu(smi.gpus))
        plan.work = plan.cache.work(plan.key)
    part = BenchmarkPart(request.seed, Tolerances(request.atol, request.rtol, request.kernelbench_tolerances),
                         against_spec, None if plan.work is None else {**plan.work[0], "cached_from": plan.work[1]},
                         _compiles_a_baseline(request, plan))
    plan.request = ChildRequest(spec, str(reference), "cuda", request.dims, part)
    return plan


def _compiles_a_baseline(request: BenchmarkRequest, plan: WorkerPlan) -> bool:
    """Whether the worker will compile a torch.compile baseline (not all cached yet): a held worker then pays
    torch.compile's one-off start while it waits (benchmark_child._warm_up_compiler)."""
    _, kinds, modes = _baselines_to_time(request, plan)
    return "compile" in kinds and bool(modes)


def _baselines_to_time(request: BenchmarkRequest, plan: WorkerPlan) -> tuple[list[TimedEntry], list[str], list[str]]:
    """The run's cached baselines for this request, read now, and the kinds and compile modes still to time."""
    kinds, modes = list(request.baselines), list(request.compile_modes)
    if plan.cache is None:
        return [], kinds, modes
    cached = plan.cache.baselines(plan.key, baseline_names(kinds, modes))
    return (cached, *still_to_time(kinds, modes, cached))


def _release_fields(report: BenchmarkReport, request: BenchmarkRequest, plan: WorkerPlan) -> dict[str, Any]:
    """What the worker is told when it may time: the baselines still to time once those in the run's cache,
    read now, are reused (they fill report.baselines)."""
    cached, kinds, modes = _baselines_to_time(request, plan)
    if plan.cache is not None:
        report.baselines = cached
    return {"baselines": kinds, "compile_modes": modes}


def _time_in_worker(report: BenchmarkReport, request: BenchmarkRequest, solution: Path, reference: Path,
                    held: HeldBenchmarkWorker | None = None) -> None:
    """Build, time in the child process (the held one, where it still serves this request), fill the record."""
    from kernel_opt.env.probes import probe_nvidia_smi
    from kernel_opt.run.runner import run_worker

    if held is not None and not held.serves(request, solution, reference):
        held.stop()
        held = None
    if held is None:
        plan = _plan_worker(report, request, solution, reference)
    else:
        plan = held.plan
        report.notes += held.planned.notes
        report.warnings += held.planned.warnings
        report.solution.update(held.planned.solution)
        report.clocks_start = [asdict(gpu) for gpu in probe_nvidia_smi().gpus]  # now, just before timing
    release = _release_fields(report, request, plan)
    if held is None:
        spawned = time.time()
        outcome = run_worker(plan.request.released(release), timeout_s=request.timeout_s)
    else:
        spawned = held.worker.spawned
        held.worker.release(release)
        outcome = held.worker.watch(request.timeout_s)
    report.phases_s.update(phase_durations(outcome.events, spawned, time.time()))
    report.clocks_end = [asdict(gpu) for gpu in probe_nvidia_smi().gpus]
    against_dir = str(request.against.parent) if request.against is not None else None
    assemble_report(report, outcome, str(request.against) if request.against else None, against_dir)
    if plan.cache is not None:
        counted = {k: v for k, v in report.work.items() if k != "cached_from"} if plan.work is None else None
        plan.cache.remember(plan.key, report.baselines, counted, by=f"{request.output_dir.name} ({PROG})")
        order = baseline_names(request.baselines, request.compile_modes)
        report.baselines.sort(key=lambda entry: order.index(entry.name) if entry.name in order else len(order))


# --- the worker's events -> the record -------------------------------------------------------------


def phase_durations(events: list[Event], spawned: float, ended: float) -> dict[str, float]:
    """Seconds per worker phase, from the events' timestamps: where a benchmark's wall time went.

    "worker start" runs from spawning the child to its first event (interpreter, torch import);
    each phase lasts until the next one begins; the last lasts until the worker ended.
    """
    stamped = [event for event in events if isinstance(event.t, (int, float))]
    if not stamped:
        return {}
    durations = {"worker start": round(stamped[0].t - spawned, 2)}
    phases = [event for event in stamped if isinstance(event, PhaseEvent)]
    for this, following in zip(phases, phases[1:] + [None], strict=False):  # phases may be empty: then None is unpaired
        end = following.t if following is not None else ended
        durations[this.phase] = round(durations.get(this.phase, 0.0) + end - this.t, 2)
    return durations


def _environment(report: BenchmarkReport, event: EnvironmentEvent) -> None:
    report.gpu = {**report.gpu, **(event.info.get("gpu") or {})}
    report.versions = {k: event.info.get(k) for k in ("python", "torch", "triton", "cuda")}


def _problem(report: BenchmarkReport, event: ProblemEvent) -> None:
    report.dims, report.dtypes, report.seed = event.dims, event.dtypes, event.seed


def _ceilings(report: BenchmarkReport, event: CeilingsEvent) -> None:
    report.roofline["measured_ceilings"] = event.measured
    if event.error:
        report.warnings.append(f"the cached ceilings could not be read: {event.error}")


def _timed(report: BenchmarkReport, event: TimedEvent) -> None:
    entry = TimedEntry.from_dict(event.entry)
    if entry.name == "solution":
        report.solution.update({k: v for k, v in entry.to_dict().items() if k not in ("name", "compile_s", "error")})
    else:
        report.baselines.append(entry)


def _post_timing_check(report: BenchmarkReport, event: PostTimingCheckEvent) -> None:
    report.post_timing_check[event.name] = {"passed": event.passed, "outputs": event.outputs}


def _precision(report: BenchmarkReport, event: PrecisionEvent) -> None:
    report.precision = {"allow_tf32": event.allow_tf32, "note": event.note}


def _work(report: BenchmarkReport, event: WorkEvent) -> None:
    report.work = dict(event.work)


def _cuda_graph(report: BenchmarkReport, event: CudaGraphEvent) -> None:
    report.cuda_graph = event.entry or {"error": event.error}


def _kernel_time(report: BenchmarkReport, event: KernelTimeEvent) -> None:
    report.kernel_time = event.entry or {"error": event.error}


def _copy_same_bytes(report: BenchmarkReport, event: CopySameBytesEvent) -> None:
    report.copy_same_bytes = event.copy


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
}


def assemble_report(report: BenchmarkReport, outcome, against_label: str | None,
                    against_dir: str | None) -> BenchmarkReport:
    """Fill the report from the worker's events; every derived number is computed here."""
    def interleaved(record: BenchmarkReport, event: InterleavedEvent) -> None:
        record.comparison = _comparison(event, record, against_label, against_dir)

    dispatch(outcome.events, {**_HANDLERS, InterleavedEvent: interleaved}, report)
    report.error = outcome.failure()
    if report.error is not None:
        report.verdict = failure_verdict(report.error["exit_code"])
        return report
    if not all(check["passed"] for check in report.post_timing_check.values()):
        from kernel_opt.measure.timed_outputs import wrong_timed_outputs_text

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
    """The solution on every known roof, the physical floor it must not beat, and its % of ceiling.

    measure/placement.py says which roofs answer which question: true limits for the floor
    (datasheet and best measured), the best measured roofs for the % of ceiling (the datasheet
    where the solution beat them all); roofline["basis"] records the one used.
    """
    from kernel_opt.measure import placement
    from kernel_opt.measure.ceilings import MeasuredCeilings
    from kernel_opt.measure.datasheet import lookup_gpu

    time_us = report.solution.get("median_us")
    traffic, flops, dtype = report.work.get("bytes"), report.work.get("flops"), report.work.get("dtype", "float32")
    if not time_us or not traffic:
        return
    allow_tf32 = bool(report.precision.get("allow_tf32"))
    payload = report.roofline.get("measured_ceilings")
    measured = MeasuredCeilings.from_dict(payload) if payload else None
    measured_roofs = measured.roofline_ceilings(dtype, allow_tf32) if measured else None
    if measured is None:
        report.notes.append(
            "no measured ceilings are cached for this GPU: run measure_ceilings.py once to compare against "
            "what this GPU really achieves (the datasheet's peaks are higher than any kernel reaches)"
        )
    sheet = lookup_gpu(report.gpu.get("name"))
    sheet_roofs = placement.datasheet_roofs(sheet, dtype, allow_tf32)
    copy_bandwidth = (report.copy_same_bytes or {}).get("bandwidth_gbps")
    points = placement.roofline_points(flops, traffic, time_us, measured_roofs, sheet_roofs, copy_bandwidth)
    report.roofline["points"] = points
    bandwidths = {"measured copy": measured.memory_bandwidth_gbps if measured else None,
                  "same-size copy": copy_bandwidth}
    floor = placement.physical_floor(time_us, placement.floor_flops(report.work), traffic, dtype, sheet,
                                     {name: value for name, value in bandwidths.items() if value},
                                     measured.peak_tflops(dtype, allow_tf32) if measured else None)
    if floor is None:
        report.notes.append(f"no datasheet entry for {report.gpu.get('name')!r}: whether this time is physically "
                            "possible was not checked (measured roofs are not limits)")
    else:
        report.roofline["physical_floor"] = {**floor.to_dict(), "message": floor.message() if floor.beaten else None}
    primary, reason = placement.choose_basis(points)
    if primary is None:
        return
    report.roofline["primary"] = primary
    report.roofline["basis"] = placement.basis_record(primary, points[primary], reason,
                                                      measured.measured_at if measured else None)
    report.percent_of_ceiling = points[primary]["percent_of_ceiling"]
    report.target_reached = report.percent_of_ceiling >= report.target_percent


def _mark_invalid(report: BenchmarkReport) -> bool:
    """A time under the physical floor counts for nothing: verdict invalid, no %, no target, no win."""
    floor = report.roofline.get("physical_floor") or {}
    if not floor.get("beaten"):
        return False
    report.verdict = "invalid"
    report.percent_of_ceiling = report.target_reached = None
    report.best_baseline = report.speedup_vs_eager = report.speedup_vs_best_baseline = None
    if report.comparison is not None:
        report.comparison.verdict = "failure"
    report.warnings.append(floor["message"])
    return True


def exit_code_for(report: BenchmarkReport) -> int:
    """benchmark.py's exit code: 0 measured, 1 incorrect or invalid, else the error's (3 when it has none)."""
    fallback = (report.error or {}).get("exit_code", ExitCode.SOLUTION_FAULT)
    return int({"measured": 0, "incorrect": 1, "invalid": 1}.get(report.verdict, fallback))
