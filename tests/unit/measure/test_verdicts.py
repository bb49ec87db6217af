"""The success / neutral / failure thresholds shared by the benchmark and the experience log."""

import pytest

from kernel_opt.measure.verdicts import FAILURE_MAX_SPEEDUP, SUCCESS_MIN_SPEEDUP, comparison_verdict


def test_thresholds_are_five_percent():
    assert SUCCESS_MIN_SPEEDUP == 1.05
    assert FAILURE_MAX_SPEEDUP == pytest.approx(1 / 1.05)


@pytest.mark.parametrize(
    "speedup, ci_low, ci_high, correct, expected",
    [
        (1.30, 1.25, 1.35, True, "success"),
        (1.06, 1.01, 1.11, True, "success"),
        (1.05, 1.01, 1.09, True, "neutral"),  # exactly 5% is not "more than 5%"
        (1.30, 0.98, 1.60, True, "neutral"),  # large point estimate, interval still holds 1
        (1.03, 1.02, 1.04, True, "neutral"),  # real but too small to build on
        (1.00, 0.99, 1.01, True, "neutral"),
        (0.97, 0.96, 0.98, True, "failure"),  # slower beyond noise, even by less than 5%
        (0.992, 0.990, 0.993, True, "neutral"),  # a kernel against itself on the H100: the method's bias
        (0.979, 0.975, 0.983, True, "failure"),
        (0.90, 0.88, 0.92, True, "failure"),
        (0.90, 0.80, 1.02, True, "neutral"),  # slower point estimate, interval holds 1
        (1.50, 1.45, 1.55, False, "failure"),  # incorrect is a failure however fast
        (2.00, None, None, True, "success"),  # typed by hand: the point estimate decides
        (0.50, None, None, True, "failure"),
        (1.04, None, None, True, "neutral"),
        (0.97, None, None, True, "neutral"),  # no interval: a 3% loss may be noise
    ],
)
def test_comparison_verdict(speedup, ci_low, ci_high, correct, expected):
    assert comparison_verdict(speedup, ci_low, ci_high, correct) == expected


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), True])
def test_rejects_impossible_speedups(bad):
    with pytest.raises(ValueError, match="speedup"):
        comparison_verdict(bad, None, None, True)
