"""Tolerances that follow the reference's own rounding: the rule, its numbers, and the comparison.

Fixed atol/rtol are wrong for reductions. Summation order alone moves a float32 dot product of
length 4096 by more than 1e-5 (an IEEE-fp32 Triton GEMM failed 2,089 of 65,536 elements at
1e-5 on an H100), while a tolerance loose enough for that lets a TF32 or bf16
shortcut through elsewhere. So when neither ref.py nor the command line gives atol/rtol, a
floating-point output is judged against a high-precision truth:

    truth    = reference(**inputs upcast to float64), on the same device
    e_ref    = ||ref - truth||_2 / ||truth||_2       the reference's own rounding error
    e_sol    = ||sol - truth||_2 / ||truth||_2       the solution's
    allowed  = max(REFERENCE_ERROR_MULTIPLE * e_ref, floor(dtype))   (with allow_tf32: 4 x e_ref, 1.5e-3)
    pass    <=> e_sol <= allowed (+ ABSOLUTE floor for outputs whose truth is near zero)
            and the same rule in the max norm, element by element:
                |sol_i - truth_i| <= max(MULTIPLE * max|ref - truth|, floor * max|truth|) + tiny
            so one wrong element cannot hide in the 2-norm of a large output;
            and NaN/Inf only where the reference has the very same value.

Precision downgrades: an output that fails this rule but lies within KernelBench's atol = rtol = 1e-2
of the reference (`KERNELBENCH_TOLERANCE`) is flagged `precision_downgrade`: a suspicion, since a
float32 problem computed in TF32, bf16 or fp16 and a small wrong term (one key of 257 left out) both
look like this. The rounding probe then runs (check/integrity/rounding_probe.py), and the record calls
the output a precision downgrade only where the probe shows inputs rounded; otherwise a wrong result.
With `--kernelbench-tolerances` the outputs are judged at KernelBench's 1e-2 instead, and the float64
truth is still measured: an output that passes only at 1e-2 is marked `kernelbench_only`, and the
record calls it a precision downgrade only where the rounding probe shows one
(check/integrity/rounding_probe.py); without that evidence it is a wrong result
(check/integrity/verdict.py), beside KernelBench's own verdict (`kernelbench_would_pass`).

A tolerance that cannot judge: where an all-zero output, or any constant one, would pass the
atol/rtol in force (ref.py's, the command line's, or KernelBench's) against this reference output
(`compare.constant_would_pass`: softmax over 16384 columns, whose every value is below 1e-2), that
tolerance cannot tell the answer from a kernel that computes nothing. The float64 truth is then
measured and the reference-error rule judges the output instead (`tolerance_cannot_judge` says
why); it is never called a precision downgrade on that tolerance's word.

The float64 run is planned to fit in memory (check/truth.py: in one run, in row chunks, on the
host, or on a sample of rows); where the reference cannot run on float64 inputs (it raises), or no
way of running it fits, the output falls back to the dtype defaults of check/compare.py and the
report says why.
Otherwise explicit tolerances (ref.py's atol/rtol, --atol/--rtol) keep their meaning exactly:
compare.compare_tensors against the reference's output.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch

from kernel_opt.check.chunked import FirstMismatches, SampledTruth, truth_mismatches, truth_norms, truth_segments
from kernel_opt.check.compare import (
    DEFAULT_TOLERANCES,
    compare_tensors,
    constant_would_pass,
    dtype_name,
    json_number,
    resolve_tolerance,
    run_reference,
)
from kernel_opt.check.records import OutputComparison
from kernel_opt.check.truth import TruthUnavailable
from kernel_opt.core.errors import UsageError
from kernel_opt.run.request import Tolerances

# How far an honest solution may sit from the truth, in units of the reference's own error.
# A different but equally honest order of the same float operations has a different error.
# Measured on a CPU (torch 2.13, N(0, 1) inputs), normwise against float64: at K = 4096 a
# sequential fp32 accumulation had 3.1x the error of torch's matmul (1.11e-6 vs 3.55e-7) and
# 4.8x that of a sum blocked by 32; at K = 262144 a single running sum had 18x (8.7e-6 vs
# 4.7e-7). 8 covers the first two; where the ratio grows past it, as in the last, the fp32
# floor below (1e-5) is the larger bound anyway, so the multiple only decides where the
# reference's error is large: ill-conditioned sums, and half-precision outputs whose rounding
# dominates (fp16 GEMM: e_ref = 2.0e-4, 8x = 1.6e-3, under the fp16 floor of 2e-3). A larger
# multiple would let a bf16 shortcut (about 2.4e-3) pass an fp16 problem. Precision shortcuts
# in fp32 sit far above: TF32-rounded inputs gave 2.9e-4..3.1e-4 and bf16-rounded inputs
# 2.3e-3..2.5e-3 at every K from 1 to 4096, 800x and 6,600x the reference's error at 4096.
REFERENCE_ERROR_MULTIPLE = 8.0

# The smallest allowed relative error per output dtype: the old per-element rtol defaults
# (compare.DEFAULT_TOLERANCES, float32 1e-5 = 168 units of 2^-24), now applied to the normwise
# and max-norm errors. The reference's own error can be far below what equally honest
# arithmetic gives: a vector add is correctly rounded (e_ref about 3e-8), while fast-math
# intrinsics (__expf, approximate division) are off by a few to ~100 units in the last place.
# Every output within the old rtol of the truth element by element passes this floor, so a
# kernel honest by the old rule keeps its pass; TF32 (3e-4) and bf16 (2e-3) still fail it.
RELATIVE_FLOORS: dict[str, float] = {name: rtol for name, (_, rtol) in DEFAULT_TOLERANCES.items()}
# ref.py's `allow_tf32 = True` declares that float32 matmuls may round their inputs to TF32's
# 10 explicit mantissa bits (unit roundoff 2^-11 = 4.9e-4). Measured normwise errors of such
# GEMMs at K = 4096: 2.9e-4..3.1e-4 with round-to-nearest, up to 4.5e-4 when the low bits are
# truncated (CPU), and 7.8e-4 for Triton's tl.dot in TF32 (H100, 2026-11-25); bf16-rounded
# inputs gave 2.3e-3..2.5e-3. The floor sits between the two, about 2x above the worst TF32
# kernel and 1.6x below bf16.
TF32_RELATIVE_FLOOR = 1.5e-3
# With TF32 allowed, a GPU reference runs in TF32 itself (e_ref about 3e-4), and 8 x e_ref
# (2.4e-3) would reach bf16's error: on an H100 a bf16-input GEMM read 2.38e-3 against 2.39e-3
# allowed. A kernel in the declared precision differs from the reference by its own input
# rounding, a few times e_ref at most (tl.dot TF32: 2.6x), so the multiple is smaller there.
TF32_REFERENCE_ERROR_MULTIPLE = 4.0
# The absolute floor per element is the dtype's smallest normal number (torch.finfo(dtype).tiny,
# 1.2e-38 for float32): a kernel that flushes subnormal results to zero (fast math, -ftz)
# differs from a reference that keeps them by less than that, and a relative rule cannot judge
# an output whose truth is exactly zero.

# KernelBench's eval (v0 and v0.1, the leaderboards' figures): torch.allclose(atol=1e-2, rtol=1e-2)
# for float32 outputs. Its later versions use 1e-4 for float32; the switch keeps the published one.
KERNELBENCH_TOLERANCE = 1e-2
KERNELBENCH_SOURCE = "KernelBench's atol = rtol = 1e-2 (--kernelbench-tolerances)"

RuleKind = Literal["atol/rtol", "reference error"]
ATOL_RTOL: RuleKind = "atol/rtol"
REFERENCE_ERROR: RuleKind = "reference error"


@dataclass(frozen=True)
class ToleranceRule:
    """How one output is judged: fixed atol/rtol, or against the float64 truth with a multiple and a floor."""

    kind: RuleKind
    dtype: str
    source: str
    atol: float | None = None
    rtol: float | None = None
    multiple: float | None = None
    floor: float | None = None


@dataclass(frozen=True)
class TolerancePolicy:
    """What decides the rule: ref.py's and the command line's atol/rtol, and ref.py's allow_tf32."""

    ref_atol: float | None = None
    ref_rtol: float | None = None
    cli_atol: float | None = None
    cli_rtol: float | None = None
    allow_tf32: bool = False
    kernelbench: bool = False  # --kernelbench-tolerances: atol = rtol = 1e-2, the truth measured all the same

    @classmethod
    def for_run(cls, reference: Any, tolerances: Tolerances) -> TolerancePolicy:
        """The policy of a worker run: ref.py's atol/rtol/allow_tf32 and the command line's --atol/--rtol.

        The correctness check and the benchmark's post-timing check both build it here, so the two
        can never judge the same output by different rules.
        """
        return cls(reference.atol, reference.rtol, tolerances.atol, tolerances.rtol, reference.allow_tf32,
                   tolerances.kernelbench)

    @property
    def explicit(self) -> bool:
        """Any tolerance given by ref.py or the command line: then atol/rtol rule alone, exactly as before."""
        return any(value is not None for value in (self.ref_atol, self.ref_rtol, self.cli_atol, self.cli_rtol))

    def needs_truth(self, dtype: torch.dtype) -> bool:
        return dtype.is_floating_point and (self.kernelbench or not self.explicit)

    def strict(self) -> TolerancePolicy:
        """The same policy without the KernelBench switch: the rule a downgrade is measured against."""
        return TolerancePolicy(self.ref_atol, self.ref_rtol, self.cli_atol, self.cli_rtol, self.allow_tf32)

    def reference_rule(self, dtype: torch.dtype) -> ToleranceRule:
        """The reference-error rule for this dtype (ref.py's allow_tf32 kept): what judges an output that the
        tolerance in force cannot (`weak_tolerance`)."""
        return TolerancePolicy(allow_tf32=self.allow_tf32).rule(dtype)

    def weak_tolerance(self, dtype: torch.dtype, expected: torch.Tensor) -> str | None:
        """What the atol/rtol in force would pass that carries no information ("an all-zero output would pass at
        ..."), where this output's expected values let one through; None where the rule in force can judge it."""
        rule = self.rule(dtype)
        if rule.kind != ATOL_RTOL or not dtype.is_floating_point:
            return None
        weak = constant_would_pass(expected, float(rule.atol or 0.0), float(rule.rtol or 0.0))
        if weak is None:
            return None
        where = ("KernelBench's atol = rtol = 1e-2" if self.kernelbench else
                 f"atol={rule.atol:g}, rtol={rule.rtol:g} ({rule.source})")
        return f"{weak} would pass at {where}"

    def rule(self, dtype: torch.dtype, truth_missing: str | None = None) -> ToleranceRule:
        """The rule for one output dtype; `truth_missing` says why no float64 truth exists (then: dtype defaults)."""
        if self.kernelbench and dtype.is_floating_point:
            return ToleranceRule(ATOL_RTOL, dtype_name(dtype), KERNELBENCH_SOURCE, atol=KERNELBENCH_TOLERANCE,
                                 rtol=KERNELBENCH_TOLERANCE)
        if not self.needs_truth(dtype) or truth_missing is not None:
            atol, rtol, source = resolve_tolerance(dtype, self.ref_atol, self.ref_rtol, self.cli_atol, self.cli_rtol)
            if truth_missing is not None and self.needs_truth(dtype):
                source = f"dtype default (no float64 truth: {truth_missing})"
            return ToleranceRule(ATOL_RTOL, dtype_name(dtype), source, atol=atol, rtol=rtol)
        floor = relative_floor(dtype, self.allow_tf32)
        tf32 = floor == TF32_RELATIVE_FLOOR
        multiple = TF32_REFERENCE_ERROR_MULTIPLE if tf32 else REFERENCE_ERROR_MULTIPLE
        source = (f"{multiple:g} x the reference's own error against its float64 run, "
                  f"at least {floor:g}" + (" (allow_tf32 = True in ref.py)" if tf32 else ""))
        return ToleranceRule(REFERENCE_ERROR, dtype_name(dtype), source, multiple=multiple, floor=floor)


