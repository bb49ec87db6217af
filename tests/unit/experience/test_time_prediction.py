"""The time Expected predicts, read from its numbers, and set against what the benchmark measured."""

import pytest

from kernel_opt.experience.time_prediction import (
    judge_time_prediction,
    prediction_verdict,
    read_time_prediction,
)


@pytest.mark.parametrize("expected, said, base", [
    # written by agents in trials, and in the demos' runs
    ("tensor instructions appear (HGMMA in SASS, tensor pipe utilisation > 30%), FMA pipe utilisation falls by more "
     "than half, and time drops about 2x against v0 (the 3 products cost a third of the TF32 rate).", "about 2x", "v0"),
    ("LDGSTS drop by about a third, and time drops at least 1.5x against v1 (27577 us to under ~18000 us).",
     "at least 1.5x", "v1"),
    ("time drops ~1.5-2x against v1 (58.9 ms to ~30-40 ms)", "about 1.5-2x", "v1"),
    ("the GEMM kernel's time drops ~2x to 3x against v0", None, None),  # one kernel's time, not the call's
    ("the median drops about 1.39x against v0, from about 513 us to about 370 us (330-430 us), about 0.81x eager SDPA",
     "about 1.39x", "v0"),
    ("from 2313 us to about 1150 us (800-1600 us)", "a median of 800-1600 µs", None),
    ("time drops from 4908 us to about 3100-3300 us", "a median of 3100-3300 µs", None),
    ("its duration falls from ~303 us to under 100 us", "a median under 100 µs", None),
    ("median from 135.2 us to about 127 us (3.17 TB/s effective)", "about 1.065x", None),
    ("time per call drops 3-6% from 2983 us", "about 1.031-1.064x", None),
    ("the kernel is 20% faster", None, None),
    ("the median time halves as the tile doubles", "about 2x", None),
    ("the GEMM kernel's time halves", None, None),
    ("the whole forward is 20% faster", "about 1.2x", None),
    ("median about 125 us: about 2.0x v0's 248.3 us", "about 2x", "v0"),
    # a factor against a baseline, a tile shape and other metrics' factors say nothing of the time against the base
    ("about 0.95x eager SDPA", None, None),
    ("64x64x16 tiles stay; shared load wavefronts fall ~4x", None, None),
    ("rowdot_kernel's memory SOL rises to over 70% and its duration falls from ~17 us to ~10 us", None, None),
    ("DRAM throughput rises by ~3-5% of peak", None, None),
])
def test_the_time_prediction_is_read_from_expected_s_numbers(expected, said, base):
    prediction = read_time_prediction(expected)
    assert (prediction.said() if prediction else None) == said
    assert (prediction.base if prediction else None) == base


def test_a_quote_keeps_the_clause_and_closes_its_asides():
    prediction = read_time_prediction("FMA falls, and time drops about 2x against v0 (the products cost a third, "
                                      "still well above FMA).")
    assert prediction.quote == "time drops about 2x against v0"
    prediction = read_time_prediction("time drops at least 1.5x against v1 (27577 us to under ~18000 us), LDG falls")
    assert prediction.quote == "time drops at least 1.5x against v1 (27577 us to under ~18000 us)"


@pytest.mark.parametrize("expected, median_us, speedup, held", [
    ("time drops about 2x", 27577.0, 1.135, "short of it"),  # the L2_1 trial's v1
    ("time drops about 2x", 1000.0, 1.58, "short of it"),  # two thirds of the gain on a log scale is 1.587x
    ("time drops about 2x", 1000.0, 1.6, "held"),
    ("time drops about 2x", 1000.0, 2.9, "past it"),  # past 2x ** 1.5 = 2.83x
    ("time drops about 1.1x", 1000.0, 1.06, "held"),  # 6% against 10%: inside what such a model can say
    ("time drops about 1.15x", 1000.0, 1.075, "short of it"),
    ("time drops about 1.05x", 1000.0, 1.09, "held"),
    ("time drops about 1.05x", 1000.0, 1.19, "past it"),
    ("time drops ~1.5-2x", 1000.0, 1.35, "held"),
    ("time drops ~1.5-2x", 1000.0, 2.9, "past it"),
    ("time drops at least 1.5x", 1000.0, 1.48, "held"),  # inside the comparison's 2% bias
    ("time drops at least 1.5x", 1000.0, 1.46, "short of it"),
    ("time drops at least 1.5x", 1000.0, 5.0, "held"),  # "at least" has no far end
    ("from 2313 us to about 1150 us (800-1600 us)", 1550.0, 1.49, "held"),
    ("from 2313 us to about 1150 us (800-1600 us)", 1700.0, 1.36, "short of it"),
    ("from 2313 us to about 1150 us (800-1600 us)", 700.0, 3.3, "past it"),
    ("to under 100 us", 99.0, 3.0, "held"),
    ("to under 100 us", 101.0, 3.0, "short of it"),
])
def test_a_prediction_holds_falls_short_or_goes_past(expected, median_us, speedup, held):
    outcome = judge_time_prediction(read_time_prediction(expected), median_us, speedup, "v1")
    assert outcome.held == held


def test_a_factor_against_another_version_than_the_comparison_s_is_not_judged():
    prediction = read_time_prediction("time drops about 2x against v0")
    assert judge_time_prediction(prediction, 1000.0, 1.1, "v1") is None
    assert judge_time_prediction(prediction, 1000.0, 1.1, "v0").held == "short of it"


def test_the_verdict_says_what_was_measured_what_was_said_and_what_to_do():
    said = prediction_verdict("FMA falls, and time drops about 2x against v0 (the products cost a third).",
                              27577.0, 1.135, "v0")
    assert said == ('fell short: 1.135x against v0 where Expected said about 2x ("time drops about 2x against v0 (the '
                    'products cost a third)"); '
                    "faster beyond noise, but not by what the model said: find out why (the profile's metrics "
                    "against Expected's) before building on it")
    assert prediction_verdict("from 513 us to about 370 us (330-430 us)", 410.0, 1.25, "v0") == (
        'held: median 410 µs, inside the 330-430 µs Expected gave ("from 513 us to about 370 us '
        '(330-430 us)")')
    assert prediction_verdict("DRAM throughput rises from 41% to 70%", 410.0, 1.25, "v0") is None
