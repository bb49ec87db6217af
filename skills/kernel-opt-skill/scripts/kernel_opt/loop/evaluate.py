"""`workspace.py evaluate`: one version through the loop's steps, each a library call that returns its record.

correctness -> hypothesis check (v1 on) -> compute-sanitizer (memcheck; racecheck too when a kernel
uses shared memory) -> the GPU's measured ceilings -> benchmark against the best version so far ->
ncu profile against that version -> experience recommendations for the best version's bottleneck.
The benchmark's worker process starts beside the checks and prepares what needs no timing (Python,
torch, the loaded files, the problem instance, its work count); it times nothing until the checks
have passed, and is stopped when they fail. Without a GPU it runs what can run (Triton correctness
under the interpreter, a CUDA compile check, static analysis) and lists what needs one.

This module decides the order; the steps live in `check_steps.py` (what times nothing),
`measure_steps.py` (ceilings, benchmark, profile) and `recommend_step.py`, and record themselves
through `evaluation.py`'s Evaluation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from kernel_opt.check.correctness import PROG as CORRECTNESS_PROG
from kernel_opt.check.correctness import CorrectnessRequest
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.core.files import write_text_atomic
from kernel_opt.core.records import now_iso
from kernel_opt.loop.check_steps import (
    check_options,
    checks_before_timing,
    correctness_outcome,
    correctness_step,
    hypothesis_result,
    hypothesis_step,
    static_analysis_step,
)
from kernel_opt.loop.evaluation import Evaluation
from kernel_opt.loop.measure_steps import (
    benchmark_request,
    benchmark_step,
    benchmark_worker_beside_checks,
    ceilings_step,
    profile_step,
)
from kernel_opt.loop.recommend_step import recommend_step
from kernel_opt.loop.records import EvaluationRecord, RunRecord
from kernel_opt.loop.step_summaries import compile_line
from kernel_opt.loop.versions import VersionState, best_measured, list_versions
from kernel_opt.loop.workspace import check_can_evaluate, conclude_evaluation, read_run, write_evaluation
from kernel_opt.solution import registry
from kernel_opt.solution.interpreter_sizes import interpreter_sizes

EVALUATE_LOG = "evaluate.log"
# Each iteration is judged against the best version (interleaved), not against PyTorch; the
# baselines per version are context. They do not change between versions, and torch.compile's
# cost 18 s of a 71 s evaluation (H100, 2026-11-25), so every evaluation asks for eager and
# torch.compile (default mode) through the run's reference_cache.json (measure/reference_cache.py):
# the first version times them, later ones reuse them under the same key, and the final benchmark
# of SKILL.md's Finish step times every mode again, max-autotune included, beside the best version.
# torch.compile compiles in the process that times it, after the held worker is released
# (measure_steps.benchmark_worker_beside_checks): most of its 12-15 s is importing dynamo and inductor
# and tracing, which a separate compiling child would pay again (docs/HISTORY.md has the measurement).
EVALUATE_COMPILE_MODES = ("default",)
EVALUATE_BASELINES = ("eager", "compile")


@dataclass
class EvaluateOptions:
    """`workspace.py evaluate`'s options, typed."""

    force: bool = False  # re-evaluate a version that was already timed
    baselines: list[str] = field(default_factory=lambda: list(EVALUATE_BASELINES))
    compile_modes: list[str] = field(default_factory=lambda: list(EVALUATE_COMPILE_MODES))
    static_analysis: bool = False  # also on a GPU machine (it always runs without one)
    sanitize: bool = True  # memcheck (and racecheck where a kernel uses shared memory); --no-sanitize turns it off
    check_timeout_s: float | None = None  # --timeout: a check's seconds without progress; None: the check's default


def gpu_available() -> bool:
    """Whether torch sees a CUDA GPU: decides between the GPU steps and what runs without one."""
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # torch missing or broken: certainly no GPU to time on
        return False


def evaluate_version(out: Path, number: int, options: EvaluateOptions) -> EvaluationRecord:
    """Evaluate vN: run its steps, write vN/evaluation.json and vN/evaluate.log, and return the record."""
    version = check_can_evaluate(out, number, options.force)
    run = read_run(out)
    versions = list_versions(out, run)
    against = best_measured(versions, below=number)
    evaluation = Evaluation(out, run, version, against)
    evaluation.check_timeout_s = options.check_timeout_s
    started_at, started = now_iso(), time.perf_counter()
    has_gpu = gpu_available()
    _warn_unchanged(evaluation, versions)
    if number == 0 and (edited := edited_source_warning(run, evaluation.solution)):
        evaluation.warnings.append(edited)
    if has_gpu:
        _gpu_steps(evaluation, options)
    else:
        _cpu_steps(evaluation, options)
    recommend_step(evaluation)
    state, exit_code = conclude_evaluation(evaluation.steps)
    record = EvaluationRecord(
        version=version.name, state=state, exit_code=exit_code, started_at=started_at,
        wall_s=round(time.perf_counter() - started, 2), gpu_available=has_gpu,
        against=against.name if against else None, steps=evaluation.steps, needs_gpu=evaluation.needs_gpu,
        recommendations=evaluation.recommendations, warnings=evaluation.warnings,
    )
    write_text_atomic(evaluation.folder / EVALUATE_LOG, "\n".join(evaluation.log))
    write_evaluation(out, record)
    return record


