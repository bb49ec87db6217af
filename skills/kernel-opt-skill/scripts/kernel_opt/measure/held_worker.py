"""A benchmark worker started ahead of its correctness gate and held until the gate has passed.

`workspace.py evaluate` starts the benchmark's worker beside its checks (`hold_benchmark_worker`):
it starts Python and torch, loads the files and counts the work, untimed, then waits (run/release.py).
`benchmark_solution` releases it after the same correctness gate, telling it then what it would
have read at its start; a worker that no longer serves the request is stopped and replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_opt.core.errors import KernelOptError
from kernel_opt.core.files import file_sha256
from kernel_opt.env.device import resolve_device
from kernel_opt.measure.benchmark_request import BenchmarkRequest, validated_paths
from kernel_opt.measure.records import BenchmarkReport, TimedSolution
from kernel_opt.measure.worker_plan import WorkerPlan, plan_worker
from kernel_opt.run.release import WAITING_PHASE
from kernel_opt.solution import registry

if TYPE_CHECKING:
    from kernel_opt.run.runner import WorkerProcess

PREPARE_WAIT_S = 300.0  # the longest evaluate waits for a held worker to prepare before measuring ceilings


@dataclass(eq=False)
class HeldBenchmarkWorker:
    """A benchmark worker started ahead (hold_benchmark_worker): preparing, then waiting to be released."""

    request: BenchmarkRequest
    subject: dict[str, str | None]  # sha256 of the files it loaded, read before it started
    planned: BenchmarkReport  # what planning noted (build, notes, warnings): moved into the record at release
    plan: WorkerPlan
    worker: WorkerProcess

    def serves(self, request: BenchmarkRequest, solution: Path, reference: Path) -> bool:
        """Whether it may time this request: started for it and these very files, and still running.

        An edit since it loaded the files, or a worker that ended while held (an error, or memory
        the checks beside it took), means a fresh worker: the record is always one a worker started
        after the checks would give.
        """
        return (request == self.request and files_sha256(request, solution, reference) == self.subject
                and self.worker.alive())

    def wait_until_prepared(self, timeout_s: float = PREPARE_WAIT_S) -> bool:
        """Block until it waits for its release (or ended, or `timeout_s` passed); whether it is waiting.

        Its preparation puts work on the GPU (the instance's inputs, the work count): evaluate waits for
        it before the GPU's ceilings are measured, which must have the GPU to themselves.
        """
        return self.worker.wait_for_phase(WAITING_PHASE, timeout_s)

    def stop(self) -> None:
        """End it unless it already ended; nothing of it is recorded. Safe to call again."""
        self.worker.stop()


def hold_benchmark_worker(request: BenchmarkRequest) -> HeldBenchmarkWorker | None:
    """Start this request's worker now, to prepare while `workspace.py evaluate`'s checks run; None where it cannot.

    It starts Python and torch, loads the reference, the solution and --against, builds the
    problem instance and counts its work unless the run's cache holds it; then it waits, timing
    nothing, until benchmark_solution(request, held=...) releases it after its correctness gate.
    Whatever fails here fails again, in its usual place and record, when benchmark_solution starts
    a worker itself: a failure only loses the head start.
    """
    from kernel_opt.run.runner import WorkerProcess

    try:
        solution, reference = validated_paths(request)
        backend = registry.detect(solution, request.backend)
        if resolve_device("auto") != "cuda":
            return None
        subject = files_sha256(request, solution, reference)
        planned = BenchmarkReport(solution=TimedSolution(), reference=str(request.reference), backend=backend,
                                  command="")
        plan = plan_worker(planned, request, solution, reference)
        worker = WorkerProcess(plan.request.with_part(wait_for_release=True), held=True)
    except (KernelOptError, OSError):
        return None
    return HeldBenchmarkWorker(request, subject, planned, plan, worker)


def files_sha256(request: BenchmarkRequest, solution: Path, reference: Path) -> dict[str, str | None]:
    """The sha256 of each file the worker loads (None for an --against not given)."""
    files = {"solution": solution, "reference": reference, "against": request.against}
    return {role: file_sha256(Path(path)) if path is not None else None for role, path in files.items()}
