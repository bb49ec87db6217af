"""Summary statistics of timing samples, and the speedup of one kernel over another with a
confidence interval.

Pure Python and numpy, no GPU: everything here is tested on synthetic samples.

Why these statistics:
- The median, not the mean: GPU timings have a long right tail (a preempted rep, a clock
  dip, a late host launch) and the median ignores it, as `triton.testing.do_bench` does.
- p20 and p80 as the spread, as the Triton benchmarks report; (p80 - p20) / median is the
  relative spread that says whether two medians can be told apart at all.
- A bootstrap interval on the speedup, so a verdict is never decided by one noisy pair of
  medians. Interleaved samples (A B A B ...) are paired: sample i of A and sample i of B
  ran back to back and share the GPU's state (clocks, temperature, neighbours), so the
  bootstrap resamples pair indices and keeps each pair together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from kernel_opt.core.errors import UsageError
from kernel_opt.measure.verdicts import SUCCESS_MIN_SPEEDUP, comparison_verdict  # noqa: F401 - re-exported

# Percentile method: linear interpolation between closest ranks (Hyndman & Fan type 7).
# For sorted samples x[0..n-1], the q-th percentile sits at rank h = (n - 1) * q / 100 and is
# x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]). It is numpy's default
# ("linear") and torch.quantile's, so our p20/p80 equal what triton.testing.do_bench reports
# for the same samples.
PERCENTILE_METHOD = "linear"

DEFAULT_CONFIDENCE = 0.95
# 2000 resamples put the Monte Carlo error of a 95% percentile interval's endpoints well under
# the timing noise we see (Efron & Tibshirani, "An Introduction to the Bootstrap", ch. 19,
# recommend >= 1000 for percentile intervals); it costs milliseconds for a few hundred samples.
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0


def _as_samples(samples: Sequence[float], name: str = "samples") -> np.ndarray:
    """Validate timing samples: a non-empty sequence of finite, non-negative numbers."""
    array = np.asarray(list(samples), dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise UsageError(f"{name} must be a non-empty list of numbers (got {array.size} values)")
    if not np.all(np.isfinite(array)):
        raise UsageError(f"{name} contain NaN or infinity; a timer returned garbage")
    if np.any(array < 0):
        raise UsageError(f"{name} contain negative times; a timer returned garbage")
    return array


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0 <= q <= 100) by linear interpolation between closest ranks.

    Written out rather than delegated so the method is explicit in one place (see
    PERCENTILE_METHOD); it agrees with `numpy.percentile(samples, q)`.
    """
    if not 0.0 <= q <= 100.0:
        raise UsageError(f"percentile q must lie in [0, 100], got {q}")
    ordered = np.sort(_as_samples(samples))
    rank = (ordered.size - 1) * q / 100.0
    lower = math.floor(rank)
    upper = min(lower + 1, ordered.size - 1)
    fraction = rank - lower
    return float(ordered[lower] + fraction * (ordered[upper] - ordered[lower]))


def median(samples: Sequence[float]) -> float:
    return percentile(samples, 50.0)


def relative_spread(samples: Sequence[float]) -> float:
    """(p80 - p20) / median: the width of the middle 60% of samples, relative to the median.

    Two versions whose medians differ by less than this are hard to tell apart without many
    interleaved samples; it is also the run-to-run stability figure a report should show.
    """
    middle = median(samples)
    if middle == 0:
        return math.inf
    return (percentile(samples, 80.0) - percentile(samples, 20.0)) / middle


@dataclass(frozen=True)
class SampleSummary:
    """The figures a report prints for one set of timing samples (all in microseconds)."""

    count: int
    median_us: float
    p20_us: float
    p80_us: float
    min_us: float
    max_us: float
    mean_us: float
    relative_spread: float

    def to_dict(self) -> dict:
        return asdict(self)


def summarize(samples_us: Sequence[float]) -> SampleSummary:
    array = _as_samples(samples_us, "timing samples")
    return SampleSummary(
        count=int(array.size),
        median_us=median(array),
        p20_us=percentile(array, 20.0),
        p80_us=percentile(array, 80.0),
        min_us=float(array.min()),
        max_us=float(array.max()),
        mean_us=float(array.mean()),
        relative_spread=relative_spread(array),
    )


