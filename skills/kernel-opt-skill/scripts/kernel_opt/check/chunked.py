"""Comparisons in chunks of elements, so that no float64 copy of a whole output ever exists.

Comparing a 4096 x 393216 float32 output with its float64 truth all at once took the float64
copies of the output, the reference and the truth (38.7 GB), their masks, and the int64 indices
of every boolean selection (`t[usable]`: 25.8 GB for two dimensions, 56 GiB for a four-dimensional
output of 1.9e9 elements). Here every operand is read CHUNK_ELEMENTS elements at a time, upcast on
the output's device (a copy kept on the host comes over chunk by chunk), and only sums, maxima,
counts and the first mismatches are kept. The results are those of the whole-tensor formulas
(check/tolerance.py's module docstring; check/compare.py for atol/rtol), up to the order of
float64 additions in the norms.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch

from kernel_opt.check.records import Mismatch

# 2^25 elements: 256 MB per float64 chunk, about 2 GB for the dozen masks and temporaries of one
# step, and few enough chunks (48 for a 1.6e9-element output) that the launches cost nothing.
CHUNK_ELEMENTS = 1 << 25
FIRST_MISMATCHES_SHOWN = 10


def spans(count: int, size: int | None = None) -> Iterator[tuple[int, int]]:
    """(start, stop) of each chunk of `count` elements."""
    size = size or CHUNK_ELEMENTS
    for start in range(0, count, size):
        yield start, min(count, start + size)


def flat(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's elements in order, as a view where it is contiguous."""
    return tensor.detach().reshape(-1)


def piece(flat_tensor: torch.Tensor, start: int, stop: int, device: torch.device) -> torch.Tensor:
    """Elements [start, stop) in float64 on `device` (copied from the host where the tensor is kept there)."""
    return flat_tensor[start:stop].to(device=device, dtype=torch.float64)


@dataclass
class FirstMismatches:
    """The first FIRST_MISMATCHES_SHOWN bad elements, collected chunk by chunk in index order."""

    shape: tuple[int, ...]
    found: list[Mismatch] = field(default_factory=list)

    def add(self, mismatch: torch.Tensor, start: int, actual: torch.Tensor, expected: torch.Tensor) -> None:
        """`mismatch`, `actual` and `expected` are one chunk's flat elements beginning at flat index `start`."""
        room = FIRST_MISMATCHES_SHOWN - len(self.found)
        if room <= 0 or not bool(mismatch.any()):
            return
        for offset in mismatch.nonzero().flatten()[:room].tolist():
            self.found.append(Mismatch(self._index(start + offset), _json(actual[offset].item()),
                                       _json(expected[offset].item())))

    def _index(self, flat_index: int) -> list[int]:
        index = []
        for size in reversed(self.shape):
            index.append(flat_index % size)
            flat_index //= size
        return index[::-1]


def _json(value: float | int) -> float | int | str:
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return value


# --- atol/rtol against the reference's output (check/compare.compare_tensors) -----------------------


@dataclass
class ToleranceCounts:
    """What compare_tensors reports for a floating-point output, accumulated over chunks."""

    mismatches: int = 0
    nonfinite_unexpected: int = 0
    nan_unexpected: int = 0
    any_both_finite: bool = False
    max_abs: float = 0.0
    max_rel: float | None = None
    difference_squares: float = 0.0
    expected_squares: float = 0.0
    zeros_within: bool = True  # every finite expected value within atol + rtol |expected| of zero
    any_expected_finite: bool = False


def tolerance_counts(actual: torch.Tensor, expected: torch.Tensor, atol: float, rtol: float,
                     first: FirstMismatches) -> ToleranceCounts:
    """compare_tensors' numbers for floating-point outputs, chunk by chunk; the first mismatches into `first`."""
    counts = ToleranceCounts()
    a_flat, b_flat, device = flat(actual), flat(expected), actual.device
    for start, stop in spans(actual.numel()):
        a, b = piece(a_flat, start, stop, device), piece(b_flat, start, stop, device)
        mismatch = ~torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        counts.mismatches += int(mismatch.sum())
        first.add(mismatch, start, a_flat[start:stop], b_flat[start:stop])
        expected_finite, actual_finite = torch.isfinite(b), torch.isfinite(a)
        counts.nonfinite_unexpected += int((~actual_finite & expected_finite).sum())
        counts.nan_unexpected += int((torch.isnan(a) & expected_finite).sum())
        both = actual_finite & expected_finite
        difference = torch.where(both, (a - b).abs(), 0.0)
        magnitude = torch.where(both, b.abs(), 0.0)
        if bool(both.any()):
            counts.any_both_finite = True
            counts.max_abs = max(counts.max_abs, float(difference.max()))
        relevant = both & (magnitude > atol)
        if bool(relevant.any()):
            ratio = float((difference[relevant] / magnitude[relevant]).max())
            counts.max_rel = ratio if counts.max_rel is None else max(counts.max_rel, ratio)
        counts.difference_squares += float((difference * difference).sum())
        counts.expected_squares += float((magnitude * magnitude).sum())
        finite_magnitude = torch.where(expected_finite, b.abs(), 0.0)
        counts.zeros_within &= bool((finite_magnitude <= atol + rtol * finite_magnitude).all())
        counts.any_expected_finite |= bool(expected_finite.any())
    return counts


