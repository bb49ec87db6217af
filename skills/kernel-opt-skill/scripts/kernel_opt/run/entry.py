"""The one way every child program starts: read its request, run its mode, and turn any error into an event.

Every program a parent starts (`python -m kernel_opt.child`, the profile target ncu runs, the
size sweep's file) calls `child_main` with the runners of the modes it serves. A runner's
exception never escapes as a bare traceback: `error_event` names it (the solution's fault, this
machine's, a bug) in the event log the parent reads (run/runner.py), and the exit code says the same;
an allocation that failed is the solution's only inside its own call (run/memory.py).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

from kernel_opt.core.dependencies import dependency_fault
from kernel_opt.core.errors import EnvironmentFault, ExitCode, KernelOptError, UsageError
from kernel_opt.run.events import ErrorEvent, EventLog, one_line
from kernel_opt.run.memory import ALLOCATION_KINDS, MeteredEventLog, allocation_failure, out_of_memory_in
from kernel_opt.run.request import ChildRequest

TRACEBACK_CHARS = 2000  # of an unexpected exception's traceback, kept in its event's hint
Runner = Callable[[ChildRequest, EventLog], "int | None"]  # a mode's work; its exit code (None: 0)


def error_event(error: BaseException, purpose: str = "running a solution") -> ErrorEvent:
    """The event for an exception: an allocation that failed, wherever it was raised or wrapped, by whose call it
    failed in (run/memory.py: the solution's, exit 3; the harness's or this machine's, exit 4); a KernelOptError as it
    is; an ImportError of a known package is this machine's (exit 4, with the install line); anything else is a bug
    or a side effect of the solution, reported whole."""
    decided = isinstance(error, EnvironmentFault) or (isinstance(error, KernelOptError)
                                                      and error.kind in ALLOCATION_KINDS)
    failed_allocation = None if decided else out_of_memory_in(error)
    if failed_allocation is not None:
        return ErrorEvent.from_error(allocation_failure(failed_allocation))
    if isinstance(error, KernelOptError):
        return ErrorEvent.from_error(error)
    fault = dependency_fault(error, purpose) if isinstance(error, ImportError) else None
    if fault is not None:
        return ErrorEvent.from_error(fault)
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    return ErrorEvent("internal_error", one_line(error), text[-TRACEBACK_CHARS:], int(ExitCode.SOLUTION_FAULT))


def report_error(events: EventLog, error: BaseException) -> int:
    """Write the error's event; its exit code."""
    event = error_event(error)
    events.emit(event)
    return event.exit_code


def reporting_errors(events: EventLog, action: Callable[[], int | None]) -> int:
    """Run `action`; its exit code, or that of the error it raised, which is reported as an event."""
    try:
        return int(action() or 0)
    except BaseException as error:  # every failure is reported, whatever raised it
        return report_error(events, error)


def child_main(argv: list[str], runners: Mapping[str, Runner], mode: str | None = None) -> int:
    """Read the request file argv[0] and run its mode's runner; the exit code.

    Args:
        runners: mode -> runner, the modes this program serves.
        mode: the program's own mode, for a request file that does not name one (the profile target's, the sweep's).
    """
    payload = json.loads(Path(argv[0]).read_text())
    events = MeteredEventLog(payload["events"])  # each phase's peak GPU memory, as it ends

    def run() -> int | None:
        request = ChildRequest.from_json(payload, mode)
        runner = runners.get(request.mode)
        if runner is None:
            raise UsageError(f"unknown worker mode {request.mode!r}")
        return runner(request, events)

    return reporting_errors(events, run)
