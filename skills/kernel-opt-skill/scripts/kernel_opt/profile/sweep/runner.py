"""`sweep_solution`: ncu_profile.py --sweep as a library call, from the request to the written reports.

In order, each failing with its own exit code before the next starts: the request (2), this
machine (4: a GPU, ncu, nsight-python at its pinned version, ncu_report, paths nsight-python's
shell command can carry), the correctness of every size in one check (check/correctness.json:
a wrong size is never profiled), then the child (profile/sweep/nsight_child.py, one ncu process
per size), then the record, sweep.md and sweep.png. Whatever happens after the check, the
record and the reports are written: a size that failed says why, and the others still count.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.correctness import BuildOptions, CheckOptions, check_correctness, exit_code_of
from kernel_opt.check.records import CorrectnessReport
from kernel_opt.check.report import write_correctness_reports
from kernel_opt.core.errors import EnvironmentFault, UsageError
from kernel_opt.core.files import write_json_atomic
from kernel_opt.core.records import now_iso
from kernel_opt.env.capabilities import INSTALL_NSIGHT_PYTHON, NSIGHT_PYTHON_SWEEP_PIN, sweep_nsight_python
from kernel_opt.profile.sweep.assemble import Roofs, build_points, chart_rate, checked_sizes, gpu_name, sweep_verdict
from kernel_opt.profile.sweep.frame import read_frame
from kernel_opt.profile.sweep.plan import (
    CHILD_SCRIPT,
    DEFAULT_SWEEP_RUNS,
    DEFAULT_SWEEP_TIMEOUT_S,
    SWEEP_SEED,
    SweepPlan,
    check_machine_paths,
    check_output_dir,
    child_program,
    nsight_options,
)
from kernel_opt.profile.sweep.records import (
    CHECK_DIR,
    FULL_REPORT_SUFFIX,
    NSIGHT_DIR,
    SWEEP_CSV,
    SWEEP_EVENTS,
    SWEEP_JSON,
    SWEEP_MD,
    SWEEP_PNG,
    SweepRecord,
)
from kernel_opt.run.events import Event
from kernel_opt.run.request import ChildRequest, SweepPart
from kernel_opt.solution import registry
from kernel_opt.solution.spec import solution_spec


@dataclass
class SweepRequest:
    """What `ncu_profile.py --sweep` is asked to do, as typed options."""

    solution: Path
    reference: Path
    output_dir: Path
    plan: SweepPlan
    backend: str = "auto"
    runs: int = DEFAULT_SWEEP_RUNS
    timeout_s: float = DEFAULT_SWEEP_TIMEOUT_S
    build: BuildOptions = field(default_factory=BuildOptions)
    command: str | None = None
    # Where the check and the profiled program run. nsight-python needs ncu and so a GPU; "cpu" (the
    # Triton interpreter) is for CPU tests that stand in for nsight-python.
    device: str = "cuda"
    # nsight-python's full .ncu-rep per size (about 40 MB each at a 4096-row softmax on an H100): the sweep reads
    # its CSVs, so by default the reports are removed and a run folder stays small enough to carry.
    keep_reports: bool = False
    kernelbench_tolerances: bool = False  # its check judges at KernelBench's atol = rtol = 1e-2 (check/tolerance.py)


@dataclass(frozen=True)
class SweepTools:
    """What this machine profiles a sweep with."""

    ncu_path: str
    ncu_version: str | None
    nsight_python: str
    reader_path: str | None  # extras/python beside ncu, when ncu_report is not importable as is


def sweep_tools() -> SweepTools:
    """The GPU, ncu, nsight-python at its pinned version and ncu_report, or EnvironmentFault (exit 4) naming the fix."""
    from kernel_opt.profile.ncu.reading import locate_report_reader
    from kernel_opt.profile.profiler import probe_profiler

    try:
        ncu = probe_profiler()
    except EnvironmentFault as error:
        hint = (f"run the sweep on a machine with an NVIDIA GPU, Nsight Compute and nsight-python "
                f"{NSIGHT_PYTHON_SWEEP_PIN} (env_check.py says what is there)")
        raise EnvironmentFault(error.message.replace("cannot profile", "cannot run a size sweep"), hint=hint,
                               kind=error.kind) from error
    try:
        installed: str | None = importlib.metadata.version("nsight-python")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    rule = sweep_nsight_python(installed, ncu.version)
    if not rule.usable:
        raise EnvironmentFault(f"the size sweep needs nsight-python {NSIGHT_PYTHON_SWEEP_PIN}: {rule.message}",
                               hint=INSTALL_NSIGHT_PYTHON, kind="nsight_python")
    location = locate_report_reader(ncu.path)  # nsight-python reads its reports with ncu_report
    check_machine_paths({"the Python executable": sys.executable, "the sweep's script": str(CHILD_SCRIPT),
                         "the temporary folder": tempfile.gettempdir()})
    return SweepTools(ncu.path, ncu.version, installed, location.sys_path_entry)


def sweep_solution(request: SweepRequest) -> SweepRecord:
    """Check every size, profile the correct ones through nsight-python, write the reports; the record.

    Raises the KernelOptError of its exit code only before the check (bad request: 2, this
    machine: 4); from then on every outcome is in the record (`exit_code`).
    """
    solution, reference = _validated(request)
    backend = registry.detect(solution, request.backend)
    check_output_dir(request.output_dir)
    tools = sweep_tools()
    output_dir = request.output_dir
    output_dir.mkdir(parents=True, exist_ok=True)
    for stale in (SWEEP_CSV, SWEEP_PNG, SWEEP_EVENTS):  # an earlier sweep's files must never pass for this one's
        (output_dir / stale).unlink(missing_ok=True)
    correctness = _check_sizes(request, solution, reference, backend)
    checks = checked_sizes(correctness, request.plan)
    passed = [value for value in request.plan.values if checks[value].passed]
    events, child_failure, notes = _profile(request, solution, reference, backend, passed, tools) if passed else (
        [], None, [])
    if not request.keep_reports:
        notes.extend(drop_full_reports(output_dir / NSIGHT_DIR))
    gpu, warnings = gpu_name(events), []
    roofs = Roofs.for_gpu(gpu, _cached_ceilings(gpu, warnings))
    points = build_points(request.plan, checks, events, read_frame(output_dir / SWEEP_CSV, request.plan.name), roofs,
                          child_failure)
    verdict, exit_code = sweep_verdict(points)
    work = next((point.work for point in points if point.work), {})
    record = SweepRecord(
        solution=str(request.solution), reference=str(request.reference), backend=backend, dim=request.plan.name,
        values=list(request.plan.values), dims=dict(request.plan.dims), verdict=verdict, exit_code=exit_code,
        points=points, command=request.command, gpu=gpu, runs=request.runs, nsight_options=nsight_options(request.runs),
        nsight_python=tools.nsight_python, ncu=tools.ncu_version, rate=chart_rate(points),
        ceilings=roofs.described(work.get("dtype") or "float32", bool(work.get("allow_tf32"))) if work else [],
        correctness={"verdict": correctness.verdict, "path": f"{CHECK_DIR}/correctness.md"},
        notes=notes, warnings=warnings, created_at=now_iso(),
        error=child_failure or (correctness.error.to_dict() if correctness.error is not None else None),
    )
    write_sweep_reports(record, output_dir, events)
    return record


def _validated(request: SweepRequest) -> tuple[Path, Path]:
    solution, reference = request.solution.resolve(), request.reference.resolve()
    if not solution.is_file():
        raise UsageError(f"solution file not found: {request.solution}")
    if not reference.is_file():
        raise UsageError(f"reference file not found: {request.reference}")
    if request.timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    nsight_options(request.runs)  # refuses --sweep-runs below 1
    return solution, reference


def _check_sizes(request: SweepRequest, solution: Path, reference: Path, backend: str) -> CorrectnessReport:
    """One correctness check of exactly the sweep's sizes, on the inputs the profile uses (seed 0): DIR/check/."""
    plan = request.plan
    first, *rest = plan.values
    options = CheckOptions(seeds=1, shapes=[{plan.name: value} for value in rest],
                           kernelbench_tolerances=request.kernelbench_tolerances)
    command = f"{request.command or 'ncu_profile.py --sweep'} (its correctness check: every size, seed {SWEEP_SEED})"
    report = check_correctness(solution, reference, backend, request.device, plan.dims_at(first), options,
                               request.build, build_dir=request.output_dir / "build", command=command)
    report.solution, report.reference = str(request.solution), str(request.reference)
    write_correctness_reports(report, request.output_dir / CHECK_DIR, exit_code_of(report))
    return report


