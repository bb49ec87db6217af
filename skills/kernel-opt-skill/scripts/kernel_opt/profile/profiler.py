"""Profile a solution under Nsight Compute, or read a kept report, into an NcuSummary.

`profile_solution` is ncu_profile.py as a library call: typed options in, the record out
(ncu_summary.json/.md and ncu_details.md written; profile.ncu-rep and ncu.log when it
profiles). Only the solution's own launches are profiled (profile/target.py runs them inside
an NVTX range); what the profiled program reports goes to DIR/profile_events.jsonl.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.correctness import BuildOptions
from kernel_opt.core.cli import dim_arguments
from kernel_opt.core.errors import EnvironmentFault, ExitCode, SolutionError, UsageError
from kernel_opt.core.files import read_json
from kernel_opt.env.device import gpu_capability_if_any
from kernel_opt.measure.records import read_benchmark
from kernel_opt.profile.advice import guide_backend
from kernel_opt.profile.design import load_static_opcodes
from kernel_opt.profile.ncu import collection as ncu_collection
from kernel_opt.profile.ncu import reading
from kernel_opt.profile.ncu_summary import summarize_profile, write_profile_reports
from kernel_opt.profile.records import NCU_SUMMARY_FILE, Collection, NcuSummary
from kernel_opt.profile.static_analysis import STATIC_ANALYSIS_FILE
from kernel_opt.run.events import DoneEvent, ErrorEvent, PhaseEvent, read_event_log
from kernel_opt.run.request import ChildRequest, ProfileTargetPart
from kernel_opt.solution import registry
from kernel_opt.solution.spec import solution_spec

PROG = "ncu_profile.py"
REPORT_BASE = "profile"  # ncu writes DIR/profile.ncu-rep
EVENTS_FILE = "profile_events.jsonl"
DEFAULT_WARMUP_CALLS = 3
DEFAULT_PROFILED_CALLS = 1
DEFAULT_SECTION_SET = "targeted"


@dataclass
class ProfileRequest:
    """What ncu_profile.py is asked to do, as typed options: profile a solution, or read `from_report`."""

    output_dir: Path
    solution: Path | None = None
    reference: Path | None = None
    dims: dict[str, Any] = field(default_factory=dict)
    from_report: Path | None = None
    section_set: str = DEFAULT_SECTION_SET
    baseline: Path | None = None  # a previous version's folder, with its ncu_summary.json
    backend: str = "auto"
    calls: int = DEFAULT_PROFILED_CALLS
    warmup: int = DEFAULT_WARMUP_CALLS
    max_launches: int | None = None
    timeout_s: float | None = None
    build: BuildOptions = field(default_factory=BuildOptions)

    def argv(self) -> list[str]:
        """The same request as ncu_profile.py's arguments (defaults left out)."""
        arguments = [] if self.solution is None else [str(self.solution)]
        arguments += [] if self.reference is None else ["--ref", str(self.reference)]
        arguments += ["--output-dir", str(self.output_dir), *self.build.arguments()]
        arguments += [] if self.from_report is None else ["--from-report", str(self.from_report)]
        arguments += [] if self.baseline is None else ["--baseline", str(self.baseline)]
        arguments += [] if self.section_set == DEFAULT_SECTION_SET else ["--set", self.section_set]
        arguments += [] if self.backend == "auto" else ["--backend", self.backend]
        arguments += [] if self.calls == DEFAULT_PROFILED_CALLS else ["--calls", str(self.calls)]
        arguments += [] if self.warmup == DEFAULT_WARMUP_CALLS else ["--warmup", str(self.warmup)]
        arguments += [] if self.max_launches is None else ["--max-launches", str(self.max_launches)]
        arguments += [] if self.timeout_s is None else ["--timeout", str(self.timeout_s)]
        return arguments + dim_arguments(self.dims)


def profile_solution(request: ProfileRequest) -> NcuSummary:
    """Profile (or read a report), classify, write the reports, and return the record.

    Every failure raises the KernelOptError of its exit code: 2 usage (bad options, unreadable
    report), 3 the solution (compile error, crash, no kernel launched), 4 this machine (no GPU,
    no ncu, no ncu_report, no permission to read counters).
    """
    if request.from_report is not None:
        _check_report_request(request)
        baseline = _read_baseline(request.baseline)
        location = reading.locate_report_reader()  # exit 4 at once where no report can be read
        collection = Collection(mode="from_report", report=str(request.from_report), reader=location.source)
        report_path, ncu_path, reference = request.from_report, None, None
        backends = None if request.backend == "auto" else (request.backend,)  # None: every backend's guide
    else:
        solution, reference = _validated(request)
        backend = registry.detect(solution, request.backend)
        baseline = _read_baseline(request.baseline)
        report_path, ncu_path, collection = _profile(request, backend, solution, reference)
        backends = (guide_backend(backend, solution),)  # a Triton ModelNew: Triton's guide
    profile = reading.read_profile(report_path, ncu_path)
    collection.reader = profile.reader
    # static_analysis.py's output in the same folder, when present: the SASS the verdict reads
    static_opcodes = load_static_opcodes(request.output_dir / STATIC_ANALYSIS_FILE)
    # benchmark.py's record in the same folder, when present: the problem's counted bytes the advice reads
    summary, verdict = summarize_profile(profile, collection, backends, baseline,
                                         str(request.baseline) if request.baseline is not None else None,
                                         static_opcodes, reference, read_benchmark(request.output_dir))
    write_profile_reports(summary, profile, verdict, request.output_dir)
    return summary