def relative_floor(dtype: torch.dtype, allow_tf32: bool = False) -> float:
    """The smallest relative error allowed for an output dtype (see RELATIVE_FLOORS, TF32_RELATIVE_FLOOR)."""
    floor = RELATIVE_FLOORS.get(dtype_name(dtype), RELATIVE_FLOORS["float32"])
    if allow_tf32 and dtype == torch.float32:
        floor = max(floor, TF32_RELATIVE_FLOOR)
    return floor


def compare_with_truth(name: str, actual: torch.Tensor, reference: torch.Tensor,
                       truth: torch.Tensor | SampledTruth, rule: ToleranceRule) -> OutputComparison:
    """Judge a floating-point output by the reference-error rule (module docstring); the evidence in the record.

    `reference` is the reference's output in the output's dtype, `truth` its float64 run (or that
    of a sample of rows: check/chunked.SampledTruth). Where the reference is NaN/Inf the solution
    must hold the same value; where the float64 run is not finite but the reference is, the
    reference's value stands in for the truth. Computed in chunks (check/chunked.py), so the
    reference and the truth may be kept on the host.
    """
    if actual.shape != reference.shape or tuple(truth.shape) != tuple(reference.shape):
        raise UsageError(f"output {name!r}: the reference produced shape {list(reference.shape)} (float64 run: "
                         f"{list(truth.shape)}) but the buffer is {list(actual.shape)}")
    segments = truth_segments(truth)
    errors = truth_norms(actual, reference, segments)
    tiny = float(torch.finfo(actual.dtype).tiny)
    multiple, floor = float(rule.multiple or REFERENCE_ERROR_MULTIPLE), float(rule.floor or 0.0)
    allowed_norm = max(multiple * errors.reference_norm, floor * errors.truth_norm) + tiny * math.sqrt(errors.count)
    element_bound = max(multiple * errors.reference_max, floor * errors.truth_max) + tiny
    first = FirstMismatches(tuple(actual.shape))
    truth_mismatches(actual, reference, segments, errors, element_bound, first)  # expected: the float64 truth

    def relative(value: float) -> float | None:
        return value / errors.truth_norm if errors.truth_norm > 0 else None

    return OutputComparison(
        name=name, dtype=dtype_name(actual.dtype), shape=list(actual.shape), numel=actual.numel(),
        atol=None, rtol=None,
        passed=errors.mismatches == 0 and errors.solution_norm <= allowed_norm,
        mismatches=errors.mismatches,
        nonfinite_unexpected=errors.nonfinite_unexpected,
        nan_unexpected=errors.nan_unexpected,
        max_abs_error=json_number(errors.solution_max if errors.count else None),
        max_rel_error=json_number(errors.max_rel),
        norm_rel_error=json_number(relative(errors.solution_norm)),
        zeros_would_pass=errors.count > 0 and errors.truth_norm <= allowed_norm and errors.truth_max <= element_bound,
        first_mismatches=first.found,
        tolerance_rule=REFERENCE_ERROR,
        solution_error=json_number(relative(errors.solution_norm)),
        reference_error=json_number(relative(errors.reference_norm)),
        allowed_error=json_number(relative(allowed_norm)),
        element_bound=json_number(element_bound),
    )


