"""Prepare a solution to run (build it, describe it for the worker) and check its correctness.

Shared by correctness_check and benchmark: the benchmark times nothing that this check has
not passed, and it runs the very same check. `check_solution` is correctness_check.py as a
library call: typed options in, the record out (and correctness.json/.md written).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.integrity import registry as integrity
from kernel_opt.check.integrity.verdict import integrity_passed, unshown_kernelbench_passes
from kernel_opt.check.records import CaseResult, CorrectnessReport, DeviceInfo, SanitizerRun, ToleranceEntry
from kernel_opt.check.report import write_correctness_reports
from kernel_opt.check.reuse import check_subject
from kernel_opt.check.sanitizer import (
    SANITIZER_TOOLS,
    check_sanitizer_device,
    locate_sanitizer,
    run_sanitized,
    sanitize_usage_problem,
    sanitizer_error,
)
from kernel_opt.core.cli import dim_arguments
from kernel_opt.core.errors import ExitCode, KernelOptError, UsageError, failure_verdict
from kernel_opt.core.records import ErrorRecord
from kernel_opt.env.device import resolve_device
from kernel_opt.run.environment import RunEnvironment
from kernel_opt.run.events import (
    CaseResultEvent,
    EnvironmentEvent,
    Event,
    IntegrityEvent,
    MemoryEvent,
    NoteEvent,
    PlanEvent,
    ToleranceEvent,
    WarningEvent,
    dispatch,
)
from kernel_opt.run.memory import add_memory_event
from kernel_opt.run.request import ChildRequest, CorrectnessPart, Tolerances
from kernel_opt.solution import registry
from kernel_opt.solution.backend import BuildOptions
from kernel_opt.solution.build_record import BuildRecord
from kernel_opt.solution.interpreter_sizes import interpreter_sizes
from kernel_opt.solution.spec import solution_spec

PROG = "correctness_check.py"
DEFAULT_SEEDS = 3
DEFAULT_TIMEOUT_S = 120.0
NO_SHAPES_WARNING = (
    "ref.py has no SHAPES: only the command-line shape was tested; add shapes that straddle "
    "powers of two (127, 128, 129) to catch tail and indexing bugs"
)


@dataclass
class CheckOptions:
    seeds: int = DEFAULT_SEEDS
    atol: float | None = None
    rtol: float | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    compile_only: bool = False
    sanitize: str | None = None  # memcheck, racecheck, initcheck, synccheck: one case under compute-sanitizer
    # The shapes to check after the command-line one, in place of ref.py's SHAPES: a size sweep
    # checks exactly the sizes it profiles (profile/sweep). None: ref.py's SHAPES.
    shapes: list[dict[str, Any]] | None = None
    kernelbench_tolerances: bool = False  # atol = rtol = 1e-2 as KernelBench's eval; downgrades flagged (tolerance.py)


@dataclass
class CorrectnessRequest:
    """What correctness_check.py is asked to do, as typed options."""

    solution: Path
    reference: Path
    output_dir: Path
    dims: dict[str, Any] = field(default_factory=dict)
    backend: str = "auto"
    device: str = "auto"
    check: CheckOptions = field(default_factory=CheckOptions)
    build: BuildOptions = field(default_factory=BuildOptions)

    def argv(self) -> list[str]:
        """The same request as correctness_check.py's arguments (defaults left out)."""
        check = self.check
        arguments = [str(self.solution), "--ref", str(self.reference), "--output-dir", str(self.output_dir)]
        arguments += [] if self.backend == "auto" else ["--backend", self.backend]
        arguments += [] if self.device == "auto" else ["--device", self.device]
        arguments += ["--compile-only"] if check.compile_only else []
        arguments += [] if check.seeds == DEFAULT_SEEDS else ["--seeds", str(check.seeds)]
        arguments += [] if check.atol is None else ["--atol", str(check.atol)]
        arguments += [] if check.rtol is None else ["--rtol", str(check.rtol)]
        arguments += ["--kernelbench-tolerances"] if check.kernelbench_tolerances else []
        arguments += [] if check.timeout_s == DEFAULT_TIMEOUT_S else ["--timeout", str(check.timeout_s)]
        arguments += [] if check.sanitize is None else ["--sanitize", check.sanitize]
        return arguments + self.build.arguments() + dim_arguments(self.dims)