def exact_counts(actual: torch.Tensor, expected: torch.Tensor, first: FirstMismatches) -> tuple[int, float, bool]:
    """For integer and bool outputs: (mismatches, max |actual - expected|, every expected value is zero)."""
    a_flat, b_flat = flat(actual), flat(expected)
    mismatches, max_abs, all_zero = 0, 0.0, True
    for start, stop in spans(actual.numel()):
        a, b = a_flat[start:stop], b_flat[start:stop].to(actual.device)
        mismatch = a != b
        mismatches += int(mismatch.sum())
        first.add(mismatch, start, a, b)
        max_abs = max(max_abs, float((a.to(torch.float64) - b.to(torch.float64)).abs().max()))
        all_zero &= bool((b == 0).all())
    return mismatches, max_abs, all_zero


def inputs_equal(original: torch.Tensor, current: torch.Tensor) -> bool:
    """Bit for bit, NaN equal to NaN (check/compare.inputs_modified), chunk by chunk; `original` may be on the host."""
    if original.shape != current.shape or original.dtype != current.dtype:
        return False
    o_flat, c_flat = flat(original), flat(current)
    for start, stop in spans(current.numel()):
        o, c = o_flat[start:stop].to(current.device), c_flat[start:stop]
        if original.dtype.is_floating_point and original.dtype.itemsize == 1:  # float8: no isnan or nan_to_num
            same = torch.equal(o.view(torch.uint8), c.view(torch.uint8))
        elif original.dtype.is_floating_point:
            same = torch.equal(torch.isnan(o), torch.isnan(c)) and torch.equal(
                torch.nan_to_num(o, nan=0.0), torch.nan_to_num(c, nan=0.0))
        else:
            same = torch.equal(o, c)
        if not same:
            return False
    return True


# --- the reference-error rule against a float64 truth (check/tolerance.compare_with_truth) --------------


@dataclass(frozen=True)
class TruthSegment:
    """A flat range of an output's elements [start, stop) and its float64 truth, flat; None: no truth there (rows
    outside a sample, check/truth.py)."""

    start: int
    stop: int
    truth: torch.Tensor | None


@dataclass
class TruthErrors:
    """The norms and counts of compare_with_truth over the elements where the reference is finite."""

    truth_squares: float = 0.0
    truth_max: float = 0.0
    reference_squares: float = 0.0
    reference_max: float = 0.0
    solution_squares: float = 0.0
    solution_max: float = 0.0
    count: int = 0  # usable elements: the reference and the solution finite (where there is a truth)
    mismatches: int = 0
    nonfinite_unexpected: int = 0
    nan_unexpected: int = 0
    max_rel: float | None = None

    @property
    def truth_norm(self) -> float:
        return math.sqrt(self.truth_squares)

    @property
    def reference_norm(self) -> float:
        return math.sqrt(self.reference_squares)

    @property
    def solution_norm(self) -> float:
        return math.sqrt(self.solution_squares)


def _chunks_with_truth(actual: torch.Tensor, reference: torch.Tensor, segments: list[TruthSegment]):
    """Per chunk: (start, stop, a, r, t, reference finite, actual finite, segment has a truth); t is the truth
    with the reference's value where the float64 run is not finite but the reference is (r where no truth)."""
    a_flat, r_flat, device = flat(actual), flat(reference), actual.device
    for segment in segments:
        for start, stop in spans(segment.stop - segment.start):
            start, stop = start + segment.start, stop + segment.start
            a, r = piece(a_flat, start, stop, device), piece(r_flat, start, stop, device)
            reference_finite, actual_finite = torch.isfinite(r), torch.isfinite(a)
            if segment.truth is None:
                yield start, stop, a, r, r, reference_finite, actual_finite, False
                continue
            t = piece(segment.truth, start - segment.start, stop - segment.start, device)
            t = torch.where(reference_finite & ~torch.isfinite(t), r, t)
            yield start, stop, a, r, t, reference_finite, actual_finite, True


