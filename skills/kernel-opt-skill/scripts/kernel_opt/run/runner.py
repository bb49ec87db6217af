"""Run the worker in a child process and watch it: progress, crash, hang.

The timeout is per step: if the child writes no event for `timeout_s` seconds (one kernel
call that never returns, say), its whole process group is killed and the phase it was in is
reported. Signals are named, so "segmentation fault" reads as such, not as exit code -11.
A worker can also be started ahead and held (WorkerProcess(held=True)): it prepares, then waits
for the line that releases it (run/release.py); only from then on is it watched for progress.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import ExitCode
from kernel_opt.run.bytecode import with_bytecode_cache
from kernel_opt.run.events import CaseStartEvent, ErrorEvent, Event, PhaseEvent, parse_event
from kernel_opt.run.release import release_line
from kernel_opt.run.request import ChildRequest

PACKAGE_PARENT = Path(__file__).resolve().parents[2]
POLL_INTERVAL_S = 0.05
# Until its first event the worker is starting Python, torch and CUDA, which takes seconds on
# a loaded machine; a short --timeout meant for one kernel call must not fire there.
STARTUP_ALLOWANCE_S = 60.0
# A held worker told to stop ends by itself: at once where it waits, else once it has prepared, so
# that a load_inline build it is in finishes and releases its lock; one still busy after this is killed.
STOP_GRACE_S = 10.0

SIGNAL_MEANINGS = {
    signal.SIGSEGV: "segmentation fault (the solution read or wrote host memory it does not own)",
    signal.SIGABRT: "abort (an assertion or a fatal library error)",
    signal.SIGBUS: "bus error (misaligned or unmapped host memory)",
    signal.SIGFPE: "floating-point exception (e.g. integer division by zero on the host)",
    signal.SIGILL: "illegal instruction on the host",
    signal.SIGKILL: "killed (often the host ran out of memory)",
}


@dataclass
class ChildOutcome:
    events: list[Event] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    timeout_s: float = 0.0
    stderr_tail: str = ""
    spawned: float | None = None  # wall clock (time.time()) when the child was started, and when it was seen ending
    ended: float | None = None

    def phase_durations(self) -> dict[str, float]:
        """Seconds per worker phase, from the events' timestamps: where the child's wall time went.

        "worker start" runs from spawning the child to its first event (interpreter, torch import);
        each phase lasts until the next one begins (a phase named again adds up); the last lasts
        until the worker ended.
        """
        stamped = [event for event in self.events if isinstance(event.t, (int, float))]
        if not stamped or self.spawned is None:
            return {}
        durations = {"worker start": round(stamped[0].t - self.spawned, 2)}
        phases = [event for event in stamped if isinstance(event, PhaseEvent)]
        for this, following in zip(phases, phases[1:] + [None], strict=False):  # phases may be empty
            end = following.t if following is not None else (self.ended or this.t)
            durations[this.phase] = round(durations.get(this.phase, 0.0) + end - this.t, 2)
        return durations

    @property
    def last_phase(self) -> PhaseEvent | CaseStartEvent | None:
        """The last phase the worker announced: where a crash or hang happened."""
        return next((e for e in reversed(self.events) if isinstance(e, (PhaseEvent, CaseStartEvent))), None)

    @property
    def error_event(self) -> ErrorEvent | None:
        return next((e for e in self.events if isinstance(e, ErrorEvent)), None)

    def where(self) -> str:
        """Where the worker was when it stopped, e.g. "in the solution's call (n=127, seed 0)"."""
        return phase_description(self.last_phase)

    def in_harness_step(self) -> bool:
        """Whether the worker stopped in one of the check's own steps (HARNESS_PHASES), where no solution code runs."""
        last = self.last_phase
        return isinstance(last, PhaseEvent) and last.phase in HARNESS_PHASES

    def failure(self) -> dict[str, Any] | None:
        """The error record for a worker that hung, reported an error or died; None if it finished. A hang or death in
        one of the check's own steps is the environment's (exit 4), never the solution's."""
        where = self.where()
        if (self.timed_out or self.crash_description()) and self.in_harness_step():
            return self._harness_failure(where)
        if self.timed_out:
            return {
                "kind": "timeout",
                "exit_code": int(ExitCode.SOLUTION_FAULT),
                "message": f"no progress for {self.timeout_s:g} s {where}: the solution hangs or is far slower than "
                "expected, so its process was killed",
                "hint": "look for a loop that never ends or a barrier not every thread reaches; "
                "raise --timeout if it is only slow",
            }
        error = self.error_event
        if error is not None:
            located = error.exit_code == ExitCode.SOLUTION_FAULT and self.last_phase is not None
            return {
                "kind": error.kind,
                "exit_code": error.exit_code,
                "message": error.message + (f" ({where})" if located else ""),
                "hint": error.hint,
            }
        if self.crash_description():
            return {"kind": "crash", "exit_code": int(ExitCode.SOLUTION_FAULT),
                    "message": f"{self.crash_description()} {where}".strip(), "hint": self.stderr_tail[-1500:] or None}
        return None

    def _harness_failure(self, where: str) -> dict[str, Any]:
        killed = self._signal_text()
        if self.timed_out:
            what = f"made no progress for {self.timeout_s:g} s"
        else:
            what = f"died ({killed})" if killed else self._exit_text()
        return {"kind": "harness_timeout" if self.timed_out else "harness_crash",
                "exit_code": int(ExitCode.ENVIRONMENT_FAULT),
                "message": f"the check's own step {what} {where}: no solution code was running, so this is not the "
                           "solution's fault; this machine could not run the check at these sizes",
                "hint": "check on a machine with more memory or a GPU (at the run's sizes), or at smaller sizes; "
                        "raise --timeout if the step is only slow" + (f"\n{self.stderr_tail[-1200:]}"
                                                                     if self.stderr_tail else "")}

    def crash_description(self) -> str | None:
        """A sentence for a child that died without reporting an error itself."""
        if not self._ended_unreported():
            return None
        killed = self._signal_text()
        return f"the solution process died: {killed}" if killed else f"the solution process {self._exit_text()}"

    def _ended_unreported(self) -> bool:
        """Whether the child ended without finishing, hanging or reporting an error of its own."""
        return not (self.timed_out or self.error_event is not None or self.returncode in (0, None))

    def _signal_text(self) -> str | None:
        """The signal that ended the child and what it usually means ("SIGKILL, killed (...)"); None without one."""
        if self.returncode is None or self.returncode >= 0:
            return None
        number = -self.returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"{name}, {SIGNAL_MEANINGS.get(number, 'killed by a signal')}"

    def _exit_text(self) -> str:
        return f"exited with code {self.returncode} without reporting a result"


