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

`benchmark_solution` is benchmark.py as a library call: the request (measure/benchmark_request.py),
the correctness gate, then the worker: planned in the parent (measure/worker_plan.py), run in the
child process (measure/benchmark_child.py), or started ahead beside evaluate's checks and released
here (measure/held_worker.py); its events become the record (measure/benchmark_assembly.py,
measure/records.py), which is written and returned.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

from kernel_opt.check.correctness import CheckOptions, check_correctness, exit_code_of
from kernel_opt.check.integrity.verdict import correctness_failures
from kernel_opt.check.reuse import check_subject, reusable_check
from kernel_opt.core.errors import EnvironmentFault, KernelOptError, failure_verdict
from kernel_opt.core.records import ErrorRecord
from kernel_opt.env.device import resolve_device
from kernel_opt.measure.benchmark_assembly import assemble_report, exit_code_for
from kernel_opt.measure.benchmark_report import write_benchmark_reports
from kernel_opt.measure.benchmark_request import CHECK_TIMEOUT_CAP_S, PROG, BenchmarkRequest, validated_paths
from kernel_opt.measure.held_worker import HeldBenchmarkWorker
from kernel_opt.measure.records import BenchmarkReport, CorrectnessGate, TimedSolution
from kernel_opt.measure.reference_cache import baseline_names
from kernel_opt.measure.worker_plan import plan_worker, release_fields
from kernel_opt.solution import registry


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
    solution, reference = validated_paths(request)
    backend = registry.detect(solution, request.backend)
    if resolve_device("auto") != "cuda":
        raise EnvironmentFault(
            "the benchmark times kernels on an NVIDIA GPU and torch sees none on this machine; "
            "here you can run correctness_check.py (Triton interpreter, or --compile-only for CUDA)"
        )
    command = command or f"{PROG} {shlex.join(request.argv())}"
    report = BenchmarkReport(solution=TimedSolution(path=str(request.solution), backend=backend),
                             reference=str(request.reference), backend=backend, command=command,
                             target_percent=request.target_percent)
    if _check_first(report, request, solution, reference):
        try:
            _time_in_worker(report, request, solution, reference, held)
        except KernelOptError as error:
            report.error = ErrorRecord.from_error(error)
            report.verdict = failure_verdict(error.exit_code)
        report.exit_code = exit_code_for(report)
    write_benchmark_reports(report, request.output_dir)
    return report


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
    report.correctness = CorrectnessGate(
        passed=correctness.passed,
        verdict=correctness.verdict,
        cases=len(correctness.cases),
        failures=correctness_failures(correctness)[:5],
        error=correctness.error,
        launches=correctness.integrity.get("launches"),  # what the checked call ran on the GPU: in benchmark.md
    )
    if correctness.kernelbench_tolerances or correctness.precision_downgrades:
        report.correctness.kernelbench_tolerances = correctness.kernelbench_tolerances
        report.correctness.precision_downgrades = correctness.precision_downgrades
    report.warnings += correctness.warnings
    report.phases_s["correctness check"] = round(time.time() - started, 2)
    if correctness.passed:
        return True
    report.verdict = "incorrect" if correctness.verdict == "fail" else correctness.verdict
    report.error = correctness.error
    report.exit_code = exit_code_of(correctness)
    return False


def _time_in_worker(report: BenchmarkReport, request: BenchmarkRequest, solution: Path, reference: Path,
                    held: HeldBenchmarkWorker | None = None) -> None:
    """Build, time in the child process (the held one, where it still serves this request), fill the record."""
    from kernel_opt.env.clock_watch import ClockWatch, throttle_warning, watched_gpus
    from kernel_opt.env.probes import probe_nvidia_smi
    from kernel_opt.run.runner import run_worker

    if held is not None and not held.serves(request, solution, reference):
        held.stop()
        held = None
    if held is None:
        plan = plan_worker(report, request, solution, reference)
    else:
        plan = held.plan
        report.notes += held.planned.notes
        report.warnings += held.planned.warnings
        if held.planned.solution.has("build"):
            report.solution.build = held.planned.solution.build
        report.clocks_start = list(probe_nvidia_smi().gpus)  # now, just before timing
    release = release_fields(report, request, plan)
    with ClockWatch(watched_gpus()) as clocks:
        if held is None:
            outcome = run_worker(plan.request.released(release), timeout_s=request.timeout_s)
        else:
            held.worker.release(release)
            outcome = held.worker.watch(request.timeout_s)
    report.phases_s.update(outcome.phase_durations())
    report.clocks_end = list(probe_nvidia_smi().gpus)
    report.clocks_during = clocks.result()
    if (held_down := throttle_warning(report.clocks_during)) is not None:
        report.warnings.append(held_down)
    against_dir = str(request.against.parent) if request.against is not None else None
    assemble_report(report, outcome, str(request.against) if request.against else None, against_dir)
    if plan.cache is not None:
        counted = {k: v for k, v in report.work.to_dict().items() if k != "cached_from"} if plan.work is None else None
        plan.cache.remember(plan.key, report.baselines, counted, by=f"{request.output_dir.name} ({PROG})")
        order = baseline_names(request.baselines, request.compile_modes)
        report.baselines.sort(key=lambda entry: order.index(entry.name) if entry.name in order else len(order))
