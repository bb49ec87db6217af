"""A record's numbers read from a version folder, so they are copied and never retyped.

`add --from DIR/vN` reads what the other tools wrote there, through their records
(check/records.py, measure/records.py, profile/records.py), and checks each field it copies:

- vN/correctness.json   verdict (passed), backend, dims, device {name, compute_capability}
- vN/benchmark.json     gpu {name, compute_capability}, solution.median_us, comparison
                        {against_dir, speedup, ci_low, ci_high, verdict} or null
- vN/ncu_summary.json   bottleneck, top_stall, metrics {memory_sol_pct, sm_sol_pct,
                        achieved_occupancy_pct}; the same file in comparison.against_dir
                        gives the "before" side
- vN/hypothesis.txt     Hypothesis / Rationale / Expected

A missing file or field means "not measured": the record field stays empty and the reason
is listed, never filled with a guess.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.records import CORRECTNESS_FILE, DeviceInfo, read_correctness
from kernel_opt.core.errors import UsageError
from kernel_opt.experience.hypothesis import parse_hypothesis
from kernel_opt.experience.labels import Chip, normalize_backend, normalize_bottleneck, normalize_chip
from kernel_opt.measure.records import BENCHMARK_FILE, BenchmarkReport, read_benchmark
from kernel_opt.measure.verdicts import VERDICTS, comparison_verdict
from kernel_opt.profile.records import NCU_SUMMARY_FILE, read_profile
from kernel_opt.run.environment import GpuInfo

_VERSION_NAME = re.compile(r"^v(\d+)$")


@dataclass
class Comparison:
    against_dir: str | None
    speedup: float
    ci_low: float | None
    ci_high: float | None
    verdict: str | None  # as benchmark.json recorded it


@dataclass
class VersionEvidence:
    """What one version folder says about the step that produced it."""

    version_dir: Path
    iteration: int | None = None
    backend: str | None = None
    dims: dict[str, Any] | None = None
    correct: bool | None = None
    chip: Chip | None = None
    median_us: float | None = None
    baseline_dir: Path | None = None
    baseline_median_us: float | None = None
    comparison: Comparison | None = None
    before: dict[str, Any] = field(default_factory=dict)  # ncu_summary of the baseline
    after: dict[str, Any] = field(default_factory=dict)  # ncu_summary of this version
    hypothesis: str | None = None
    expected: str | None = None
    not_measured: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    invalid: bool = False  # benchmark.json's verdict is "invalid": faster than the physical floor

    @property
    def measured_outcome(self) -> str | None:
        """failure when incorrect or invalid, else the comparison's verdict; None when nothing was compared."""
        if self.correct is False or self.invalid:
            return "failure"
        if self.comparison is None:
            return None
        computed = comparison_verdict(
            self.comparison.speedup, self.comparison.ci_low, self.comparison.ci_high, correct=self.correct is not False
        )
        return self.comparison.verdict or computed

    def record_fields(self) -> dict[str, Any]:
        """The ExperienceRecord fields this evidence fills (None where not measured)."""
        chip = self.chip or Chip(None, None)
        comparison = self.comparison
        return {
            "backend": self.backend,
            "dims": self.dims,
            "iteration": self.iteration,
            "chip": chip.arch,
            "chip_name": chip.name,
            "correct": self.correct,
            "baseline": (self.baseline_dir.name if self.baseline_dir
                         else (comparison.against_dir if comparison else None)),
            "speedup": comparison.speedup if comparison else None,
            "speedup_ci_low": comparison.ci_low if comparison else None,
            "speedup_ci_high": comparison.ci_high if comparison else None,
            "latency_before_us": self.baseline_median_us,
            "latency_after_us": self.median_us,
            "bottleneck": self.before.get("bottleneck"),
            "bottleneck_after": self.after.get("bottleneck"),
            "stall": self.before.get("top_stall"),
            "memory_sol_before_pct": self.before.get("memory_sol_pct"),
            "memory_sol_after_pct": self.after.get("memory_sol_pct"),
            "sm_sol_before_pct": self.before.get("sm_sol_pct"),
            "sm_sol_after_pct": self.after.get("sm_sol_pct"),
            "occupancy_before_pct": self.before.get("achieved_occupancy_pct"),
            "occupancy_after_pct": self.after.get("achieved_occupancy_pct"),
            "hypothesis": self.hypothesis,
            "expected": self.expected,
            "version_dir": str(self.version_dir),
        }


