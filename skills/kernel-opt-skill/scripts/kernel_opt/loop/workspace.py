"""The run record and the versions of one optimization run: what exists, what is best, what is left.

A run lives in one folder OUT:

    OUT/run.json            the run record (kernel name, backend, shapes, budget, target)
    OUT/ref.py              the PyTorch reference
    OUT/vN/vN.cu|vN.py      version N's source; v0 is the kernel the run started from
    OUT/vN/version.json     which version vN was copied from, and when
    OUT/vN/*.json           what the tools measured (correctness, benchmark, ncu_summary, ...)
    OUT/vN/evaluation.json  what `workspace.py evaluate` ran on vN and how it ended

The budget is fixed when the run starts, so an agent cannot buy itself more iterations by
editing a flag: `next` reads it from run.json. "Best so far" is decided here and only here,
so `next`, `evaluate`, `status` and the final report always agree on it.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernel_opt.check.records import read_correctness
from kernel_opt.core.errors import ExitCode, KernelOptError, UsageError
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.records import now_iso
from kernel_opt.loop.records import (
    EVALUATION_FILE,
    REFERENCE_FILE,
    RUN_FILE,
    VERSION_FILE,
    EvaluationRecord,
    RunRecord,
    StepResult,
    VersionRecord,
    read_evaluation,
    read_run_record,
    read_version_record,
)
from kernel_opt.measure.records import read_benchmark
from kernel_opt.measure.verdicts import clearly_faster
from kernel_opt.profile.records import read_profile
from kernel_opt.solution import registry

HYPOTHESIS_FILE = "hypothesis.txt"
_VERSION_DIR = re.compile(r"^v(\d+)$")

# How an evaluation ended (evaluation.json "state"):
#   measured            the benchmark timed it: its numbers stand, and the version is locked
#   failed              incorrect, or the solution crashed / did not compile: a recorded failure
#   invalid_hypothesis  hypothesis.txt is not a testable hypothesis yet: nothing was timed
#   needs_gpu           this machine ran what it could; timing and profiling need a GPU
#   error               a tool was called wrongly (a bug or a broken ref.py): nothing to conclude
EVALUATION_STATES = ("measured", "failed", "invalid_hypothesis", "needs_gpu", "error")
# A step of these that fails (rather than cannot run) undoes the benchmark's measurement.
MEASUREMENT_VOIDING_STEPS = frozenset({"profile"})
# A version in one of these states has a verdict, so the loop may move past it.
FINAL_STATES = frozenset({"measured", "failed"})
# Numbers that were measured are never silently replaced by a re-run (cherry-picking the
# luckiest of several runs); `evaluate --force` says so explicitly.
LOCKED_STATES = frozenset({"measured"})


class RunRefusal(KernelOptError):
    """The command is well formed, but the run's state forbids it (budget spent, v0 not correct...).

    A refusal, so exit 2 as everywhere (README, "Exit codes"): nothing ran, so nothing failed;
    its kind "refused" tells it apart from a bad argument.
    """

    exit_code = ExitCode.USAGE
    kind = "refused"


def read_run(out: Path) -> RunRecord:
    """OUT/run.json; a usage error for a folder that is not a run."""
    run = read_run_record(out)
    if run is None:
        raise UsageError(f"{out} has no {RUN_FILE}: it is not a run folder",
                         hint="start a run with `workspace.py init OUT --kernel FILE --ref REF --iterations N`")
    return run


def _is_empty_or_missing(folder: Path) -> bool:
    return not folder.exists() or (folder.is_dir() and not any(folder.iterdir()))


def create_run(out: Path, kernel: Path, reference: Path, iterations: int, kernel_name: str, backend: str,
               dims: dict[str, Any], target_percent: float, nvcc_flags: str = "", arch: str = "auto") -> RunRecord:
    """Create OUT with ref.py, v0/v0.<ext> and run.json; refuse a folder that already holds anything.

    Refusing a non-empty OUT protects a finished run's evidence: a second `init` on it would
    mix two runs' versions under one budget.
    """
    if not _is_empty_or_missing(out):
        raise UsageError(f"{out} already exists and is not empty: init never writes over an earlier run",
                         hint="choose a new output folder, or continue that run with `workspace.py status`")
    if not kernel.is_file():
        raise UsageError(f"kernel file not found: {kernel}")
    if not reference.is_file():
        raise UsageError(f"reference file not found: {reference}")
    if iterations < 0:
        raise UsageError("--iterations must be 0 or more (0: evaluate v0 only, as in 'why is it slow')")
    if not 0 < target_percent <= 100:
        raise UsageError("--target-percent must be in (0, 100]")
    suffix = registry.get(backend).suffix
    run = RunRecord(
        kernel_name=kernel_name, backend=backend, solution_pattern="v{n}/v{n}" + suffix,
        reference_file=REFERENCE_FILE, dims=dict(dims), iterations_budget=iterations, target_percent=target_percent,
        created_at=now_iso(), source_kernel=str(kernel), source_reference=str(reference),
        nvcc_flags=nvcc_flags, arch=arch,
    )
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(reference, out / REFERENCE_FILE)
    solution = run.solution_path(out, 0)
    solution.parent.mkdir(parents=True)
    shutil.copyfile(kernel, solution)
    write_json_atomic(solution.parent / VERSION_FILE,
                      VersionRecord("v0", None, copied_from=str(kernel), created_at=run.created_at).to_dict())
    write_json_atomic(out / RUN_FILE, run.to_dict())
    return run


# --- versions ----------------------------------------------------------------------------------


@dataclass
class VersionState:
    """What the files in one version folder say; None wherever a file or field is absent."""

    number: int
    directory: str
    solution: str
    has_solution: bool
    parent: str | None = None
    continued_past_target: bool = False  # made by `next --ignore-target` after the target was reached
    evaluation_state: str | None = None  # None: `evaluate` never ran on it
    evaluation_wall_s: float | None = None
    correct: bool | None = None  # correctness.json "passed"
    benchmark_verdict: str | None = None  # benchmark.json "verdict"
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    percent_of_ceiling: float | None = None
    target_reached: bool | None = None
    best_baseline: str | None = None  # the fastest PyTorch baseline its benchmark timed
    speedup_vs_best_baseline: float | None = None
    compared_with: str | None = None  # the version benchmark.json's comparison was against
    comparison_speedup: float | None = None
    comparison_ci_low: float | None = None
    comparison_verdict: str | None = None
    bottleneck: str | None = None
    memory_limiter: str | None = None
    top_stall: str | None = None
    gpu_name: str | None = None

    @property
    def name(self) -> str:
        return f"v{self.number}"

    @property
    def measured(self) -> bool:
        """Timed by the benchmark, correct, not failed by its evaluation: the only versions that can be best so far.

        An evaluation fails a timed version when its profile shows the timed calls skipped the work.
        """
        return (self.benchmark_verdict == "measured" and isinstance(self.median_us, (int, float))
                and self.median_us > 0 and self.correct is not False and self.evaluation_state != "failed")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **asdict(self), "measured": self.measured}


def version_number(name: str) -> int:
    """'v3' -> 3; anything else is a usage error that says what a version looks like."""
    match = _VERSION_DIR.match(Path(name).name)
    if not match:
        raise UsageError(f"{name!r} is not a version name", hint="versions are named v0, v1, v2, ...")
    return int(match.group(1))


def _solution_of(out: Path, number: int, run: RunRecord | None) -> Path:
    if run is not None:
        return run.solution_path(out, number)
    folder = out / f"v{number}"
    suffixes = list(dict.fromkeys(backend.suffix for backend in registry.backends()))  # .cu, .py, ...
    for suffix in suffixes:
        if (folder / f"v{number}{suffix}").is_file():
            return folder / f"v{number}{suffix}"
    return folder / f"v{number}{suffixes[0]}"  # nothing there yet: the first backend's suffix


def read_version(out: Path, number: int, run: RunRecord | None = None) -> VersionState:
    """Read one version folder's records into a VersionState (no file is required)."""
    folder = out / f"v{number}"
    solution = _solution_of(out, number, run)
    state = VersionState(number=number, directory=str(folder), solution=str(solution), has_solution=solution.is_file())
    version = read_version_record(folder)
    if version is not None:
        state.parent, state.continued_past_target = version.parent, version.continued_past_target
    evaluation = read_evaluation(folder)
    if evaluation is not None:
        state.evaluation_state, state.evaluation_wall_s = evaluation.state, evaluation.wall_s
    correctness = read_correctness(folder)
    if correctness is not None:
        state.correct = correctness.passed
    benchmark = read_benchmark(folder)
    if benchmark is not None:
        state.benchmark_verdict = benchmark.verdict
        state.median_us, state.p20_us, state.p80_us = benchmark.median_us, benchmark.p20_us, benchmark.p80_us
        state.percent_of_ceiling = benchmark.percent_of_ceiling
        state.target_reached = benchmark.target_reached
        state.best_baseline = benchmark.best_baseline
        state.speedup_vs_best_baseline = benchmark.speedup_vs_best_baseline
        state.gpu_name = benchmark.gpu_name
        if benchmark.comparison is not None:
            state.compared_with = benchmark.comparison.against_folder()
            state.comparison_speedup = benchmark.comparison.speedup
            state.comparison_ci_low = benchmark.comparison.ci_low
            state.comparison_verdict = benchmark.comparison.verdict
    profile = read_profile(folder)
    if profile is not None:
        state.bottleneck, state.memory_limiter = profile.bottleneck, profile.memory_limiter
        state.top_stall = profile.top_stall
    return state