# The check's own steps, where no solution code runs: the reference's run, its float64 truth, the comparison.
HARNESS_PHASES = frozenset({"reference", "truth", "compare"})

_PHASE_NAMES = {
    "setup": "while creating inputs",
    "reference": "in the reference",
    "truth": "while computing the reference's float64 truth",
    "before_call": "while the integrity checks prepared the solution's call",
    "solution": "in the solution's call",
    "launch_check": "in the solution's profiled call (the launch check)",
    "compare": "while comparing outputs",
    "load_solution": "while loading the solution",
    "sweep_size": "while profiling a size of the sweep",
}


def phase_description(phase: PhaseEvent | CaseStartEvent | None) -> str:
    if phase is None:
        return "while the worker process was starting"
    name = phase.phase if isinstance(phase, PhaseEvent) else ""
    text = _PHASE_NAMES.get(name, f"during {name}" if name else "")
    if phase.dims is not None:
        shape = ", ".join(f"{key}={value}" for key, value in phase.dims.items())
        text = (text + " " if text else "") + f"({shape}, seed {phase.seed})"
    return text


def run_worker(request: ChildRequest, timeout_s: float, env: dict[str, str] | None = None,
               prefix: Sequence[str] = (), startup_allowance_s: float = STARTUP_ALLOWANCE_S,
               program: Sequence[str] | None = None) -> ChildOutcome:
    """Start `python -m kernel_opt.child` (or `program`), collect its events, kill it if it stalls.

    `prefix` wraps the child in another program (compute-sanitizer: check/sanitizer.py), which
    starts it and shares its process group, so a kill takes both. The request file's path is the
    program's last argument. `program` is for a child that must run as a file (the size sweep's
    nsight-python side, profile/sweep/nsight_child.py).
    """
    worker = WorkerProcess(request, env, prefix, program)
    try:
        return worker.watch(timeout_s, startup_allowance_s)
    finally:
        worker.stop()


