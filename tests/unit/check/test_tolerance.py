"""The reference-error rule (check/tolerance.py) on CPU tensors: honest arithmetic passes, shortcuts fail.

GEMMs here are the cases of issue 14: an honest IEEE-fp32 product at K = 4096 in another
summation order must pass; the same product on TF32- or bf16-rounded inputs must fail unless
ref.py allows TF32; half-precision GEMMs that accumulate in fp32 must pass; one wrong element
must fail. The Triton-interpreter versions of the same kernels are fixtures in
reference/matmul (tests/integration/test_fixture_corpus.py runs them; the last tests here vary ref.py).
"""

import json
import math
import shutil

import pytest
import torch
from conftest import REPO_ROOT

from kernel_opt.check.compare import DEFAULT_TOLERANCES, compare_tensors
from kernel_opt.check.integrity.verdict import summarize_failures
from kernel_opt.check.records import CaseResult, OutputComparison
from kernel_opt.check.tolerance import (
    ATOL_RTOL,
    REFERENCE_ERROR,
    REFERENCE_ERROR_MULTIPLE,
    RELATIVE_FLOORS,
    TF32_REFERENCE_ERROR_MULTIPLE,
    TF32_RELATIVE_FLOOR,
    TolerancePolicy,
    expect,
    judge,
)
from kernel_opt.check.truth import upcast_arguments

MATMUL = REPO_ROOT / "reference" / "matmul"


def matmul_reference(a, b, **_):
    return torch.matmul(a, b)


def gemm_case(m=64, k=4096, dtype=torch.float32, seed=0, policy=None):
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=generator).to(dtype)
    b = torch.randn(k, m, generator=generator).to(dtype)
    values = {"a": a, "b": b, "c": torch.empty(m, m, dtype=dtype)}
    return values, expect(matmul_reference, policy or TolerancePolicy(), {}, values, ["c"])


def blocked_product(a, b, block=64):
    """fp32 products summed block by block along K: another honest summation order."""
    total = torch.zeros(a.shape[0], b.shape[1])
    for start in range(0, a.shape[1], block):
        total += a[:, start:start + block].float() @ b[start:start + block, :].float()
    return total


def round_mantissa(x, dropped_bits):
    """Round float32 values to nearest, keeping 23 - dropped_bits mantissa bits (13: TF32, 16: bf16)."""
    bits = x.contiguous().view(torch.int32)
    bits = (bits + (1 << (dropped_bits - 1))) & ~((1 << dropped_bits) - 1)
    return bits.view(torch.float32)


def test_an_honest_fp32_gemm_in_another_summation_order_passes_at_k4096():
    values, expectation = gemm_case()
    solution = blocked_product(values["a"], values["b"])
    old_rule = compare_tensors("c", solution, expectation.reference["c"], *DEFAULT_TOLERANCES["float32"])
    assert not old_rule.passed  # the fixed 1e-5 rejects it: the bug of issue 14
    comparison, rule = judge("c", solution, expectation, TolerancePolicy())
    assert rule.kind == REFERENCE_ERROR and (rule.multiple, rule.floor) == (REFERENCE_ERROR_MULTIPLE, 1e-5)
    assert comparison.passed and comparison.mismatches == 0
    assert comparison.tolerance_rule == REFERENCE_ERROR
    assert 1e-7 < comparison.solution_error < 1e-6
    assert 1e-7 < comparison.reference_error < 1e-6
    assert comparison.allowed_error == pytest.approx(1e-5, rel=1e-6)  # the floor is the larger bound here


@pytest.mark.parametrize("dropped_bits, low, high", [(13, 2e-4, 4e-4), (16, 1.5e-3, 4e-3)], ids=["tf32", "bf16"])
def test_tf32_or_bf16_rounded_inputs_fail(dropped_bits, low, high):
    values, expectation = gemm_case()
    a, b = (round_mantissa(values[name], dropped_bits) for name in ("a", "b"))
    comparison, _ = judge("c", a @ b, expectation, TolerancePolicy())
    assert not comparison.passed
    assert low < comparison.solution_error < high
    assert comparison.solution_error > 20 * comparison.allowed_error
    assert comparison.mismatches > values["c"].numel() // 2


