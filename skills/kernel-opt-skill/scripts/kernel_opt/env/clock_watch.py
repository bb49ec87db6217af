"""What the GPU's clocks did while the benchmark ran: nvidia-smi sampled beside the timed calls.

nvidia-smi read before and after a timing finds an idle GPU, back at its boost clock by the time
it answers. During the timing the GPU may be held below it: on an H200, back-to-back calls of a
memory-bound matvec drew 692 W of a 700 W limit within 2 s, and the software power cap then kept
the SM clock between 1590 and 1980 MHz while both readings around the run said 1980 MHz. Samples
every 100 ms while the benchmark's child runs say, for the samples in which the GPU was busy, how
often each limit was in force and how low the clocks went. Reading them changes nothing on the GPU.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

from kernel_opt.core.records import Section, list_of

SAMPLE_INTERVAL_MS = 100
# nvidia-smi's names for the limits that hold a busy GPU's clock down (`nvidia-smi --help-query-gpu`).
LIMITS = {
    "sw_power_cap": "software power cap",
    "hw_slowdown": "hardware slowdown",
    "sw_thermal_slowdown": "software thermal slowdown",
    "hw_thermal_slowdown": "hardware thermal slowdown",
    "hw_power_brake_slowdown": "hardware power brake",
}
FIELDS = ["index", "uuid", "clocks.sm", "clocks.mem", "power.draw", "clocks_event_reasons.gpu_idle",
          *(f"clocks_event_reasons.{limit}" for limit in LIMITS)]
QUERY = ",".join(FIELDS)
# A limit in force in at least this share of the busy samples is worth a line in the record's warnings.
WARN_SHARE = 0.10


@dataclass(frozen=True)
class ClockSample:
    """One nvidia-smi line for one GPU."""

    index: int
    uuid: str
    sm_clock_mhz: float | None
    memory_clock_mhz: float | None
    power_w: float | None
    idle: bool
    limits: tuple[str, ...]  # the LIMITS keys reported "Active"


@dataclass
class GpuClocksDuring(Section):
    """One GPU over the run: its busy samples' clocks and power, and the share of them each limit was in force."""

    index: int
    uuid: str | None = None
    busy_samples: int = 0
    sm_clock_mhz_min: float | None = None
    sm_clock_mhz_median: float | None = None
    memory_clock_mhz_min: float | None = None
    power_w_max: float | None = None
    limits: dict[str, float] = field(default_factory=dict)  # LIMITS key -> share of busy samples, where > 0


@dataclass
class ClocksDuring(Section):
    """benchmark.json "clocks_during": nvidia-smi sampled while the benchmark's child ran."""

    interval_ms: int = SAMPLE_INTERVAL_MS
    gpus: list[GpuClocksDuring] = field(default_factory=list)
    note: str | None = None  # why nothing was sampled

    readers = {"gpus": list_of(GpuClocksDuring)}


