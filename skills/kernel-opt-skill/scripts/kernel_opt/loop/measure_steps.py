"""The evaluation's steps that measure: the GPU's ceilings, the benchmark (its worker held beside the checks), the
profile."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from kernel_opt.check.integrity.launch_rules import profiled_kernels_problem
from kernel_opt.check.integrity.launches import launch_check_of
from kernel_opt.check.records import CORRECTNESS_FILE, read_correctness
from kernel_opt.core.errors import ExitCode, SolutionError
from kernel_opt.loop.evaluation import Evaluation, StepOutcome
from kernel_opt.loop.step_summaries import benchmark_line, clip, profile_line
from kernel_opt.measure.benchmark import benchmark_solution
from kernel_opt.measure.benchmark_report import benchmark_summary, write_benchmark_reports
from kernel_opt.measure.benchmark_request import DEFAULT_COMPILE_MODES, BenchmarkRequest
from kernel_opt.measure.benchmark_request import PROG as BENCHMARK_PROG
from kernel_opt.measure.ceilings import load_or_measure
from kernel_opt.measure.ceilings_report import PROG as CEILINGS_PROG
from kernel_opt.measure.ceilings_report import ceilings_origin, ceilings_summary
from kernel_opt.measure.held_worker import HeldBenchmarkWorker, hold_benchmark_worker
from kernel_opt.measure.records import compile_baseline_name
from kernel_opt.measure.reference_cache import REFERENCE_CACHE_FILE
from kernel_opt.profile.ncu.collection import NO_KERNELS_PROFILED
from kernel_opt.profile.ncu_summary import profile_summary
from kernel_opt.profile.profiler import PROG as PROFILE_PROG
from kernel_opt.profile.profiler import ProfileRequest, profile_solution
from kernel_opt.profile.records import NCU_SUMMARY_FILE, NcuSummary

# The correctness step has just run every shape with several seeds on this very file: the
# benchmark relies on that record (--checked-by, check/reuse.py) instead of its own gate, and
# runs the gate at one seed only where the record cannot be relied on (its post-timing checks stay).
BENCHMARK_SEEDS_AFTER_CHECK = 1


@contextmanager
def benchmark_worker_beside_checks(request: BenchmarkRequest, wanted: bool
                                   ) -> Iterator[Callable[[], HeldBenchmarkWorker | None]]:
    """The benchmark's worker, started (from a thread, so the checks start at once) to prepare beside the checks.

    It starts Python and torch, loads the files, builds the instance and counts the work (on the
    first version), then waits, timing nothing, until the benchmark step releases it: after the
    correctness check, the sanitizers and the ceilings step (measure/benchmark.py,
    hold_benchmark_worker). Yields the call that waits for it to have started (None: no head start);
    on the way out it is stopped, so a failed check leaves no process and records nothing of it.
    """
    with ThreadPoolExecutor(max_workers=1) as starter:
        starting = starter.submit(hold_benchmark_worker, request) if wanted else None

        def held() -> HeldBenchmarkWorker | None:
            return starting.result() if starting is not None else None

        try:
            yield held
        finally:
            worker = held()
            if worker is not None:
                worker.stop()


def ceilings_step(evaluation: Evaluation) -> None:
    """Read this GPU's measured ceilings, measuring them first on a machine that has none cached.

    Without them benchmark falls back to the datasheet's peaks, so a run whose versions are
    evaluated on different machines (a fresh lease, a CI runner) would change the basis of its
    % of ceiling between versions without anyone asking. A failure here is only a warning: the
    benchmark still runs, and its report says which ceilings it used.
    """
    def measure() -> StepOutcome:
        result = load_or_measure(refresh=False)
        return StepOutcome(result, int(ExitCode.OK), ceilings_summary(result))

    step, _ = evaluation.step("ceilings", [CEILINGS_PROG], measure, ceilings_origin, [])
    if step.exit_code != 0:
        step.status = "skipped"
        evaluation.warnings.append(f"the GPU's ceilings could not be read or measured ({step.summary}): this "
                                   "version's % of ceiling is against the datasheet's peaks")


def benchmark_request(evaluation: Evaluation, baselines: list[str], compile_modes: list[str]) -> BenchmarkRequest:
    """What benchmark.py would be asked: against the best version so far, relying on this version's correctness."""
    run, against = evaluation.run, evaluation.against
    return BenchmarkRequest(
        evaluation.solution, evaluation.reference, evaluation.folder, dims=dict(run.dims),
        against=Path(against.solution) if against is not None else None, baselines=list(baselines),
        compile_modes=list(compile_modes), check_seeds=BENCHMARK_SEEDS_AFTER_CHECK,
        target_percent=run.target_percent, build=run.build_options(), kernelbench_tolerances=run.kernelbench_tolerances,
        checked_by=evaluation.folder / CORRECTNESS_FILE, reference_cache=evaluation.out / REFERENCE_CACHE_FILE,
    )