@dataclass
class Expectation:
    """What one set of inputs should give: the reference's outputs, their float64 truth, or why there is none.

    Either may be kept on the host where the device has no room beside the rest of the case
    (check/truth.py); the comparisons read them in chunks.
    """

    reference: dict[str, torch.Tensor]
    truth: dict[str, Any] | None = None  # a tensor per output, or check/chunked.SampledTruth for a sample of rows
    truth_missing: str | None = None  # why the float64 run is missing, where one was wanted
    truth_plan: str | None = None  # how the truth was computed where not in one run kept on the device


def expect(reference, policy: TolerancePolicy, dims: dict[str, Any], values: dict[str, Any],
           outputs: list[str], row_arguments: tuple[str, ...] = (),
           on_truth: Callable[[], None] | None = None) -> Expectation:
    """Run the reference on private copies of `values` (and on float64 copies where the rule needs a truth).

    The reference's own failure propagates (it is ref.py's fault); a failure of the float64 run
    only means no truth (Expectation.truth_missing). The float64 run is planned to fit in memory
    (check/truth.py): `row_arguments` names the arguments whose rows are independent (a KernelBench
    Model's forward inputs), which lets it run in row chunks; `on_truth` is called as it begins.
    """
    from kernel_opt.check.truth import float64_truth, keep_expected
    from kernel_opt.run.memory import peak_since, restart_peak
    from kernel_opt.solution.inputs import cloned_arguments

    before = restart_peak()  # what the reference's run allocates, measured: the memory plan's basis
    kwargs = cloned_arguments(dims, values)
    run_reference(reference, kwargs, outputs)
    expectation = Expectation({name: kwargs[name] for name in outputs})
    del kwargs  # the reference's copies of the inputs go before the float64 run begins
    transient = peak_since(before)
    if any(isinstance(values[name], torch.Tensor) and (policy.needs_truth(values[name].dtype) or policy.weak_tolerance(
            values[name].dtype, expectation.reference[name]) is not None) for name in outputs):
        if on_truth is not None:
            on_truth()
        try:
            planned = float64_truth(reference, dims, values, outputs, expectation.reference, row_arguments, transient)
            expectation.truth, expectation.truth_plan = planned.values, planned.plan
        except TruthUnavailable as missing:
            expectation.truth_missing = str(missing)
    expectation.reference = keep_expected(expectation.reference, values, outputs, transient)
    return expectation


