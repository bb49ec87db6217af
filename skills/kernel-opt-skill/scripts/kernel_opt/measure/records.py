"""The benchmark's record: what DIR/benchmark.json holds, and how it is read back.

Plain data, no torch: the final report, the workspace, the experience log and the demo
tools read these records on machines where nothing runs. Nested parts that the Markdown
template reads as mappings (solution, gpu, work, roofline, ...) stay JSON objects; the
accessors below are how readers get at the numbers in them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.integrity.launch_rules import LaunchCheck
from kernel_opt.core.records import Record, check_schema, field_values, read_record
from kernel_opt.run.memory import MemoryUse

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
class TimedEntry(Record):
    """One timed callable: the solution, another version, or a baseline."""

    name: str
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    min_us: float | None = None
    reps: int | None = None
    relative_spread: float | None = None
    compile_s: float | None = None  # torch.compile: first call, compile and autotune included
    error: str | None = None
    timing: dict[str, Any] | None = None  # TimingSamples.to_dict(): samples and method
    cached_from: str | None = None  # a baseline reused from the run's reference_cache.json: who timed it, when

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON; `cached_from` only where the entry was reused, so timed entries read as before."""
        payload = asdict(self)
        if payload["cached_from"] is None:
            del payload["cached_from"]
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
            timing=samples.to_dict(),
            **extra,
        )


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

    solution: dict[str, Any]  # path, backend, [build], and the timing fields of its TimedEntry
    reference: str
    backend: str
    command: str
    dims: dict[str, Any] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    gpu: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)
    clocks_start: list[dict[str, Any]] = field(default_factory=list)
    clocks_end: list[dict[str, Any]] = field(default_factory=list)
    precision: dict[str, Any] = field(default_factory=dict)
    correctness: dict[str, Any] = field(default_factory=dict)
    post_timing_check: dict[str, Any] = field(default_factory=dict)
    cuda_graph: dict[str, Any] | None = None
    kernel_time: dict[str, Any] | None = None  # launch overhead removed, L2 flushed: comparable with ncu
    baselines: list[TimedEntry] = field(default_factory=list)
    best_baseline: str | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_best_baseline: float | None = None
    comparison: Comparison | None = None
    work: dict[str, Any] = field(default_factory=dict)
    roofline: dict[str, Any] = field(default_factory=dict)
    copy_same_bytes: dict[str, Any] | None = None  # ceilings.CopyCeiling of a copy moving the problem's bytes
    percent_of_ceiling: float | None = None
    target_percent: float = DEFAULT_TARGET_PERCENT
    target_reached: bool | None = None
    # "measured", "incorrect", "invalid" (faster than the physical floor: roofline["physical_floor"] says
    # why), "solution_error", "environment_error", "usage_error"
    verdict: str = "not_run"
    error: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phases_s: dict[str, float] = field(default_factory=dict)  # where the command's wall time went
    exit_code: int | None = None  # benchmark.py's exit code; set when the record is final
    memory: MemoryUse | None = None  # each step's peak GPU memory and what the memory plan chose (run/memory.py)
    schema: str = BENCHMARK_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["baselines"] = [entry.to_dict() for entry in self.baselines]
        if self.memory is None:
            del payload["memory"]
        else:
            payload["memory"] = self.memory.to_dict()
        return {"exit_code": payload.pop("exit_code"), **payload}

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = BENCHMARK_FILE) -> BenchmarkReport:
        check_schema(payload, BENCHMARK_SCHEMA, what)
        comparison = payload.get("comparison")
        return cls(**field_values(
            cls, payload, schema=BENCHMARK_SCHEMA, solution=dict(payload.get("solution") or {}),
            baselines=[TimedEntry.from_dict(entry) for entry in payload.get("baselines") or []],
            comparison=Comparison.from_dict(comparison) if isinstance(comparison, dict) else None,
            memory=MemoryUse.from_dict(payload["memory"]) if isinstance(payload.get("memory"), dict) else None,
        ))

    @property
    def median_us(self) -> float | None:
        return self.solution.get("median_us")

    @property
    def p20_us(self) -> float | None:
        return self.solution.get("p20_us")

    @property
    def p80_us(self) -> float | None:
        return self.solution.get("p80_us")

    @property
    def measured(self) -> bool:
        """Timed, right after timing, and with a positive median: the only numbers a reader may use."""
        median = self.median_us
        return self.verdict == "measured" and isinstance(median, (int, float)) and median > 0

    @property
    def gpu_name(self) -> str | None:
        return self.gpu.get("name")

    def baseline_medians(self) -> dict[str, float]:
        """Each baseline that was timed: its name -> median (us)."""
        return {entry.name: entry.median_us for entry in self.baselines if entry.median_us and not entry.error}

    def fastest_compile(self) -> tuple[str, float] | None:
        """The fastest torch.compile mode timed: (its baseline's name, median us); None when none was."""
        compiled = {name: median for name, median in self.baseline_medians().items()
                    if name.startswith(COMPILE_BASELINE_PREFIX)}
        return min(compiled.items(), key=lambda item: item[1]) if compiled else None

    def roofline_points(self) -> dict[str, dict[str, Any]]:
        """Roofline points by the ceilings they are against ("measured", "same-size copy", "datasheet")."""
        return dict(self.roofline.get("points") or {})

    def primary_point(self) -> tuple[str | None, dict[str, Any] | None]:
        """The roofline point percent_of_ceiling came from (older records: measured first)."""
        points = self.roofline_points()
        primary = self.roofline.get("primary")
        if primary in points:
            return primary, points[primary]
        for source in OLDER_PRIMARY_SOURCES:
            if points.get(source):
                return source, points[source]
        return None, None

    def failure_reason(self) -> str:
        """Why nothing was timed, or why the time counts for nothing: the error, the floor beaten, the failures."""
        if self.verdict == "invalid":
            return (self.roofline.get("physical_floor") or {}).get("message") or "faster than the physical floor"
        reason = (self.error or {}).get("message") or "; ".join(self.correctness.get("failures") or [])
        if not reason and not all(check.get("passed", True) for check in self.post_timing_check.values()):
            from kernel_opt.measure.timed_outputs import wrong_timed_outputs_text

            return wrong_timed_outputs_text(self.post_timing_check, self.launch_check())
        return reason

    def launch_check(self) -> LaunchCheck | None:
        """The correctness gate's launch check (the kernels its profiled call ran); None in older records."""
        launches = self.correctness.get("launches")
        return LaunchCheck.from_dict(launches) if isinstance(launches, dict) else None

    def ceiling_basis(self) -> dict[str, Any] | None:
        """The ceiling the % of ceiling used (name, values, source); None in records made before it was recorded."""
        return self.roofline.get("basis")


def read_benchmark(folder: Path) -> BenchmarkReport | None:
    """folder/benchmark.json (a version's, or OUT/benchmark.json from SKILL.md's Finish step); None without one."""
    return read_record(folder / BENCHMARK_FILE, BenchmarkReport.from_dict)
