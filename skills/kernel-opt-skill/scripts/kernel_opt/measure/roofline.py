"""Where a measured kernel sits on the roofline, and the physical floor under its time.

Two numbers come before any timing (METHOD.md, "Two numbers first"): the FLOPs the problem
must do and the fewest bytes it must move (each input read once, each output written once).
Over the ceilings they give two times; the larger is the floor no version can beat by much.
This module turns (FLOPs, bytes, measured time, ceilings) into achieved rates, arithmetic
intensity, the bound, the floor, and the percentage of the binding roof, and marks a time
under the floor (`faster_than_floor`). Which roofs are true limits, and so make such a time
`invalid`, is measure/placement.py's business: measured roofs are not (cuBLAS beats the
8192^3 matmul roof at 4096^3).

Pure arithmetic, except `count_flops` and `minimum_traffic_bytes`, which read torch tensors
(meta tensors work: only shapes and dtypes are used).

Units: bytes and FLOPs are plain counts; bandwidth in GB/s (1e9 bytes/s), throughput in
TFLOP/s (1e12 FLOP/s), times in microseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from kernel_opt.core.errors import UsageError

Bound = Literal["memory", "compute"]
MEMORY_BOUND: Bound = "memory"
COMPUTE_BOUND: Bound = "compute"

# A measured time may undercut the floor by this fraction before it is flagged. Ceilings are
# not exact: datasheet bandwidths are rounded ("3.35 TB/s"), boost clocks vary from board to
# board, and a measured copy ceiling carries its own run-to-run noise of a percent or two
# (METHOD.md: "Time the same version twice"). Beyond 3% under the floor, the miscount or the
# skipped work is the likelier explanation.
FASTER_THAN_FLOOR_TOLERANCE = 0.03

# Float32-accurate products on tensor cores: each product as three TF32 products (3xTF32: the high parts' product
# and both cross terms), which the strict-FP32 correctness rule accepts (their error is near FP32's own). A float32
# problem's compute roof is therefore the higher of the CUDA-core FP32 rate and a third of the TF32 tensor rate:
# against the FP32 rate alone a 3xTF32 kernel read "target reached" at 2x under what its method can do.
TF32_PRODUCTS_PER_FP32_PRODUCT = 3
STRICT_FP32_ON_TENSOR_CORES = "fp32 products as 3xTF32 on tensor cores: a third of the TF32 rate"


def dtype_compute_roof(dtype: str, allow_tf32: bool, peak_tflops: float | None, tf32_tflops: float | None,
                       source: str) -> tuple[float | None, str]:
    """A dtype's compute roof and where it comes from: `peak_tflops` as given, except for a float32 problem checked at
    FP32 accuracy, where a third of the TF32 rate takes its place when higher (3xTF32), and the source says so."""
    if dtype.removeprefix("torch.") != "float32" or allow_tf32 or not tf32_tflops:
        return peak_tflops, source
    emulated = tf32_tflops / TF32_PRODUCTS_PER_FP32_PRODUCT
    if peak_tflops is not None and emulated <= peak_tflops:
        return peak_tflops, source
    return emulated, f"{source}; {STRICT_FP32_ON_TENSOR_CORES}"


_MICROSECONDS_PER_SECOND = 1e6
_BYTES_PER_GB = 1e9
_FLOPS_PER_TFLOP = 1e12


@dataclass(frozen=True)
class Ceilings:
    """The two roofs for one dtype: memory bandwidth and arithmetic throughput.

    `source` says where they come from ("measured", "datasheet", ...), so a report can show
    both sets side by side and never mix them silently.
    """

    memory_bandwidth_gbps: float
    compute_tflops: float
    source: str
    dtype: str | None = None

    def __post_init__(self):
        if not (self.memory_bandwidth_gbps > 0 and self.compute_tflops > 0):
            raise UsageError(
                f"ceilings must be positive (bandwidth {self.memory_bandwidth_gbps} GB/s, "
                f"throughput {self.compute_tflops} TFLOP/s from {self.source})"
            )

    @property
    def ridge_point_flop_per_byte(self) -> float:
        """Arithmetic intensity where the two roofs meet: below it, bandwidth binds."""
        return (self.compute_tflops * _FLOPS_PER_TFLOP) / (self.memory_bandwidth_gbps * _BYTES_PER_GB)

    def to_dict(self) -> dict:
        payload = asdict(self)
        payload["ridge_point_flop_per_byte"] = self.ridge_point_flop_per_byte
        return payload


@dataclass(frozen=True)
class RooflinePoint:
    """One measured kernel against one set of ceilings.

    `flops` is None when the work is unknown (FlopCounterMode could not count it and ref.py
    gave no `flops()`); the compute side is then None and the bound is taken as "memory",
    with `flops_known` False so a report can say so.
    """

    flops: float | None
    traffic_bytes: float
    time_us: float
    ceilings: Ceilings
    achieved_bandwidth_gbps: float
    achieved_tflops: float | None
    arithmetic_intensity_flop_per_byte: float | None
    ridge_point_flop_per_byte: float
    bound: Bound
    memory_floor_us: float
    compute_floor_us: float | None
    floor_time_us: float
    attainable_tflops: float | None
    percent_of_ceiling: float
    faster_than_floor: bool
    flops_known: bool = True
    tolerance: float = FASTER_THAN_FLOOR_TOLERANCE

    def to_dict(self) -> dict:
        payload = asdict(self)
        payload["ceilings"] = self.ceilings.to_dict()
        return payload


def is_faster_than_floor(
    time_us: float, floor_time_us: float, tolerance: float = FASTER_THAN_FLOOR_TOLERANCE
) -> bool:
    """True when `time_us` undercuts the physical floor by more than `tolerance` (a fraction)."""
    return time_us < floor_time_us * (1.0 - tolerance)


def roofline_point(
    flops: float | None,
    traffic_bytes: float,
    time_us: float,
    ceilings: Ceilings,
    tolerance: float = FASTER_THAN_FLOOR_TOLERANCE,
) -> RooflinePoint:
    """Place a measured kernel on the roofline of `ceilings`.

    Args:
        flops: floating-point operations per call (None when unknown).
        traffic_bytes: minimum DRAM traffic per call (bytes read + bytes written).
        time_us: measured time per call (the median).
        ceilings: the roofs to compare with.

    Returns:
        A RooflinePoint whose `percent_of_ceiling` is the achieved fraction of the roof that
        binds at this intensity (bandwidth below the ridge point, throughput above it); it
        equals floor_time / time, so 100% means the kernel runs at the floor.
    """
    if time_us is None or not time_us > 0 or not math.isfinite(time_us):
        raise UsageError(f"time must be a positive number of microseconds, got {time_us}")
    if traffic_bytes < 0 or (flops is not None and flops < 0):
        raise UsageError(f"FLOPs and bytes cannot be negative (flops={flops}, bytes={traffic_bytes})")
    if traffic_bytes == 0 and not flops:
        raise UsageError("the problem moves no bytes and does no FLOPs; there is no floor to compare with")

    seconds = time_us / _MICROSECONDS_PER_SECOND
    bandwidth_bytes_per_s = ceilings.memory_bandwidth_gbps * _BYTES_PER_GB
    peak_flops_per_s = ceilings.compute_tflops * _FLOPS_PER_TFLOP
    ridge = ceilings.ridge_point_flop_per_byte

    memory_floor_us = traffic_bytes / bandwidth_bytes_per_s * _MICROSECONDS_PER_SECOND
    achieved_bandwidth_gbps = traffic_bytes / seconds / _BYTES_PER_GB

    if flops is None:
        compute_floor_us = None
        achieved_tflops = None
        intensity = None
        attainable_tflops = None
        bound: Bound = MEMORY_BOUND
        floor_us = memory_floor_us
    else:
        compute_floor_us = flops / peak_flops_per_s * _MICROSECONDS_PER_SECOND
        achieved_tflops = flops / seconds / _FLOPS_PER_TFLOP
        intensity = flops / traffic_bytes if traffic_bytes > 0 else math.inf
        bound = COMPUTE_BOUND if intensity >= ridge else MEMORY_BOUND
        floor_us = max(memory_floor_us, compute_floor_us)
        attainable_tflops = min(ceilings.compute_tflops, intensity * ceilings.memory_bandwidth_gbps / 1e3)

    return RooflinePoint(
        flops=flops,
        traffic_bytes=traffic_bytes,
        time_us=time_us,
        ceilings=ceilings,
        achieved_bandwidth_gbps=achieved_bandwidth_gbps,
        achieved_tflops=achieved_tflops,
        arithmetic_intensity_flop_per_byte=intensity,
        ridge_point_flop_per_byte=ridge,
        bound=bound,
        memory_floor_us=memory_floor_us,
        compute_floor_us=compute_floor_us,
        floor_time_us=floor_us,
        attainable_tflops=attainable_tflops,
        percent_of_ceiling=100.0 * floor_us / time_us,
        faster_than_floor=is_faster_than_floor(time_us, floor_us, tolerance),
        flops_known=flops is not None,
        tolerance=tolerance,
    )


# --- counting traffic --------------------------------------------------------------------


@dataclass(frozen=True)
class MinimumTraffic:
    """Bytes a kernel must move at least: every distinct input read once, every output written once."""

    read_bytes: int
    written_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.read_bytes + self.written_bytes

    def to_dict(self) -> dict:
        return {"read_bytes": self.read_bytes, "written_bytes": self.written_bytes, "total_bytes": self.total_bytes}


def _tensors_in(value: Any) -> Iterable[Any]:
    """Tensors inside value: a tensor, or lists/tuples/dicts of them; everything else is skipped."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors_in(item)


