"""What a solution ran on the GPU during one checked call, and whether it kept to the caller's stream: the rules.

The launch check (check/integrity/launches.py) profiles one call (launch_profile.py) bracketed
on the caller's stream by a fence (a spin kernel of about a millisecond, launched just before
the call) and a marker (a tiny spin kernel launched as soon as the call returns), and hands the GPU activity
(kernels, copies, memsets: name, stream, start, duration) to `judge_trace`, a pure function:

- no kernel at all during the call fails: the output was computed on the host, copied from a
  result kept from earlier, or never computed;
- work on any other stream that started before the fence ended ran without waiting for the
  caller's stream (it may read inputs before they are ready), and work on another stream that
  ended after the marker started was still running when the call returned (not joined): both
  fail, naming the kernel and the stream;
- every kernel is listed once per name and stream, with its count and GPU time, as the
  solution's own (a kernel its source defines: Launcher.own_kernel_names) or library code.

`profiled_kernels_problem` applies the same listing to what ncu profiled (loop/measure_steps.py).
Plain data and no torch, so the records read anywhere and the rules are tested with synthetic
traces and with the probe recorded on an H100 (tests/unit/check/test_launches.py, tests/fixtures/launches/).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kernel_opt.check.records import OutputComparison, output_failure_text
from kernel_opt.core.records import Record, field_values

# torch.cuda._sleep's kernel, "at::cuda::(anonymous namespace)::spin_kernel(long)": the harness's
# fence and marker. The first one in the trace is the fence, and its stream is the caller's.
HARNESS_KERNEL = "spin_kernel"
# CUPTI timestamps are nanoseconds, but a kernel waiting on an event starts about 1 us after the
# work it waits for ends (the probe: joined side stream at 1012.9 us after the fence's end at
# 1011.0; marker at 1090.1 after the side kernel's end at 1088.8), and the two ends of one wait
# are read on different engines. An honest kernel is never closer than that to the wrong side,
# while the races seen start hundreds of microseconds early (107-250 us into a 1011 us fence).
STREAM_SLACK_NS = 1_000

OWN = "own"
COPY_KINDS = ("memcpy", "memset")
# Which library a kernel's name shows, for the listing (first match wins); any other name that
# the solution does not define is "library".
_LIBRARIES = (
    ("at::", "torch"),
    ("cublas", "cuBLAS"),
    ("cutlass", "cuBLAS/CUTLASS"),
    ("xmma", "cuBLAS"),
    ("gemm", "cuBLAS"),
    ("cudnn", "cuDNN"),
    ("triton", "Triton"),
    ("nccl", "NCCL"),
)


@dataclass(frozen=True)
class GpuActivity:
    """One kernel, copy or memset the profiler saw on the GPU; times in ns on the GPU's clock."""

    name: str
    stream: int  # CUPTI's stream id (the legacy default stream is 7 on the probe's H100)
    start_ns: int
    duration_ns: int

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns

    @property
    def kind(self) -> str:
        """"memcpy", "memset" or "kernel", from the name CUPTI gives ("Memcpy DtoD (Device -> Device)")."""
        lowered = self.name.lower()
        for kind in COPY_KINDS:
            if lowered.startswith(kind):
                return kind
        return "kernel"


@dataclass
class LaunchedWork(Record):
    """One line of the listing: a kernel (or copy) name on one stream, how often it ran and its GPU time."""

    name: str
    kind: str  # "kernel", "memcpy" or "memset"
    stream: int
    on_caller_stream: bool
    count: int
    total_us: float
    origin: str  # "own", a library ("torch", "cuBLAS", ... or "library"), "copy", or "unknown"


@dataclass
class LaunchCheck(Record):
    """correctness.json "launches": the profiled call, what it ran on the GPU, and what was wrong with it."""

    profiled: bool
    note: str = ""  # how it ran, or why nothing was profiled
    dims: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    caller: str = ""  # which stream the call was given, in words
    caller_stream: int | None = None  # its CUPTI id in the trace
    fence_us: float | None = None
    call_host_us: float | None = None  # the profiled call's host-side duration
    work: list[LaunchedWork] = field(default_factory=list)
    own_kernels: int | None = None  # distinct own kernel names that ran; None: the backend cannot tell
    library_kernels: int = 0  # distinct library kernel names that ran
    problems: list[str] = field(default_factory=list)  # each a reason to fail
    outputs: list[dict[str, Any]] = field(default_factory=list)  # OutputComparison.to_dict() of the call
    modified_inputs: list[str] = field(default_factory=list)
    values_passed: bool | None = None  # None: the call's outputs were not compared

    @property
    def passed(self) -> bool:
        return not self.problems and self.values_passed is not False and not self.modified_inputs

    @property
    def library_only(self) -> bool:
        """Kernels ran, none of them the solution's own: what it times is library code."""
        return self.own_kernels == 0 and self.library_kernels > 0

    def failure_sentences(self) -> list[str]:
        """Why the profiled call failed: its problems, then its outputs and inputs as a case reports them."""
        shape = ", ".join(f"{key}={value}" for key, value in self.dims.items()) or "default shape"
        where = f"the profiled call ({shape}; seed {self.seed})"
        sentences = [f"{problem} ({where})" for problem in self.problems]
        for payload in self.outputs:
            output = OutputComparison.from_dict(payload)
            if not output.passed:
                sentences.append(f"output {output.name!r}: {output_failure_text(output)} ({where})")
        sentences += [f"input {name!r}: was modified by the solution ({where})" for name in self.modified_inputs]
        return sentences

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "passed": self.passed}

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> LaunchCheck:
        work = [LaunchedWork.from_dict(item) for item in payload.get("work") or []]
        return cls(**field_values(cls, payload, work=work))


