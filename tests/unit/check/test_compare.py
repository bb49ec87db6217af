"""Comparison rules on CPU tensors: what passes, what fails, and the evidence reported."""

import math

import pytest
import torch

from kernel_opt.check.compare import (
    DEFAULT_TOLERANCES,
    compare_tensors,
    inputs_modified,
    poison_,
    resolve_tolerance,
    run_reference,
)
from kernel_opt.check.integrity.verdict import summarize_failures
from kernel_opt.check.records import CaseResult
from kernel_opt.core.errors import UsageError


def expected_values(n=1000, dtype=torch.float32):
    return torch.randn(n, generator=torch.Generator().manual_seed(0)).to(dtype)


def test_identical_outputs_pass_with_zero_error():
    expected = expected_values()
    result = compare_tensors("out", expected.clone(), expected, 1e-5, 1e-5)
    assert result.passed and result.mismatches == 0
    assert result.max_abs_error == 0.0 and result.norm_rel_error == 0.0
    assert result.first_mismatches == []


def test_one_unwritten_element_fails_and_is_located():
    expected = expected_values()
    actual = expected.clone()
    actual[997] = float("nan")  # what an unwritten element looks like after poisoning
    result = compare_tensors("out", actual, expected, 1e-5, 1e-5)
    assert not result.passed
    assert (result.mismatches, result.nan_unexpected, result.nonfinite_unexpected) == (1, 1, 1)
    assert result.first_mismatches[0].index == [997]
    assert result.first_mismatches[0].actual == "nan"
    assert result.first_mismatches[0].expected == pytest.approx(float(expected[997]))


def test_inf_where_reference_is_finite_fails():
    expected = expected_values()
    actual = expected.clone()
    actual[3] = float("inf")
    result = compare_tensors("out", actual, expected, 1.0, 1.0)  # even with huge tolerances
    assert not result.passed and result.nonfinite_unexpected == 1 and result.nan_unexpected == 0


def test_nan_where_reference_is_nan_passes():
    expected = expected_values()
    expected[5] = float("nan")
    actual = expected.clone()
    assert compare_tensors("out", actual, expected, 1e-5, 1e-5).passed


@pytest.mark.parametrize("relative_error, passes", [(2.5e-6, True), (4e-6, True), (4e-5, False)])
def test_tolerance_edge(relative_error, passes):
    expected = expected_values().to(torch.float64).abs() + 0.5
    actual = expected * (1 + relative_error)
    result = compare_tensors("out", actual, expected, 1e-5, 1e-5)
    assert result.passed is passes
    assert result.max_rel_error == pytest.approx(relative_error, rel=1e-6)


def test_error_metrics_are_computed_over_finite_pairs():
    expected = torch.tensor([1.0, 2.0, 4.0, 0.0])
    actual = torch.tensor([1.0, 2.5, 4.0, 0.001])
    result = compare_tensors("out", actual, expected, 1e-5, 1e-5)
    assert result.max_abs_error == pytest.approx(0.5)
    assert result.max_rel_error == pytest.approx(0.25)  # |expected| > atol only: 0.0 is excluded
    assert result.norm_rel_error == pytest.approx(math.sqrt(0.25 + 1e-6) / math.sqrt(21.0))
    assert result.mismatches == 2
    assert [m.index for m in result.first_mismatches] == [[1], [3]]


def test_multidimensional_indices_are_reported():
    expected = torch.zeros(4, 5) + 1
    actual = expected.clone()
    actual[2, 3] = 7
    result = compare_tensors("out", actual, expected, 1e-5, 1e-5)
    assert result.first_mismatches[0].index == [2, 3]
    assert result.first_mismatches[0].actual == 7.0


def test_integer_outputs_compare_exactly():
    expected = torch.arange(10, dtype=torch.int32)
    actual = expected.clone()
    actual[4] += 1
    result = compare_tensors("idx", actual, expected, 0.0, 0.0)
    assert not result.passed and result.mismatches == 1 and result.first_mismatches[0].index == [4]


def test_zeros_would_pass_flags_a_weak_check():
    tiny = torch.full((100,), 1e-7)
    assert compare_tensors("out", tiny.clone(), tiny, 1e-5, 1e-5).zeros_would_pass
    assert not compare_tensors("out", expected_values(), expected_values(), 1e-5, 1e-5).zeros_would_pass