def test_allow_tf32_raises_the_float32_floor_to_tf32_but_not_to_bf16():
    policy = TolerancePolicy(allow_tf32=True)
    values, expectation = gemm_case(policy=policy)
    tf32, _ = judge("c", round_mantissa(values["a"], 13) @ round_mantissa(values["b"], 13), expectation, policy)
    bf16, rule = judge("c", round_mantissa(values["a"], 16) @ round_mantissa(values["b"], 16), expectation, policy)
    assert rule.floor == TF32_RELATIVE_FLOOR and "allow_tf32" in rule.source
    assert tf32.passed and tf32.allowed_error == pytest.approx(TF32_RELATIVE_FLOOR, rel=1e-6)
    assert not bf16.passed


def tf32_reference(a, b, **_):
    """What a GPU reference computes when ref.py allows TF32: float32 products of TF32-rounded inputs
    (TF32 never applies to the float64 run that makes the truth)."""
    if a.dtype == torch.float64:
        return a @ b
    return round_mantissa(a, 13) @ round_mantissa(b, 13)


def test_with_a_tf32_reference_a_tf32_kernel_passes_and_bf16_inputs_fail_clearly():
    """On a GPU, allow_tf32 makes the reference itself TF32 (e_ref ~3e-4): 8 x e_ref would reach bf16's error."""
    policy = TolerancePolicy(allow_tf32=True)
    values = gemm_case(policy=policy)[0]
    expectation = expect(tf32_reference, policy, {}, values, ["c"])
    a, b = values["a"], values["b"]
    truncated = (a.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32) @ \
        (b.contiguous().view(torch.int32) & ~0x1FFF).view(torch.float32)  # TF32 by truncation: the worse rounding
    tf32, rule = judge("c", truncated, expectation, policy)
    bf16, _ = judge("c", round_mantissa(a, 16) @ round_mantissa(b, 16), expectation, policy)
    assert rule.multiple == TF32_REFERENCE_ERROR_MULTIPLE and rule.floor == TF32_RELATIVE_FLOOR
    assert 2e-4 < tf32.reference_error < 4e-4  # the reference is TF32 itself
    assert tf32.passed, (tf32.solution_error, tf32.allowed_error)
    assert not bf16.passed and bf16.solution_error > 1.3 * bf16.allowed_error  # a clear margin, not a coin flip


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_gemms_that_accumulate_in_fp32_pass(dtype):
    values, expectation = gemm_case(dtype=dtype)
    solution = blocked_product(values["a"], values["b"]).to(dtype)
    comparison, rule = judge("c", solution, expectation, TolerancePolicy())
    assert rule.floor == RELATIVE_FLOORS[str(dtype).removeprefix("torch.")]
    assert comparison.passed
    assert comparison.solution_error == pytest.approx(comparison.reference_error, rel=0.05)  # rounding dominates


def test_an_fp16_gemm_that_accumulates_in_fp16_fails():
    values, expectation = gemm_case(dtype=torch.float16)
    accumulator = torch.zeros(64, 64, dtype=torch.float16)
    for start in range(0, 4096, 16):
        partial = values["a"][:, start:start + 16].float() @ values["b"][start:start + 16, :].float()
        accumulator = (accumulator.float() + partial).half()
    comparison, _ = judge("c", accumulator, expectation, TolerancePolicy())
    assert not comparison.passed and comparison.solution_error > 2e-3


def test_one_wrong_element_fails_even_when_the_normwise_error_is_within_bounds():
    values, expectation = gemm_case()
    solution = expectation.reference["c"].clone()
    solution[3, 5] += 0.02
    comparison, _ = judge("c", solution, expectation, TolerancePolicy())
    assert comparison.solution_error < comparison.allowed_error  # the 2-norm alone would pass it
    assert not comparison.passed and comparison.mismatches == 1
    assert comparison.first_mismatches[0].index == [3, 5]
    truth = float(expectation.truth["c"][3, 5])
    assert comparison.first_mismatches[0].expected == pytest.approx(truth)  # "expected" is the float64 truth
    assert comparison.element_bound < 0.02


