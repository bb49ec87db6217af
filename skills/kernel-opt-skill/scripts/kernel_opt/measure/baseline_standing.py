"""Where a solution stands against a PyTorch baseline of the same benchmark run: faster, level, or slower.

Two medians a fraction of a percent apart say nothing: 127.58 against 127.62 µs is a tie. The
benchmark keeps every timed sample of the solution and of each baseline, so the speedup gets a
bootstrap interval (measure/statistics.py): paired where the baseline was timed in alternation with
the solution (eager: measure/baseline_timing.py), against the solution's samples in those pairs;
unpaired where it was timed after the solution (torch.compile), and the verdict is the version comparison's own rule
(measure/verdicts.py): slower only beyond noise (more than 2% slower with the whole interval
below 1), faster only by more than 5% with the interval above 1, level otherwise. A record
without samples (older ones) is judged on its medians alone, with the 5% margin both ways.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kernel_opt.measure.records import BenchmarkReport, TimingRecord
from kernel_opt.measure.verdicts import comparison_verdict

Standing = Literal["faster", "level", "slower"]
_STANDINGS: dict[str, Standing] = {"success": "faster", "neutral": "level", "failure": "slower"}
# Bootstrap resamples: 1000 meet Efron & Tibshirani's floor for percentile intervals; the verdict needs only
# whether the interval clears 1, and the samples hold hundreds of timings each.
STANDING_RESAMPLES = 1000


@dataclass(frozen=True)
class BaselineStanding:
    """The solution against one baseline: speedup = baseline median / solution median (> 1: the solution is faster)."""

    baseline: str
    speedup: float
    ci_low: float | None  # None: no samples recorded, the medians alone decided
    ci_high: float | None
    standing: Standing
    samples: tuple[int, int] | None = None  # (the solution's, the baseline's) sample counts behind the interval

    @property
    def behind(self) -> bool:
        """The baseline is faster beyond the noise: the only case a report may say the solution stops short."""
        return self.standing == "slower"

    @property
    def resolved(self) -> bool:
        """The interval excludes 1: the difference is real, however small (level may still hold under the 2%)."""
        return self.ci_low is not None and self.ci_high is not None and not self.ci_low <= 1.0 <= self.ci_high

    def interval_text(self) -> str:
        """'0.997x [0.994, 1.001]', or '0.997x (medians only)' where no samples were recorded."""
        if self.ci_low is None or self.ci_high is None:
            return f"{self.speedup:.3f}x (medians only)"
        return f"{self.speedup:.3f}x [{self.ci_low:.3f}, {self.ci_high:.3f}]"


def _samples(timing: TimingRecord | None) -> list[float]:
    samples = timing.samples_us if isinstance(timing, TimingRecord) else None
    return [value for value in samples if isinstance(value, (int, float))] if isinstance(samples, list) else []


def baseline_standing(record: BenchmarkReport | None, baseline: str | None = None) -> BaselineStanding | None:
    """The solution of `record` against `baseline` (default: its fastest baseline); None where either is not timed."""
    if record is None or not record.measured:
        return None
    name = baseline or record.best_baseline
    entry = next((item for item in record.baselines if item.name == name and item.median_us and not item.error), None)
    if entry is None:
        return None
    # A baseline timed in pairs with the solution is read against the solution's samples in those pairs, paired.
    speedup = entry.median_us / entry.solution_us_beside(record.median_us)
    theirs, pairs = _samples(entry.timing), list(entry.paired_solution_samples_us or [])
    paired = bool(entry.paired_solution_us) and len(pairs) == len(theirs)
    ours = pairs if paired else [] if entry.paired_solution_us else _samples(record.solution.timing)
    if not ours or not theirs:
        return BaselineStanding(entry.name, speedup, None, None, _STANDINGS[comparison_verdict(speedup, None, None,
                                                                                                True)])
    from kernel_opt.measure.statistics import speedup_interval  # numpy, only where samples are there to resample

    interval = speedup_interval(theirs, ours, resamples=STANDING_RESAMPLES, paired=paired)
    verdict = comparison_verdict(speedup, interval.ci_low, interval.ci_high, True)
    return BaselineStanding(entry.name, speedup, interval.ci_low, interval.ci_high, _STANDINGS[verdict],
                            (len(ours), len(theirs)))