def test_shape_mismatch_is_a_usage_error():
    with pytest.raises(UsageError):
        compare_tensors("out", torch.zeros(3), torch.zeros(4), 1e-5, 1e-5)


def test_poison_fills_floats_with_nan_and_ints_with_max():
    floats, ints = torch.zeros(4), torch.zeros(4, dtype=torch.int32)
    poison_(floats)
    poison_(ints)
    assert bool(torch.isnan(floats).all())
    assert bool((ints == torch.iinfo(torch.int32).max).all())


def test_inputs_modified_detects_bit_changes_and_tolerates_nan():
    x = torch.tensor([1.0, float("nan"), 3.0])
    before = {"x": x.clone(), "y": torch.ones(3)}
    assert inputs_modified(before, {"x": x, "y": torch.ones(3)}) == []
    x[2] = 3.0000002
    assert inputs_modified(before, {"x": x, "y": torch.ones(3)}) == ["x"]


def test_tolerance_precedence_cli_over_ref_over_default():
    assert resolve_tolerance(torch.float32, None, None, None, None) == (*DEFAULT_TOLERANCES["float32"], "dtype default")
    assert resolve_tolerance(torch.bfloat16, None, None, None, None)[:2] == DEFAULT_TOLERANCES["bfloat16"]
    assert resolve_tolerance(torch.float32, 1e-3, 1e-3, None, None) == (1e-3, 1e-3, "ref.py")
    assert resolve_tolerance(torch.float32, 1e-3, 1e-3, 1e-2, None) == (
        1e-2, 1e-3, "atol from command line, rtol from ref.py"
    )
    assert resolve_tolerance(torch.int32, None, None, 1.0, 1.0) == (0.0, 0.0, "exact (integer/bool output)")


def test_fp32_default_rejects_tf32_sized_errors():
    """A TF32 matmul's ~5e-4 relative error must not pass the fp32 default."""
    expected = torch.ones(64)
    atol, rtol, _ = resolve_tolerance(torch.float32, None, None, None, None)
    assert not compare_tensors("out", expected * (1 + 5e-4), expected, atol, rtol).passed


def test_run_reference_accepts_in_place_and_returned_results():
    out = torch.zeros(3)
    run_reference(lambda x, out, **_: out.copy_(x * 2), {"x": torch.ones(3), "out": out}, ["out"])
    assert out.tolist() == [2.0, 2.0, 2.0]
    out = torch.zeros(3)
    run_reference(lambda x, **_: x + 1, {"x": torch.ones(3), "out": out}, ["out"])
    assert out.tolist() == [2.0, 2.0, 2.0]
    a, b = torch.zeros(2), torch.zeros(2)
    run_reference(lambda **_: {"b": torch.ones(2)}, {"a": a, "b": b}, ["a", "b"])
    assert b.tolist() == [1.0, 1.0] and a.tolist() == [0.0, 0.0]
    grid = torch.zeros(2, 2)
    run_reference(lambda **_: torch.arange(4.0), {"grid": grid}, ["grid"])  # same numel: reshaped
    assert grid.tolist() == [[0.0, 1.0], [2.0, 3.0]]


@pytest.mark.parametrize(
    "returned, fragment",
    [
        ((torch.ones(3), torch.ones(3)), "2 values for 1 outputs"),
        ("text", "returned str"),
        (torch.ones(5), "shape [5]"),
    ],
)
def test_run_reference_rejects_bad_returns(returned, fragment):
    with pytest.raises(UsageError) as caught:
        run_reference(lambda **_: returned, {"out": torch.zeros(3)}, ["out"])
    assert fragment in caught.value.message


def test_failure_summary_merges_seeds_per_shape():
    expected = torch.ones(8)
    actual = expected.clone()
    actual[7] = float("nan")
    failing = compare_tensors("out", actual, expected, 1e-5, 1e-5)
    cases = [CaseResult({"n": 8}, seed, False, [failing], []) for seed in (0, 1)]
    cases.append(CaseResult({"n": 8}, 2, False, [], ["x"]))
    sentences = summarize_failures(cases)
    assert sentences == [
        "output 'out': 1 of 8 elements outside atol=1e-05, rtol=1e-05; "
        "1 still NaN (never written, or NaN computed) (n=8; seeds 0, 1)",
        "input 'x': was modified by the solution (n=8; seed 2)",
    ]