def _memory_key(tensor) -> tuple:
    """Identifies the memory a tensor covers, so two handles on one buffer count once.

    Meta tensors have no addresses; they are told apart by object identity.
    """
    if tensor.device.type == "meta":
        return ("meta", id(tensor))
    return (str(tensor.device), tensor.data_ptr(), tensor.numel() * tensor.element_size())


def _distinct_bytes(tensors: Iterable[Any]) -> int:
    seen: set[tuple] = set()
    total = 0
    for tensor in tensors:
        key = _memory_key(tensor)
        if key in seen:
            continue
        seen.add(key)
        total += tensor.numel() * tensor.element_size()
    return total


def count_minimum_traffic(inputs: Any, outputs: Any) -> MinimumTraffic:
    """Minimum DRAM traffic: each distinct input tensor read once, each output written once.

    `inputs` and `outputs` may be tensors or (nested) lists, tuples and dicts of them;
    scalars, strings and None are ignored (they travel as kernel arguments, not through DRAM).
    A tensor passed twice as an input is read once; an output that is also an input (an
    in-place update) is counted once as read and once as written. Partially overlapping
    views are counted in full: pass ref.py's `bytes()` when that overcounts.
    """
    return MinimumTraffic(
        read_bytes=_distinct_bytes(_tensors_in(inputs)),
        written_bytes=_distinct_bytes(_tensors_in(outputs)),
    )


