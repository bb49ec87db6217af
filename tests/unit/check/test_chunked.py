"""Comparisons in chunks (check/chunked.py) give what the whole-tensor formulas give, on small CPU tensors.

CHUNK_ELEMENTS is made 7 here, so every output spans several chunks and chunk edges fall inside rows.
"""

import math

import pytest
import torch

from kernel_opt.check import chunked
from kernel_opt.check.chunked import SampledTruth
from kernel_opt.check.compare import compare_tensors, inputs_modified
from kernel_opt.check.tolerance import REFERENCE_ERROR, TolerancePolicy, compare_with_truth

NUMBERS = ("max_abs_error", "max_rel_error", "norm_rel_error", "solution_error", "reference_error", "allowed_error",
           "element_bound")


def outputs(seed=0, shape=(5, 4, 3)):
    """A reference output, its float64 truth, and a solution with noise, one wrong element, NaN and Inf placed."""
    generator = torch.Generator().manual_seed(seed)
    truth = torch.randn(shape, generator=generator, dtype=torch.float64)
    reference = truth.to(torch.float32)
    actual = (truth + 1e-7 * torch.randn(shape, generator=generator, dtype=torch.float64)).to(torch.float32)
    actual[1, 2, 0] += 0.5
    actual[3, 0, 2] = float("nan")
    reference[4, 3, 1] = actual[4, 3, 1] = float("inf")
    actual[2, 1, 1] = float("-inf")
    return actual, reference, truth


def assert_same(chunked_result, whole_result):
    left, right = chunked_result.to_dict(), whole_result.to_dict()
    for name in NUMBERS:
        if isinstance(left.get(name), float):
            assert left.pop(name) == pytest.approx(right.pop(name), rel=1e-12, abs=1e-300), name
    assert left == right


def whole_and_chunked(monkeypatch, compare):
    whole = compare()
    monkeypatch.setattr(chunked, "CHUNK_ELEMENTS", 7)
    return whole, compare()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_atol_rtol_in_chunks_equals_the_whole_comparison(monkeypatch, seed):
    actual, reference, _ = outputs(seed)
    whole, in_chunks = whole_and_chunked(monkeypatch, lambda: compare_tensors("out", actual, reference, 1e-5, 1e-5))
    assert whole.mismatches == 3 and whole.nan_unexpected == 1 and whole.nonfinite_unexpected == 2
    assert_same(in_chunks, whole)
    assert [m.index for m in in_chunks.first_mismatches] == [[1, 2, 0], [2, 1, 1], [3, 0, 2]]
    assert in_chunks.first_mismatches[1].actual == "-inf" and in_chunks.first_mismatches[2].actual == "nan"


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_reference_error_rule_in_chunks_equals_the_whole_comparison(monkeypatch, seed):
    actual, reference, truth = outputs(seed)
    rule = TolerancePolicy().rule(torch.float32)
    whole, in_chunks = whole_and_chunked(
        monkeypatch, lambda: compare_with_truth("out", actual, reference, truth, rule))
    assert whole.tolerance_rule == REFERENCE_ERROR and not whole.passed and whole.mismatches == 3
    assert_same(in_chunks, whole)
    assert in_chunks.first_mismatches[0].index == [1, 2, 0]
    assert in_chunks.first_mismatches[0].expected == truth[1, 2, 0].item()  # the float64 truth is what is shown


def test_an_honest_output_passes_in_chunks_as_whole(monkeypatch):
    generator = torch.Generator().manual_seed(3)
    truth = torch.randn(64, 9, generator=generator, dtype=torch.float64)
    reference, actual = truth.to(torch.float32), (truth * (1 + 3e-8)).to(torch.float32)
    rule = TolerancePolicy().rule(torch.float32)
    whole, in_chunks = whole_and_chunked(monkeypatch, lambda: compare_with_truth("o", actual, reference, truth, rule))
    assert whole.passed and in_chunks.passed
    assert_same(in_chunks, whole)


def test_integer_outputs_compare_exactly_in_chunks(monkeypatch):
    expected = torch.arange(30, dtype=torch.int32).reshape(6, 5)
    actual = expected.clone()
    actual[5, 4] = -3
    whole, in_chunks = whole_and_chunked(monkeypatch, lambda: compare_tensors("i", actual, expected, 0, 0))
    assert_same(in_chunks, whole)
    assert in_chunks.mismatches == 1 and in_chunks.max_abs_error == 32.0
    assert in_chunks.first_mismatches[0].index == [5, 4]


def test_a_change_in_the_last_chunk_of_an_input_is_found_and_nan_still_equals_nan(monkeypatch):
    monkeypatch.setattr(chunked, "CHUNK_ELEMENTS", 7)
    original = torch.randn(50)
    original[3] = float("nan")
    same, changed = original.clone(), original.clone()
    changed[49] += 1
    assert inputs_modified({"x": original}, {"x": same}) == []
    assert inputs_modified({"x": original}, {"x": changed}) == ["x"]


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_an_fp8_input_is_compared_byte_for_byte_nan_included(monkeypatch, dtype):
    """float8 has no isnan or nan_to_num (an FP8 GEMM's inputs stopped the input check with NotImplementedError)."""
    monkeypatch.setattr(chunked, "CHUNK_ELEMENTS", 7)
    original = (torch.randn(50) * 4).to(dtype)
    original[3] = float("nan")
    changed = original.clone()
    changed[49] = (changed[49].float() * 2 + 1).to(dtype)
    assert inputs_modified({"a": original}, {"a": original.clone()}) == []
    assert inputs_modified({"a": original}, {"a": changed}) == ["a"]


def test_a_sample_of_rows_judges_its_rows_by_the_truth_and_the_others_against_the_reference(monkeypatch):
    """Rows 0-1, 5-6 and 10-11 of 12 have a truth; row 3 is wrong by far more than twice the element bound."""
    monkeypatch.setattr(chunked, "CHUNK_ELEMENTS", 5)
    generator = torch.Generator().manual_seed(4)
    truth = torch.randn(12, 8, generator=generator, dtype=torch.float64)
    reference = truth.to(torch.float32)
    pieces = [(start, start + 2, truth[start:start + 2].clone()) for start in (0, 5, 10)]
    sample = SampledTruth((12, 8), pieces)
    assert sample.text() == "rows 0-1, 5-6 and 10-11 of 12" and sample.rows_covered == 6
    assert [(s.start, s.stop, s.truth is None) for s in sample.segments()] == [
        (0, 16, False), (16, 40, True), (40, 56, False), (56, 80, True), (80, 96, False)]
    rule = TolerancePolicy().rule(torch.float32)
    honest = compare_with_truth("o", truth.to(torch.float32), reference, sample, rule)
    assert honest.passed and honest.mismatches == 0
    wrong = truth.to(torch.float32)
    wrong[3, 2] += 1e-3  # outside the sample
    judged = compare_with_truth("o", wrong, reference, sample, rule)
    assert not judged.passed and judged.mismatches == 1 and judged.first_mismatches[0].index == [3, 2]
    assert judged.first_mismatches[0].expected == reference[3, 2].item()  # no truth there: the reference's value
    assert math.isclose(judged.solution_error, honest.solution_error)  # the norms come from the sampled rows alone
