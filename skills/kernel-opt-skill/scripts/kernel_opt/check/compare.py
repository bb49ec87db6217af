"""Compare a solution's outputs with the reference's (in the worker; the records are in check/records.py).

A wrong kernel must not pass: outputs are poisoned with NaN before each call (an element the
kernel never writes stays NaN), inputs are compared bit for bit after the call (a kernel that
writes its inputs fails), NaN/Inf where the reference is finite fails, and every comparison
reports the evidence (error sizes, mismatch count, first bad indices with values).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from kernel_opt.check.chunked import FirstMismatches, exact_counts, inputs_equal, tolerance_counts
from kernel_opt.check.records import OutputComparison
from kernel_opt.core.errors import UsageError
from kernel_opt.solution.contract import call_with_accepted

# Default tolerances by output dtype: torch.testing.assert_close's defaults, with fp16/bf16
# loosened to about two units in the last place so that a reordered fp32 accumulation rounded
# to half precision passes, and fp32 kept tight enough that a TF32 matmul (about 5e-4
# relative error) fails unless ref.py raises atol/rtol for that problem.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {  # dtype -> (atol, rtol)
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1e-5),
    "float16": (1e-3, 2e-3),
    "bfloat16": (1e-2, 1.6e-2),
}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def resolve_tolerance(
    dtype: torch.dtype,
    ref_atol: float | None,
    ref_rtol: float | None,
    cli_atol: float | None,
    cli_rtol: float | None,
) -> tuple[float, float, str]:
    """(atol, rtol, where they came from): the CLI beats ref.py, which beats the dtype default."""
    name = dtype_name(dtype)
    if not dtype.is_floating_point:
        return 0.0, 0.0, "exact (integer/bool output)"
    default_atol, default_rtol = DEFAULT_TOLERANCES.get(name, DEFAULT_TOLERANCES["float32"])
    atol, atol_source = _pick(cli_atol, ref_atol, default_atol)
    rtol, rtol_source = _pick(cli_rtol, ref_rtol, default_rtol)
    source = atol_source if atol_source == rtol_source else f"atol from {atol_source}, rtol from {rtol_source}"
    return atol, rtol, source


def _pick(cli: float | None, ref: float | None, default: float) -> tuple[float, str]:
    if cli is not None:
        return cli, "command line"
    if ref is not None:
        return ref, "ref.py"
    return default, "dtype default"


def json_number(value: float | int | None) -> float | int | str | None:
    """JSON has no NaN/Inf: keep them readable as strings."""
    if value is None or isinstance(value, (int, bool)):
        return value
    if math.isnan(value) or math.isinf(value):
        return str(value)
    return value


def poison_(tensor: torch.Tensor) -> None:
    """Fill an output so that any element the solution does not write is detectable."""
    if tensor.dtype.is_floating_point:
        tensor.fill_(float("nan"))
    elif tensor.dtype == torch.bool:
        tensor.fill_(True)
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).max)


def compare_tensors(
    name: str, actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float
) -> OutputComparison:
    """Every element within atol + rtol |expected| (NaN equal to NaN), with the evidence; in chunks
    (check/chunked.py), so `expected` may be kept on the host."""
    if actual.shape != expected.shape:
        raise UsageError(
            f"output {name!r}: the reference produced shape {list(expected.shape)} "
            f"but the buffer is {list(actual.shape)}"
        )
    shape, numel = list(actual.shape), actual.numel()
    first = FirstMismatches(tuple(actual.shape))
    if not actual.dtype.is_floating_point:
        count, max_abs, all_zero = exact_counts(actual, expected, first)
        return OutputComparison(
            name, dtype_name(actual.dtype), shape, numel, 0.0, 0.0, count == 0, count, 0, 0,
            json_number(max_abs), None, None, all_zero, first.found,
        )
    counts = tolerance_counts(actual, expected, atol, rtol, first)
    norm_expected = math.sqrt(counts.expected_squares) if counts.any_both_finite else 0.0
    norm_rel = math.sqrt(counts.difference_squares) / norm_expected if norm_expected > 0 else None
    return OutputComparison(
        name=name,
        dtype=dtype_name(actual.dtype),
        shape=shape,
        numel=numel,
        atol=atol,
        rtol=rtol,
        passed=counts.mismatches == 0,
        mismatches=counts.mismatches,
        nonfinite_unexpected=counts.nonfinite_unexpected,
        nan_unexpected=counts.nan_unexpected,
        max_abs_error=json_number(counts.max_abs if counts.any_both_finite else None),
        max_rel_error=json_number(counts.max_rel),
        norm_rel_error=json_number(norm_rel),
        zeros_would_pass=counts.zeros_within and counts.any_expected_finite,
        first_mismatches=first.found,
    )


def constant_would_pass(expected: torch.Tensor, atol: float, rtol: float) -> str | None:
    """Whether an output that carries no information would pass |actual - expected| <= atol + rtol * |expected|.

    "an all-zero output" or "a constant output (c everywhere)" when one would: such a tolerance
    cannot tell this output from a kernel that computes nothing. None when none would, and for an
    output with a NaN or Inf (no constant matches those). A one-element output is asked about
    zeros alone: any one value is a constant.

    Both bounds are monotone in the expected value (rtol < 1), so the extremes decide: zeros pass
    when max|expected| <= atol / (1 - rtol); some constant passes when the interval every element
    allows has a common point, (max - rtol |max|) - (min + rtol |min|) <= 2 atol.
    """
    if not expected.dtype.is_floating_point or expected.numel() == 0:
        return None
    high, low = float(expected.max()), float(expected.min())  # a NaN anywhere makes both NaN: no extra tensor
    if not (math.isfinite(high) and math.isfinite(low)):
        return None
    if rtol >= 1 or max(abs(high), abs(low)) <= atol / (1 - rtol):
        return "an all-zero output"
    if expected.numel() < 2:
        return None
    top, bottom = high - rtol * abs(high) - atol, low + rtol * abs(low) + atol
    return f"a constant output ({(top + bottom) / 2:.3g} everywhere)" if top <= bottom else None


def inputs_modified(before: dict[str, torch.Tensor], after: dict[str, Any]) -> list[str]:
    """Names of inputs whose bits changed during the call (NaN compares equal to NaN); `before` may be kept on the
    host (check/truth.kept_copies)."""
    return [name for name, original in before.items() if not inputs_equal(original, after[name])]


def run_reference(reference, kwargs: dict[str, Any], outputs: list[str]) -> None:
    """Call reference(**kwargs); accept results written in place or returned."""
    returned = call_with_accepted(reference, kwargs)
    if returned is None:
        return
    if isinstance(returned, torch.Tensor):
        returned = (returned,)
    if isinstance(returned, dict):
        pairs = list(returned.items())
    elif isinstance(returned, (tuple, list)):
        if len(returned) != len(outputs):
            raise UsageError(f"reference() returned {len(returned)} values for {len(outputs)} outputs {outputs}")
        pairs = list(zip(outputs, returned, strict=True))
    else:
        raise UsageError(f"reference() returned {type(returned).__name__}; return tensors or write into the outputs")
    for name, value in pairs:
        if name not in kwargs:
            raise UsageError(f"reference() returned {name!r}, which is not an output")
        target = kwargs[name]
        if value is target:
            continue
        if not isinstance(value, torch.Tensor):
            raise UsageError(f"reference() returned a {type(value).__name__} for output {name!r}")
        if value.shape != target.shape:
            if value.numel() != target.numel():
                raise UsageError(
                    f"reference() returned shape {list(value.shape)} for output {name!r} of shape {list(target.shape)}"
                )
            value = value.reshape(target.shape)
        target.copy_(value)

