"""The benchmark's record: what DIR/benchmark.json holds, and how it is read back.

Plain data, no torch: the final report, the workspace, the experience log and the demo
tools read these records on machines where nothing runs. Each nested part is a typed section
(core.records.Section) that writes back exactly the JSON it was read from; where the solution
stands on the roofline is in measure/roofline_records.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from kernel_opt.check.integrity.launch_rules import LaunchCheck
from kernel_opt.check.records import OutputComparison
from kernel_opt.core.records import (
    UNSET,
    ErrorRecord,
    Record,
    Section,
    check_schema,
    dict_of,
    field_values,
    list_of,
    read_record,
    section_of,
    to_json,
)
from kernel_opt.env.clock_watch import ClocksDuring
from kernel_opt.env.probe_records import SmiGpu
from kernel_opt.measure.roofline_records import CeilingBasis, CopySameBytes, Roofline, RoofPoint, Work
from kernel_opt.run.environment import GpuInfo, RunEnvironment
from kernel_opt.run.memory import MemoryUse
from kernel_opt.solution.build_record import BuildRecord

BENCHMARK_FILE = "benchmark.json"
BENCHMARK_SCHEMA = "kernel_opt.benchmark/1"
DEFAULT_TARGET_PERCENT = 90.0  # of the binding roofline ceiling; the loop may stop there
# Roof sets a benchmark records, in order of preference for the % of ceiling of older records
# that did not name their primary one (measure.benchmark_assembly._place_on_roofline).
OLDER_PRIMARY_SOURCES = ("measured", "datasheet")


COMPILE_BASELINE_PREFIX = "torch.compile"
EAGER_BASELINE = "eager"


def compile_baseline_name(mode: str) -> str:
    """The name a torch.compile baseline's entry carries: "torch.compile (default)"."""
    return f"{COMPILE_BASELINE_PREFIX} ({mode})"


def compile_mode_of(name: str) -> str:
    """The mode in a torch.compile baseline's name: "torch.compile (default)" -> "default"."""
    return name.removeprefix(f"{COMPILE_BASELINE_PREFIX} (").removesuffix(")")


@dataclass
class TimingRecord(Section):
    """How a time was taken and its numbers: measure.timing.samples.TimingSamples.to_dict(), as written."""

    samples_us: list[float] | None = UNSET
    warmup: int | None = UNSET
    reps: int | None = UNSET
    flush_l2: bool | None = UNSET
    method: str | None = UNSET  # "events", "cuda_graph", "cuda_graph_differential"
    calls_per_sample: int | None = UNSET
    flush_mode: str | None = UNSET
    flush_bytes: int | None = UNSET
    estimate_us: float | None = UNSET
    interleaved: bool | None = UNSET
    device_name: str | None = UNSET
    notes: list[str] | None = UNSET
    ok: bool | None = UNSET
    median_us: float | None = UNSET
    p20_us: float | None = UNSET
    p80_us: float | None = UNSET
    min_us: float | None = UNSET
    mean_us: float | None = UNSET
    relative_spread: float | None = UNSET


