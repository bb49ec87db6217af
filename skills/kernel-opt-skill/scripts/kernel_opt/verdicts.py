"""Verdicts the loop acts on: did a new version of a kernel beat the one it replaces?

The experience log records this verdict, so it must not come from one noisy pair of medians:
it needs both a clear margin and a confidence interval that excludes "no change".
"""

from __future__ import annotations

from typing import Literal

Verdict = Literal["success", "neutral", "failure"]

SUCCESS: Verdict = "success"
NEUTRAL: Verdict = "neutral"
FAILURE: Verdict = "failure"

# A change counts as a success only when it is more than 5% faster (issue 3, "Version
# comparison": "success (> 5% faster and the interval excludes 1)"). Smaller gains are within
# what clock and thermal drift between runs can produce on one GPU, and rarely worth the
# complexity a change adds.
SUCCESS_MIN_SPEEDUP = 1.05

# "No change": a speedup interval that lies entirely above this is faster beyond noise,
# entirely below it is slower beyond noise.
NO_CHANGE_SPEEDUP = 1.0


def comparison_verdict(speedup: float, ci_low: float, ci_high: float, correct: bool) -> str:
    """Verdict on a candidate timed against a baseline.

    Args:
        speedup: median(baseline time) / median(candidate time); > 1 means the candidate is faster.
        ci_low, ci_high: the confidence interval of that speedup.
        correct: whether the candidate passed the correctness check.

    Returns:
        "failure" when the candidate is incorrect or slower beyond noise (ci_high < 1);
        "success" when it is correct, more than SUCCESS_MIN_SPEEDUP faster, and faster beyond
        noise (ci_low > 1); "neutral" otherwise.
    """
    if not correct:
        return FAILURE
    if ci_high < NO_CHANGE_SPEEDUP:
        return FAILURE
    if speedup > SUCCESS_MIN_SPEEDUP and ci_low > NO_CHANGE_SPEEDUP:
        return SUCCESS
    return NEUTRAL