def check_solution(request: CorrectnessRequest, command: str | None = None) -> CorrectnessReport:
    """Check a solution as correctness_check.py does; write DIR/correctness.json and .md; return the record.

    Bad options raise UsageError (exit 2); everything that happens to the solution is in the
    record, whose exit code is `exit_code_of(report)`.
    """
    if request.check.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    if request.check.timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    if request.check.sanitize is not None:
        _check_sanitize_options(request)
    check_tolerance_options(request.check.atol, request.check.rtol, request.check.kernelbench_tolerances)
    solution, reference = request.solution.resolve(), request.reference.resolve()
    if not solution.is_file():
        raise UsageError(f"solution file not found: {request.solution}")
    if not reference.is_file():
        raise UsageError(f"reference file not found: {request.reference}")
    backend = registry.detect(solution, request.backend)
    device = resolve_device(request.device)
    dims, sizes_note = request.dims, None
    if device == "cpu" and registry.get(backend).runs_without_gpu(solution) and request.check.sanitize is None:
        dims, sizes_note = interpreter_sizes(reference, request.dims)  # a GPU-sized problem: sizes it can check
    report = check_correctness(
        solution, reference, backend, device, dims, request.check, request.build,
        build_dir=request.output_dir / "build", command=command or f"{PROG} {shlex.join(request.argv())}",
        output_dir=request.output_dir,
    )
    report.solution, report.reference = str(request.solution), str(request.reference)
    report.sizes_note = sizes_note if report.cases else None  # a CUDA ModelNew only compiled here ran at no size
    write_correctness_reports(report, request.output_dir, exit_code_of(report))  # a --sanitize run: its own files
    return report


def _check_sanitize_options(request: CorrectnessRequest) -> None:
    if request.check.sanitize not in SANITIZER_TOOLS:
        raise UsageError(f"--sanitize takes one of {', '.join(SANITIZER_TOOLS)}, not {request.check.sanitize!r}")
    problem = sanitize_usage_problem(request.device, request.check.compile_only)
    if problem is not None:
        raise UsageError(problem)


def check_tolerance_options(atol: float | None, rtol: float | None, kernelbench_tolerances: bool) -> None:
    """--kernelbench-tolerances sets atol and rtol itself: giving them too is a contradiction (exit 2)."""
    if kernelbench_tolerances and (atol is not None or rtol is not None):
        raise UsageError("--kernelbench-tolerances sets atol = rtol = 1e-2: give it or --atol/--rtol, not both")


def check_correctness(
    solution: Path,
    reference: Path,
    backend: str,
    device: str,
    dims: dict[str, Any],
    options: CheckOptions,
    build: BuildOptions,
    build_dir: Path,
    command: str,
    output_dir: Path | None = None,
) -> CorrectnessReport:
    """Build, run every shape and seed in a child process, and return the filled report.

    With `options.sanitize`, one case runs under compute-sanitizer instead (check/sanitizer.py),
    whose log goes to `output_dir` (default: beside build_dir).
    """
    interpreter = registry.get(backend).cpu_interpreter if device == "cpu" else None
    report = CorrectnessReport(
        verdict="fail",
        solution=str(solution),
        reference=str(reference),
        backend=backend,
        device=DeviceInfo(type=device),
        interpreter=interpreter is not None,
        command=command,
        dims=dims,
        seeds=list(range(options.seeds)),
        subject=check_subject(solution, reference, build),
        kernelbench_tolerances=options.kernelbench_tolerances,
    )
    if interpreter is not None:
        report.notes.append(interpreter.note)
    if options.sanitize is not None:
        report.sanitizer, report.seeds = SanitizerRun(tool=options.sanitize), [0]
    try:
        _build_and_run(report, solution, reference, options, build, build_dir, output_dir or build_dir.parent)
    except KernelOptError as error:
        report.error = ErrorRecord.from_error(error)
        report.verdict = failure_verdict(error.exit_code)
        if error.kind == "no_gpu" and interpreter is not None:  # refused before anything ran (CUDA it only compiled)
            report.interpreter = False
            report.notes.remove(interpreter.note)
    return report