def _check_report_request(request: ProfileRequest) -> None:
    if request.solution is not None or request.reference is not None:
        raise UsageError("--from-report reads an existing report: pass no solution and no --ref with it")
    if request.dims:
        raise UsageError(f"--from-report takes no problem sizes (got {', '.join('--' + k for k in request.dims)})")
    if not request.from_report.is_file():
        raise UsageError(f"--from-report {request.from_report}: no such file",
                         hint="pass the .ncu-rep that ncu_profile.py wrote (DIR/profile.ncu-rep)")


def _validated(request: ProfileRequest) -> tuple[Path, Path]:
    if request.solution is None or request.reference is None:
        raise UsageError("give a solution and --ref ref.py to profile, or --from-report FILE.ncu-rep to read a report")
    solution, reference = request.solution.resolve(), request.reference.resolve()
    if not solution.is_file():
        raise UsageError(f"solution file not found: {request.solution}")
    if not reference.is_file():
        raise UsageError(f"reference file not found: {request.reference}")
    if request.calls < 1:
        raise UsageError("--calls must be at least 1: something has to be profiled")
    if request.warmup < 0:
        raise UsageError("--warmup cannot be negative")
    return solution, reference


def _read_baseline(baseline_dir: Path | None) -> NcuSummary | None:
    if baseline_dir is None:
        return None
    path = baseline_dir / NCU_SUMMARY_FILE
    if not path.is_file():
        raise UsageError(f"--baseline {baseline_dir}: no {NCU_SUMMARY_FILE} there",
                         hint="profile the baseline version first, with the same --output-dir it was checked in")
    return NcuSummary.from_dict(read_json(path), what=str(path))


# --- profiling -------------------------------------------------------------------------------


def _gpu_problem() -> str | None:
    try:
        import torch
    except Exception as error:  # no torch at all
        return f"torch is not importable ({type(error).__name__})"
    if not torch.cuda.is_available():
        return "torch sees no NVIDIA GPU on this machine"
    return None


def probe_profiler():
    """ncu's probe, or EnvironmentFault saying why this machine cannot profile (no GPU, no ncu): exit 4.

    The size sweep (profile/sweep) asks the same before anything starts.
    """
    from kernel_opt.env.probes import probe_ncu

    gpu_problem = _gpu_problem()
    ncu_probe = probe_ncu()
    problems = ([gpu_problem] if gpu_problem else []) + (
        [] if ncu_probe.found else ["Nsight Compute (ncu) is not installed (not on PATH, /usr/local/cuda/bin or "
                                    "/opt/nvidia/nsight-compute)"])
    if problems:
        raise EnvironmentFault(
            "this machine cannot profile: " + "; ".join(problems),
            hint="run ncu_profile.py on a machine with an NVIDIA GPU and Nsight Compute; to read an existing report "
            "here, use --from-report FILE.ncu-rep",
            kind="no_gpu" if gpu_problem else "no_ncu",
        )
    return ncu_probe