def parse_sample(line: str) -> ClockSample | None:
    """One line of `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`; None for anything else."""
    cells = [cell.strip() for cell in line.split(",")]
    if len(cells) != len(FIELDS) or not cells[0].isdigit():
        return None
    index, uuid, sm_clock, memory_clock, power, idle, *limit_states = cells

    def number(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:  # "[N/A]", "[Not Supported]"
            return None

    return ClockSample(int(index), uuid, number(sm_clock), number(memory_clock), number(power), idle == "Active",
                       tuple(limit for limit, state in zip(LIMITS, limit_states, strict=True) if state == "Active"))


def summarize(samples: list[ClockSample]) -> list[GpuClocksDuring]:
    """Per GPU, over the samples in which it was busy (nvidia-smi's gpu_idle reason not in force)."""
    summaries = []
    for index in sorted({sample.index for sample in samples}):
        mine = [sample for sample in samples if sample.index == index]
        busy = [sample for sample in mine if not sample.idle]
        summary = GpuClocksDuring(index=index, uuid=mine[0].uuid, busy_samples=len(busy))
        sm = [sample.sm_clock_mhz for sample in busy if sample.sm_clock_mhz is not None]
        memory = [sample.memory_clock_mhz for sample in busy if sample.memory_clock_mhz is not None]
        power = [sample.power_w for sample in busy if sample.power_w is not None]
        summary.sm_clock_mhz_min = min(sm, default=None)
        summary.sm_clock_mhz_median = statistics.median(sm) if sm else None
        summary.memory_clock_mhz_min = min(memory, default=None)
        summary.power_w_max = max(power, default=None)
        shares = {limit: sum(limit in sample.limits for sample in busy) / len(busy) for limit in LIMITS} if busy else {}
        summary.limits = {limit: round(share, 3) for limit, share in shares.items() if share > 0}
        summaries.append(summary)
    return summaries


def watched_gpus(environment: dict[str, str] | None = None) -> set[str] | None:
    """The GPU the benchmark's device 0 is, as nvidia-smi names it (an index or a UUID); None: every GPU."""
    visible = (environment if environment is not None else os.environ).get("CUDA_VISIBLE_DEVICES", "").strip()
    first = visible.split(",")[0].strip() if visible else ""
    return {first} if first else None


def throttle_warning(during: ClocksDuring | None) -> str | None:
    """A line for the record's warnings where a limit held a busy GPU's clock in WARN_SHARE of the samples."""
    if during is None:
        return None
    lines = []
    for gpu in during.gpus:
        held = [(share, limit) for limit, share in gpu.limits.items() if share >= WARN_SHARE]
        if not held:
            continue
        limits = ", ".join(f"{LIMITS[limit]} in {share:.0%}" for share, limit in sorted(held, reverse=True))
        lines.append(f"GPU {gpu.index}: {limits} of {gpu.busy_samples} busy samples, SM clock "
                     f"{gpu.sm_clock_mhz_min:.0f}-{gpu.sm_clock_mhz_median:.0f} MHz (lowest-median)")
    if not lines:
        return None
    return ("the GPU's clock was held down while the benchmark ran (nvidia-smi every "
            f"{during.interval_ms} ms): {'; '.join(lines)}. Times taken one after another in this state can differ "
            "for identical work; the baselines beside the solution met the same state, runs on other days may not")


class ClockWatch:
    """`with ClockWatch() as watch:` samples nvidia-smi until the block ends; `watch.result()` summarizes."""

    def __init__(self, gpus: set[str] | None = None, interval_ms: int = SAMPLE_INTERVAL_MS):
        self.gpus, self.interval_ms = gpus, interval_ms
        self._samples: list[ClockSample] = []
        self._process: subprocess.Popen | None = None
        self._reader: threading.Thread | None = None
        self._note: str | None = None

    def __enter__(self) -> ClockWatch:
        path = shutil.which("nvidia-smi")
        if path is None:
            self._note = "not sampled: nvidia-smi is not on PATH"
            return self
        try:
            self._process = subprocess.Popen([path, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                                              "-lms", str(self.interval_ms)], stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True)
        except OSError as error:
            self._note = f"not sampled: nvidia-smi could not start ({error})"
            return self
        self._reader = threading.Thread(target=self._read, name="clock watch", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            sample = parse_sample(line)
            if sample is not None and (self.gpus is None or {str(sample.index), sample.uuid} & self.gpus):
                self._samples.append(sample)

    def __exit__(self, *exc_info: Any) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)

    def result(self) -> ClocksDuring:
        if self._note is not None:
            return ClocksDuring(interval_ms=self.interval_ms, note=self._note)
        if not self._samples:
            return ClocksDuring(interval_ms=self.interval_ms, note="not sampled: nvidia-smi gave no line this query "
                                "reads (a driver without clocks_event_reasons, or a run shorter than one interval)")
        return ClocksDuring(interval_ms=self.interval_ms, gpus=summarize(list(self._samples)))
