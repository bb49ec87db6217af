"""Memory in the child process: each step's peak, and whose fault an allocation that failed is.

- Each step's peak: the child's event log (`MeteredEventLog`) resets torch's peak counter when a
  phase begins and reports `torch.cuda.max_memory_allocated()` when it ends, as a MemoryEvent; the
  parent keeps each step's highest peak in the record's `memory` section (`MemoryUse`).
- Blame: an allocation that fails inside the solution's own call (a function registered with
  `solution_code`, found in the error's traceback) is the solution's (exit 3, with what it asked
  for and what was free); anywhere else (the reference, the float64 truth, the checks' copies, the
  input pool, the comparison) it is this machine's or the harness's (exit 4), never the
  solution's. `allocation_failure` is the one place that decides; run/entry.py asks it for every
  error that reaches the top of a child, and so does every place that wraps a solution's error.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernel_opt.core.errors import EnvironmentFault, KernelOptError, SolutionError
from kernel_opt.core.records import Section, list_of
from kernel_opt.env.memory import device_memory, gib
from kernel_opt.run.events import DoneEvent, ErrorEvent, Event, EventLog, MemoryEvent, PhaseEvent, one_line

# --- whose allocation failed ------------------------------------------------------------------------

_SOLUTION_CODE: set[Any] = set()  # code objects of the functions that call the solution and nothing else
_ASKED = re.compile(r"Tried to allocate ([0-9.]+ [KMGTP]?i?B)")
_ASKED_HOST = re.compile(r"you tried to allocate (\d+) bytes")
_CHAIN_LIMIT = 8  # causes followed from a wrapping error to the allocation that failed
_HOST_SIGNS = ("can't allocate memory", "not enough memory")  # torch's DefaultCPUAllocator, by version
ALLOCATION_KINDS = ("out_of_memory", "harness_out_of_memory")  # the kinds allocation_failure gives its errors


def solution_code(function: Callable) -> Callable:
    """Mark `function` as the solution's own call: an allocation that fails below it in a traceback is the
    solution's. Returns it unchanged, so a timed call pays nothing for the mark."""
    _SOLUTION_CODE.add(function.__code__)
    return function


def is_out_of_memory(error: BaseException) -> bool:
    """An allocation that failed: torch's OutOfMemoryError, a CUDA 'out of memory' error, or the host's."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(error, getattr(torch, "OutOfMemoryError", ())):
        return True
    if isinstance(error, MemoryError):
        return True
    text = str(error).lower()
    return isinstance(error, RuntimeError) and any(sign in text for sign in _HOST_SIGNS + ("out of memory",))


def out_of_memory_in(error: BaseException) -> BaseException | None:
    """The failed allocation behind `error`: itself, or what it was raised from (`raise ... from`); None when there
    is none. An error merely raised while another was handled is not one: its cause is its own."""
    seen = 0
    while error is not None and seen < _CHAIN_LIMIT:
        if is_out_of_memory(error):
            return error
        error, seen = error.__cause__, seen + 1
    return None


def raised_in_solution(error: BaseException) -> bool:
    """Whether the traceback of `error` passes through the solution's own call (`solution_code`)."""
    frame = error.__traceback__
    while frame is not None:
        if frame.tb_frame.f_code in _SOLUTION_CODE:
            return True
        frame = frame.tb_next
    return False


def allocation_failure(error: BaseException) -> KernelOptError:
    """The error to report for an allocation that failed: the solution's inside its call (exit 3), the harness's
    or this machine's anywhere else (exit 4). The message says what was asked for and what was free."""
    asked = _asked(error)
    memory = _device_memory_now()
    free = "" if memory is None else f"; {gib(memory.available)} free of {gib(memory.total)}"
    step = _STATE.step
    if raised_in_solution(error):
        held = "" if step is None or step.allocated_bytes is None else (
            f" ({gib(step.allocated_bytes)} held by the harness when the call began: the problem's inputs, outputs "
            "and the check's copies)")
        return SolutionError(f"the solution's call ran out of memory: it asked for {asked}{free}{held}",
                             kind="out_of_memory", hint=one_line(error))
    where = "" if step is None else f" {_step_text(step)}"
    planned = "" if step is None or step.planned is None else f"; the memory plan: {step.planned}"
    host = isinstance(error, MemoryError) or any(sign in str(error).lower() for sign in _HOST_SIGNS)
    machine = "the host" if host else "the GPU"
    return EnvironmentFault(
        f"{machine} ran out of memory in the harness{where}, outside the solution's call: it asked for {asked}{free}"
        f"{planned}. The solution is not at fault", kind="harness_out_of_memory",
        hint="this problem at these sizes does not fit beside the check's own copies here: run it on a machine with "
        "more memory, or at smaller sizes (--NAME=VALUE); torch said: " + one_line(error)[:400])