@pytest.mark.parametrize("relative_error, passes", [(2.5e-6, True), (4e-5, False)])
def test_elementwise_noise_keeps_the_verdicts_of_the_vector_add_fixtures(relative_error, passes):
    """good/rounding_noise (rtol/4) passes and wrong/tolerance_edge (4 rtol) fails, as under the old rule."""
    generator = torch.Generator().manual_seed(0)
    values = {"x": torch.randn(4097, generator=generator), "y": torch.randn(4097, generator=generator),
              "out": torch.empty(4097)}
    expectation = expect(lambda x, y, **_: x + y, TolerancePolicy(), {}, values, ["out"])
    solution = (values["x"] + values["y"]) * (1 + relative_error)
    comparison, _ = judge("out", solution, expectation, TolerancePolicy())
    assert comparison.passed is passes
    assert comparison.solution_error == pytest.approx(relative_error, rel=0.05)


def test_explicit_tolerances_keep_the_atol_rtol_rule_exactly():
    policy = TolerancePolicy(ref_rtol=1e-3)
    values, expectation = gemm_case(policy=policy)
    assert expectation.truth is None  # no float64 run where it is not needed
    solution = round_mantissa(values["a"], 13) @ round_mantissa(values["b"], 13)
    comparison, rule = judge("c", solution, expectation, policy)
    assert rule.kind == ATOL_RTOL and (rule.atol, rule.rtol) == (1e-5, 1e-3)
    assert rule.source == "atol from dtype default, rtol from ref.py"
    assert comparison == compare_tensors("c", solution, expectation.reference["c"], 1e-5, 1e-3)
    assert "tolerance_rule" not in comparison.to_dict()  # the record reads as it always did


def test_integer_outputs_are_compared_exactly_without_a_float64_run():
    values = {"x": torch.arange(10, dtype=torch.int32), "out": torch.empty(10, dtype=torch.int32)}
    expectation = expect(lambda x, **_: x * 2, TolerancePolicy(), {}, values, ["out"])
    wrong = expectation.reference["out"].clone()
    wrong[4] += 1
    comparison, rule = judge("out", wrong, expectation, TolerancePolicy())
    assert expectation.truth is None and rule.kind == ATOL_RTOL and (rule.atol, rule.rtol) == (0.0, 0.0)
    assert comparison.mismatches == 1 and not comparison.passed


def test_a_reference_that_refuses_float64_falls_back_to_the_dtype_defaults_and_says_why():
    def float32_only(x, **_):
        if x.dtype != torch.float32:
            raise TypeError("float32 only")
        return x * 3

    values = {"x": torch.randn(100), "out": torch.empty(100)}
    expectation = expect(float32_only, TolerancePolicy(), {}, values, ["out"])
    assert expectation.truth is None
    assert expectation.truth_missing == "the reference raised TypeError: float32 only on float64 inputs"
    comparison, rule = judge("out", expectation.reference["out"] * (1 + 4e-5), expectation, TolerancePolicy())
    assert rule.kind == ATOL_RTOL and (rule.atol, rule.rtol) == DEFAULT_TOLERANCES["float32"]
    assert rule.source.startswith("dtype default (no float64 truth: the reference raised TypeError")
    assert not comparison.passed


def test_nonfinite_values_must_match_the_reference_where_it_has_them():
    values = {"x": torch.tensor([1.0, 0.0, -1.0, 2.0]), "out": torch.empty(4)}
    expectation = expect(lambda x, **_: 1.0 / x, TolerancePolicy(), {}, values, ["out"])
    policy = TolerancePolicy()
    same = expectation.reference["out"].clone()
    assert judge("out", same, expectation, policy)[0].passed
    flipped = same.clone()
    flipped[1] = -float("inf")  # the reference has +inf there
    assert judge("out", flipped, expectation, policy)[0].mismatches == 1
    unwritten = same.clone()
    unwritten[3] = float("nan")
    result = judge("out", unwritten, expectation, policy)[0]
    assert not result.passed and (result.nan_unexpected, result.nonfinite_unexpected) == (1, 1)


