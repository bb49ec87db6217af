"""The worker's side of the parent-child protocol: the typed events it writes, and how it names errors.

The child writes one JSON object per line, {"event": <tag>, ...fields, "t": <wall clock>}; the
parent (run/runner.py) parses each line back into the dataclass of its tag, so every consumer
(check/correctness.py, measure/benchmark_assembly.py, commands/ncu_profile.py) dispatches on
types and reads named fields. Payloads that belong to a stage (a TimedEntry, an OutputComparison) travel as the
JSON objects of their records and are turned back into them by that stage.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kernel_opt.core.errors import KernelOptError

CUDA_ERROR_KINDS = (
    ("illegal memory access", "illegal_memory_access"),
    ("address space", "illegal_memory_access"),  # cudaErrorInvalidAddressSpace: a pointer outside global memory
    ("misaligned address", "misaligned_address"),
    ("illegal instruction", "illegal_instruction"),
    ("unspecified launch failure", "launch_failure"),
    ("device-side assert", "device_assert"),
    ("invalid configuration", "launch_error"),
    ("too many resources requested", "launch_error"),
    ("out of memory", "out_of_memory"),
)


def classify_exception_message(message: str) -> str:
    lowered = message.lower()
    for needle, kind in CUDA_ERROR_KINDS:
        if needle in lowered:
            return kind
    if "cuda error" in lowered:
        return "cuda_error"
    return "exception"


# --- the events -------------------------------------------------------------------------------


@dataclass
class Event:
    """One line of the event log. A subclass names its JSON tag in `tag`.

    An optional field (default None) that is None is left out of the line, so a phase without
    a shape reads {"event": "phase", "phase": "load_solution"}, as it always has.
    """

    tag: ClassVar[str] = ""
    t: float | None = field(default=None, kw_only=True, compare=False)  # wall clock (s) when it was written

    def to_json(self) -> dict[str, Any]:
        payload: dict[str, Any] = {"event": self.tag}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if item.name == "t" or (value is None and item.default is None):
                continue
            payload[item.metadata.get("json", item.name)] = value
        return payload

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> Event:
        names = {item.metadata.get("json", item.name): item.name for item in dataclasses.fields(cls)}
        return cls(**{names[key]: value for key, value in payload.items() if key in names})


@dataclass
class EnvironmentEvent(Event):
    tag: ClassVar[str] = "environment"
    info: dict[str, Any]  # run.events.environment_info: versions, and the GPU on a GPU run


@dataclass
class PhaseEvent(Event):
    """The worker starts a step; a crash or hang is reported as happening in the last one."""

    tag: ClassVar[str] = "phase"
    phase: str
    case: int | None = None
    dims: dict[str, Any] | None = None
    seed: int | None = None
    calls: int | None = None  # the profiled program: calls in this phase
    nvtx_range: str | None = field(default=None, metadata={"json": "range"})


@dataclass
class CaseStartEvent(Event):
    tag: ClassVar[str] = "case_start"
    case: int
    dims: dict[str, Any]
    seed: int


@dataclass
class PlanEvent(Event):
    tag: ClassVar[str] = "plan"
    cases: list[dict[str, Any]]
    seeds: list[int]
    has_shapes: bool  # ref.py has SHAPES (else only the command-line shape runs)


@dataclass
class NoteEvent(Event):
    tag: ClassVar[str] = "note"
    text: str


@dataclass
class WarningEvent(Event):
    tag: ClassVar[str] = "warning"
    text: str


@dataclass
class ToleranceEvent(Event):
    """The rule one output is judged by (check/tolerance.py): atol/rtol, or a multiple of the reference's error."""

    tag: ClassVar[str] = "tolerance"
    output: str
    dtype: str
    atol: float | None
    rtol: float | None
    source: str
    rule: str | None = None  # "atol/rtol" or "reference error"; absent in logs written before the rule existed
    multiple: float | None = None
    floor: float | None = None

    def tolerance(self) -> dict[str, Any]:
        """The correctness record's tolerance entry."""
        return {"output": self.output, "dtype": self.dtype, "rule": self.rule or "atol/rtol", "atol": self.atol,
                "rtol": self.rtol, "multiple": self.multiple, "floor": self.floor, "source": self.source}


