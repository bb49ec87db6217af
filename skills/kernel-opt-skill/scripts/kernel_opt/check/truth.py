"""The float64 truth of check/tolerance.py, computed the way the memory plan says it fits (check/memory_plan.py).

In one run on the outputs' device where it fits. Else, for a reference whose rows are
independent (a KernelBench Model: `Reference.row_arguments` names its forward inputs), in row
chunks: the forward inputs sliced along their first dimension, each chunk upcast and run, its
rows of the truth kept on the device or the host; a probe first runs the reference in its own
precision on the first and the last rows alone and requires the rows of its whole output, so a
Model that mixes rows (BatchNorm in training mode, a reduction over the batch, a cumulative sum
over it) is never chunked. Else the whole float64 run on the host (CPU). Else the truth of a
sample of rows (judged as check/chunked.truth_mismatches says, and said in a warning). An
attempt that runs out of memory gives way to the next; the reference's own failure on float64
inputs means there is no truth (tolerance.TruthUnavailable), as it always did.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kernel_opt.check.chunked import SampledTruth
from kernel_opt.check.compare import run_reference
from kernel_opt.check.memory_plan import SAMPLE_PIECES, Budget, TruthAttempt, TruthSizes, place, plan_truth
from kernel_opt.env.memory import device_memory, host_available_bytes
from kernel_opt.run.events import one_line
from kernel_opt.run.memory import is_out_of_memory, note_plan
from kernel_opt.solution.inputs import cloned_arguments

# The probe's bound on ||rows alone - the same rows of the whole run|| / ||the whole run's rows||:
# independent rows give the same values up to a different kernel's summation order (about 1e-7
# in float32); a Model whose rows depend on each other (batch statistics over a smaller batch)
# differs by far more. The float32 floor of the reference-error rule (tolerance.RELATIVE_FLOORS).
ROW_PROBE_TOLERANCE = 1e-5
UNKNOWN_HOST_BYTES = 1 << 50  # a CPU run where the host's memory cannot be read: plan as if it were ample


class TruthUnavailable(Exception):
    """The reference could not run on float64 inputs; the message says why, in one line."""


@dataclass
class PlannedTruth:
    """The truth per output, and how it was computed where that was not one run kept on the device (None)."""

    values: dict[str, Any]
    plan: str | None = None
    sample: bool = False


def tensor_bytes(value: Any, float64: bool = False) -> int:
    if not isinstance(value, torch.Tensor):
        return 0
    size = 8 if float64 and value.is_floating_point() else value.element_size()
    return value.numel() * size


def memory_budget(device: torch.device) -> Budget:
    """What a step may plan with now: the GPU's available memory and the host's; a CPU run's host memory alone."""
    memory = device_memory(device)
    host = host_available_bytes()
    if memory is None:
        available = host if host is not None else UNKNOWN_HOST_BYTES
        return Budget(available, available, None, on_gpu=False)
    return Budget(memory.available, memory.total, host)


def output_rows(values: dict[str, Any], outputs: list[str], row_names: tuple[str, ...]) -> tuple[int, list[str]]:
    """The outputs' common first dimension and the row arguments that share it; (0, []) where rows cannot be cut."""
    shapes = [values[name].shape for name in outputs if isinstance(values[name], torch.Tensor)]
    if not shapes or any(len(shape) == 0 for shape in shapes) or len({shape[0] for shape in shapes}) != 1:
        return 0, []
    rows = int(shapes[0][0])
    sliced = [name for name in row_names if isinstance(values.get(name), torch.Tensor)
              and values[name].dim() > 0 and values[name].shape[0] == rows]
    return (rows, sliced) if rows >= 2 and sliced else (0, [])


def truth_sizes(values: dict[str, Any], outputs: list[str], sliced: list[str], rows: int,
                transient_bytes: int | None) -> TruthSizes:
    """The byte counts the plan needs; without a measured transient (a CPU run), the reference's copies and one
    output's worth of its own allocations."""
    inputs = [name for name in values if name not in outputs]
    sizes = dict(
        inputs=sum(tensor_bytes(values[name]) for name in inputs),
        outputs=sum(tensor_bytes(values[name]) for name in outputs),
        inputs_float64=sum(tensor_bytes(values[name], True) for name in inputs),
        outputs_float64=sum(tensor_bytes(values[name], True) for name in outputs),
        row_inputs_float64=sum(tensor_bytes(values[name], True) for name in sliced),
        rows=rows,
    )
    if transient_bytes is None:
        return TruthSizes(**sizes, reference_transient=sizes["inputs"] + 2 * sizes["outputs"])
    return TruthSizes(**sizes, reference_transient=transient_bytes)


