"""The eval's summary computed from its entries (suite/records.py): correct rate, fast_p, the geometric mean, and the
exit code they give."""

from __future__ import annotations

import pytest

from kernel_opt.commands.eval import exit_code_of
from kernel_opt.suite.records import EvalEntry, EvalReport, summarize

# --- the figures, on synthetic entries ----------------------------------------------------------------


def entry(name, verdict="correct", eager=None, compile_=None, **extra):
    return EvalEntry(name=name, problem=f"{name}.py", verdict=verdict, speedup_vs_eager=eager,
                     speedup_vs_compile=compile_, timed=eager is not None, **extra)


def test_fast_p_counts_every_problem_and_needs_more_than_p():
    entries = [entry("a", eager=2.5, compile_=1.2), entry("b", eager=1.5, compile_=0.9),
               entry("c", eager=1.0, compile_=0.5), entry("d", "incorrect"), entry("e", "missing"),
               entry("f", eager=4.0, compile_=3.0, precision_downgrade=True),
               entry("g", eager=1.6, compile_=1.1, library_only=True), entry("h", "solution_error")]
    summary = summarize(entries)
    assert (summary.problems, summary.correct, summary.timed) == (8, 5, 5)
    assert summary.correct_rate == 5 / 8
    # strictly more than p: 1.0x is not fast_1, 1.5x is not fast_1.5 (KernelBench's speed_up > p)
    assert summary.fast_p["eager"] == {"1": 4 / 8, "1.5": 3 / 8, "2": 2 / 8}
    assert summary.fast_p["compile"] == {"1": 3 / 8, "1.5": 1 / 8, "2": 1 / 8}
    assert summary.fast_p_own_kernels["eager"] == {"1": 2 / 8, "1.5": 1 / 8, "2": 1 / 8}  # without f and g
    assert summary.geomean_speedup["eager"] == pytest.approx((2.5 * 1.5 * 1.0 * 4.0 * 1.6) ** (1 / 5))
    assert summary.geomean_count == {"eager": 5, "compile": 5}
    assert (summary.precision_downgrades, summary.library_only) == (1, 1)


def test_without_timings_there_is_no_fast_p():
    summary = summarize([entry("a"), entry("b", "incorrect")])
    assert summary.fast_p == {"eager": None, "compile": None} and summary.geomean_speedup["eager"] is None
    assert summary.correct_rate == 0.5


@pytest.mark.parametrize("verdicts, code", [
    (["correct", "correct"], 0), (["correct", "incorrect"], 1), (["correct", "missing"], 1),
    (["correct", "environment_error"], 4), (["environment_error", "solution_error"], 1), (["internal_error"], 1),
])
def test_the_exit_code_says_whether_every_problem_is_correct(verdicts, code):
    entries = [entry(f"p{index}", verdict) for index, verdict in enumerate(verdicts)]
    report = EvalReport("p", "s", "eval.py", "now", {"type": "cpu"}, {}, entries, summarize(entries))
    assert exit_code_of(report) == code