def list_versions(out: Path, run: RunRecord | None = None) -> list[VersionState]:
    """Every vN folder under OUT, in version order."""
    if not out.is_dir():
        return []
    numbers = sorted(int(m.group(1)) for p in out.iterdir() if p.is_dir() and (m := _VERSION_DIR.match(p.name)))
    return [read_version(out, number, run) for number in numbers]


def best_measured(versions: list[VersionState], below: int | None = None) -> VersionState | None:
    """The best measured-and-correct version (optionally among those numbered below `below`).

    The interleaved comparisons decide, in version order: a version replaces the best so far
    only when it was compared with that very version and found faster beyond the comparison's
    own bias (measure/verdicts.clearly_faster: a success, or a neutral gain of more than 2% with
    its interval above 1). Anything less keeps the older version, which needs no new evidence;
    medians from separate runs differ by a few percent between processes, so they must not
    promote a version that its own interleaved comparison found no faster. A version with no comparison against the
    best so far (records from older runs) falls back to its median.
    """
    candidates = sorted((v for v in versions if v.measured and (below is None or v.number < below)),
                        key=lambda v: v.number)
    best: VersionState | None = None
    for version in candidates:
        if best is None:
            best = version
        elif version.compared_with == best.name:
            if version.comparison_verdict == "success" or clearly_faster(version.comparison_speedup,
                                                                          version.comparison_ci_low):
                best = version
        elif version.median_us < best.median_us:
            best = version
    return best