def float64_truth(reference: Callable, dims: dict[str, Any], values: dict[str, Any], outputs: list[str],
                  expected: dict[str, torch.Tensor], row_arguments: tuple[str, ...] = (),
                  transient_bytes: int | None = None) -> PlannedTruth:
    """The truth by the first attempt of the plan that works; TruthUnavailable when the reference cannot run on
    float64 inputs or no attempt fits.

    Args:
        expected: the reference's own outputs, which the row probe compares with.
        row_arguments: the arguments whose first dimension indexes independent rows (a KernelBench Model's forward
            inputs); () where rows must not be cut (a ref.py, whose reference may read its sizes from `dims`).
        transient_bytes: what the reference's run took beyond what was allocated before it.
    """
    device = next(value.device for value in values.values() if isinstance(value, torch.Tensor))
    rows, sliced = output_rows(values, outputs, row_arguments)
    sizes = truth_sizes(values, outputs, sliced, rows, transient_bytes)
    budget = memory_budget(device)
    reserve = 0 if transient_bytes is None else sizes.case_reserve
    passed_over: list[str] = []
    for attempt in plan_truth(sizes, budget, reserve):
        note_plan(attempt.text(sizes))
        try:
            truth = _run_attempt(attempt, reference, dims, values, outputs, expected, sliced, rows)
        except _PassOver as reason:
            passed_over.append(f"{attempt.how}: {reason}")
            truth = None
        if truth is None:  # out of the except block: the failed attempt's tensors are no longer referenced
            _release(device)
            continue
        text = None if attempt.how == "whole" and attempt.kept_on == "device" else attempt.text(sizes)
        if passed_over:
            text = f"{text or attempt.text(sizes)} (passed over: {'; '.join(passed_over)})"
        return PlannedTruth(truth, text, attempt.how == "row sample")
    raise TruthUnavailable("no way of computing it fits in memory: " + "; ".join(passed_over))


class _PassOver(Exception):
    """An attempt that cannot work here (out of memory, rows that depend on each other, a reference that does not
    run on the host): the next one is tried."""


