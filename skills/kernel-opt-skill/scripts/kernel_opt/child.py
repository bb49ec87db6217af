"""The child process that runs a solution: `python -m kernel_opt.child REQUEST.json`.

Solutions run here, never in the CLI's own process, so a segfault, an illegal address (which
poisons the CUDA context for good), or a hang ends only this process. This module only
dispatches the request's mode to the stage that owns it; progress goes to the append-only
event log (run/events.py) that the parent (run/runner.py) watches.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

from kernel_opt.check.child import run_correctness
from kernel_opt.core.dependencies import dependency_fault
from kernel_opt.core.errors import KernelOptError, UsageError
from kernel_opt.run.events import ErrorEvent, EventLog, one_line


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    request = json.loads(Path(argv[0]).read_text())
    events = EventLog(request["events"])
    try:
        mode = request.get("mode", "correctness")
        if mode == "correctness":
            run_correctness(request, events)
        elif mode == "benchmark":
            from kernel_opt.measure.benchmark_child import run_benchmark

            run_benchmark(request, events)
        else:
            raise UsageError(f"unknown worker mode {request.get('mode')!r}")
    except KernelOptError as error:
        events.emit(ErrorEvent.from_error(error))
        return int(error.exit_code)
    except ImportError as error:  # torch or triton missing here is the machine's fault (exit 4), not a bug
        fault = dependency_fault(error, "running a solution")
        if fault is None:
            events.emit(ErrorEvent("internal_error", one_line(error), traceback.format_exc()[-2000:], 3))
            return 3
        events.emit(ErrorEvent.from_error(fault))
        return int(fault.exit_code)
    except BaseException as error:  # anything else is a bug or a solution side effect: report it whole
        events.emit(ErrorEvent("internal_error", one_line(error), traceback.format_exc()[-2000:], 3))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