def best_so_far(versions: list[VersionState]) -> VersionState | None:
    """best_measured, or v0 when nothing was measured yet (the run starts from v0)."""
    return best_measured(versions) or next((v for v in versions if v.number == 0), None)


# --- budget, status ------------------------------------------------------------------------------


@dataclass
class Budget:
    iterations_total: int
    iterations_used: int  # versions v1.. that exist, evaluated or not

    @property
    def iterations_left(self) -> int:
        return max(0, self.iterations_total - self.iterations_used)

    @property
    def spent(self) -> bool:
        return self.iterations_used >= self.iterations_total

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "iterations_left": self.iterations_left, "spent": self.spent}


@dataclass
class RunStatus:
    """Where the run stands: the answer to `workspace.py status`, and the final report's frame."""

    out: str
    run: RunRecord
    versions: list[VersionState]
    best: VersionState | None
    best_is_measured: bool
    budget: Budget
    target_reached: bool | None  # the best version's benchmark said so; None: not measured
    stop_reason: str | None  # "target_reached", "budget_spent" or None (the run may go on)
    newest: VersionState | None
    newest_pending: bool  # the newest version has no final evaluation yet
    # The PyTorch baseline the best version is still slower than, though at its roofline target: PyTorch
    # itself then shows the ceiling is beatable, so the target does not end the run (run_status).
    behind_baseline: str | None = None

    def speedup_vs_v0(self, version: VersionState) -> float | None:
        """v0's median / this version's median, from their own benchmark runs (not interleaved)."""
        v0 = next((v for v in self.versions if v.number == 0), None)
        if v0 is None or not v0.measured or not version.measured:
            return None
        return v0.median_us / version.median_us

    def to_dict(self) -> dict[str, Any]:
        return {
            "out": self.out,
            "run": self.run.to_dict(),
            "versions": [{**v.to_dict(), "speedup_vs_v0": self.speedup_vs_v0(v)} for v in self.versions],
            "best": self.best.name if self.best else None,
            "best_is_measured": self.best_is_measured,
            "budget": self.budget.to_dict(),
            "target_percent": self.run.target_percent,
            "target_reached": self.target_reached,
            "stop_reason": self.stop_reason,
            "behind_baseline": self.behind_baseline,
            "newest": self.newest.name if self.newest else None,
            "newest_pending": self.newest_pending,
        }


