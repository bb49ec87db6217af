"""Percentiles, bootstrap speedup intervals and the comparison verdict, on synthetic samples."""

from __future__ import annotations

import numpy as np
import pytest

from kernel_opt.core.errors import UsageError
from kernel_opt.measure import statistics, verdicts
from kernel_opt.measure.timing.samples import TimingSamples


def _noisy(median_us: float, count: int, noise: float, seed: int) -> list[float]:
    """Timing-like samples: lognormal noise of relative width `noise` around `median_us`."""
    rng = np.random.default_rng(seed)
    return list(median_us * np.exp(rng.normal(0.0, noise, size=count)))


# --- percentiles ---------------------------------------------------------------------------


def test_percentiles_interpolate_linearly_between_ranks():
    samples = [10.0, 20.0, 30.0, 40.0, 50.0]
    # rank = (n - 1) * q / 100: p20 -> rank 0.8 -> 10 + 0.8 * 10
    assert statistics.percentile(samples, 20) == pytest.approx(18.0)
    assert statistics.percentile(samples, 80) == pytest.approx(42.0)
    assert statistics.median(samples) == 30.0
    assert statistics.percentile(samples, 0) == 10.0
    assert statistics.percentile(samples, 100) == 50.0


def test_percentiles_ignore_input_order_and_match_numpy():
    rng = np.random.default_rng(7)
    samples = list(rng.exponential(5.0, size=101))
    for q in (0, 5, 20, 50, 80, 95, 100):
        assert statistics.percentile(samples, q) == pytest.approx(float(np.percentile(samples, q)))
    assert statistics.median([4.0, 1.0, 3.0, 2.0]) == pytest.approx(2.5)


def test_relative_spread_is_p80_minus_p20_over_median():
    samples = [10.0, 20.0, 30.0, 40.0, 50.0]
    assert statistics.relative_spread(samples) == pytest.approx((42.0 - 18.0) / 30.0)
    assert statistics.relative_spread([7.0] * 9) == 0.0


def test_summary_of_known_samples():
    summary = statistics.summarize([3.0, 1.0, 2.0, 4.0, 5.0])
    assert (summary.count, summary.median_us, summary.min_us, summary.max_us, summary.mean_us) == (
        5, 3.0, 1.0, 5.0, 3.0
    )
    assert summary.p20_us == pytest.approx(1.8)
    assert summary.p80_us == pytest.approx(4.2)


def test_timing_samples_report_the_same_figures():
    timed = TimingSamples(samples_us=[10.0, 20.0, 30.0, 40.0, 50.0], warmup=3, reps=5, flush_l2=True, method="events")
    assert (timed.median_us, timed.p20_us, timed.p80_us, timed.min_us, timed.mean_us) == pytest.approx(
        (30.0, 18.0, 42.0, 10.0, 30.0)
    )
    payload = timed.to_dict()
    assert payload["ok"] is True and payload["method"] == "events" and payload["median_us"] == 30.0


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [1.0, float("inf")], [-1.0, 2.0]])
def test_garbage_samples_are_rejected(bad):
    with pytest.raises(UsageError):
        statistics.summarize(bad)


def test_percentile_out_of_range_is_rejected():
    with pytest.raises(UsageError):
        statistics.percentile([1.0, 2.0], 101)


# --- bootstrap speedup interval -------------------------------------------------------------


def test_speedup_is_ratio_of_medians():
    interval = statistics.speedup_interval([10.0, 11.0, 12.0], [5.0, 5.5, 6.0], resamples=200)
    assert interval.speedup == pytest.approx(2.0)
    assert interval.baseline_median_us == 11.0 and interval.candidate_median_us == 5.5
    assert interval.paired is True  # equal counts default to paired


def test_interval_is_deterministic_given_the_seed():
    baseline = _noisy(100.0, 60, 0.03, seed=1)
    candidate = _noisy(95.0, 60, 0.03, seed=2)
    first = statistics.speedup_interval(baseline, candidate, seed=123)
    second = statistics.speedup_interval(baseline, candidate, seed=123)
    other = statistics.speedup_interval(baseline, candidate, seed=124)
    assert (first.ci_low, first.ci_high) == (second.ci_low, second.ci_high)
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    assert first.ci_low <= first.speedup <= first.ci_high


def test_ten_percent_faster_candidate_is_a_success():
    baseline = _noisy(100.0, 50, 0.01, seed=10)
    candidate = _noisy(100.0 / 1.10, 50, 0.01, seed=11)
    interval = statistics.speedup_interval(baseline, candidate)
    assert interval.speedup == pytest.approx(1.10, rel=0.01)
    assert interval.ci_low > 1.05 and interval.excludes_one
    assert verdicts.comparison_verdict(interval.speedup, interval.ci_low, interval.ci_high, True) == "success"


def test_equal_distributions_are_neutral():
    baseline = _noisy(100.0, 50, 0.02, seed=20)
    candidate = _noisy(100.0, 50, 0.02, seed=21)
    interval = statistics.speedup_interval(baseline, candidate)
    assert interval.ci_low < 1.0 < interval.ci_high
    assert not interval.excludes_one
    assert verdicts.comparison_verdict(interval.speedup, interval.ci_low, interval.ci_high, True) == "neutral"


