"""The evaluation's steps that time nothing: correctness, the hypothesis check, compute-sanitizer, static analysis."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from kernel_opt.check.correctness import PROG as CORRECTNESS_PROG
from kernel_opt.check.correctness import CheckOptions, CorrectnessRequest, check_solution, exit_code_of
from kernel_opt.check.report import correctness_summary
from kernel_opt.check.sanitizer import log_name, racecheck_reason
from kernel_opt.core.errors import ExitCode, KernelOptError
from kernel_opt.experience.hypothesis import check_hypothesis
from kernel_opt.loop.evaluation import Evaluation, FinishedCall, StepOutcome, finish_call
from kernel_opt.loop.records import StepResult
from kernel_opt.loop.step_summaries import clip, correctness_line, sanitizer_line, static_line
from kernel_opt.loop.workspace import HYPOTHESIS_FILE
from kernel_opt.profile.static_analysis import PROG as STATIC_ANALYSIS_PROG
from kernel_opt.profile.static_analysis import StaticAnalysisRequest, analyze_solution, static_analysis_summary
from kernel_opt.sass.report import StaticReport
from kernel_opt.solution import registry


def correctness_outcome(request: CorrectnessRequest) -> StepOutcome:
    """check_solution's record, its exit code and the summary correctness_check.py would print."""
    report = check_solution(request)
    return StepOutcome(report, exit_code_of(report), correctness_summary(report, request.output_dir))


def correctness_step(evaluation: Evaluation, request: CorrectnessRequest, sizes_note: str | None = None) -> None:
    """The correctness check alone, recorded (where no sanitizer runs beside it: without a GPU).

    `sizes_note` says why the check ran at other sizes than the run's (the interpreter's, on a CPU).
    """
    def summarize(record) -> str:
        line = correctness_line(record)
        ran = bool(getattr(record, "cases", None))  # no case ran (a ModelNew that builds CUDA): no sizes to name
        return line if sizes_note is None or not ran else f"{line}; {sizes_note}"

    evaluation.step("correctness", [CORRECTNESS_PROG, *request.argv()], lambda: correctness_outcome(request),
                    summarize, ["correctness.json", "correctness.md"])


def checks_before_timing(evaluation: Evaluation, sanitize_wanted: bool, hypothesis: StepResult | None) -> None:
    """Correctness, the hypothesis check, and compute-sanitizer, recorded in that order.

    memcheck runs on every new version, racecheck too when a kernel uses shared memory (its SASS
    says so): one case, the smallest, under compute-sanitizer (correctness_check.py --sanitize).
    A finding fails the version as a wrong result does, before anything is timed. The three runs
    are separate processes that time nothing (the correctness check's stream rule orders kernels
    of its own process only), so they run side by side: on the H100 this took an evaluation from
    the sum of the three (11.9 + 7.2 + 8.0 s for a Triton layernorm) to about the longest of them.
    A sanitizer finding is recorded even when the correctness check failed: it may say why.
    `hypothesis` is hypothesis_result's, made by the caller, which starts the benchmark's worker
    beside these checks only where it passed.
    """
    correctness = CorrectnessRequest(evaluation.solution, evaluation.reference, evaluation.folder,
                                     dims=dict(evaluation.run.dims), check=check_options(evaluation),
                                     build=evaluation.run.build_options())
    sanitize = sanitize_wanted and (hypothesis is None or hypothesis.status == "ok")
    with ThreadPoolExecutor(max_workers=3) as pool:
        running = {"correctness": pool.submit(finish_call, lambda: correctness_outcome(correctness), correctness_line)}
        if sanitize:
            running["memcheck"] = start_sanitizer(pool, evaluation, "memcheck", "")
            racecheck_needed, racecheck_why = racecheck_reason(static_report(evaluation))
            if racecheck_needed:
                running["racecheck"] = start_sanitizer(pool, evaluation, "racecheck",
                                                       f"; it ran because the kernel {racecheck_why}")
        finished = {name: future.result() for name, future in running.items()}
    evaluation.record("correctness", [CORRECTNESS_PROG, *correctness.argv()], finished["correctness"],
                      ["correctness.json", "correctness.md"])
    if hypothesis is not None and not evaluation.stopped:
        evaluation.steps.append(hypothesis)
    if not sanitize_wanted and not evaluation.stopped:
        evaluation.skip("memcheck", "--no-sanitize")
    if not sanitize:
        return
    memcheck, _ = record_sanitizer(evaluation, "memcheck", finished["memcheck"])
    if memcheck.status == "cannot_run_here":
        evaluation.skip("racecheck", "compute-sanitizer cannot run here (the memcheck step says why)")
    elif "racecheck" in finished:
        record_sanitizer(evaluation, "racecheck", finished["racecheck"])
    else:
        evaluation.skip("racecheck", racecheck_why)