def minimum_traffic_bytes(inputs: Any, outputs: Any) -> int:
    """`count_minimum_traffic(inputs, outputs).total_bytes`."""
    return count_minimum_traffic(inputs, outputs).total_bytes


# --- counting FLOPs ----------------------------------------------------------------------

# aten operators that move or reinterpret data without arithmetic. FlopCounterMode does not
# count them and need not: their presence does not make a FLOP count incomplete.
_DATA_MOVEMENT_OPERATORS = frozenset(
    {
        "_to_copy",
        "_unsafe_view",
        "alias",
        "cat",
        "clone",
        "contiguous",
        "copy",
        "copy_",
        "detach",
        "empty",
        "empty_like",
        "empty_strided",
        "fill",
        "fill_",
        "full",
        "full_like",
        "lift_fresh",
        "lift_fresh_copy",
        "new_empty",
        "new_empty_strided",
        "new_zeros",
        "ones",
        "ones_like",
        "resize_",
        "set_",  # a tensor over other storage; the KernelBench reference poisons released memory through it
        "stack",
        "zero_",
        "zeros",
        "zeros_like",
    }
)


# How count_flops counts, stored with every cached count (measure/reference_cache.py): a count made
# another way is counted again. 2: one warm-up call before counting; partial counts kept as lower bounds.
# 3: a matrix product's multiply-adds with a zero operand left out (structural zeros: triangular, diagonal).
FLOP_COUNTING = "FlopCounterMode/3"
# The matrix products whose operands count_flops reads for zeros: (first operand, second operand) positions.
_PRODUCT_OPERANDS = {"mm": (0, 1), "addmm": (1, 2), "bmm": (0, 1), "baddbmm": (1, 2)}


@dataclass(frozen=True)
class FlopCount:
    """FLOPs of one reference call as `torch.utils.flop_counter.FlopCounterMode` counts them.

    `flops` is the count, or None when the counter counted nothing. When the reference also ran
    operators the counter has no formula for (`uncounted_operators`: elementwise, reductions,
    softmax), `complete` is False and `flops` is a lower bound: the matmul of a linear + GELU is
    counted, the GELU is not. A lower bound keeps the physical floor a floor and places a GEMM
    with an epilogue under the compute roof where it belongs; `reason` says what was left out.
    """

    flops: int | None
    counted_flops: int
    by_operator: dict[str, int] = field(default_factory=dict)
    uncounted_operators: list[str] = field(default_factory=list)
    reason: str | None = None
    complete: bool = True
    zero_product_flops: int = 0  # of the matrix products' count, multiply-adds with a zero operand (left out)

    def to_dict(self) -> dict:
        return asdict(self)


