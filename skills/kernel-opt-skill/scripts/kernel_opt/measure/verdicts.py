"""When a new version counts as a success, a neutral change or a failure.

The benchmark's version comparison and the experience log both call `comparison_verdict`,
so a change the benchmark calls a success is a success in the log, with the same numbers.
It must not come from one noisy pair of medians: a success needs both a clear margin and a
confidence interval that excludes "no change".
"""

from __future__ import annotations

import math
from typing import Literal

Verdict = Literal["success", "neutral", "failure"]
VERDICTS: tuple[str, ...] = ("success", "neutral", "failure")

# Comparing two versions: success is "> 5% faster and the interval excludes 1"; failure is
# "slower or incorrect". Run-to-run drift of a kernel's median on one GPU (clocks,
# temperature, L2/TLB state) is commonly a few percent, hence the 5% margin for a win.
SUCCESS_MIN_SPEEDUP = 1.05  # speedup = old_time / new_time
# With no measured interval (a speedup typed by hand), "slower" needs the same 5% margin the
# other way, since nothing says the difference is beyond noise.
FAILURE_MAX_SPEEDUP = 1 / SUCCESS_MIN_SPEEDUP
NO_CHANGE_SPEEDUP = 1.0
# A measured slowdown counts as a failure only beyond this margin. On an H100 (2026-11-22) the
# interleaved comparison of a kernel with itself read 0.992x [0.990, 0.993]: the two copies
# write to different output buffers, and that alone moved the median by ~1% with a tight
# interval. The same comparison repeated in another process moved by ~2% (1.085x vs 1.065x).
# Below 2% a "slower" verdict would be the method's bias, not the change.
FAILURE_MIN_SLOWDOWN = 0.98


def comparison_verdict(speedup: float, ci_low: float | None, ci_high: float | None, correct: bool) -> Verdict:
    """The verdict of one measured comparison of a new version against an old one.

    success: correct, more than 5% faster, and the speedup's confidence interval lies wholly
    above 1. failure: incorrect, or slower beyond noise: more than 2% slower with the interval
    wholly below 1. Anything else is neutral, including a large point estimate whose interval
    still contains 1 and a slowdown of 2% or less (the comparison's own bias, see above).

    Args:
        speedup: old_time / new_time (> 1 means the new version is faster).
        ci_low, ci_high: bounds of the speedup's confidence interval. None means no interval
            was measured (a number typed by hand): the point estimate decides, with a 5%
            margin both ways.
        correct: whether the new version passed its correctness check.
    """
    if not correct:
        return "failure"
    if isinstance(speedup, bool) or not isinstance(speedup, (int, float)) or not math.isfinite(speedup) or speedup <= 0:
        raise ValueError(f"speedup must be a positive finite number, got {speedup!r}")
    if speedup > SUCCESS_MIN_SPEEDUP and (ci_low is None or ci_low > NO_CHANGE_SPEEDUP):
        return "success"
    if ci_high is None:
        return "failure" if speedup < FAILURE_MAX_SPEEDUP else "neutral"
    if ci_high < NO_CHANGE_SPEEDUP and speedup < FAILURE_MIN_SLOWDOWN:
        return "failure"
    return "neutral"


# Which of two versions the loop keeps is a narrower question than whether the change was a
# success worth recording: a speedup past the comparison's own bias (FAILURE_MIN_SLOWDOWN's 2%,
# mirrored) with its interval wholly above 1 is a real gain, though under the 5% of a success.
# H100, 2026-11-25: a smooth-L1 loss in one kernel instead of three read 1.040x [1.039, 1.041]
# against its v0 (neutral), and kept v0 as the run's best.
FASTER_MIN_SPEEDUP = 1 / FAILURE_MIN_SLOWDOWN


def clearly_faster(speedup: float | None, ci_low: float | None) -> bool:
    """The new version is faster beyond the interleaved comparison's bias: the loop keeps it as the best."""
    return (isinstance(speedup, (int, float)) and isinstance(ci_low, (int, float))
            and speedup > FASTER_MIN_SPEEDUP and ci_low > NO_CHANGE_SPEEDUP)