def _checked(value: Any, dotted: str, kinds: tuple[type, ...], path: Path) -> Any:
    """A field of a record, type-checked; None when absent or null. `dotted` names it for the message."""
    if value is None:
        return None
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        raise UsageError(f"{path}: field {dotted!r} must be {' or '.join(k.__name__ for k in kinds)}, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and float in kinds:
        if not math.isfinite(value):
            raise UsageError(f"{path}: field {dotted!r} must be a finite number, got {value!r}")
        return float(value)
    return value


def _chip(device: DeviceInfo | GpuInfo | None, key: str, path: Path) -> Chip | None:
    """The chip of a record's device section (its name and compute capability); None without one."""
    if not isinstance(device, (DeviceInfo, GpuInfo)):  # null, or not an object
        return None
    name = _checked(device.name, f"{key}.name", (str,), path)
    capability = _checked(device.compute_capability, f"{key}.compute_capability", (str, float, int), path)
    if name is None and capability is None:
        return None
    if isinstance(capability, (int, float)) and not isinstance(capability, bool):
        capability = f"{float(capability):.1f}"
    return normalize_chip(name, capability, field=f"{path.name}: {key}")


def _profile(folder: Path) -> dict[str, Any]:
    """The profile fields a record copies, from folder/ncu_summary.json; {} without one."""
    summary = read_profile(folder)
    if summary is None:
        return {}
    path = folder / NCU_SUMMARY_FILE
    values = {
        "bottleneck": normalize_bottleneck(_checked(summary.bottleneck, "bottleneck", (str,), path),
                                           field=f"{path}: bottleneck"),
        "top_stall": _checked(summary.top_stall, "top_stall", (str,), path),
    }
    for name in ("memory_sol_pct", "sm_sol_pct", "achieved_occupancy_pct", "duration_us"):
        values[name] = _checked(summary.metric(name), f"metrics.{name}", (int, float), path)
    return values


def _resolve_baseline(against_dir: str, version_dir: Path) -> Path | None:
    """comparison.against_dir as written, else beside this version (DIR/vK next to DIR/vN)."""
    candidate = Path(against_dir).expanduser()
    if candidate.is_dir():
        return candidate
    sibling = version_dir.parent / candidate.name
    return sibling if sibling.is_dir() else None


def read_version(version_dir: Path) -> VersionEvidence:
    """Read a version folder's recorded JSON; see the module docstring for the fields used."""
    version_dir = Path(version_dir)
    if not version_dir.is_dir():
        raise UsageError(f"--from {version_dir}: no such folder",
                         hint="point --from at a version folder such as out/v3")
    evidence = VersionEvidence(version_dir=version_dir)
    match = _VERSION_NAME.match(version_dir.name)
    evidence.iteration = int(match.group(1)) if match else None
    _read_correctness(evidence, version_dir)
    benchmark_path = version_dir / BENCHMARK_FILE
    _read_benchmark(evidence, version_dir)
    evidence.after = _profile(version_dir)
    if not evidence.after:
        evidence.not_measured.append(f"metrics after: {version_dir / NCU_SUMMARY_FILE} not found")
    if evidence.comparison and evidence.comparison.against_dir:
        evidence.baseline_dir = _resolve_baseline(evidence.comparison.against_dir, version_dir)
    if evidence.baseline_dir is None:
        evidence.not_measured.append("metrics before: no baseline folder (comparison.against_dir) to read them from")
    else:
        evidence.before = _profile(evidence.baseline_dir)
        if not evidence.before:
            evidence.not_measured.append(f"metrics before: {evidence.baseline_dir / NCU_SUMMARY_FILE} not found")
        baseline = read_benchmark(evidence.baseline_dir)
        evidence.baseline_median_us = _checked(baseline.median_us if baseline else None, "solution.median_us",
                                               (int, float), evidence.baseline_dir / BENCHMARK_FILE)
    _read_hypothesis(evidence, version_dir)
    _cross_check_verdict(evidence, benchmark_path)
    return evidence


def _read_correctness(evidence: VersionEvidence, version_dir: Path) -> None:
    path = version_dir / CORRECTNESS_FILE
    correctness = read_correctness(version_dir)
    if correctness is None:
        evidence.not_measured.append(f"correctness: {path} not found")
        return
    evidence.correct = None if correctness.verdict is None else correctness.passed
    evidence.backend = _guide_backend(normalize_backend(_checked(correctness.backend, "backend", (str,), path),
                                                        field=f"{path}: backend"), correctness.solution, version_dir)
    evidence.dims = _checked(correctness.dims, "dims", (dict,), path)
    evidence.chip = _chip(correctness.device, "device", path)


def _guide_backend(backend: str | None, solution: str | None, version_dir: Path) -> str | None:
    """A ModelNew's record is filed under the kernels it defines (Triton's or CUDA's), as evaluate queries them."""
    from kernel_opt.profile.advice import guide_backend
    from kernel_opt.solution import registry

    if backend is None or backend not in registry.names() or not solution:
        return backend
    return guide_backend(backend, version_dir / Path(solution).name)


def _read_benchmark(evidence: VersionEvidence, version_dir: Path) -> None:
    path = version_dir / BENCHMARK_FILE
    benchmark = read_benchmark(version_dir)
    if benchmark is None:
        evidence.not_measured.append(f"speedup and time: {path} not found")
        return
    evidence.chip = _chip(benchmark.gpu, "gpu", path) or evidence.chip
    if benchmark.verdict == "invalid":
        evidence.invalid = True
        evidence.warnings.append(f"{path}: the time is invalid (faster than the physical floor): the step is a "
                                 "failure and its time and speedup count for nothing")
        evidence.not_measured.append(f"time: {path} is invalid")
        evidence.comparison = _comparison(benchmark, path)
        return
    evidence.median_us = _checked(benchmark.median_us, "solution.median_us", (int, float), path)
    evidence.comparison = _comparison(benchmark, path)
    if evidence.comparison is None:
        evidence.not_measured.append(f"speedup: {path} has no comparison (benchmark with --against vK)")


def _read_hypothesis(evidence: VersionEvidence, version_dir: Path) -> None:
    path = version_dir / "hypothesis.txt"
    if not path.is_file():
        evidence.not_measured.append(f"hypothesis: {path} not found")
        return
    fields_found, _ = parse_hypothesis(path.read_text(encoding="utf-8", errors="replace"))
    evidence.hypothesis = fields_found.get("hypothesis") or None
    evidence.expected = fields_found.get("expected") or None
    if evidence.hypothesis is None:
        evidence.warnings.append(f"{path} has no 'Hypothesis:' field; run hypothesis_check.py {version_dir}")


def _comparison(benchmark: BenchmarkReport, path: Path) -> Comparison | None:
    recorded = benchmark.comparison
    if recorded is None:
        return None
    speedup = _checked(recorded.speedup, "comparison.speedup", (int, float), path)
    if speedup is None or speedup <= 0:
        raise UsageError(f"{path}: field 'comparison.speedup' must be a positive number, got {speedup!r}")
    verdict = _checked(recorded.verdict, "comparison.verdict", (str,), path)
    if verdict is not None and verdict not in VERDICTS:
        raise UsageError(f"{path}: field 'comparison.verdict' must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    return Comparison(
        against_dir=_checked(recorded.against_dir, "comparison.against_dir", (str,), path),
        speedup=speedup,
        ci_low=_checked(recorded.ci_low, "comparison.ci_low", (int, float), path),
        ci_high=_checked(recorded.ci_high, "comparison.ci_high", (int, float), path),
        verdict=verdict,
    )


def _cross_check_verdict(evidence: VersionEvidence, path: Path) -> None:
    comparison = evidence.comparison
    if comparison is None or comparison.verdict is None or evidence.invalid:
        return
    computed = comparison_verdict(comparison.speedup, comparison.ci_low, comparison.ci_high,
                                  correct=evidence.correct is not False)
    if computed != comparison.verdict:
        evidence.warnings.append(
            f"{path}: recorded verdict {comparison.verdict!r} differs from {computed!r} computed from speedup "
            f"{comparison.speedup:.3f} [{comparison.ci_low}, {comparison.ci_high}]; the recorded verdict is kept"
        )
