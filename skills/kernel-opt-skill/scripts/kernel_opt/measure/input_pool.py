"""Fresh inputs for every timed call: a pool of input buffers and value sets, rotated between calls.

A solution that caches its output keyed on its inputs' pointers, tensor versions or contents
(reference/vector_add/wrong/memoized_by_*) wins any benchmark that times one input set over and over.
So the timed calls rotate: call i runs on buffer set i mod S (its own input and output
buffers) with value set i mod V copied into its inputs first, V = S + 1. Consecutive calls
never share buffers (S >= 2) nor values; since S and V are coprime, each buffer set receives
every value set in turn, so a cache keyed on a pointer returns the output of other values
(wrong, and the check after timing sees it), and one keyed on a version or on contents misses
(the call pays its true cost). The copy and the poisoning of the outputs happen before the
call, outside the timed region and before the L2 flush, so an honest kernel is timed exactly as
before. After timing, every buffer set's outputs are compared with the reference for the value
set that buffer set last received: the last call of each buffer set is checked.

Pure bookkeeping: the tensors, the copy and the poison are passed in (tests use fakes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernel_opt.run.memory import solution_code

# Buffer sets the timed calls rotate through. Two suffice for "no call sees the previous call's
# buffers"; a third keeps that true for a cache that remembers two entries. Value sets are one
# more (coprime with the buffer sets, see the module docstring).
POOL_BUFFER_SETS = 3
# The pool takes at most this share of the GPU memory free once the problem is allocated: the
# same half that measure/benchmark_child.py leaves for the same-size copy, so the two fit together
# with the allocator's slack. Where a full pool does not fit, smaller ones are tried, down to one
# buffer set with two alternating value sets (same pointers, new values every call).
POOL_MEMORY_FRACTION = 0.5
_CANDIDATES = ((POOL_BUFFER_SETS, POOL_BUFFER_SETS + 1), (2, 3), (1, 2))


@dataclass(frozen=True)
class PoolPlan:
    buffer_sets: int
    value_sets: int
    extra_bytes: int  # device memory the pool adds to the problem's own
    expected_after_timing: bool = False  # each value set's expected outputs computed when its outputs are checked

    def note(self) -> str:
        if self.value_sets == 1:
            return ("the timed calls could not rotate inputs (no room beside the problem for a second set): every "
                    "timed call saw the same inputs, so output caching is not excluded by this run")
        later = ("; the reference's outputs and float64 truth for each value set were computed after the timed calls, "
                 "one value set at a time as its outputs were checked (no room to keep them all beside the pool)"
                 if self.expected_after_timing else "")
        return (f"the timed calls rotated through {self.buffer_sets} input/output buffer set(s) and {self.value_sets} "
                f"value sets ({self.extra_bytes / 1e6:.1f} MB beside the problem): no call saw the previous call's "
                f"inputs, and each buffer set's last outputs were checked against the reference for its values{later}")


def plan_pool(input_bytes: int, output_bytes: int, expectation_bytes: int, free_bytes: int,
              versions: int = 1, defer_expected: bool = False) -> PoolPlan:
    """The largest pool that fits in POOL_MEMORY_FRACTION of the free memory.

    Args:
        input_bytes, output_bytes: one set of the problem's input and output tensors.
        expectation_bytes: the reference's expected outputs (and float64 truth) for one value set.
        versions: solutions timed (2 when another version is compared): each rotates its own buffer
            sets; the value sets and their expected outputs are shared. The problem's own set is the
            first buffer set of the first version.
        defer_expected: where a pool fits only without its expected outputs, compute each value set's after the
            timed calls, when its outputs are checked (the float64 truth then planned to fit: check/truth.py),
            rather than rotate fewer sets. Recomputing on the GPU beats keeping them on the host: at KernelBench's
            stock sizes (19 GB per value set) the copies there and back took minutes.
    """
    budget = int(free_bytes * POOL_MEMORY_FRACTION)
    for buffer_sets, value_sets in _CANDIDATES:
        buffers = (versions * buffer_sets - 1) * (input_bytes + output_bytes) + value_sets * input_bytes
        if buffers + value_sets * expectation_bytes <= budget:
            return PoolPlan(buffer_sets, value_sets, buffers + value_sets * expectation_bytes)
        if buffers <= budget and defer_expected:
            return PoolPlan(buffer_sets, value_sets, buffers, expected_after_timing=True)
    return PoolPlan(1, 1, 0)


class InputRotation:
    """Which buffer set and value set each call uses, and what each buffer set's outputs came from.

    `before_call` (the timers' before_each) copies the next value set into the next buffer set
    and poisons its outputs; `call` (the timed callable) runs the solution on that buffer set.
    """

    def __init__(self, buffers: list[dict[str, Any]], value_sets: list[dict[str, Any]], outputs: list[str],
                 calls: list[Callable[[], None]], copy: Callable[[Any, Any], None],
                 poison: Callable[[Any], None], deliver: Callable[[Callable[[], None]], None] | None = None):
        if not buffers or len(buffers) != len(calls) or not value_sets:
            raise ValueError("a rotation needs buffer sets, one call per buffer set, and value sets")
        self.buffers, self.value_sets, self.outputs, self.calls = buffers, value_sets, outputs, calls
        self._copy, self._poison = copy, poison
        # For solutions that return their outputs (solution.returning_call.ReturningCall): copy a call's result into
        # its buffer set before the next call can overwrite it, outside the timed region like the rest.
        self._deliver = deliver or (lambda call: None)
        self.index = 0
        self.current = 0
        self.loaded: dict[int, int] = {}  # buffer set -> value set in its inputs now
        self.produced: dict[int, int] = {}  # buffer set -> value set its outputs were computed from
        self._load(0, 0)

    def _load(self, buffer: int, values: int) -> None:
        for name, source in self.value_sets[values].items():
            self._copy(self.buffers[buffer][name], source)
        self.loaded[buffer] = values

    def before_call(self) -> None:
        """Outside the timed region: the last call's returned outputs delivered, then the next buffer set gets the
        next value set, its outputs poisoned."""
        self._deliver_current()
        self.index += 1
        buffer, values = self.index % len(self.buffers), self.index % len(self.value_sets)
        self._load(buffer, values)
        for name in self.outputs:
            self._poison(self.buffers[buffer][name])
        self.produced.pop(buffer, None)  # poisoned: nothing computed there yet
        self.current = buffer

    @solution_code  # an allocation that fails below this call is the solution's (run/memory.py)
    def call(self) -> None:
        """The timed callable: the solution on the current buffer set."""
        self.calls[self.current]()
        self.produced[self.current] = self.loaded[self.current]

    def results(self) -> list[tuple[int, int]]:
        """(buffer set, value set) for every buffer set whose outputs a call left: what to check."""
        self._deliver_current()
        return sorted(self.produced.items())

    def _deliver_current(self) -> None:
        if self.current in self.produced:
            self._deliver(self.calls[self.current])


def copy_unless_same(destination, source) -> None:
    """A value set into a buffer set; buffer set 0 may already hold it (the problem instance)."""
    if destination is not source:
        destination.copy_(source)