def test_an_all_zero_truth_allows_only_the_absolute_floor():
    values = {"x": torch.randn(50), "out": torch.empty(50)}
    expectation = expect(lambda x, **_: x - x, TolerancePolicy(), {}, values, ["out"])
    policy = TolerancePolicy()
    exact = judge("out", torch.zeros(50), expectation, policy)[0]
    flushed = judge("out", torch.full((50,), 1e-39), expectation, policy)[0]  # a subnormal: below finfo.tiny
    off = judge("out", torch.full((50,), 1e-30), expectation, policy)[0]
    assert exact.passed and flushed.passed and not off.passed
    assert exact.solution_error is None  # no relative error of an all-zero truth
    assert exact.element_bound == pytest.approx(torch.finfo(torch.float32).tiny)


def test_tiny_outputs_are_judged_relative_to_their_size():
    """Under a fixed atol of 1e-5, outputs of 1e-8 would pass as zeros; the reference-error rule sees them."""
    values = {"x": torch.randn(256, generator=torch.Generator().manual_seed(2)) * 1e-8, "out": torch.empty(256)}
    expectation = expect(lambda x, **_: x * 2, TolerancePolicy(), {}, values, ["out"])
    zeros, _ = judge("out", torch.zeros(256), expectation, TolerancePolicy())
    assert not zeros.passed and not zeros.zeros_would_pass and zeros.solution_error == 1.0


def test_a_reference_with_a_large_error_of_its_own_flags_a_weak_check():
    """(1 + x) - 1 in float32 for tiny x: the reference loses most digits, so zeros would pass."""
    values = {"x": torch.rand(64, generator=torch.Generator().manual_seed(1)) * 1e-7, "out": torch.empty(64)}
    expectation = expect(lambda x, **_: (1 + x) - 1, TolerancePolicy(), {}, values, ["out"])
    comparison, _ = judge("out", torch.zeros(64), expectation, TolerancePolicy())
    assert comparison.reference_error > 0.1
    assert comparison.zeros_would_pass and comparison.passed


def test_upcast_arguments_copies_floats_to_float64_and_leaves_the_rest():
    x, index = torch.ones(3, dtype=torch.float16), torch.arange(3)
    upcast = upcast_arguments({"n": 3}, {"x": x, "index": index, "scale": 2.0})
    assert upcast["x"].dtype == torch.float64 and upcast["index"].dtype == torch.int64
    assert upcast["index"] is not index and upcast["n"] == 3 and upcast["scale"] == 2.0
    upcast["x"].fill_(5)
    assert float(x[0]) == 1.0


def test_a_reference_rule_failure_reads_back_and_explains_itself():
    values, expectation = gemm_case(m=8, k=256)
    solution = round_mantissa(values["a"], 13) @ round_mantissa(values["b"], 13)
    comparison, _ = judge("c", solution, expectation, TolerancePolicy())
    payload = json.loads(json.dumps(comparison.to_dict()))
    assert OutputComparison.from_dict(payload) == comparison
    assert {"solution_error", "reference_error", "allowed_error", "element_bound"} <= set(payload)
    [sentence] = summarize_failures([CaseResult({"K": 256}, 0, False, [comparison], [])])
    assert sentence.startswith(f"output 'c': {comparison.mismatches} of 64 elements off by more than ")
    assert f"normwise error {comparison.solution_error:.3g} against allowed 1e-05" in sentence
    assert f"(the reference's own error is {comparison.reference_error:.3g})" in sentence
    assert math.isclose(comparison.norm_rel_error, comparison.solution_error)


# --- the same GEMMs as Triton kernels under the interpreter, with ref.py varied -------------------


def run_matmul_check(tmp_path, solution: str, ref_suffix: str = "", extra=()):
    from kernel_opt.commands.correctness_check import main

    reference = tmp_path / "ref.py"
    shutil.copy(MATMUL / "ref.py", reference)
    reference.write_text(reference.read_text() + ref_suffix)
    arguments = [str(MATMUL / solution), "--ref", str(reference), "--output-dir", str(tmp_path / "out"),
                 "--device", "cpu", "--seeds", "1", "--M=64", "--N=64", *extra]
    code = main(arguments)
    return code, json.loads((tmp_path / "out" / "correctness.json").read_text())


