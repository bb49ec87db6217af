"""One evaluation's steps as they run: each library call timed, its status, summary and log entry recorded.

Each step calls the tool's library function (check_solution, benchmark_solution, profile_solution,
...), which writes the tool's files and returns its record; the step's status comes from the
record's exit code (or the KernelOptError it raised), its one-line summary from the record's fields,
and vN/evaluate.log gets the command line it stands for and the summary the tool itself would print.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import ExitCode, KernelOptError
from kernel_opt.loop.records import STEP_STATUS_BY_EXIT_CODE, RunRecord, StepResult
from kernel_opt.loop.step_summaries import clip
from kernel_opt.loop.versions import VersionState
from kernel_opt.sass.report import StaticReport


@dataclass
class StepOutcome:
    """What one library call gave back: its record, its exit code, and the summary the tool would print."""

    record: Any
    exit_code: int
    text: str


@dataclass
class FinishedCall:
    """A library call that has returned or raised: what a step records of it."""

    outcome: StepOutcome
    summary: str
    wall_s: float


def finish_call(call: Callable[[], StepOutcome], summarize: Callable[[Any], str]) -> FinishedCall:
    """Run one library call and time it; a KernelOptError becomes the exit code its CLI would give."""
    started = time.perf_counter()
    try:
        outcome = call()
        summary = summarize(outcome.record)
    except KernelOptError as error:
        text = f"error: {error.message}" + (f"\nhint: {error.hint}" if error.hint else "")
        outcome, summary = StepOutcome(None, int(error.exit_code), text), clip(error.message)
    return FinishedCall(outcome, summary, time.perf_counter() - started)


class Evaluation:
    """The steps of one `evaluate`, recorded as they run."""

    def __init__(self, out: Path, run: RunRecord, version: VersionState, against: VersionState | None):
        self.out, self.run, self.version, self.against = out, run, version, against
        self.folder = Path(version.directory)
        self.solution = Path(version.solution)
        self.reference = out / run.reference_file
        self.steps: list[StepResult] = []
        self.needs_gpu: list[str] = []
        self.warnings: list[str] = []
        self.log: list[str] = []
        self.recommendations: dict[str, Any] = {}
        self.static_report: StaticReport | None = None  # made once, for the racecheck decision or its own step
        self.check_dims: dict[str, Any] = dict(run.dims)  # the run's sizes; the interpreter's on a CPU
        self.check_timeout_s: float | None = None  # evaluate --timeout for the checks; None: the check's own default

    @property
    def stopped(self) -> bool:
        """A check failed: later steps would measure a wrong or untestable kernel."""
        return any(step.status in ("failed", "usage_error", "solution_error") for step in self.steps)

    def step(self, name: str, command_line: list[str], call: Callable[[], StepOutcome],
             summarize: Callable[[Any], str], outputs: list[str]) -> tuple[StepResult, Any]:
        """Run one library call; record its status, summary and log entry. Returns the step and the record."""
        return self.record(name, command_line, finish_call(call, summarize), outputs)

    def record(self, name: str, command_line: list[str], finished: FinishedCall,
               outputs: list[str]) -> tuple[StepResult, Any]:
        """Record a call that has finished (here or on a worker thread): its status, summary and log entry."""
        outcome, summary, wall_s = finished.outcome, finished.summary, finished.wall_s
        self.log.append(f"$ {shlex.join(command_line)}\n{outcome.text.rstrip()}\n"
                        f"exit {outcome.exit_code}, {wall_s:.1f} s\n")
        status = STEP_STATUS_BY_EXIT_CODE.get(outcome.exit_code, "solution_error")
        written = [str(self.folder / f) for f in outputs if (self.folder / f).exists()]
        step = StepResult(name, status, round(wall_s, 2), outcome.exit_code, summary, written)
        self.steps.append(step)
        if status == "cannot_run_here":
            self.needs_gpu.append(f"{name}: {step.summary}")
        return step, outcome.record

    def cannot_run(self, name: str, why: str) -> None:
        self.steps.append(StepResult(name, "cannot_run_here", 0.0, int(ExitCode.ENVIRONMENT_FAULT), why))
        self.needs_gpu.append(f"{name}: {why}")

    def skip(self, name: str, why: str) -> None:
        self.steps.append(StepResult(name, "skipped", 0.0, None, why))