def count_flops(reference: Callable[..., Any], kwargs: Mapping[str, Any]) -> FlopCount:
    """Count the FLOPs of `reference(**kwargs)` with torch's FlopCounterMode.

    FlopCounterMode knows formulas for matrix products, convolutions and attention (mm,
    addmm, bmm, baddbmm, _scaled_mm, convolution, scaled-dot-product attention variants)
    and nothing else: elementwise, reduction, softmax and normalisation work counts as 0.
    So a count is complete only when every arithmetic operator the reference ran is one the
    counter knows; otherwise it is a lower bound with the operators listed (ref.py's
    `flops(**dims)` gives the full count, e.g. 1 FLOP per element for a vector add).

    The reference is called once before counting: a first call may build what later calls
    reuse (a KernelBench Model and its weights, a cached plan), and that work, with its random
    initialisers and a shape-finding forward, is not one call's arithmetic.

    kwargs may hold meta tensors (`torch.empty(shape, dtype=..., device="meta")`): counting
    needs only shapes, so no GPU time or memory is spent.
    """
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode, flop_registry

    class _OperatorRecorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.operators: list[Any] = []
            self.zero_products = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.operators.append(func)
            self.zero_products += zero_product_flops(func, args)
            return func(*args, **(kwargs or {}))

    reference(**kwargs)
    with FlopCounterMode(display=False) as counter, _OperatorRecorder() as recorder:
        reference(**kwargs)

    zero_products = recorder.zero_products
    counted = int(counter.get_total_flops()) - zero_products
    by_operator = {
        str(operator): int(count) for operator, count in counter.get_flop_counts().get("Global", {}).items()
    }
    uncounted: list[str] = []
    for operator in recorder.operators:
        packet = operator.overloadpacket
        if packet in flop_registry or getattr(operator, "is_view", False):
            continue
        if packet.__name__ in _DATA_MOVEMENT_OPERATORS:
            continue
        name = str(packet)
        if name not in uncounted:
            uncounted.append(name)

    if counted == 0:
        reason = ("FlopCounterMode counted no FLOPs" + (f" (it has no formula for {', '.join(uncounted)}: it counts "
                  "matmul, convolution and attention only)" if uncounted else "") + "; give flops(**dims) in ref.py")
        return FlopCount(None, 0, by_operator, uncounted, reason, complete=False)
    if uncounted:
        reason = (f"a lower bound: FlopCounterMode counts matmul, convolution and attention only, and "
                  f"{', '.join(uncounted)} ran uncounted; give flops(**dims) in ref.py for the full count")
        return FlopCount(counted, counted, by_operator, uncounted, reason, complete=False,
                         zero_product_flops=zero_products)
    return FlopCount(counted, counted, by_operator, [], None, zero_product_flops=zero_products)


def zero_product_flops(func: Any, args: tuple) -> int:
    """FLOPs of a matrix product (mm, addmm, bmm, baddbmm) whose multiply-adds have a zero operand.

    A product with a zero factor adds nothing, so a kernel may skip it: of A @ B it must do, for each k,
    one multiply-add per nonzero of A's column k times nonzero of B's row k. A lower-triangular pair of
    4096 x 4096 operands needs about a sixth of the dense count, a diagonal one 1/4096 of it; counting
    them dense put honest kernels past the physical floor. Meta tensors (shapes only) count as dense.
    """
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    positions = _PRODUCT_OPERANDS.get(getattr(func.overloadpacket, "__name__", ""))
    if positions is None or len(args) <= max(positions):
        return 0
    first, second = args[positions[0]], args[positions[1]]
    if not all(isinstance(t, torch.Tensor) and not t.is_meta and t.is_floating_point() for t in (first, second)):
        return 0
    with _disable_current_modes():
        column_nonzeros = (first != 0).sum(dim=-2, dtype=torch.float64)  # per k: nonzeros in first's column k
        row_nonzeros = (second != 0).sum(dim=-1, dtype=torch.float64)  # per k: nonzeros in second's row k
        useful = int((column_nonzeros * row_nonzeros).sum().item())
    dense = first.numel() * second.shape[-1]  # (batch x) n x k x m multiply-adds
    return 2 * (dense - useful)