def _profile(request: ProfileRequest, backend: str, solution: Path, reference: Path):
    """Build, run the solution under ncu, and return (report path, ncu path, collection info)."""
    ncu_probe = probe_profiler()
    try:
        location, reader_error = reading.locate_report_reader(ncu_probe.path), None
    except EnvironmentFault as error:  # profile anyway: the kept .ncu-rep can be read elsewhere
        location, reader_error = None, error
    output_dir = request.output_dir
    output_dir.mkdir(parents=True, exist_ok=True)
    notes = [ncu_collection.nsight_python_note(ncu_probe.version)]
    request_path, events_path = _write_target_request(request, backend, solution, reference, notes)
    options = ncu_collection.NcuCommandOptions(
        export_base=output_dir / REPORT_BASE,
        section_set=request.section_set,
        max_launches=request.max_launches if request.max_launches is not None else ncu_collection.DEFAULT_MAX_LAUNCHES,
        extra_metrics=ncu_collection.extra_metrics_for(gpu_capability_if_any()),
    )
    program = [sys.executable, "-m", "kernel_opt.profile.target", str(request_path)]
    command = ncu_collection.build_ncu_command(ncu_probe.path, program, options)
    options.report_path.unlink(missing_ok=True)  # a stale report must never be read as this run's
    timeout_s = request.timeout_s if request.timeout_s is not None else ncu_collection.DEFAULT_NCU_TIMEOUT_S
    run = ncu_collection.run_ncu(command, env=ncu_collection.environment_for_child(), timeout_s=timeout_s)
    (output_dir / "ncu.log").write_text(f"$ {shlex.join(command)}\n{run.output}")
    _raise_for_failed_run(run, options.report_path, events_path, location, reader_error)
    if run.returncode not in (0, None):
        notes.append(f"ncu exited with code {run.returncode} but wrote a report: {'; '.join(run.messages[:3])}")
    collection = Collection(
        mode="profiled", report=str(options.report_path), reader=location.source, command=shlex.join(command),
        ncu=ncu_probe.path, ncu_version=ncu_probe.version, clock_control=options.clock_control,
        section_set=options.section_set, nvtx_range=options.nvtx_range, warmup_calls=request.warmup,
        profiled_calls=request.calls, max_launches=options.max_launches,
        dims=_profiled_dims(events_path) or request.dims, notes=notes,
    )
    return options.report_path, ncu_probe.path, collection


def _write_target_request(request: ProfileRequest, backend: str, solution: Path, reference: Path,
                          notes: list[str]) -> tuple[Path, Path]:
    """DIR/profile_request.json for profile/target.py (building a CUDA solution first), and its empty event log."""
    output_dir = request.output_dir
    spec, build = solution_spec(solution, backend, "cuda", output_dir / "build", request.build, notes)
    if build is not None:
        notes.append(f"built for {build['arch']}: {build['command']}")
    events_path = output_dir / EVENTS_FILE
    target = ChildRequest(spec, str(reference), "cuda", request.dims,
                          ProfileTargetPart(request.warmup, request.calls, ncu_collection.NVTX_RANGE), str(events_path))
    events_path.write_text("")
    return target.write(output_dir / "profile_request.json", indent=2), events_path


def _raise_for_failed_run(run, report_path: Path, events_path: Path, location, reader_error) -> None:
    """The exit code of a profile that did not produce a readable report: whose fault, and what to do."""
    _raise_for_child_error(events_path)
    died_in = _unfinished_phase(events_path)
    if run.timed_out or not report_path.is_file():
        message, hint, kind = ncu_collection.ncu_failure_message(run)
        if kind == "ncu_failed" and died_in and not ncu_collection.ncu_own_errors(run.output):
            raise SolutionError(f"the profiled program died during {died_in} without reporting an error (see ncu.log)",
                                kind="crash")
        error_class = SolutionError if kind == ncu_collection.NO_KERNELS_PROFILED else EnvironmentFault
        raise error_class(message, hint=hint, kind=kind)
    if died_in:
        raise SolutionError(f"the profiled program died during {died_in} (the report is partial; see ncu.log)",
                            kind="crash")
    if location is None:
        raise EnvironmentFault(
            f"ncu wrote {report_path}, but it cannot be read here: {reader_error.message}",
            hint=f"{reader_error.hint}; or copy the report to a machine that has ncu_report and run "
            f"ncu_profile.py --from-report {report_path.name} --output-dir DIR there",
            kind="no_ncu_report",
        )


def _unfinished_phase(events_path: Path) -> str | None:
    """The phase the profiled program was in when it stopped without finishing; None when it finished or never ran."""
    events = read_event_log(events_path)
    if not events or any(isinstance(event, (DoneEvent, ErrorEvent)) for event in events):
        return None
    phases = [event for event in events if isinstance(event, PhaseEvent)]
    return phases[-1].phase if phases else "start-up"


def _raise_for_child_error(events_path: Path) -> None:
    """Turn the profiled program's own error event into the matching exit code."""
    error = next((event for event in read_event_log(events_path) if isinstance(event, ErrorEvent)), None)
    if error is None:
        return
    error_class = {int(ExitCode.USAGE): UsageError, int(ExitCode.ENVIRONMENT_FAULT): EnvironmentFault}.get(
        error.exit_code, SolutionError)
    raise error_class(f"the profiled program failed: {error.message}", hint=error.hint,
                      kind=error.kind or "solution_error")


def _profiled_dims(events_path: Path) -> dict[str, Any]:
    done = next((event for event in read_event_log(events_path) if isinstance(event, DoneEvent)), None)
    return dict(done.dims or {}) if done else {}