@dataclass
class TraceVerdict:
    """What `judge_trace` concluded; `unreadable` says why nothing could be concluded."""

    caller_stream: int | None = None
    fence_us: float | None = None
    work: list[LaunchedWork] = field(default_factory=list)
    own_kernels: int | None = None
    library_kernels: int = 0
    problems: list[str] = field(default_factory=list)
    unreadable: str | None = None


# --- kernel names -------------------------------------------------------------------------------------


_MANGLED_PART = re.compile(r"(\d+)")


def kernel_base_name(name: str) -> str:
    """The kernel's own identifier, without namespaces, template arguments, parameters or return type.

    CUPTI gives demangled names ("void add<128>(float const*, int)", "at::native::(anonymous
    namespace)::fill"), ptxas's log may give mangled ones ("_Z3addPKfi"), Triton gives the
    function's name: all compare on the bare identifier ("add").
    """
    text = name.strip()
    if text.startswith("_Z"):
        return _mangled_base_name(text)
    text = text.replace("(anonymous namespace)", "anonymous_namespace")
    flat, depth = [], 0
    for character in text:  # drop template arguments, and stop at the parameter list
        if character == "<":
            depth += 1
        elif character == ">":
            depth = max(0, depth - 1)
        elif depth == 0:
            if character == "(":
                break
            flat.append(character)
    words = "".join(flat).split()  # a return type, then the qualified name
    return (words[-1] if words else text).split("::")[-1]


def _mangled_base_name(name: str) -> str:
    """The last source name of an Itanium-mangled symbol: _Z3addPKfi -> add, _ZN2ns4kernEv -> kern."""
    rest = name[2:]
    nested = rest.startswith("N")
    rest = rest[1:] if nested else rest
    last = name
    while rest:
        rest = rest.lstrip("KVr")  # cv-qualifiers of a nested name
        match = _MANGLED_PART.match(rest)
        if match is None:
            break
        length = int(match.group(1))
        start = match.end()
        last = rest[start:start + length]
        rest = rest[start + length:]
        if not nested:
            break
        if rest.startswith("I"):  # template arguments of the last part: the name is known
            break
        if rest.startswith("E") or not rest[:1].isdigit():
            break
    return last


def library_of(name: str) -> str:
    """Which library a kernel that the solution does not define most likely comes from."""
    lowered = name.lower()
    return next((library for marker, library in _LIBRARIES if marker in lowered), "library")


def own_base_names(names: Iterable[str]) -> frozenset[str]:
    return frozenset(kernel_base_name(name) for name in names if name)


# --- the trace ---------------------------------------------------------------------------------------------


def judge_trace(activities: list[GpuActivity], own_names: frozenset[str] | None,
                slack_ns: int = STREAM_SLACK_NS) -> TraceVerdict:
    """The listing and the problems of one fenced call, from its GPU activity.

    Args:
        activities: everything the profiler saw on the GPU between starting and stopping,
            the harness's fence and marker included.
        own_names: base names of the kernels the solution defines (kernel_base_name), or
            None when its backend cannot tell.
        slack_ns: how far on the wrong side of the fence or the marker a start or an end may
            be before it counts (STREAM_SLACK_NS).
    """
    ordered = sorted(activities, key=lambda activity: (activity.start_ns, activity.end_ns))
    fence = next((a for a in ordered if HARNESS_KERNEL in a.name), None)
    if fence is None:
        return TraceVerdict(unreadable="the profiler recorded no GPU activity of the harness's own (its fence kernel "
                                       "is missing): CUPTI gave no GPU trace here")
    caller = fence.stream
    markers = [a for a in ordered if a.stream == caller and HARNESS_KERNEL in a.name and a is not fence]
    if not markers:
        return TraceVerdict(caller_stream=caller, unreadable="the profiler recorded the fence but not the marker "
                                                             "launched after the call: the trace is incomplete")
    marker = markers[-1]
    solution = [a for a in ordered if a is not fence and a is not marker]
    verdict = TraceVerdict(caller_stream=caller, fence_us=fence.duration_ns / 1e3)
    verdict.work = _listing(solution, caller, own_names)
    kernels = {row.name for row in verdict.work if row.kind == "kernel"}
    if own_names is not None:
        own = {row.name for row in verdict.work if row.origin == OWN}
        verdict.own_kernels, verdict.library_kernels = len(own), len(kernels - own)
    if not kernels:
        verdict.problems.append(no_kernel_problem(verdict.work))
    verdict.problems += stream_problems(solution, caller, fence.end_ns, marker.start_ns, slack_ns)
    return verdict