def check_options(evaluation: Evaluation, **fields: Any) -> CheckOptions:
    """A check's options for this evaluation: `fields`, with evaluate's --timeout where one was given and the run's
    tolerance rule."""
    if evaluation.check_timeout_s is not None:
        fields["timeout_s"] = evaluation.check_timeout_s
    return CheckOptions(**fields, kernelbench_tolerances=evaluation.run.kernelbench_tolerances)


def sanitizer_request(evaluation: Evaluation, tool: str) -> CorrectnessRequest:
    """What correctness_check.py --sanitize TOOL would be asked for this version."""
    return CorrectnessRequest(evaluation.solution, evaluation.reference, evaluation.folder,
                              dims=dict(evaluation.run.dims), check=check_options(evaluation, sanitize=tool),
                              build=evaluation.run.build_options())


def start_sanitizer(pool: ThreadPoolExecutor, evaluation: Evaluation, tool: str, why: str) -> Future:
    """Start one compute-sanitizer run on `pool`; `why` ends its summary (why it ran)."""
    request = sanitizer_request(evaluation, tool)
    return pool.submit(finish_call, lambda: correctness_outcome(request),
                       lambda report: clip(sanitizer_line(report) + why))


def record_sanitizer(evaluation: Evaluation, tool: str, finished: FinishedCall) -> tuple[StepResult, Any]:
    """Record a finished compute-sanitizer run as the step named after its tool."""
    return evaluation.record(tool, [CORRECTNESS_PROG, *sanitizer_request(evaluation, tool).argv()], finished,
                             [f"correctness_{tool}.json", f"correctness_{tool}.md", log_name(tool)])


def static_report(evaluation: Evaluation) -> StaticReport | None:
    """The version's static analysis (vN/static_analysis.json), made once; None when it cannot be made,
    or where the backend has none (a ModelNew's kernels exist only once it runs): racecheck then runs."""
    request = static_request(evaluation)
    if evaluation.static_report is None and request is not None:
        try:
            evaluation.static_report = analyze_solution(request)
        except KernelOptError as error:
            evaluation.warnings.append(f"static analysis failed ({error.message}), so whether a kernel uses shared "
                                       "memory is unknown: racecheck ran to be safe")
    return evaluation.static_report


def hypothesis_step(evaluation: Evaluation) -> None:
    """The hypothesis check recorded on its own (without a GPU; on a GPU checks_before_timing records it)."""
    hypothesis = hypothesis_result(evaluation)
    if hypothesis is not None:
        evaluation.steps.append(hypothesis)


def hypothesis_result(evaluation: Evaluation) -> StepResult | None:
    """The check of vN/hypothesis.txt (v1 on; None for v0): a file read, nothing run."""
    if evaluation.version.number == 0:
        return None
    started = time.perf_counter()
    path = evaluation.folder / HYPOTHESIS_FILE
    if not path.is_file():
        step = StepResult("hypothesis", "failed", 0.0, int(ExitCode.CHECK_FAILED),
                          f"no {path}: write it before changing the code (reference/hypothesis.md)")
    else:
        check = check_hypothesis(path.read_text(encoding="utf-8", errors="replace"), str(path))
        summary = (f"valid (Expected names {', '.join(check.metrics_named)})" if check.ok
                   else f"{len(check.problems)} problem(s): " + "; ".join(check.problems))
        step = StepResult("hypothesis", "ok" if check.ok else "failed", 0.0,
                          int(ExitCode.OK if check.ok else ExitCode.CHECK_FAILED), summary, [str(path)])
    step.wall_s = round(time.perf_counter() - started, 2)
    return step


def static_request(evaluation: Evaluation) -> StaticAnalysisRequest | None:
    """What static_analysis.py would be asked; None where this solution's kernels cannot be compiled ahead of a
    run (a ModelNew that builds CUDA with load_inline)."""
    run = evaluation.run
    if registry.get(run.backend).static_analysis_unavailable(evaluation.solution) is not None:
        return None
    # e.g. Triton kernels, specialised on the inputs ref.py's setup() makes
    needs_inputs = registry.get(run.backend).static_analysis_needs_inputs
    return StaticAnalysisRequest(evaluation.solution, evaluation.folder, build=run.build_options(),
                                 reference=evaluation.reference if needs_inputs else None,
                                 dims=dict(evaluation.check_dims) if needs_inputs else {})


def static_analysis_step(evaluation: Evaluation) -> None:
    """static_analysis.py's step, reusing the report the racecheck decision made; skipped where the backend has none."""
    request = static_request(evaluation)
    if request is None:
        evaluation.skip("static_analysis",
                        registry.get(evaluation.run.backend).static_analysis_unavailable(evaluation.solution))
        return

    def analyze() -> StepOutcome:
        report = evaluation.static_report or analyze_solution(request)  # the racecheck decision may have made it
        evaluation.static_report = report
        return StepOutcome(report, int(ExitCode.OK), static_analysis_summary(report, request.output_dir))

    evaluation.step("static_analysis", [STATIC_ANALYSIS_PROG, *request.argv()], analyze, static_line,
                    ["static_analysis.json", "static_analysis.md"])