def judge(name: str, actual: torch.Tensor, expectation: Expectation, policy: TolerancePolicy
          ) -> tuple[OutputComparison, ToleranceRule]:
    """Compare one output with what was expected, by the rule the policy gives for its dtype (module docstring).

    Where that rule is an atol/rtol that an all-zero or constant output would pass, the reference-error
    rule judges instead. Under the default rule a failing output within KernelBench's tolerance is
    flagged a precision downgrade; under --kernelbench-tolerances an output is marked when it passes
    only at 1e-2 (the record's verdict then asks the rounding probe: check/integrity/verdict.py).
    """
    rule = policy.rule(actual.dtype, expectation.truth_missing)
    expected = expectation.reference[name]
    truth = None if expectation.truth is None else expectation.truth.get(name)
    weak = policy.weak_tolerance(actual.dtype, expected) if truth is not None and rule.kind == ATOL_RTOL else None
    if weak is not None:
        return _judged_in_place_of_a_weak_tolerance(name, actual, expected, truth, policy, rule, weak)
    if rule.kind == REFERENCE_ERROR and truth is not None:
        comparison = compare_with_truth(name, actual, expected, truth, rule)
        if not comparison.passed and not comparison.nonfinite_unexpected:
            comparison.precision_downgrade = _within_kernelbench(name, actual, expected) and constant_would_pass(
                expected, KERNELBENCH_TOLERANCE, KERNELBENCH_TOLERANCE) is None
        return comparison, rule
    comparison = compare_tensors(name, actual, expected, float(rule.atol or 0.0), float(rule.rtol or 0.0))
    if policy.kernelbench and truth is not None and actual.dtype.is_floating_point:
        strict, _ = judge(name, actual, expectation, policy.strict())
        comparison.solution_error, comparison.reference_error = strict.solution_error, strict.reference_error
        comparison.allowed_error, comparison.element_bound = strict.allowed_error, strict.element_bound
        comparison.kernelbench_would_pass = comparison.passed
        comparison.kernelbench_only = comparison.passed and not strict.passed
    return comparison, rule


def _judged_in_place_of_a_weak_tolerance(name: str, actual: torch.Tensor, expected: torch.Tensor,
                                         truth: torch.Tensor, policy: TolerancePolicy, rule: ToleranceRule,
                                         weak: str) -> tuple[OutputComparison, ToleranceRule]:
    """The reference-error rule's verdict on an output the tolerance in force cannot tell from zeros or a constant."""
    in_place = policy.reference_rule(actual.dtype)
    comparison = compare_with_truth(name, actual, expected, truth, in_place)
    comparison.tolerance_cannot_judge = weak
    if policy.kernelbench:
        comparison.kernelbench_would_pass = _within_kernelbench(name, actual, expected)
    return comparison, replace(in_place, source=f"{in_place.source}; {weak}, so that tolerance cannot judge it")


def _within_kernelbench(name: str, actual: torch.Tensor, expected: torch.Tensor) -> bool:
    return compare_tensors(name, actual, expected, KERNELBENCH_TOLERANCE, KERNELBENCH_TOLERANCE).passed
