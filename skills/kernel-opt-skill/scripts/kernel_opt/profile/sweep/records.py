"""The size sweep's record: what DIR/sweep.json holds, and how it is read back.

Plain data: the final report embeds a sweep on a machine with neither a GPU nor nsight-python.
Times are nsight-python's means over its runs of ncu's `gpu__time_duration.sum` (caches flushed,
clocks not locked), so they are for comparing sizes and the solution with PyTorch, never with
benchmark.py's timings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from kernel_opt.core.files import read_json
from kernel_opt.core.records import Record, check_schema, field_values

SWEEP_SCHEMA = "kernel_opt.sweep/1"
SWEEP_FOLDER = "sweep"  # a run's sweep: OUT/sweep (SKILL.md's Finish step; final_report.py embeds it)
SWEEP_JSON = "sweep.json"
SWEEP_MD = "sweep.md"
SWEEP_CSV = "sweep.csv"  # nsight-python's DataFrame of every size, as it wrote it
SWEEP_PNG = "sweep.png"
SWEEP_EVENTS = "sweep_events.jsonl"  # what the child reported, kept beside the record
CHECK_DIR = "check"  # the sweep's correctness check of every size (correctness.json/.md)
NSIGHT_DIR = "nsight"  # nsight-python's files per size: ncu's log, the per-run CSVs (and, asked, the .ncu-rep)
FULL_REPORT_SUFFIX = ".ncu-rep"  # nsight-python's full report per size: tens of MB each, kept only on request

# What happened at one size. Only "profiled" is charted; "invalid" (faster than the physical
# floor) is shown but never charted as a % of ceiling.
PointStatus = Literal["profiled", "invalid", "incorrect", "not_checked", "solution_error", "profile_failed"]
SweepVerdict = Literal["profiled", "partial", "failed"]


@dataclass
class Measurement(Record):
    """One annotation (the solution, or ref.py's reference) at one size.

    The rates divide the work ref.py counts (or the benchmark's count of inputs and outputs) by
    the time; `dram_bandwidth_gbps` divides the DRAM bytes ncu measured instead.
    """

    time_us: float | None
    time_min_us: float | None = None
    time_max_us: float | None = None
    time_stddev_us: float | None = None
    runs: int | None = None
    stable: bool | None = None  # nsight-python: the runs' relative standard deviation is under 2%
    dram_bytes: float | None = None  # dram__bytes_read.sum + dram__bytes_write.sum, mean per call
    kernels: list[str] = field(default_factory=list)  # launched per call, summed into the numbers above
    achieved_bandwidth_gbps: float | None = None
    dram_bandwidth_gbps: float | None = None
    achieved_tflops: float | None = None
    percent_of_ceiling: float | None = None
    ceiling_basis: str | None = None  # "measured", "same-size copy" or "datasheet" (measure/placement.choose_basis)
    bound: str | None = None  # "memory" or "compute" on that basis
    compute_roof: str | None = None  # where a compute bound's roof comes from: "measured matmul" or "datasheet peak"
    below_floor: bool = False  # faster than the physical floor: the time counts for nothing
    floor_message: str | None = None


@dataclass
class SweepPoint:
    """One size: what became of it, the work per call, and both measurements."""

    value: int
    dims: dict[str, Any]
    status: PointStatus
    exit_code: int
    message: str | None = None
    work: dict[str, Any] = field(default_factory=dict)  # flops, flops_source, bytes, bytes_source, dtype
    solution: Measurement | None = None
    reference: Measurement | None = None
    speedup_vs_reference: float | None = None  # the reference's time / the solution's, same size and run
    # The same-size copy's rate (plan.COPY_ANNOTATION): a roof of its own in the % of ceiling; None: no copy ran
    copy_bandwidth_gbps: float | None = None

    @property
    def charted(self) -> bool:
        return self.status == "profiled" and self.solution is not None and self.solution.time_us is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> SweepPoint:
        measurements = {name: Measurement.from_dict(payload[name]) if payload.get(name) else None
                        for name in ("solution", "reference")}
        return cls(**field_values(cls, payload, **measurements))


@dataclass
class SweepRecord:
    """DIR/sweep.json: the plan, how it was collected, every size, and the verdict over them."""

    solution: str
    reference: str
    backend: str
    dim: str
    values: list[int]
    dims: dict[str, Any]  # the other sizes
    verdict: SweepVerdict
    exit_code: int
    points: list[SweepPoint] = field(default_factory=list)
    command: str | None = None
    gpu: str | None = None
    runs: int | None = None
    nsight_options: dict[str, Any] = field(default_factory=dict)  # what nsight.analyze.kernel was given
    combine: str = "the kernels of one annotation summed (durations and DRAM bytes; gaps between launches not counted)"
    nsight_python: str | None = None
    ncu: str | None = None
    rate: Literal["bandwidth", "flops"] = "bandwidth"  # the achieved rate the chart draws
    ceilings: list[dict[str, Any]] = field(default_factory=list)  # the roofs the % of ceiling used, described
    correctness: dict[str, Any] = field(default_factory=dict)  # verdict, path of check/correctness.json
    files: dict[str, str] = field(default_factory=dict)  # csv, md, png, events, nsight: relative to the record
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: dict[str, Any] | None = None  # kind, message, hint, exit_code: what stopped the whole sweep
    created_at: str | None = None
    schema: str = SWEEP_SCHEMA

    def point(self, value: int) -> SweepPoint | None:
        return next((point for point in self.points if point.value == value), None)

    def charted(self) -> list[SweepPoint]:
        return [point for point in self.points if point.charted]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "points": [point.to_dict() for point in self.points]}

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = SWEEP_JSON) -> SweepRecord:
        check_schema(payload, SWEEP_SCHEMA, what)
        points = [SweepPoint.from_dict(item) for item in payload.get("points") or []]
        return cls(**field_values(cls, payload, points=points, schema=SWEEP_SCHEMA))


def read_sweep(folder: Path) -> SweepRecord | None:
    """FOLDER/sweep.json as a record; None when there is none (a corrupt one is bad input, exit 2)."""
    path = folder / SWEEP_JSON
    payload = read_json(path)
    return None if payload is None else SweepRecord.from_dict(payload, what=str(path))