def _profile(request: SweepRequest, solution: Path, reference: Path, backend: str, values: list[int],
             tools: SweepTools) -> tuple[list[Event], dict[str, Any] | None, list[str]]:
    """Run the child over the sizes that passed; (its events, its own failure if it died, build notes)."""
    from kernel_opt.run.runner import run_worker

    output_dir, plan = request.output_dir, request.plan
    notes: list[str] = []
    spec, _ = solution_spec(solution, backend, request.device, output_dir / "build", request.build, notes)
    child_request = ChildRequest(spec, str(reference), request.device, plan.dims, SweepPart(
        plan.name, values, nsight_options(request.runs), str(output_dir / NSIGHT_DIR), str(output_dir / SWEEP_CSV),
        SWEEP_SEED))
    (output_dir / NSIGHT_DIR).mkdir(exist_ok=True)
    interpreter = registry.get(backend).cpu_interpreter if request.device == "cpu" else None
    environment = {**_child_environment(tools), **(interpreter.environment if interpreter else {})}
    outcome = run_worker(child_request, timeout_s=request.timeout_s, env=environment, program=child_program())
    failure = outcome.failure() if outcome.timed_out or outcome.returncode not in (0, None) else None
    return outcome.events, failure, notes


def drop_full_reports(folder: Path) -> list[str]:
    """Remove nsight-python's .ncu-rep files under `folder`; the note saying so (none where there were none)."""
    reports = sorted(folder.rglob(f"*{FULL_REPORT_SUFFIX}")) if folder.is_dir() else []
    if not reports:
        return []
    megabytes = sum(report.stat().st_size for report in reports) / 1e6
    for report in reports:
        report.unlink()
    return [f"removed nsight-python's {len(reports)} full report(s) ({megabytes:.1f} MB of {FULL_REPORT_SUFFIX}) "
            f"from {NSIGHT_DIR}/: {SWEEP_CSV} and each size's CSVs hold what the sweep reads; --keep-reports keeps "
            "them"]