def run_status(out: Path) -> RunStatus:
    run = read_run(out)
    versions = list_versions(out, run)
    measured = best_measured(versions)
    best = measured or next((v for v in versions if v.number == 0), None)
    budget = Budget(run.iterations_budget, sum(1 for v in versions if v.number >= 1))
    target_reached = measured.target_reached if measured is not None else None
    newest = versions[-1] if versions else None
    newest_pending = newest is not None and newest.evaluation_state not in FINAL_STATES
    behind = behind_baseline(measured) if target_reached else None
    stop_reason = None
    if target_reached and behind is None:
        stop_reason = "target_reached"
    elif budget.spent and not newest_pending:
        stop_reason = "budget_spent"
    return RunStatus(str(out), run, versions, best, measured is not None, budget, target_reached, stop_reason,
                     newest, newest_pending, behind)


def behind_baseline(version: VersionState | None) -> str | None:
    """The PyTorch baseline this version is slower than (speedup < 1), else None.

    A version at 97% of its roofline ceiling that torch.compile still beats has not reached any
    ceiling worth stopping at: the compiled kernel moves the same bytes faster (H100, 2026-11-25: a
    SiLU gate at 97.3% of the same-size copy roof, 0.94x torch.compile, whose kernel read at an
    effective 3.15 TB/s against the copy's 3.06). Slower by any margin counts: the budget bounds a tie.
    """
    speedup = version.speedup_vs_best_baseline if version is not None else None
    if isinstance(speedup, (int, float)) and speedup < 1.0:
        return version.best_baseline or "the fastest PyTorch baseline"
    return None


# --- the next version ------------------------------------------------------------------------------

HYPOTHESIS_TEMPLATE_FIELDS = (
    # The <...> slots are what hypothesis_check rejects as "still holds a template slot", so a
    # template left unfilled can never pass for a hypothesis.
    "Hypothesis: <the one change, and the effect it should have>",
    "Rationale: <evidence from {parent}/ncu_summary.md and {parent}/benchmark.md: metric names and values>",
    "Expected: <which metric moves, which way, roughly how much; and the time against {parent}>",
)


@dataclass
class NextVersion:
    number: int
    parent: VersionState
    solution: Path
    hypothesis: Path

    @property
    def name(self) -> str:
        return f"v{self.number}"


def check_can_create_next(status: RunStatus, ignore_target: bool = False) -> VersionState:
    """The version the next one starts from, or RunRefusal with the sentence that says why not."""
    newest = status.newest
    if newest is None or status.best is None:
        raise UsageError(f"{status.out} has no v0", hint="start the run with `workspace.py init`")
    if status.newest_pending:
        what = {
            None: "has not been evaluated yet",
            "needs_gpu": "has not been timed yet (its evaluation ran on a machine without a GPU)",
            "invalid_hypothesis": "was stopped at its hypothesis check: nothing was timed",
            "error": "ended with a usage error: nothing was concluded",
        }.get(newest.evaluation_state, f"is in state {newest.evaluation_state}")
        raise RunRefusal(f"{newest.name} {what}; evaluate it before starting the next version",
                         hint=f"run `workspace.py evaluate {status.out} {newest.name}`")
    v0 = next((v for v in status.versions if v.number == 0), None)
    if v0 is None:
        raise UsageError(f"{status.out} has no v0 folder", hint="a run starts at v0: `workspace.py init`")
    if not v0.measured and not status.best_is_measured:
        raise RunRefusal("v0 has not passed its correctness check and benchmark: the loop starts from a correct, "
                         "timed v0; fix v0 in place and evaluate it again",
                         hint=f"read {v0.directory}/correctness.md, "
                              f"then `workspace.py evaluate {status.out} v0 --force`")
    if status.budget.spent:
        raise RunRefusal(f"budget spent: all {status.budget.iterations_total} iteration(s) of this run are used "
                         f"(fixed at init); finish with the final report",
                         hint=f"run `final_report.py {status.out}`")
    if status.stop_reason == "target_reached" and not ignore_target:
        raise RunRefusal(f"target reached: {status.best.name} runs at {status.best.percent_of_ceiling:.1f}% of the "
                         f"roofline ceiling (target {status.run.target_percent:g}%); finish with the final report",
                         hint="pass --ignore-target to keep optimizing within the budget anyway")
    return status.best