def benchmark_step(evaluation: Evaluation, request: BenchmarkRequest, held: HeldBenchmarkWorker | None) -> None:
    """Time the version; `held` is its worker, prepared beside the checks, which the benchmark releases.

    A version that reaches the roofline target is timed once more beside every torch.compile mode Finish times,
    so no baseline that Finish would find faster is left out of the stop (loop/workspace.py, behind_baseline).
    """
    def measure() -> StepOutcome:
        report = benchmark_solution(request, held=held)
        missing = modes_missing_at_target(request, report.target_reached, [entry.name for entry in report.baselines])
        if missing:
            report = benchmark_solution(replace(request, compile_modes=[*request.compile_modes, *missing]))
            report.notes.append(f"this version reached the roofline target, so it was timed again beside torch.compile "
                                f"({', '.join(missing)}) too: a baseline faster than it keeps the run going")
            write_benchmark_reports(report, request.output_dir)
        return StepOutcome(report, int(report.exit_code), benchmark_summary(report, request.output_dir))

    evaluation.step("benchmark", [BENCHMARK_PROG, *request.argv()], measure, benchmark_line,
                    ["benchmark.json", "benchmark.md"])


def modes_missing_at_target(request: BenchmarkRequest, target_reached: bool | None, timed: list[str]) -> list[str]:
    """The torch.compile modes Finish's benchmark times (benchmark.py's defaults) that a version at its roofline
    target was not timed against: Finish would time them anyway, and a stop one of them overturns there comes too
    late (an H200 matvec at 98.6% of the copy roof stopped the run; max-autotune-no-cudagraphs ran 1.063x faster)."""
    if not target_reached or "compile" not in request.baselines:
        return []
    return [mode for mode in DEFAULT_COMPILE_MODES if compile_baseline_name(mode) not in timed]


def profile_step(evaluation: Evaluation) -> None:
    """Profile the version against the best so far; fails it where the profile shows its calls skipped the work."""
    against = evaluation.against
    baseline = None
    if against is not None and (Path(against.directory) / NCU_SUMMARY_FILE).is_file():
        baseline = Path(against.directory)
    request = ProfileRequest(evaluation.folder, solution=evaluation.solution, reference=evaluation.reference,
                             dims=dict(evaluation.run.dims), baseline=baseline, build=evaluation.run.build_options())

    skipped_work: list[str] = []  # why the profile shows the calls skipped the work, when it does

    def profile() -> StepOutcome:
        try:
            summary = profile_solution(request)
        except SolutionError as error:
            if error.kind != NO_KERNELS_PROFILED:
                raise
            summary, text = None, f"error: {error.message}"
        else:
            text = profile_summary(summary, request.output_dir)
        names = [kernel.demangled_name or kernel.name for kernel in summary.kernels] if summary else []
        problem = profiled_kernels_problem(names, launch_check_of(read_correctness(evaluation.folder)))
        if problem is None:
            return StepOutcome(summary, int(ExitCode.OK), text)
        skipped_work.append(problem)
        return StepOutcome(summary, int(ExitCode.CHECK_FAILED), f"{text}\nFAIL: {problem}")

    def summarize(summary: NcuSummary | None) -> str:
        return clip(f"FAIL: {skipped_work[0]}") if skipped_work else profile_line(summary)

    evaluation.step("profile", [PROFILE_PROG, *request.argv()], profile, summarize,
                    ["ncu_summary.json", "ncu_summary.md", "ncu_details.md"])