def _build_and_run(report: CorrectnessReport, solution: Path, reference: Path, options: CheckOptions,
                   build: BuildOptions, build_dir: Path, output_dir: Path) -> None:
    """Build (where the backend has a build step), then run the cases in the worker unless only the build was
    asked for."""
    definition = registry.get(report.backend)
    device = report.device.type
    if options.sanitize is not None:
        locate_sanitizer()  # exit 4 before building, naming every place it looked
        check_sanitizer_device(device)
    if options.compile_only and not definition.builds_ahead:
        builders = " and ".join(b.title for b in registry.backends() if b.builds_ahead)
        raise UsageError(f"--compile-only applies to {builders} solutions; {definition.title} kernels compile "
                         "when they first run")
    spec, build_record = solution_spec(solution.resolve(), report.backend, device, build_dir, build, report.notes)
    report.build = None if build_record is None else BuildRecord.from_dict(build_record)
    if options.compile_only:
        report.verdict = "pass"
        report.notes.append("--compile-only: the solution compiled; nothing was run, so correctness is not established")
        return
    if device != "cuda" and not definition.runs_on_cpu:
        raise definition.cannot_run_without_gpu(solution, build_record)
    from kernel_opt.run.runner import run_worker

    tolerances = Tolerances(options.atol, options.rtol, options.kernelbench_tolerances)
    request = ChildRequest(spec, str(reference.resolve()), device, report.dims,
                           CorrectnessPart(report.seeds, tolerances, options.shapes,
                                           integrity_checks=integrity.child_names()))
    interpreter = definition.cpu_interpreter if device == "cpu" else None
    environment = dict(interpreter.environment) if interpreter is not None else {}
    if options.sanitize is None:
        report_from_events(report, run_worker(request, timeout_s=options.timeout_s, env=environment))
        return
    outcome, report.sanitizer = run_sanitized(request, options.sanitize, options.timeout_s, environment, output_dir)
    report_from_events(report, outcome)
    _sanitizer_verdict(report, outcome)


def _sanitizer_verdict(report: CorrectnessReport, outcome) -> None:
    """What compute-sanitizer found outranks what the case's comparison or the child said (kept as a note)."""
    error = sanitizer_error(report.sanitizer, outcome)
    if error is None:
        return
    child_said = outcome.error_event is not None or outcome.timed_out  # not the tool's exit code read as a crash
    if report.error is not None and child_said and error["kind"] == "sanitizer_finding":
        report.notes.append(f"the child then reported {report.error.kind}: {report.error.message} (memcheck "
                            "stops a kernel at its first bad access, so an error after a finding follows from it)")
    report.error, report.verdict = ErrorRecord.from_dict(error), failure_verdict(error["exit_code"])


# --- the worker's events -> the record -------------------------------------------------------------


def _environment(report: CorrectnessReport, event: EnvironmentEvent) -> None:
    report.environment = RunEnvironment.from_dict(event.info)
    gpu = report.environment.gpu
    if gpu:
        report.device.name, report.device.compute_capability = gpu.name, gpu.compute_capability


def _plan(report: CorrectnessReport, event: PlanEvent) -> None:
    report.planned_cases = len(event.cases) * len(event.seeds)
    if not event.has_shapes:
        report.warnings.append(NO_SHAPES_WARNING)


def _case_result(report: CorrectnessReport, event: CaseResultEvent) -> None:
    report.cases.append(CaseResult.from_dict({"dims": event.dims, "seed": event.seed, "passed": event.passed,
                                              "outputs": event.outputs, **event.findings}))


def _integrity(report: CorrectnessReport, event: IntegrityEvent) -> None:
    """A check's result, under the record key it names."""
    report.integrity[integrity.get(event.check).record_key] = event.result


# Which events fill which part of the record; the others (phases, case starts, done) only say
# where the worker was, which the outcome's failure() reads.
_HANDLERS: dict[type[Event], Callable[[CorrectnessReport, Any], None]] = {
    EnvironmentEvent: _environment,
    PlanEvent: _plan,
    WarningEvent: lambda report, event: report.warnings.append(event.text),
    NoteEvent: lambda report, event: report.notes.append(event.text),
    ToleranceEvent: lambda report, event: report.tolerances.append(ToleranceEntry(**event.tolerance())),
    CaseResultEvent: _case_result,
    IntegrityEvent: _integrity,
    MemoryEvent: add_memory_event,
}


def report_from_events(report: CorrectnessReport, outcome) -> CorrectnessReport:
    """Fill a report from the worker's events (see check/child.py) and how the child ended."""
    dispatch(outcome.events, _HANDLERS, report)
    report.phases_s = outcome.phase_durations()
    failure = outcome.failure()
    report.error = None if failure is None else ErrorRecord.from_dict(failure)
    if report.error is not None:
        report.verdict = failure_verdict(report.error.exit_code)
    elif (report.cases and all(case.passed for case in report.cases) and len(report.cases) == report.planned_cases
          and integrity_passed(report) and not unshown_kernelbench_passes(report)):
        report.verdict = "pass"
    else:
        report.verdict = "fail"
    return report


def exit_code_of(report: CorrectnessReport) -> int:
    if report.error is not None:
        return report.error.code()
    return int(ExitCode.OK if report.passed else ExitCode.CHECK_FAILED)