@pytest.mark.slow
def test_interpreter_tf32_gemm_passes_when_ref_allows_tf32(tmp_path):
    code, report = run_matmul_check(tmp_path, "wrong/matmul_tf32_inputs.py", "\nallow_tf32 = True\n")
    assert code == 0, report["cases"]
    assert report["tolerances"][0]["floor"] == TF32_RELATIVE_FLOOR
    first = report["cases"][0]["outputs"][0]
    assert 2e-4 < first["solution_error"] < 4e-4 < first["allowed_error"] == pytest.approx(TF32_RELATIVE_FLOOR)


@pytest.mark.slow
def test_interpreter_bf16_gemm_fails_even_when_ref_allows_tf32(tmp_path):
    code, report = run_matmul_check(tmp_path, "wrong/matmul_bf16_inputs.py", "\nallow_tf32 = True\n")
    assert code == 1 and not report["passed"]


@pytest.mark.slow
def test_interpreter_tf32_gemm_passes_with_explicit_tolerances(tmp_path):
    code, report = run_matmul_check(tmp_path, "wrong/matmul_tf32_inputs.py", extra=["--atol=0.2", "--rtol=1e-2"])
    assert code == 0, report["cases"]
    assert report["tolerances"][0]["rule"] == "atol/rtol" and report["tolerances"][0]["source"] == "command line"


@pytest.mark.parametrize("kernelbench", [False, True], ids=["default rule", "kernelbench tolerances"])
def test_a_tf32_shortcut_passes_only_at_kernelbench_s_tolerance_under_either_rule(kernelbench):
    """The default rule fails it and names the downgrade; under the KernelBench switch it passes the case, marked
    as passing only there: the record calls it a downgrade only where the rounding probe shows one."""
    policy = TolerancePolicy(kernelbench=kernelbench)
    values, expectation = gemm_case(k=256, policy=policy)
    assert expectation.truth is not None  # the float64 truth is measured under the KernelBench switch too
    a, b = values["a"], values["b"]
    tf32, rule = judge("c", round_mantissa(a, 13) @ round_mantissa(b, 13), expectation, policy)
    assert tf32.passed is kernelbench and tf32.precision_downgrade is not kernelbench
    assert tf32.kernelbench_only is kernelbench and tf32.kernelbench_would_pass is (True if kernelbench else None)
    assert rule.kind == (ATOL_RTOL if kernelbench else REFERENCE_ERROR)
    assert tf32.solution_error > 20 * tf32.allowed_error  # the reference-error rule's numbers, either way
    honest, _ = judge("c", blocked_product(a, b), expectation, policy)
    assert honest.passed and not honest.precision_downgrade and not honest.kernelbench_only
    wrong, _ = judge("c", a @ b + 1.0, expectation, policy)  # off by far more than 1e-2: wrong, not imprecise
    assert not wrong.passed and not wrong.precision_downgrade and not wrong.kernelbench_only
    flag = "kernelbench_only" if kernelbench else "precision_downgrade"
    assert flag in tf32.to_dict() and flag not in honest.to_dict()


def test_under_the_kernelbench_switch_ref_py_s_own_tolerances_are_the_strict_rule():
    policy = TolerancePolicy(ref_atol=1e-4, ref_rtol=1e-4, kernelbench=True)
    values, expectation = gemm_case(k=256, policy=policy)
    tf32, rule = judge("c", round_mantissa(values["a"], 13) @ round_mantissa(values["b"], 13), expectation, policy)
    assert (rule.atol, rule.rtol) == (1e-2, 1e-2) and "--kernelbench-tolerances" in rule.source
    assert tf32.passed and tf32.kernelbench_only  # within 1e-2, not within ref.py's 1e-4
    assert policy.strict() == TolerancePolicy(ref_atol=1e-4, ref_rtol=1e-4)