@dataclass
class CaseResultEvent(Event):
    tag: ClassVar[str] = "case_result"
    case: int
    dims: dict[str, Any]
    seed: int
    passed: bool
    outputs: list[dict[str, Any]]  # check.records.OutputComparison.to_dict() per output
    findings: dict[str, Any]  # what each integrity check around the call found, under its key (modified_inputs)


@dataclass
class IntegrityEvent(Event):
    """An integrity check that ran after the cases, and its result (check/integrity: the launch check, the probe...)."""

    tag: ClassVar[str] = "integrity"
    check: str  # the check's name in check/integrity/registry.py
    result: dict[str, Any]  # its result record's to_dict()


@dataclass
class DoneEvent(Event):
    tag: ClassVar[str] = "done"
    dims: dict[str, Any] | None = None  # the profiled program: the dims it ran
    profiled_calls: int | None = None


@dataclass
class ErrorEvent(Event):
    tag: ClassVar[str] = "error"
    kind: str
    message: str
    hint: str | None
    exit_code: int

    @classmethod
    def from_error(cls, error: KernelOptError) -> ErrorEvent:
        return cls(kind=error.kind, message=error.message, hint=error.hint, exit_code=int(error.exit_code))


@dataclass
class PrecisionEvent(Event):
    tag: ClassVar[str] = "precision"
    allow_tf32: bool
    note: str


@dataclass
class ProblemEvent(Event):
    tag: ClassVar[str] = "problem"
    dims: dict[str, Any]
    seed: int
    dtypes: dict[str, str]


@dataclass
class WorkEvent(Event):
    """FLOPs and bytes per call; its fields sit at the top level of the line, as the record stores them."""

    tag: ClassVar[str] = "work"
    work: dict[str, Any]  # flops, flops_source, [flops_note], bytes, bytes_source, dtype

    def to_json(self) -> dict[str, Any]:
        return {"event": self.tag, **self.work}

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> WorkEvent:
        return cls({key: value for key, value in payload.items() if key not in ("event", "t")})


@dataclass
class CeilingsEvent(Event):
    tag: ClassVar[str] = "ceilings"
    measured: dict[str, Any] | None  # measure.ceilings.MeasuredCeilings.to_dict(); None: none cached
    error: str | None = None  # the cache could not be read


@dataclass
class TimedEvent(Event):
    tag: ClassVar[str] = "timed"
    entry: dict[str, Any]  # measure.records.TimedEntry.to_dict()


@dataclass
class PostTimingCheckEvent(Event):
    tag: ClassVar[str] = "post_timing_check"
    name: str
    passed: bool
    outputs: list[dict[str, Any]]


@dataclass
class KernelTimeEvent(Event):
    tag: ClassVar[str] = "kernel_time"
    entry: dict[str, Any] | None = None  # a TimedEntry's dict, or None with `error`
    error: str | None = None


@dataclass
class CudaGraphEvent(Event):
    tag: ClassVar[str] = "cuda_graph"
    entry: dict[str, Any] | None = None
    error: str | None = None


@dataclass
class CopySameBytesEvent(Event):
    tag: ClassVar[str] = "copy_same_bytes"
    copy: dict[str, Any]  # measure.ceilings.CopyCeiling as a dict


@dataclass
class SweepSizeEvent(Event):
    """A size sweep's profiled program set up one size: its dims and the work per call (profile/sweep)."""

    tag: ClassVar[str] = "sweep_size"
    dims: dict[str, Any]
    work: dict[str, Any]  # measure.benchmark_child.problem_work, plus allow_tf32


