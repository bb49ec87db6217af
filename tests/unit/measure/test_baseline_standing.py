"""Where a solution stands against a PyTorch baseline of the same run: a difference inside the noise is a tie."""

import pytest
from run_fixtures import spread_samples as samples

from kernel_opt.measure.baseline_standing import baseline_standing
from kernel_opt.measure.records import BenchmarkReport, TimedEntry, TimedSolution, TimingRecord


def record(ours_us: float, theirs_us: float, with_samples: bool = True, name="torch.compile (default)"):
    timing = TimingRecord(samples_us=samples(ours_us)) if with_samples else None
    theirs = TimingRecord(samples_us=samples(theirs_us)) if with_samples else None
    baseline = TimedEntry(name, median_us=theirs_us, timing=theirs)
    solution = TimedSolution(median_us=ours_us, timing=timing)
    return BenchmarkReport(solution=solution, reference="ref.py", backend="triton", command="benchmark.py",
                           verdict="measured", baselines=[baseline], best_baseline=name,
                           speedup_vs_best_baseline=theirs_us / ours_us)


def test_the_issues_four_hundredths_of_a_microsecond_are_a_tie():
    standing = baseline_standing(record(127.62, 127.58))
    assert standing.standing == "level" and not standing.behind
    assert standing.speedup == pytest.approx(127.58 / 127.62)
    assert standing.ci_low < 1.0 < standing.ci_high
    assert standing.samples == (400, 400)
    assert standing.interval_text() == f"1.000x [{standing.ci_low:.3f}, {standing.ci_high:.3f}]"


def test_a_gap_inside_the_comparisons_two_percent_is_level_even_with_a_tight_interval():
    standing = baseline_standing(record(101.5, 100.0))  # 1.5% slower: interval below 1, under the 2% bias
    assert standing.ci_high < 1.0 and standing.standing == "level"


def test_a_gap_beyond_the_noise_stops_short():
    standing = baseline_standing(record(105.0, 100.0))
    assert standing.standing == "slower" and standing.behind
    assert standing.ci_high < 1.0 and standing.speedup == pytest.approx(100.0 / 105.0)
    assert standing.interval_text() == f"{100 / 105:.3f}x [{standing.ci_low:.3f}, {standing.ci_high:.3f}]"


def test_faster_beyond_five_percent_is_faster():
    assert baseline_standing(record(90.0, 100.0)).standing == "faster"


@pytest.mark.parametrize("theirs_us, expected", [(96.0, "level"), (94.0, "slower"), (100.0, "level")])
def test_a_record_without_samples_is_judged_on_its_medians_with_a_five_percent_margin(theirs_us, expected):
    standing = baseline_standing(record(100.0, theirs_us, with_samples=False))
    assert (standing.standing, standing.ci_low, standing.samples) == (expected, None, None)
    assert standing.interval_text() == f"{theirs_us / 100:.3f}x (medians only)"


def test_nothing_to_stand_against():
    assert baseline_standing(None) is None
    assert baseline_standing(record(100.0, 90.0), "eager") is None  # not timed
    unmeasured = record(100.0, 90.0)
    unmeasured.verdict = "incorrect"
    assert baseline_standing(unmeasured) is None


def test_an_eager_timed_in_pairs_stands_against_the_solution_in_those_pairs():
    """The solution's own timing read 100 µs early on; in eager's pairs, later and hotter, both read 105 µs: a tie,
    not the 5% the two medians of different moments would say."""
    paired = record(100.0, 105.0, name="eager")
    eager = paired.baselines[0]
    eager.paired_solution_us, eager.paired_solution_samples_us = 105.0, list(eager.timing.samples_us)
    standing = baseline_standing(paired)
    assert standing.speedup == pytest.approx(1.0) and standing.standing == "level"
    assert standing.ci_low == pytest.approx(1.0) and standing.ci_high == pytest.approx(1.0)  # pair by pair, equal
    assert standing.samples == (400, 400)
    eager.paired_solution_samples_us = eager.paired_solution_samples_us[:10]  # not pair by pair: medians only
    assert (baseline_standing(paired).speedup, baseline_standing(paired).ci_low) == (pytest.approx(1.0), None)