def _run_attempt(attempt: TruthAttempt, reference, dims, values, outputs, expected, sliced, rows) -> dict[str, Any]:
    """One attempt's truth. _PassOver where it cannot work here; TruthUnavailable where the reference itself fails
    on float64 inputs on its own device (then no attempt would do better)."""
    try:
        if attempt.how == "whole":
            truth = _run_float64(reference, dims, values, outputs, None)
        elif attempt.how == "host":
            truth = _run_float64(reference, dims, values, outputs, torch.device("cpu"))
        else:
            probe_rows = max(1, min(attempt.chunk_rows, rows // 2))
            _probe_rows(reference, dims, values, outputs, expected, sliced, rows, probe_rows)
            keep = torch.device("cpu") if attempt.kept_on == "host" else None
            if attempt.how == "row chunks":
                truth = _in_row_chunks(reference, dims, values, outputs, sliced, rows, attempt.chunk_rows, keep)
            else:
                truth = _row_sample(reference, dims, values, outputs, sliced, rows, attempt)
        return _kept(truth, attempt.kept_on)
    except _PassOver:
        raise
    except Exception as error:
        if is_out_of_memory(error) or attempt.how == "host":
            where = " on the host" if attempt.how == "host" else ""
            raise _PassOver(f"{one_line(error)[:200]}{where}") from error
        raise TruthUnavailable(f"the reference raised {one_line(error)[:300]} on float64 inputs") from error


def _kept(truth: dict[str, Any], kept_on: str) -> dict[str, Any]:
    if kept_on != "host":
        return truth
    return {name: value.to("cpu") if isinstance(value, torch.Tensor) else value for name, value in truth.items()}


def _release(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()


def upcast_arguments(dims: dict[str, Any], values: dict[str, Any], device: torch.device | None = None
                     ) -> dict[str, Any]:
    """The reference's keyword arguments with every floating-point tensor copied to float64 (others cloned), on
    `device` (None: where each one is)."""
    copies: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, torch.Tensor):
            target = value.device if device is None else device
            copies[name] = (value.detach().to(target, torch.float64, copy=True) if value.is_floating_point()
                            else value.detach().to(target, copy=True))
        else:
            copies[name] = value
    return {**dims, **copies}


def _run_float64(reference, dims, values, outputs, device: torch.device | None) -> dict[str, Any]:
    kwargs = upcast_arguments(dims, values, device)
    run_reference(reference, kwargs, outputs)
    if any(isinstance(kwargs[name], torch.Tensor) and kwargs[name].is_cuda for name in outputs):
        torch.cuda.synchronize()
    return {name: kwargs[name] for name in outputs}


def _rows_of(values: dict[str, Any], names: list[str], rows: slice) -> dict[str, Any]:
    return {name: value[rows] if name in names else value for name, value in values.items()}


def _probe_rows(reference, dims, values, outputs, expected, sliced, rows: int, count: int) -> None:
    """The reference in its own precision on the first and the last `count` rows alone must give the same rows as
    its whole run; _PassOver where it does not (the rows depend on each other) or cannot run on fewer rows."""
    for window in (slice(0, count), slice(rows - count, rows)):
        kwargs = cloned_arguments(dims, _rows_of(values, [*sliced, *outputs], window))
        try:
            run_reference(reference, kwargs, outputs)
        except Exception as error:
            if is_out_of_memory(error):
                raise
            raise _PassOver(f"the reference cannot run on rows {window.start}-{window.stop - 1} alone "
                            f"({one_line(error)[:200]})") from error
        for name in outputs:
            difference = _relative_difference(kwargs[name], expected[name][window])
            if difference > ROW_PROBE_TOLERANCE:
                raise _PassOver(f"rows {window.start}-{window.stop - 1} computed alone differ from the same rows of "
                                f"the whole run (relative difference {difference:.2g}): the rows of output {name!r} "
                                "depend on each other")
        del kwargs


def _relative_difference(alone: torch.Tensor, whole: torch.Tensor) -> float:
    whole = whole.to(alone.device)
    if not alone.dtype.is_floating_point:
        return 0.0 if torch.equal(alone, whole) else math.inf
    a, b = alone.to(torch.float64), whole.to(torch.float64)
    if not torch.equal(torch.isfinite(a), torch.isfinite(b)):
        return math.inf
    finite = torch.isfinite(b)
    difference = float(torch.linalg.vector_norm(torch.where(finite, a - b, 0.0)))
    scale = float(torch.linalg.vector_norm(torch.where(finite, b, 0.0)))
    return 0.0 if difference == 0 else (difference / scale if scale > 0 else math.inf)


def _in_row_chunks(reference, dims, values, outputs, sliced, rows: int, chunk: int,
                   keep: torch.device | None) -> dict[str, Any]:
    truth = {name: torch.empty(values[name].shape, device=keep or values[name].device,
                               dtype=torch.float64 if values[name].is_floating_point() else values[name].dtype)
             for name in outputs}
    for start in range(0, rows, chunk):
        window = slice(start, min(rows, start + chunk))
        part = _run_float64(reference, dims, _rows_of(values, [*sliced, *outputs], window), outputs, None)
        for name in outputs:
            truth[name][window].copy_(part[name])
        del part
    return truth


def _row_sample(reference, dims, values, outputs, sliced, rows: int, attempt: TruthAttempt) -> dict[str, Any]:
    """SAMPLE_PIECES pieces of `attempt.chunk_rows` rows, evenly spaced from the first rows to the last."""
    count = attempt.chunk_rows
    starts = sorted({round(index * (rows - count) / (SAMPLE_PIECES - 1)) for index in range(SAMPLE_PIECES)})
    pieces: dict[str, list[tuple[int, int, torch.Tensor]]] = {name: [] for name in outputs}
    for start in starts:
        window = slice(start, start + count)
        part = _run_float64(reference, dims, _rows_of(values, [*sliced, *outputs], window), outputs, None)
        for name in outputs:
            pieces[name].append((start, start + count, part[name]))
    return {name: SampledTruth(tuple(values[name].shape), pieces[name]) for name in outputs}


def keep_expected(expected: dict[str, torch.Tensor], values: dict[str, Any], outputs: list[str],
                  transient_bytes: int | None) -> dict[str, torch.Tensor]:
    """The reference's outputs, moved to the host where the device would not keep free beside them what the rest
    of the case needs (TruthSizes.case_reserve: the input-mutation copy and the solution's call)."""
    tensors = [value for value in expected.values() if isinstance(value, torch.Tensor)]
    if not tensors or tensors[0].device.type != "cuda" or transient_bytes is None:
        return expected
    total = sum(tensor_bytes(value) for value in tensors)
    reserve = truth_sizes(values, outputs, [], 0, transient_bytes).case_reserve
    if place(total, memory_budget(tensors[0].device), reserve) == "device":
        return expected
    return {name: value.to("cpu") if isinstance(value, torch.Tensor) else value for name, value in expected.items()}


def kept_copies(values: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Copies of `values` kept until after the solution's call (the input-mutation check's): on the device where it
    keeps as much again free for the call, else on the host."""
    tensors = list(values.values())
    if not tensors or tensors[0].device.type != "cuda":
        return {name: value.clone() for name, value in values.items()}
    total = sum(tensor_bytes(value) for value in tensors)
    where = place(total, memory_budget(tensors[0].device), reserve_bytes=total)
    if where == "device":
        return {name: value.clone() for name, value in values.items()}
    return {name: value.to("cpu", copy=True) for name, value in values.items()}