@dataclass
class SweepOutcomeEvent(Event):
    """nsight-python's call for one size of a sweep: profiled (its DataFrame in `frame`), or the error it raised."""

    tag: ClassVar[str] = "sweep_outcome"
    value: Any  # the swept dim's value
    profiled: bool
    frame: str | None = None  # the CSV file of this size's DataFrame
    error: str | None = None


@dataclass
class MemoryEvent(Event):
    """A step's GPU memory (run/memory.py): the peak allocated while it ran, and what the memory plan chose."""

    tag: ClassVar[str] = "memory"
    step: str  # the phase it belongs to ("reference", "truth", "solution", "input pool", ...)
    peak_bytes: int | None = None  # torch.cuda.max_memory_allocated over the step, reset when it began
    case: int | None = None
    dims: dict[str, Any] | None = None
    seed: int | None = None
    plan: str | None = None  # what the plan chose where the whole did not fit, in one sentence


@dataclass
class InterleavedEvent(Event):
    tag: ClassVar[str] = "interleaved"
    this: dict[str, Any]  # TimingSamples.to_dict() of this solution
    other: dict[str, Any]  # and of the other version


EVENT_TYPES: dict[str, type[Event]] = {
    event_type.tag: event_type
    for event_type in (
        EnvironmentEvent, PhaseEvent, CaseStartEvent, PlanEvent, NoteEvent, WarningEvent, ToleranceEvent,
        CaseResultEvent, IntegrityEvent, DoneEvent, ErrorEvent, PrecisionEvent, ProblemEvent,
        WorkEvent, CeilingsEvent, TimedEvent, PostTimingCheckEvent, KernelTimeEvent, CudaGraphEvent, CopySameBytesEvent,
        InterleavedEvent, SweepSizeEvent, SweepOutcomeEvent, MemoryEvent,
    )
}


def parse_event(payload: dict[str, Any]) -> Event:
    """The typed event of one parsed line; ValueError for a tag this package never writes."""
    event_type = EVENT_TYPES.get(payload.get("event"))
    if event_type is None:
        raise ValueError(f"unknown worker event {payload.get('event')!r}")
    event = event_type.from_json(payload)
    event.t = payload.get("t")
    return event


def dispatch(events: list[Event], handlers: Mapping[type[Event], Callable[[Any, Any], None]], record: Any) -> None:
    """Give each event to its type's handler, which fills `record`; events without one are skipped."""
    for event in events:
        handler = handlers.get(type(event))
        if handler is not None:
            handler(record, event)


def read_event_log(path: Path) -> list[Event]:
    """Every event in a log file (the profiled program's, kept beside its report); [] when there is none."""
    if not path.is_file():
        return []
    return [parse_event(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


class EventLog:
    """Append one JSON object per line; each line is written whole and flushed at once."""

    def __init__(self, path: str):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, event: Event) -> None:
        # "t" (wall clock, s) lets the parent say where a step's time went (phase durations).
        line = json.dumps({**event.to_json(), "t": round(time.time(), 3)}, default=str) + "\n"
        os.write(self._fd, line.encode())


def environment_info(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"torch": torch.__version__, "python": sys.version.split()[0]}
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception:  # triton is optional for CUDA solutions
        info["triton"] = None
    if device == "cuda":
        properties = torch.cuda.get_device_properties(0)
        info["gpu"] = {
            "name": properties.name,
            "compute_capability": f"{properties.major}.{properties.minor}",
            "multiprocessors": properties.multi_processor_count,
            "memory_gib": round(properties.total_memory / 2**30, 1),
            "uuid": board_uuid(getattr(properties, "uuid", None)),  # which board timed, where several share a host
        }
        info["cuda"] = torch.version.cuda
    return info


def board_uuid(uuid: object) -> str | None:
    """A GPU's UUID as nvidia-smi spells it ("GPU-5f1c..."), from torch's device properties ("5f1c...")."""
    text = str(uuid) if uuid else ""
    return None if not text else text if text.startswith("GPU-") else f"GPU-{text}"


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}"