@dataclass(frozen=True)
class SpeedupInterval:
    """speedup = median(baseline) / median(candidate); > 1 means the candidate is faster.

    ci_low/ci_high bound the speedup at `confidence` by a percentile bootstrap with
    `resamples` resamples drawn from a generator seeded with `seed` (same inputs and seed,
    same interval). `paired` says whether pairs (baseline[i], candidate[i]) were resampled
    together, as interleaved samples must be.
    """

    speedup: float
    ci_low: float
    ci_high: float
    confidence: float
    resamples: int
    seed: int
    paired: bool
    baseline_median_us: float
    candidate_median_us: float
    baseline_count: int
    candidate_count: int

    @property
    def excludes_one(self) -> bool:
        """True when the whole interval lies on one side of 1 (the difference is not noise)."""
        return self.ci_low > 1.0 or self.ci_high < 1.0

    def to_dict(self) -> dict:
        payload = asdict(self)
        payload["excludes_one"] = self.excludes_one
        return payload


def _linear_quantiles(values: np.ndarray, fractions: Sequence[float]) -> list[float]:
    return [float(v) for v in np.quantile(values, list(fractions), method=PERCENTILE_METHOD)]


def speedup_interval(
    samples_baseline: Sequence[float],
    samples_candidate: Sequence[float],
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    paired: bool | None = None,
) -> SpeedupInterval:
    """Speedup of the candidate over the baseline, with a bootstrap confidence interval.

    Args:
        samples_baseline, samples_candidate: per-call times (any unit, the same for both).
        confidence: two-sided coverage of the interval, e.g. 0.95.
        resamples: bootstrap resamples; more gives steadier interval endpoints.
        seed: seeds numpy's PCG64 generator, so the interval is reproducible.
        paired: resample pair indices (sample i of both sets together). Default: paired when
            both sets have the same length, which is what `timing.time_interleaved` returns.
            Pairing keeps drift shared by a pair (clocks, temperature) out of the interval;
            resampling each set on its own would count that drift as noise twice.

    Returns:
        A SpeedupInterval. The point estimate is the ratio of the full-sample medians; the
        interval is the percentile bootstrap of that ratio.
    """
    baseline = _as_samples(samples_baseline, "baseline samples")
    candidate = _as_samples(samples_candidate, "candidate samples")
    if not 0.0 < confidence < 1.0:
        raise UsageError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    if resamples < 100:
        raise UsageError(f"use at least 100 bootstrap resamples (got {resamples})")
    if paired is None:
        paired = baseline.size == candidate.size
    if paired and baseline.size != candidate.size:
        raise UsageError(
            f"paired samples need equal counts (baseline {baseline.size}, candidate {candidate.size})",
            hint="interleaved timing returns one baseline and one candidate sample per pair",
        )
    baseline_median = float(np.median(baseline))
    candidate_median = float(np.median(candidate))
    if candidate_median <= 0 or baseline_median <= 0:
        raise UsageError("median time is zero; the timer resolution is too coarse for this kernel")

    generator = np.random.Generator(np.random.PCG64(seed))
    if paired:
        indices = generator.integers(0, baseline.size, size=(resamples, baseline.size))
        baseline_medians = np.median(baseline[indices], axis=1)
        candidate_medians = np.median(candidate[indices], axis=1)
    else:
        baseline_medians = np.median(
            baseline[generator.integers(0, baseline.size, size=(resamples, baseline.size))], axis=1
        )
        candidate_medians = np.median(
            candidate[generator.integers(0, candidate.size, size=(resamples, candidate.size))], axis=1
        )
    with np.errstate(divide="ignore"):
        ratios = baseline_medians / candidate_medians
    tail = (1.0 - confidence) / 2.0
    low, high = _linear_quantiles(ratios, [tail, 1.0 - tail])
    return SpeedupInterval(
        speedup=baseline_median / candidate_median,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        paired=bool(paired),
        baseline_median_us=baseline_median,
        candidate_median_us=candidate_median,
        baseline_count=int(baseline.size),
        candidate_count=int(candidate.size),
    )