def test_slower_candidate_is_a_failure():
    baseline = _noisy(100.0, 50, 0.01, seed=30)
    candidate = _noisy(110.0, 50, 0.01, seed=31)
    interval = statistics.speedup_interval(baseline, candidate)
    assert interval.ci_high < 1.0
    assert verdicts.comparison_verdict(interval.speedup, interval.ci_low, interval.ci_high, True) == "failure"


def test_incorrect_candidate_is_a_failure_however_fast():
    baseline = _noisy(100.0, 50, 0.01, seed=40)
    candidate = _noisy(50.0, 50, 0.01, seed=41)
    interval = statistics.speedup_interval(baseline, candidate)
    assert interval.ci_low > 1.5
    assert verdicts.comparison_verdict(interval.speedup, interval.ci_low, interval.ci_high, False) == "failure"


def test_three_percent_gain_beyond_noise_is_neutral_not_success():
    # Faster beyond noise (the interval excludes 1) but not by the 5% a success needs.
    baseline = _noisy(100.0, 200, 0.005, seed=50)
    candidate = _noisy(100.0 / 1.03, 200, 0.005, seed=51)
    interval = statistics.speedup_interval(baseline, candidate)
    assert interval.ci_low > 1.0
    assert verdicts.comparison_verdict(interval.speedup, interval.ci_low, interval.ci_high, True) == "neutral"


def test_interval_excludes_one_only_when_it_should():
    # Same distribution: a 95% interval may exclude 1 in about 1 run of 20 by chance.
    false_alarms = 0
    for seed in range(20):
        interval = statistics.speedup_interval(
            _noisy(100.0, 40, 0.03, seed=1000 + seed), _noisy(100.0, 40, 0.03, seed=2000 + seed), resamples=500
        )
        false_alarms += interval.excludes_one
    assert false_alarms <= 3
    # A real 8% difference with the same noise: the interval excludes 1 every time.
    for seed in range(20):
        interval = statistics.speedup_interval(
            _noisy(108.0, 40, 0.03, seed=3000 + seed), _noisy(100.0, 40, 0.03, seed=4000 + seed), resamples=500
        )
        assert interval.ci_low > 1.0


def test_pairing_cancels_drift_shared_by_each_pair():
    # Both kernels slow down together over the run (a clock ramp): a 5% real speedup under a
    # 30% common drift. Resampling pairs keeps each pair's drift together; resampling each
    # set alone turns the drift into noise and widens the interval.
    drift = np.linspace(1.0, 1.3, 60)
    rng = np.random.default_rng(5)
    baseline = list(105.0 * drift * np.exp(rng.normal(0, 0.005, 60)))
    candidate = list(100.0 * drift * np.exp(rng.normal(0, 0.005, 60)))
    paired = statistics.speedup_interval(baseline, candidate, paired=True)
    unpaired = statistics.speedup_interval(baseline, candidate, paired=False)
    assert paired.speedup == unpaired.speedup
    assert paired.ci_high - paired.ci_low < 0.5 * (unpaired.ci_high - unpaired.ci_low)
    assert paired.ci_low > 1.0


def test_paired_needs_equal_counts():
    with pytest.raises(UsageError):
        statistics.speedup_interval([1.0, 2.0, 3.0], [1.0, 2.0], paired=True)
    unpaired = statistics.speedup_interval([2.0, 2.0, 2.0], [1.0, 1.0], resamples=100)
    assert unpaired.paired is False and unpaired.speedup == 2.0


@pytest.mark.parametrize("kwargs", [{"confidence": 1.0}, {"confidence": 0.0}, {"resamples": 10}])
def test_bad_bootstrap_arguments_are_rejected(kwargs):
    with pytest.raises(UsageError):
        statistics.speedup_interval([1.0, 2.0], [1.0, 2.0], **kwargs)


# --- verdict thresholds -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("speedup", "low", "high", "correct", "expected"),
    [
        (1.10, 1.08, 1.12, True, "success"),
        (1.05, 1.02, 1.08, True, "neutral"),  # exactly 5% is not "more than 5%"
        (1.06, 0.99, 1.12, True, "neutral"),  # interval includes 1
        (1.00, 0.97, 1.03, True, "neutral"),
        (0.97, 0.96, 0.985, True, "failure"),  # slower beyond noise and beyond the 2% margin
        (0.98, 0.97, 0.995, True, "neutral"),  # 2% slower: within the comparison's own bias
        (0.98, 0.95, 1.00, True, "neutral"),  # interval touches 1: not proven slower
        (1.50, 1.40, 1.60, False, "failure"),
    ],
)
def test_comparison_verdict_table(speedup, low, high, correct, expected):
    assert verdicts.comparison_verdict(speedup, low, high, correct) == expected


def test_thresholds_are_the_named_constants():
    assert verdicts.SUCCESS_MIN_SPEEDUP == 1.05
    assert statistics.SUCCESS_MIN_SPEEDUP is verdicts.SUCCESS_MIN_SPEEDUP
    assert statistics.comparison_verdict is verdicts.comparison_verdict
