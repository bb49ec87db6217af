"""The run record and the versions of one optimization run: what exists, what is best, what is left.

A run lives in one folder OUT:

    OUT/run.json            the run record (kernel name, backend, shapes, budget, target)
    OUT/ref.py              the PyTorch reference
    OUT/vN/vN.cu|vN.py      version N's source; v0 is the kernel the run started from
    OUT/vN/version.json     which version vN was copied from, and when
    OUT/vN/*.json           what the tools measured (correctness, benchmark, ncu_summary, ...)
    OUT/vN/evaluation.json  what `workspace.py evaluate` ran on vN and how it ended

The budget is fixed when the run starts, so an agent cannot buy itself more iterations by
editing a flag: `next` reads it from run.json. What each version folder says, and which version
is best so far, is read in versions.py; the next version is made in next_version.py.
"""

from __future__ import annotations

import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import ExitCode, KernelOptError, UsageError
from kernel_opt.core.files import write_json_atomic
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
    read_run_record,
)
from kernel_opt.loop.versions import VersionState, best_measured, list_versions, read_version
from kernel_opt.measure.baseline_standing import baseline_standing
from kernel_opt.measure.records import read_benchmark
from kernel_opt.solution import registry

HYPOTHESIS_FILE = "hypothesis.txt"

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
               dims: dict[str, Any], target_percent: float, nvcc_flags: str = "", arch: str = "auto",
               kernelbench_tolerances: bool = False) -> RunRecord:
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
        nvcc_flags=nvcc_flags, arch=arch, kernelbench_tolerances=kernelbench_tolerances,
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
    """The PyTorch baseline this version is slower than beyond the noise, else None.

    A version at 97% of its roofline ceiling that torch.compile still beats has not reached any
    ceiling worth stopping at: the compiled kernel moves the same bytes faster (H100, 2026-11-25: a
    SiLU gate at 97.3% of the same-size copy roof, 0.94x torch.compile, whose kernel read at an
    effective 3.15 TB/s against the copy's 3.06). Slower means what the final report's "stops short"
    means (measure/baseline_standing.py: the bootstrap interval of the recorded samples, the version
    comparison's 2% rule); a difference inside the noise is a tie, and a tie does not keep a run going.
    """
    speedup = version.speedup_vs_best_baseline if version is not None else None
    if not isinstance(speedup, (int, float)) or speedup >= 1.0:
        return None
    standing = baseline_standing(read_benchmark(Path(version.directory)), version.best_baseline)
    if standing is not None and not standing.behind:
        return None
    return version.best_baseline or "the fastest PyTorch baseline"


# --- evaluations --------------------------------------------------------------------------------


def conclude_evaluation(steps: list[StepResult]) -> tuple[str, int]:
    """(state, exit code) of an evaluation from its steps, in the order they ran.

    A failed check outranks a step this machine could not run (a CUDA kernel that does not
    compile has failed, GPU or not). A timed version is "measured" whatever came after: a
    profile that could not run does not undo a measurement, but the exit code still says so.
    The one exception is a profile that failed its check (status "failed": ncu profiled none
    of the solution's kernels, loop/measure_steps.py), which shows the timed calls skipped the work.
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