def create_next_version(out: Path, ignore_target: bool = False) -> NextVersion:
    """Create v<n+1>/ as a copy of the best version so far, with a hypothesis template.

    The copy starts from the best, never from the newest: a failed version is not patched
    in place but abandoned (reference/hypothesis.md, the one-variable rule).
    """
    status = run_status(out)
    parent = check_can_create_next(status, ignore_target)
    number = status.newest.number + 1
    solution = status.run.solution_path(out, number)
    solution.parent.mkdir(parents=True, exist_ok=False)  # a concurrent `next` fails here, not later
    shutil.copyfile(parent.solution, solution)
    write_json_atomic(solution.parent / VERSION_FILE, VersionRecord(
        f"v{number}", parent.name, copied_from=parent.solution, created_at=now_iso(), parent_median_us=parent.median_us,
        # Past the roofline target only by the agent's choice (--ignore-target): the report says so.
        continued_past_target=bool(status.stop_reason == "target_reached" and ignore_target),
    ).to_dict())
    hypothesis = solution.parent / HYPOTHESIS_FILE
    write_text_atomic(hypothesis, hypothesis_template(parent, number, solution.name))
    return NextVersion(number, parent, solution, hypothesis)


def hypothesis_template(parent: VersionState, number: int, solution_name: str) -> str:
    """The template: comment lines with the parent's evidence, then the three slots to fill."""
    facts = []
    if parent.median_us:
        facts.append(f"{parent.median_us:.2f} us")
    if parent.bottleneck:
        facts.append(parent.bottleneck + (f" ({parent.memory_limiter})" if parent.memory_limiter else ""))
    if parent.top_stall:
        facts.append(f"top stall {parent.top_stall}")
    evidence = f" ({'; '.join(facts)})" if facts else ""
    lines = [
        f"# v{number} starts as a copy of {parent.name}, the best version so far{evidence}.",
        f"# Replace each <...> slot, then make exactly this one change in {solution_name}.",
        "# Format and the one-change rule: reference/hypothesis.md. These # lines may stay.",
        *(line.format(parent=parent.name) for line in HYPOTHESIS_TEMPLATE_FIELDS),
    ]
    return "\n".join(lines) + "\n"


# --- evaluations --------------------------------------------------------------------------------


def conclude_evaluation(steps: list[StepResult]) -> tuple[str, int]:
    """(state, exit code) of an evaluation from its steps, in the order they ran.

    A failed check outranks a step this machine could not run (a CUDA kernel that does not
    compile has failed, GPU or not). A timed version is "measured" whatever came after: a
    profile that could not run does not undo a measurement, but the exit code still says so.
    The one exception is a profile that failed its check (status "failed": ncu profiled none
    of the solution's kernels, loop/evaluate.py), which shows the timed calls skipped the work.
    """
    if any(step.status == "usage_error" for step in steps):
        return "error", int(ExitCode.USAGE)
    failure = next((step for step in steps if step.status in ("failed", "solution_error")), None)
    could_not_run = any(step.status == "cannot_run_here" for step in steps)
    benchmark = next((step for step in steps if step.name == "benchmark"), None)
    voided = any(step.name in MEASUREMENT_VOIDING_STEPS and step.status == "failed" for step in steps)
    if benchmark is not None and benchmark.status == "ok" and not voided:
        if failure is not None:
            return "measured", int(failure.exit_code or ExitCode.CHECK_FAILED)
        return "measured", int(ExitCode.ENVIRONMENT_FAULT if could_not_run else ExitCode.OK)
    if failure is None:
        return "needs_gpu", int(ExitCode.ENVIRONMENT_FAULT)  # nothing failed, but nothing was timed either
    if failure.name == "hypothesis":
        return "invalid_hypothesis", int(ExitCode.CHECK_FAILED)
    if failure.status == "solution_error":
        return "failed", int(ExitCode.SOLUTION_FAULT)
    return "failed", int(ExitCode.CHECK_FAILED)


def write_evaluation(out: Path, record: EvaluationRecord) -> Path:
    return write_json_atomic(out / record.version / EVALUATION_FILE, record.to_dict())


def check_can_evaluate(out: Path, number: int, force: bool) -> VersionState:
    """The version to evaluate; a usage error for a missing one or a locked one without --force."""
    run = read_run(out)
    if not (out / f"v{number}").is_dir():
        raise UsageError(f"{out}/v{number} does not exist", hint=f"create it with `workspace.py next {out}`")
    version = read_version(out, number, run)
    if not version.has_solution:
        raise UsageError(f"{version.solution} not found: every version folder holds its source under that name")
    if version.evaluation_state in LOCKED_STATES and not force:
        raise UsageError(f"v{number} is already evaluated (state {version.evaluation_state}, see "
                         f"{version.directory}/{EVALUATION_FILE}); its numbers are not replaced by a re-run",
                         hint=f"to change the kernel, create a new version (`workspace.py next {out}`); "
                              "to re-measure on purpose, pass --force")
    return version