def _cached_ceilings(gpu: str | None, warnings: list[str]):
    """The measured ceilings cached for this GPU, as the benchmark reads them; None (and why) without."""
    from kernel_opt.measure.ceilings import load_cached_for

    if gpu is None:
        return None
    try:
        measured = load_cached_for(gpu)
    except Exception as error:  # a broken cache must not lose the sweep; the report says so
        warnings.append(f"the cached ceilings could not be read: {error}")
        return None
    if measured is None:
        warnings.append("no measured ceilings are cached for this GPU (measure_ceilings.py): % of ceiling is "
                        "against the datasheet")
    return measured


def _child_environment(tools: SweepTools) -> dict[str, str]:
    """nsight-python starts `ncu` from PATH, and imports ncu_report: both made findable as this machine has them."""
    environment = {"PATH": os.pathsep.join([str(Path(tools.ncu_path).parent), os.environ.get("PATH", "")])}
    if tools.reader_path:
        existing = os.environ.get("PYTHONPATH")
        environment["PYTHONPATH"] = os.pathsep.join([tools.reader_path] + ([existing] if existing else []))
    return environment


def write_sweep_reports(record: SweepRecord, output_dir: Path, events: list[Event]) -> None:
    """sweep.png (when it can be drawn), sweep.md, sweep.json and the child's events, into DIR."""
    from kernel_opt.profile.sweep.chart import draw_sweep_chart
    from kernel_opt.profile.sweep.report import render_sweep_markdown

    record.files = {"json": SWEEP_JSON, "md": SWEEP_MD, "check": f"{CHECK_DIR}/correctness.md", "nsight": NSIGHT_DIR}
    if (output_dir / SWEEP_CSV).is_file():
        record.files["csv"] = SWEEP_CSV
    if record.charted():
        try:
            draw_sweep_chart(record, output_dir / SWEEP_PNG)
            record.files["png"] = SWEEP_PNG
        except ImportError as error:  # the numbers stay useful without their picture
            record.warnings.append(f"sweep.png not drawn: matplotlib is not importable ({error})")
    if events:
        lines = [json.dumps({**event.to_json(), "t": event.t}, default=str) for event in events]
        (output_dir / SWEEP_EVENTS).write_text("\n".join(lines) + "\n")
        record.files["events"] = SWEEP_EVENTS
    (output_dir / SWEEP_MD).write_text(render_sweep_markdown(record))
    write_json_atomic(output_dir / SWEEP_JSON, record.to_dict())