@dataclass
class TimedEntry(Section):
    """One timed callable: the solution, another version or a baseline; only {"error": ...} where it was not timed."""

    name: str
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    min_us: float | None = None
    reps: int | None = None
    relative_spread: float | None = None
    compile_s: float | None = None  # torch.compile: first call, compile and autotune included
    error: str | None = None
    timing: TimingRecord | None = None  # samples and method
    cached_from: str | None = None  # a baseline reused from the run's reference_cache.json: who timed it, when
    # A baseline timed in alternation with the solution: the solution's median over the same pairs, what its speedup
    # over this baseline is read against (both met the same clocks and power state).
    paired_solution_us: float | None = None
    paired_solution_samples_us: list[float] | None = None  # the solution's samples in those pairs, pair by pair

    readers = {"timing": section_of(TimingRecord)}

    def solution_us_beside(self, solution_median_us: float | None) -> float | None:
        """The solution's median this baseline's time is set against: the solution's in their pairs where the two
        were timed in alternation, else `solution_median_us` (its own timing's)."""
        return self.paired_solution_us or solution_median_us

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON; `cached_from` and `paired_solution_us` only where they hold, so other entries read as before."""
        payload = super().to_dict()
        for optional in ("cached_from", "paired_solution_us", "paired_solution_samples_us"):
            if getattr(self, optional) is None:
                payload.pop(optional, None)
        return payload

    @classmethod
    def from_samples(cls, name: str, samples, **extra) -> TimedEntry:
        return cls(
            name=name,
            median_us=samples.median_us,
            p20_us=samples.p20_us,
            p80_us=samples.p80_us,
            min_us=samples.min_us,
            reps=samples.reps,
            relative_spread=samples.relative_spread,
            timing=TimingRecord.from_dict(samples.to_dict()),
            **extra,
        )


# What the solution's entry adds to the record's "solution": its timing, not its name, compile time or error.
SOLUTION_TIMING_FIELDS = ("median_us", "p20_us", "p80_us", "min_us", "reps", "relative_spread", "timing")


@dataclass
class TimedSolution(Section):
    """benchmark.json "solution": the file, its backend and build, then its timing (a TimedEntry's fields)."""

    path: str | None = UNSET
    backend: str | None = UNSET
    build: BuildRecord | None = UNSET  # the arch, kernels and signature of a backend with a build step
    median_us: float | None = UNSET
    p20_us: float | None = UNSET
    p80_us: float | None = UNSET
    min_us: float | None = UNSET
    reps: int | None = UNSET
    relative_spread: float | None = UNSET
    timing: TimingRecord | None = UNSET

    readers = {"build": section_of(BuildRecord), "timing": section_of(TimingRecord)}

    def take_timing(self, entry: TimedEntry) -> None:
        """The timing of the solution's TimedEntry, field by field where the entry has it."""
        for name in SOLUTION_TIMING_FIELDS:
            if entry.has(name):
                setattr(self, name, getattr(entry, name))


@dataclass
class TimedOutputCheck(Section):
    """The outputs of one kind of timed call compared with the reference after timing (benchmark.json
    "post_timing_check", by kind: measure/timed_outputs.py names them)."""

    passed: bool | None
    outputs: list[OutputComparison] = field(default_factory=list)

    readers = {"outputs": list_of(OutputComparison)}


@dataclass
class CorrectnessGate(Section):
    """benchmark.json "correctness": the correctness check the benchmark ran (or relied on) before timing."""

    passed: bool | None = UNSET
    verdict: str | None = UNSET
    cases: int | None = UNSET  # how many cases ran
    failures: list[str] | None = UNSET  # the first five reasons it failed
    error: ErrorRecord | None = UNSET
    # The launch check's section of the correctness record, as its check wrote it (read with launch_check()).
    launches: dict[str, Any] | None = UNSET
    kernelbench_tolerances: bool | None = UNSET  # written only where judged at KernelBench's tolerances ...
    precision_downgrades: list[str] | None = UNSET  # ... or an output was a precision downgrade

    readers = {"error": section_of(ErrorRecord)}


@dataclass
class Precision(Section):
    """The matmul precision the timing ran at: TF32 only where ref.py allows it."""

    allow_tf32: bool | None = UNSET
    note: str | None = UNSET


@dataclass
class Comparison(Record):
    """This solution against another version, timed interleaved."""

    against: str
    against_dir: str | None
    speedup: float  # median(other) / median(this): > 1 means this solution is faster
    ci_low: float
    ci_high: float
    confidence: float
    pairs: int
    this_median_us: float
    other_median_us: float
    verdict: str
    other_correct_after_timing: bool

    def against_folder(self) -> str | None:
        """The other version's folder name ("v1"): from against_dir, else the folder of the file."""
        return Path(self.against_dir or Path(self.against or "").parent).name or None


@dataclass
class BenchmarkReport:
    """DIR/benchmark.json: the solution's timing, its baselines, the comparison and the roofline."""

    solution: TimedSolution  # path, backend, [build], and the timing fields of its TimedEntry
    reference: str
    backend: str
    command: str
    dims: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    gpu: GpuInfo = field(default_factory=GpuInfo)
    versions: RunEnvironment = field(default_factory=RunEnvironment)  # python, torch, triton, cuda
    clocks_start: list[SmiGpu] = field(default_factory=list)
    clocks_end: list[SmiGpu] = field(default_factory=list)
    clocks_during: ClocksDuring | None = None  # nvidia-smi sampled while the child ran (env/clock_watch.py)
    precision: Precision = field(default_factory=Precision)
    correctness: CorrectnessGate = field(default_factory=CorrectnessGate)
    post_timing_check: dict[str, TimedOutputCheck] = field(default_factory=dict)
    cuda_graph: TimedEntry | None = None
    kernel_time: TimedEntry | None = None  # launch overhead removed, L2 flushed: comparable with ncu
    baselines: list[TimedEntry] = field(default_factory=list)
    best_baseline: str | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_best_baseline: float | None = None
    comparison: Comparison | None = None
    work: Work = field(default_factory=Work)
    roofline: Roofline = field(default_factory=Roofline)
    copy_same_bytes: CopySameBytes | None = None  # a copy moving the problem's bytes, timed like the solution
    percent_of_ceiling: float | None = None
    target_percent: float = DEFAULT_TARGET_PERCENT
    target_reached: bool | None = None
    # "measured", "incorrect", "invalid" (faster than the physical floor: roofline.physical_floor says
    # why), "solution_error", "environment_error", "usage_error"
    verdict: str = "not_run"
    error: ErrorRecord | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phases_s: dict[str, float] = field(default_factory=dict)  # where the command's wall time went
    exit_code: int | None = None  # benchmark.py's exit code; set when the record is final
    memory: MemoryUse | None = None  # each step's peak GPU memory and what the memory plan chose (run/memory.py)
    schema: str = BENCHMARK_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        payload = {item.name: to_json(getattr(self, item.name)) for item in fields(self)}
        for optional in ("clocks_during", "memory"):  # absent from records written before they existed
            if getattr(self, optional) is None:
                del payload[optional]
        return {"exit_code": payload.pop("exit_code"), **payload}

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = BENCHMARK_FILE) -> BenchmarkReport:
        check_schema(payload, BENCHMARK_SCHEMA, what)
        comparison = payload.get("comparison")
        sections = {name: reader(payload[name]) for name, reader in _SECTION_READERS.items() if name in payload}
        return cls(**field_values(
            cls, payload, **sections, schema=BENCHMARK_SCHEMA,
            solution=TimedSolution.from_dict(payload.get("solution") or {}),
            baselines=[TimedEntry.from_dict(entry) for entry in payload.get("baselines") or []],
            comparison=Comparison.from_dict(comparison) if isinstance(comparison, dict) else None,
        ))

    @property
    def median_us(self) -> float | None:
        return self.solution.median_us

    @property
    def p20_us(self) -> float | None:
        return self.solution.p20_us

    @property
    def p80_us(self) -> float | None:
        return self.solution.p80_us

    @property
    def measured(self) -> bool:
        """Timed, right after timing, and with a positive median: the only numbers a reader may use."""
        median = self.median_us
        return self.verdict == "measured" and isinstance(median, (int, float)) and median > 0

    @property
    def gpu_name(self) -> str | None:
        return self.gpu.name

    def baseline_medians(self) -> dict[str, float]:
        """Each baseline that was timed: its name -> median (us)."""
        return {entry.name: entry.median_us for entry in self.baselines if entry.median_us and not entry.error}

    def fastest_compile(self) -> tuple[str, float] | None:
        """The fastest torch.compile mode timed: (its baseline's name, median us); None when none was."""
        compiled = {name: median for name, median in self.baseline_medians().items()
                    if name.startswith(COMPILE_BASELINE_PREFIX)}
        return min(compiled.items(), key=lambda item: item[1]) if compiled else None

    def roofline_points(self) -> dict[str, RoofPoint]:
        """Roofline points by the ceilings they are against ("measured", "same-size copy", "datasheet")."""
        return dict(self.roofline.points or {})

    def primary_point(self) -> tuple[str | None, RoofPoint | None]:
        """The roofline point percent_of_ceiling came from (older records: measured first)."""
        points = self.roofline_points()
        primary = self.roofline.primary
        if primary in points:
            return primary, points[primary]
        for source in OLDER_PRIMARY_SOURCES:
            if points.get(source):
                return source, points[source]
        return None, None

    def failure_reason(self) -> str:
        """Why nothing was timed, or why the time counts for nothing: the error, the floor beaten, the failures."""
        if self.verdict == "invalid":
            floor = self.roofline.physical_floor
            return (floor.message if floor else None) or "faster than the physical floor"
        reason = (self.error.message if self.error else None) or "; ".join(self.correctness.failures or [])
        if not reason and not all(check.passed or not check.has("passed") for check in self.post_timing_check.values()):
            from kernel_opt.measure.timed_outputs import wrong_timed_outputs_text

            return wrong_timed_outputs_text(self.post_timing_check, self.launch_check())
        return reason

    def launch_check(self) -> LaunchCheck | None:
        """The correctness gate's launch check (the kernels its profiled call ran); None in older records."""
        launches = self.correctness.launches
        return LaunchCheck.from_dict(launches) if isinstance(launches, dict) else None

    def ceiling_basis(self) -> CeilingBasis | None:
        """The ceiling the % of ceiling used (name, values, source); None in records made before it was recorded."""
        return self.roofline.basis


_SECTION_READERS = {
    "gpu": section_of(GpuInfo), "versions": section_of(RunEnvironment),
    "clocks_start": list_of(SmiGpu), "clocks_end": list_of(SmiGpu),
    "clocks_during": section_of(ClocksDuring), "precision": section_of(Precision),
    "correctness": section_of(CorrectnessGate), "post_timing_check": dict_of(TimedOutputCheck),
    "cuda_graph": section_of(TimedEntry), "kernel_time": section_of(TimedEntry),
    "work": section_of(Work), "roofline": section_of(Roofline), "copy_same_bytes": section_of(CopySameBytes),
    "error": section_of(ErrorRecord), "memory": section_of(MemoryUse),
}


def read_benchmark(folder: Path) -> BenchmarkReport | None:
    """folder/benchmark.json (a version's, or OUT/benchmark.json from SKILL.md's Finish step); None without one."""
    return read_record(folder / BENCHMARK_FILE, BenchmarkReport.from_dict)
