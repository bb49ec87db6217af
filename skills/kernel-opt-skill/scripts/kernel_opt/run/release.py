"""Holding a worker until its parent releases it: the one line the parent writes on the worker's stdin.

`workspace.py evaluate` starts the benchmark's worker beside the correctness check and
compute-sanitizer, so that starting Python, importing torch, loading the solution and building
its first instance overlap the checks instead of following them. Such a worker times
nothing until it is released: it announces the wait as a phase (so the benchmark's phases_s says
how long it waited), then blocks on stdin. The parent writes one JSON object, the fields of the
request known only once the checks have passed (run/request.py: ChildRequest.released), or
closes the pipe without a line: stop. A request holds its worker with `wait_for_release`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kernel_opt.run.events import EventLog, PhaseEvent

WAITING_PHASE = "waiting for the checks"  # until released: the checks, then what the parent does before timing


def release_line(fields: dict[str, Any]) -> bytes:
    """The parent's side: what releases a held worker, telling it `fields`."""
    return (json.dumps(fields) + "\n").encode()


def wait_for_release(events: EventLog) -> dict[str, Any] | None:
    """The worker's side: block until released; the fields it was told, or None when it was stopped instead."""
    events.emit(PhaseEvent(WAITING_PHASE))
    line = sys.stdin.readline()
    return json.loads(line) if line.strip() else None
