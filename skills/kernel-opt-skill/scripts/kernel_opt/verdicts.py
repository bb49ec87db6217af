"""When a new version counts as a success, a neutral change or a failure.

The benchmark's version comparison and the experience log both call `comparison_verdict`,
so a change the benchmark calls a success is a success in the log, with the same numbers.
"""

from __future__ import annotations

import math
from typing import Literal

Verdict = Literal["success", "neutral", "failure"]
VERDICTS: tuple[str, ...] = ("success", "neutral", "failure")

# Run-to-run drift of a GPU kernel's median time on one machine (clocks, temperature, L2 and
# TLB state, the other tenant's traffic) is commonly a few percent, so a change must beat the
# old version by more than 5% before it counts as a win, and lose by more than 5% (or be
# incorrect) before it counts as a loss. Between the two it is neutral: not worth building on.
SUCCESS_MIN_SPEEDUP = 1.05  # new version > 5% faster: speedup = old_time / new_time
FAILURE_MAX_SPEEDUP = 1 / SUCCESS_MIN_SPEEDUP  # new version > 5% slower (speedup < 0.952)


def comparison_verdict(
    speedup: float,
    ci_low: float | None,
    ci_high: float | None,
    correct: bool,
) -> Verdict:
    """The verdict of one measured comparison of a new version against an old one.

    success: correct, more than 5% faster, and the confidence interval of the speedup lies
    wholly above 1. failure: incorrect, or more than 5% slower with the interval wholly below
    1. Anything else is neutral, including a large point estimate whose interval still
    contains 1 (the measurement cannot tell the versions apart).

    Args:
        speedup: old_time / new_time (> 1 means the new version is faster).
        ci_low, ci_high: bounds of the speedup's confidence interval. None means no interval
            was measured (a number typed by hand); the point estimate alone then decides.
        correct: whether the new version passed its correctness check.
    """
    if not correct:
        return "failure"
    if isinstance(speedup, bool) or not isinstance(speedup, (int, float)) or not math.isfinite(speedup) or speedup <= 0:
        raise ValueError(f"speedup must be a positive finite number, got {speedup!r}")
    if speedup > SUCCESS_MIN_SPEEDUP and (ci_low is None or ci_low > 1.0):
        return "success"
    if speedup < FAILURE_MAX_SPEEDUP and (ci_high is None or ci_high < 1.0):
        return "failure"
    return "neutral"
