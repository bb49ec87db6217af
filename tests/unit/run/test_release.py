"""A held worker (run/release.py, run/runner.py WorkerProcess), as real child processes on the CPU.

The child here is a small program that prepares, waits for its release and then "times": each
test watches what the real process wrote, so the protocol (the release line, the pipe closing
to stop it) and the clean-up (no process, no scratch folder) are checked end to end.
"""

import json
import os
import sys
import time
from pathlib import Path

import pytest

from kernel_opt.run import runner
from kernel_opt.run.events import read_event_log
from kernel_opt.run.release import WAITING_PHASE
from kernel_opt.run.request import BenchmarkPart, ChildRequest, SolutionSpec
from kernel_opt.run.runner import WorkerProcess

HELD_CHILD = """
import json, sys, time
from kernel_opt.run.events import DoneEvent, EventLog, NoteEvent, PhaseEvent
from kernel_opt.run.release import wait_for_release

request = json.loads(open(sys.argv[1]).read())
events = EventLog(request["events"])
time.sleep(request.get("prepare_s", 0))
events.emit(PhaseEvent("setup"))
release = wait_for_release(events)
if release is None:
    sys.exit(0)
events.emit(PhaseEvent("timing"))
events.emit(NoteEvent(json.dumps(release)))
events.emit(DoneEvent())
"""

FIELDS = {"baselines": ["eager"], "compile_modes": []}


def held_request(**prepared) -> ChildRequest:
    """A held benchmark request; `prepared` reaches the child as its backend's values (the file's top level)."""
    return ChildRequest(SolutionSpec("test", "none.py", prepared), "ref.py", "cpu", {},
                        BenchmarkPart(wait_for_release=True))


def held_worker(tmp_path: Path, **prepared) -> WorkerProcess:
    program = tmp_path / "held_child.py"
    program.write_text(HELD_CHILD)
    return WorkerProcess(held_request(**prepared), program=(sys.executable, str(program)), held=True)


def wait_until_waiting(worker: WorkerProcess, timeout_s: float = 60.0) -> list:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        events = read_event_log(worker.events_path)
        if any(getattr(event, "phase", None) == WAITING_PHASE for event in events):
            return events
        time.sleep(0.05)
    raise AssertionError("the held worker never reached its wait")


def process_group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_held_worker_prepares_then_does_nothing_until_released_with_the_fields(tmp_path):
    worker = held_worker(tmp_path)
    try:
        before = wait_until_waiting(worker)
        time.sleep(0.5)
        assert read_event_log(worker.events_path) == before  # held: nothing after the wait began
        released_at = time.time()
        worker.release(FIELDS)
        outcome = worker.watch(timeout_s=60)
    finally:
        worker.stop()
    phases = [event.phase for event in outcome.events if hasattr(event, "phase")]
    assert phases == ["setup", WAITING_PHASE, "timing"]
    timing = next(event for event in outcome.events if getattr(event, "phase", None) == "timing")
    assert timing.t >= round(released_at, 3) - 0.001  # what follows the wait began after the release
    assert json.loads(outcome.events[-2].text) == FIELDS
    assert (outcome.returncode, outcome.failure()) == (0, None)


def test_stopping_a_held_worker_ends_it_and_leaves_nothing_behind(tmp_path):
    worker = held_worker(tmp_path)
    wait_until_waiting(worker)
    scratch = worker.events_path.parent
    worker.stop()
    assert worker.process.returncode == 0  # it left its wait by itself once its stdin closed
    assert not scratch.exists() and not process_group_alive(worker.process.pid)
    worker.stop()  # again: nothing left to do


def test_a_held_worker_still_preparing_when_stopped_is_killed_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "STOP_GRACE_S", 0.2)
    worker = held_worker(tmp_path, prepare_s=60)
    scratch = worker.events_path.parent
    started = time.monotonic()
    worker.stop()
    assert time.monotonic() - started < 10
    assert worker.process.returncode == -9 and not scratch.exists()
    assert not process_group_alive(worker.process.pid)


def test_a_worker_that_ended_while_held_is_reported_when_released(tmp_path):
    program = tmp_path / "failing_child.py"
    program.write_text("import json, sys\n"
                       "from kernel_opt.run.events import ErrorEvent, EventLog\n"
                       "events = EventLog(json.loads(open(sys.argv[1]).read())['events'])\n"
                       "events.emit(ErrorEvent('import_error', 'the solution failed to import', None, 3))\n"
                       "sys.exit(3)\n")
    worker = WorkerProcess(held_request(), program=(sys.executable, str(program)), held=True)
    try:
        worker.process.wait(timeout=60)
        worker.release(FIELDS)  # into a closed pipe: no error here, the outcome says what happened
        outcome = worker.watch(timeout_s=60)
    finally:
        worker.stop()
    assert outcome.returncode == 3
    assert outcome.failure()["message"] == "the solution failed to import"


@pytest.mark.parametrize("line, fields", [('{"baselines": []}\n', {"baselines": []}), ("", None)])
def test_the_worker_side_reads_its_release_or_the_end_of_the_pipe(monkeypatch, line, fields):
    import io

    from kernel_opt.run.release import wait_for_release

    class Log:
        emitted = []

        def emit(self, event):
            self.emitted.append(event)

    monkeypatch.setattr(sys, "stdin", io.StringIO(line))
    assert wait_for_release(Log()) == fields
    assert [event.phase for event in Log.emitted] == [WAITING_PHASE]


def test_waiting_for_a_phase_returns_once_the_worker_announces_it_and_leaves_its_events_to_watch(tmp_path):
    worker = held_worker(tmp_path, prepare_s=1.0)
    try:
        started = time.monotonic()
        assert worker.wait_for_phase(WAITING_PHASE, timeout_s=60) is True
        assert time.monotonic() - started >= 0.9  # not before its preparation ended
        assert worker.wait_for_phase("timing", timeout_s=0.3) is False  # held: it never gets there unreleased
        worker.release(FIELDS)
        outcome = worker.watch(timeout_s=60)
    finally:
        worker.stop()
    assert [event.phase for event in outcome.events if hasattr(event, "phase")] == ["setup", WAITING_PHASE, "timing"]


def test_waiting_for_a_phase_of_a_worker_that_ended_returns_at_once(tmp_path):
    program = tmp_path / "quitting_child.py"
    program.write_text("import sys\nsys.exit(3)\n")
    worker = WorkerProcess(held_request(), program=(sys.executable, str(program)), held=True)
    try:
        worker.process.wait(timeout=60)
        started = time.monotonic()
        assert worker.wait_for_phase(WAITING_PHASE, timeout_s=60) is False
        assert time.monotonic() - started < 5
    finally:
        worker.stop()
