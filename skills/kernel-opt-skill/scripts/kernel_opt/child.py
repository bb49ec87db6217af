"""The child process that runs a solution: `python -m kernel_opt.child REQUEST.json`.

Solutions run here, never in the CLI's own process, so a segfault, an illegal address (which
poisons the CUDA context for good), or a hang ends only this process. This module only
names the stage that owns each mode of the request (run/request.py); run/entry.py reads the
request, runs it and reports any error. Progress goes to the append-only event log
(run/events.py) that the parent (run/runner.py) watches.
"""

from __future__ import annotations

import sys

from kernel_opt.check.child import run_correctness
from kernel_opt.run.entry import child_main
from kernel_opt.run.events import EventLog
from kernel_opt.run.request import BenchmarkPart, ChildRequest, CorrectnessPart


def _run_benchmark(request: ChildRequest, events: EventLog) -> None:
    from kernel_opt.measure.benchmark_child import run_benchmark  # the timing stack only where it times

    run_benchmark(request, events)


RUNNERS = {CorrectnessPart.mode: run_correctness, BenchmarkPart.mode: _run_benchmark}


def main(argv: list[str] | None = None) -> int:
    return child_main(sys.argv[1:] if argv is None else argv, RUNNERS)


if __name__ == "__main__":
    sys.exit(main())