def _listing(solution: list[GpuActivity], caller: int, own_names: frozenset[str] | None) -> list[LaunchedWork]:
    """One row per (name, stream), in the order each first ran."""
    rows: dict[tuple[str, int], LaunchedWork] = {}
    for activity in solution:
        key = (activity.name, activity.stream)
        row = rows.get(key)
        if row is None:
            row = rows[key] = LaunchedWork(activity.name, activity.kind, activity.stream, activity.stream == caller,
                                           0, 0.0, _origin(activity, own_names))
        row.count += 1
        row.total_us = round(row.total_us + activity.duration_ns / 1e3, 3)
    return list(rows.values())


def _origin(activity: GpuActivity, own_names: frozenset[str] | None) -> str:
    if activity.kind != "kernel":
        return "copy"
    if own_names is None:
        return "unknown"
    return OWN if kernel_base_name(activity.name) in own_names else library_of(activity.name)


def no_kernel_problem(work: list[LaunchedWork]) -> str:
    """Why a call with no kernel fails, naming the copies it made instead."""
    if not work:
        return ("launched no GPU kernel during the call: nothing ran on the GPU between the call and its return, so "
                "its outputs were computed elsewhere or not at all")
    copies = ", ".join(f"{row.count} x {row.name}" for row in work)
    return (f"launched no GPU kernel during the call: it only made copies ({copies}), so its outputs were computed on "
            "the host or copied from a result kept from an earlier call")


def stream_problems(solution: list[GpuActivity], caller: int, fence_end_ns: int, marker_start_ns: int,
                    slack_ns: int = STREAM_SLACK_NS) -> list[str]:
    """The stream rules, one sentence per (name, stream, rule)."""
    problems: list[str] = []
    for activity in solution:
        where = f"{activity.name} launched on stream {activity.stream}"
        if activity.stream == caller:
            if activity.start_ns > marker_start_ns + slack_ns:
                problems.append(f"{activity.name} ran on the caller's stream after the call had returned: it was "
                                "launched from another thread or a callback, outside the call")
            continue
        if activity.start_ns < fence_end_ns - slack_ns:
            early_us = (fence_end_ns - activity.start_ns) / 1e3
            problems.append(f"{where} without waiting for the caller's stream: it may read inputs before they are "
                            f"ready (it started {early_us:.1f} us before the work queued ahead of the call had "
                            "finished)")
        if activity.end_ns > marker_start_ns + slack_ns:
            late_us = (activity.end_ns - marker_start_ns) / 1e3
            problems.append(f"{where} and not joined to the caller's stream: still running when the call returned "
                            f"(it ended {late_us:.1f} us after work queued after the call had started)")
    return list(dict.fromkeys(problems))


# --- what ncu profiled ----------------------------------------------------------------------------------------


def profiled_kernels_problem(profiled_names: list[str], launches: LaunchCheck | None) -> str | None:
    """Why an ncu profile shows that the solution's calls skipped the work, or None.

    ncu profiles the solution's calls on the same inputs after a warm-up; a call that profiles
    no kernel at all, or none of the kernels of the solution's own that the correctness check
    saw it launch, reused results instead of computing them (the memoizing exploit of issue
    14). A solution whose every kernel is library code (own_kernels 0) is judged only on
    launching something.
    """
    if not profiled_names:
        return ("ncu profiled no kernel in the solution's calls: the calls on repeated inputs launched nothing, so "
                "they reuse results instead of computing them")
    if launches is None or not launches.profiled:
        return None
    own = {kernel_base_name(row.name) for row in launches.work if row.origin == OWN}
    if not own or any(kernel_base_name(name) in own for name in profiled_names):
        return None
    return (f"ncu profiled only {', '.join(sorted({kernel_base_name(n) for n in profiled_names}))}, none of the "
            f"solution's own kernels ({', '.join(sorted(own))}) that the correctness check saw it launch: its calls "
            "on repeated inputs skip the work and reuse results")