def truth_norms(actual: torch.Tensor, reference: torch.Tensor, segments: list[TruthSegment]) -> TruthErrors:
    """The first pass: norms and maxima of the truth, the reference's error and the solution's."""
    errors = TruthErrors()
    for _, _, a, r, t, reference_finite, actual_finite, has_truth in _chunks_with_truth(actual, reference, segments):
        if not has_truth:
            continue
        usable = reference_finite & actual_finite
        errors.count += int(usable.sum())
        for name, values in (("truth", t), ("reference", r - t), ("solution", a - t)):
            masked = torch.where(usable, values, 0.0)
            squares, largest = float((masked * masked).sum()), float(masked.abs().max()) if masked.numel() else 0.0
            setattr(errors, f"{name}_squares", getattr(errors, f"{name}_squares") + squares)
            setattr(errors, f"{name}_max", max(getattr(errors, f"{name}_max"), largest))
    return errors


def truth_mismatches(actual: torch.Tensor, reference: torch.Tensor, segments: list[TruthSegment],
                     errors: TruthErrors, element_bound: float, first: FirstMismatches) -> None:
    """The second pass, with the element bound the first pass gave: mismatches, NaN/Inf counts, the largest
    relative error. Where a segment has no truth, the solution must lie within twice the bound of the reference."""
    for start, stop, a, r, t, reference_finite, actual_finite, has_truth in _chunks_with_truth(
            actual, reference, segments):
        usable = reference_finite & actual_finite
        special = ~reference_finite & ~((torch.isnan(a) & torch.isnan(r)) | (a == r))
        element_errors = (a - t).abs()
        bound = element_bound if has_truth else 2 * element_bound
        mismatch = (usable & (element_errors > bound)) | (reference_finite & ~actual_finite) | special
        errors.mismatches += int(mismatch.sum())
        errors.nonfinite_unexpected += int((reference_finite & ~actual_finite).sum())
        errors.nan_unexpected += int((reference_finite & torch.isnan(a)).sum())
        first.add(mismatch, start, flat(actual)[start:stop], t)
        if not has_truth:
            continue
        magnitude = t.abs()
        relevant = usable & (magnitude > element_bound)
        if bool(relevant.any()):
            ratio = float((element_errors[relevant] / magnitude[relevant]).max())
            errors.max_rel = ratio if errors.max_rel is None else max(errors.max_rel, ratio)


@dataclass
class SampledTruth:
    """The float64 truth of some rows of an output only (check/truth.py: where the whole fits nowhere).

    `pieces` are (first row, end row, the truth of those rows), in row order.
    """

    shape: tuple[int, ...]
    pieces: list[tuple[int, int, torch.Tensor]]

    @property
    def rows_covered(self) -> int:
        return sum(end - first for first, end, _ in self.pieces)

    def text(self) -> str:
        """'rows 0-511, 1792-2303 and 3584-4095 of 4096'."""
        ranges = [f"{first}-{end - 1}" for first, end, _ in self.pieces]
        listed = ", ".join(ranges[:-1]) + f" and {ranges[-1]}" if len(ranges) > 1 else ranges[0]
        return f"rows {listed} of {self.shape[0]}"

    def segments(self) -> list[TruthSegment]:
        row = math.prod(self.shape[1:])
        segments, position = [], 0
        for first, end, truth in self.pieces:
            if first * row > position:
                segments.append(TruthSegment(position, first * row, None))
            segments.append(TruthSegment(first * row, end * row, flat(truth)))
            position = end * row
        if position < math.prod(self.shape):
            segments.append(TruthSegment(position, math.prod(self.shape), None))
        return segments


def truth_segments(truth: torch.Tensor | SampledTruth) -> list[TruthSegment]:
    """The segments of a whole truth (one) or of a sample (the sampled rows and the gaps between them)."""
    if isinstance(truth, SampledTruth):
        return truth.segments()
    return [TruthSegment(0, truth.numel(), flat(truth))]


def difference_norm(after: torch.Tensor, before: torch.Tensor) -> float | None:
    """||after - before||_2 over the elements finite in both, in float64 chunks; None where there are none."""
    a_flat, b_flat, device = flat(after), flat(before), after.device
    squares, usable = 0.0, False
    for start, stop in spans(after.numel()):
        a, b = piece(a_flat, start, stop, device), piece(b_flat, start, stop, device)
        finite = torch.isfinite(a) & torch.isfinite(b)
        usable = usable or bool(finite.any())
        difference = torch.where(finite, a - b, 0.0)
        squares += float((difference * difference).sum())
    return math.sqrt(squares) if usable else None


def finite_norm(tensor: torch.Tensor) -> float:
    """||tensor||_2 with NaN and Inf counted as 0, in float64 chunks."""
    t_flat, squares = flat(tensor), 0.0
    for start, stop in spans(tensor.numel()):
        values = piece(t_flat, start, stop, tensor.device).nan_to_num(0.0, 0.0, 0.0)
        squares += float((values * values).sum())
    return math.sqrt(squares)