def _asked(error: BaseException) -> str:
    text = str(error)
    found = _ASKED.search(text)
    if found:
        return found.group(1)
    found = _ASKED_HOST.search(text)
    return gib(int(found.group(1))) if found else "an allocation"


def _device_memory_now():
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    try:
        return device_memory(torch.device("cuda", torch.cuda.current_device()))
    except Exception:  # a context broken by the failure itself: the message goes without the numbers
        return None


# --- each step's peak ---------------------------------------------------------------------------------


@dataclass
class _Step:
    phase: PhaseEvent
    allocated_bytes: int | None  # torch.cuda.memory_allocated() when it began
    planned: str | None = None  # what the memory plan chose for it, and what that needs
    earlier_peak: int = 0  # its peak before a measurement inside it restarted torch's counter (restart_peak)


@dataclass
class _State:
    step: _Step | None = None


_STATE = _State()


def note_plan(text: str) -> None:
    """Say what the memory plan chose for the current step (it goes into a failure's message)."""
    if _STATE.step is not None:
        _STATE.step.planned = text


def restart_peak() -> int | None:
    """Restart torch's peak counter for a measurement inside a step (what the reference's run allocates), keeping
    the step's peak so far for its record; the bytes allocated now, None before CUDA is in use."""
    torch = _cuda()
    if torch is None:
        return None
    if _STATE.step is not None:
        _STATE.step.earlier_peak = max(_STATE.step.earlier_peak, int(torch.cuda.max_memory_allocated()))
    torch.cuda.reset_peak_memory_stats()
    return int(torch.cuda.memory_allocated())


def peak_since(allocated_bytes: int | None) -> int | None:
    """What was allocated at the peak beyond `allocated_bytes` (restart_peak's), None where it could not be read."""
    torch = _cuda()
    if torch is None or allocated_bytes is None:
        return None
    return max(0, int(torch.cuda.max_memory_allocated()) - allocated_bytes)


def _cuda():
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return torch


def _step_text(step: _Step) -> str:
    from kernel_opt.run.runner import phase_description

    return phase_description(step.phase)


class MeteredEventLog(EventLog):
    """The child's event log, which also reports each phase's peak GPU memory when the phase ends.

    A phase ends where the next begins, or at the done or error event. Nothing is read before
    CUDA is in use, so a CPU run (the Triton interpreter) writes no memory events.
    """

    def emit(self, event: Event) -> None:
        if isinstance(event, (PhaseEvent, DoneEvent, ErrorEvent)):
            self._end_step()
        super().emit(event)
        if isinstance(event, PhaseEvent):
            self._begin_step(event)

    def _begin_step(self, phase: PhaseEvent) -> None:
        torch = _cuda()
        allocated = None
        if torch is not None:
            torch.cuda.reset_peak_memory_stats()
            allocated = int(torch.cuda.memory_allocated())
        _STATE.step = _Step(phase, allocated)

    def _end_step(self) -> None:
        step, _STATE.step = _STATE.step, None
        torch = _cuda()
        if step is None or torch is None:
            return
        phase, peak = step.phase, max(step.earlier_peak, int(torch.cuda.max_memory_allocated()))
        super().emit(MemoryEvent(step=phase.phase, peak_bytes=peak, case=phase.case, dims=phase.dims, seed=phase.seed))


# --- the record -----------------------------------------------------------------------------------------


@dataclass
class MemoryStep(Section):
    """One step's highest peak GPU memory over the run, and the case (shape and seed) where it was reached."""

    step: str | None = None
    peak_bytes: int | None = None
    dims: dict[str, Any] | None = None
    seed: int | None = None


@dataclass
class MemoryUse(Section):
    """A record's `memory` section: each step's highest peak GPU memory, and what the memory plan chose.

    `steps` has one entry per step name: the highest peak any case reached in it and where;
    `peak_bytes` is the highest of them. `plans` lists, once each, what the plan did where the
    whole did not fit (a float64 truth in row chunks, copies kept on the host, a smaller input pool).
    """

    readers = {"steps": list_of(MemoryStep)}

    peak_bytes: int | None = None
    steps: list[MemoryStep] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)

    def add(self, event: MemoryEvent) -> None:
        if event.plan and event.plan not in self.plans:
            self.plans.append(event.plan)
        if event.peak_bytes is None:
            return
        entry = MemoryStep(event.step, int(event.peak_bytes), event.dims, event.seed)
        self.peak_bytes = max(self.peak_bytes or 0, entry.peak_bytes)
        for index, known in enumerate(self.steps):
            if known.step == event.step:
                if entry.peak_bytes > (known.peak_bytes or 0):
                    self.steps[index] = entry
                return
        self.steps.append(entry)


def add_memory_event(record: Any, event: MemoryEvent) -> None:
    """The event handler of both records (correctness and benchmark): the event into `record.memory`."""
    if record.memory is None:
        record.memory = MemoryUse()
    record.memory.add(event)