def child_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with `env` over it and this package first on PYTHONPATH: what a child that runs
    `python -m kernel_opt...` from any working directory needs, with its compiled Python kept (run/bytecode.py)."""
    child_env = {**os.environ, **(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(
        [str(PACKAGE_PARENT)] + ([child_env["PYTHONPATH"]] if child_env.get("PYTHONPATH") else []))
    return with_bytecode_cache(child_env)


class WorkerProcess:
    """A started worker child: watched until it ends, or stopped; its scratch folder lives as long as it does.

    A held worker (held=True) gets a pipe for stdin: it prepares, then waits there for the one
    line that releases it (run/release.py), or for the pipe to close, which stops it.
    """

    def __init__(self, request: ChildRequest, env: dict[str, str] | None = None, prefix: Sequence[str] = (),
                 program: Sequence[str] | None = None, held: bool = False):
        self._scratch = tempfile.TemporaryDirectory(prefix="kernel-opt-")
        scratch = Path(self._scratch.name)
        self.events_path = scratch / "events.jsonl"
        self.events_path.touch()
        request_path = request.with_events(self.events_path).write(scratch / "request.json")
        self._stderr_path = scratch / "stderr.txt"
        child_env = child_environment(env)
        child_env.setdefault("PYTHONUNBUFFERED", "1")
        self._stderr = open(self._stderr_path, "wb")
        self._reader = open(self.events_path, "rb")
        self.spawned = time.time()  # wall clock, as the events' "t": where "worker start" begins
        self._waiting = held  # held and not yet released: stop() lets it leave its wait by itself
        try:
            self.process = subprocess.Popen(
                [*prefix, *(program or (sys.executable, "-m", "kernel_opt.child")), str(request_path)],
                stdin=subprocess.PIPE if held else subprocess.DEVNULL,
                bufsize=0,  # the release line goes straight into the pipe
                stdout=self._stderr,
                stderr=subprocess.STDOUT,
                env=child_env,
                start_new_session=True,  # its own process group, so a kill takes its children too
            )
        except BaseException:
            self._close_files()
            raise

    def alive(self) -> bool:
        return self.process.poll() is None

    def release(self, fields: dict[str, Any]) -> None:
        """Let a held worker go on, telling it what it could not know when it started."""
        self._waiting = False
        try:
            self.process.stdin.write(release_line(fields))
            self.process.stdin.close()
        except OSError:  # it ended while held (its error event says why): watch() reports it
            pass

    def wait_for_phase(self, phase: str, timeout_s: float) -> bool:
        """Block until the worker has announced `phase`, has ended, or `timeout_s` passed; whether it announced it.

        Reads its event log apart from watch()'s reader, so what watch() collects later is untouched.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            complete_lines = self.events_path.read_bytes().split(b"\n")[:-1]
            if any(isinstance(event, PhaseEvent) and event.phase == phase
                   for event in (parse_event(json.loads(line)) for line in complete_lines if line.strip())):
                return True
            if self.process.poll() is not None or time.monotonic() > deadline:
                return False
            time.sleep(POLL_INTERVAL_S)

    def watch(self, timeout_s: float, startup_allowance_s: float = STARTUP_ALLOWANCE_S) -> ChildOutcome:
        """Collect its events until it exits; kill it once it writes none for `timeout_s` (from this call on)."""
        outcome = ChildOutcome(timeout_s=timeout_s, spawned=self.spawned)
        process, reader = self.process, self._reader
        last_progress = time.monotonic()
        buffer = b""
        while True:
            chunk = reader.read()
            if chunk:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        outcome.events.append(parse_event(json.loads(line)))
                last_progress = time.monotonic()
            returncode = process.poll()
            if returncode is not None:
                rest = reader.read()
                for line in (buffer + rest).split(b"\n"):
                    if line.strip():
                        outcome.events.append(parse_event(json.loads(line)))
                outcome.returncode = returncode
                break
            allowed = timeout_s if outcome.events else max(timeout_s, startup_allowance_s)
            if time.monotonic() - last_progress > allowed:
                _kill_group(process)
                outcome.timed_out = True
                outcome.timeout_s = allowed
                outcome.returncode = process.returncode
                break
            time.sleep(POLL_INTERVAL_S)
        outcome.ended = time.time()
        outcome.stderr_tail = self._stderr_path.read_text(errors="replace")[-4000:]
        return outcome

    def stop(self) -> None:
        """End it if it still runs and remove its scratch folder; nothing of it is read. Safe to call again.

        A worker still held is asked first (its stdin closes, so it leaves its wait and exits on its
        own); one that does not end within STOP_GRACE_S, or any other, is killed with its process group.
        """
        if self.process.poll() is None and self._waiting:
            self._waiting = False
            try:
                self.process.stdin.close()
                self.process.wait(timeout=STOP_GRACE_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.process.poll() is None:
            _kill_group(self.process)
        if self.process.stdin is not None:
            self.process.stdin.close()
        self._close_files()

    def _close_files(self) -> None:
        for stream in (self._stderr, self._reader):
            stream.close()
        self._scratch.cleanup()


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()