def _warn_unchanged(evaluation: Evaluation, versions: list[VersionState]) -> None:
    parent = next((v for v in versions if v.name == evaluation.version.parent), None)
    if parent is not None and parent.has_solution:
        if Path(parent.solution).read_bytes() == evaluation.solution.read_bytes():
            evaluation.warnings.append(f"{evaluation.version.name}'s source is identical to {parent.name}'s: "
                                       "no change was made, so any difference measured is noise")


def edited_source_warning(run: RunRecord, v0: Path) -> str | None:
    """v0 is a copy made by `init`; the file given to --kernel is never read again. Edited after init and now
    different from v0, it holds a fix the run will not see: say so rather than evaluate the old copy silently."""
    source = Path(run.source_kernel) if run.source_kernel else None
    if source is None or not source.is_file() or not v0.is_file() or not run.created_at:
        return None
    edited_at = datetime.fromtimestamp(source.stat().st_mtime, timezone.utc)
    if edited_at <= datetime.fromisoformat(run.created_at) + timedelta(seconds=1):
        return None
    if source.read_bytes() == v0.read_bytes():
        return None
    return (f"{source} was edited after `workspace.py init` and now differs from {v0.parent.name}/{v0.name}: the run "
            f"evaluates {v0} (the copy init made), never {source.name}; put the fix in {v0}")


# --- the steps ------------------------------------------------------------------------------------


def _gpu_steps(evaluation: Evaluation, options: EvaluateOptions) -> None:
    benchmark = benchmark_request(evaluation, options.baselines, options.compile_modes)
    hypothesis = hypothesis_result(evaluation)
    # A failed hypothesis check stops the evaluation before anything is timed: no worker is started for it.
    with benchmark_worker_beside_checks(benchmark, hypothesis is None or hypothesis.status == "ok") as held:
        checks_before_timing(evaluation, options.sanitize, hypothesis)
        if evaluation.stopped:  # leaving the with-block stops the held worker: it timed nothing
            for name in ("benchmark", "profile"):
                evaluation.skip(name, "an earlier check failed")
            return
        if evaluation.against is None and evaluation.version.number > 0:
            evaluation.warnings.append("no earlier version was timed: nothing to compare with (evaluate v0 first)")
        worker = held()
        if worker is not None:  # it touches the GPU while it prepares: never beside a measurement of the ceilings
            worker.wait_until_prepared()
        ceilings_step(evaluation)
        benchmark_step(evaluation, benchmark, worker)
    if evaluation.stopped:
        evaluation.skip("profile", "the benchmark found the kernel wrong or broken")
        return
    profile_step(evaluation)
    if options.static_analysis:
        static_analysis_step(evaluation)


def _cpu_steps(evaluation: Evaluation, options: EvaluateOptions) -> None:
    run, folder = evaluation.run, evaluation.folder
    backend = registry.get(run.backend)
    if backend.runs_on_cpu:
        evaluation.check_dims, reduced = dict(run.dims), None  # a ModelNew building CUDA: compiled here, never run
        if backend.runs_without_gpu(evaluation.solution):
            try:
                evaluation.check_dims, reduced = interpreter_sizes(evaluation.reference, dict(run.dims))
            except EnvironmentFault as error:  # too large for the interpreter at any size the Model takes
                evaluation.cannot_run("correctness", f"{error.message} ({error.hint})")
                return
        correctness_step(evaluation, CorrectnessRequest(evaluation.solution, evaluation.reference, folder,
                                                         dims=dict(evaluation.check_dims), device="cpu",
                                                         check=check_options(evaluation)), reduced)
    elif not backend.builds_ahead:
        evaluation.cannot_run("correctness", backend.gpu_only_reason)
    else:
        evaluation.cannot_run("correctness", f"{backend.gpu_only_reason} (it was compiled instead)")
        # Compile-only results go to a subfolder: vN/correctness.json must never read "pass"
        # for a kernel that has not run.
        request = CorrectnessRequest(evaluation.solution, evaluation.reference, folder / "compile_check",
                                     check=check_options(evaluation, compile_only=True), build=run.build_options())
        evaluation.step("compile_check", [CORRECTNESS_PROG, *request.argv()], lambda: correctness_outcome(request),
                        compile_line, ["compile_check/correctness.json"])
    if not evaluation.stopped:
        hypothesis_step(evaluation)
    if evaluation.stopped:
        evaluation.skip("static_analysis", "an earlier check failed")
        return
    if options.sanitize:
        evaluation.cannot_run("memcheck", "compute-sanitizer checks kernels on an NVIDIA GPU (torch sees none here)")
    evaluation.cannot_run("benchmark", "timing needs an NVIDIA GPU (torch sees none here)")
    evaluation.cannot_run("profile", "Nsight Compute profiles only on an NVIDIA GPU")
    static_analysis_step(evaluation)


