"""A solution that returns its outputs (a KernelBench ModelNew) instead of writing them into buffers.

The checks and the timers read output buffers; `ReturningCall` keeps what such a solution
returned and `deliver_outputs` copies it into the buffers, outside any timed region.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel_opt.core.errors import SolutionError


class ReturningCall:
    """A prepared call of a solution that returns its outputs (a KernelBench ModelNew) instead of writing them.

    Calling it only keeps what the solution returned, so a timed call times the solution and
    nothing else. `deliver()`, which the harness runs outside any timed region (after a checked
    call, and before the next call on the same buffers), checks what came back (one tensor per
    output, of the buffer's shape, dtype and device, sharing no memory with an input) and copies
    it into the output buffers the checks read. A returned tensor cannot be poisoned before the
    call the way a buffer is; what replaces that: the buffers stay poisoned until a delivery, and
    the reference's released memory is poisoned (solution/kernelbench_problem.py), so returning
    uninitialised memory shows as NaN.

    Whether the solution keeps an output buffer of its own is told by address, once: the first
    call's returned tensors are held while the second call runs, so a caching allocator cannot
    hand their memory back to a solution that allocates a fresh output every call (on the GPU it
    would, and the same address would look like a kept buffer). The same address then means the
    solution returned memory it keeps; `on_reused_memory` is told.
    """

    def __init__(self, function: Callable[[], Any], values: dict[str, Any], outputs: list[str],
                 on_reused_memory: Callable[[], None] | None = None):
        self.function, self.values, self.outputs = function, values, list(outputs)
        self.returned: Any = None
        self._on_reused_memory = on_reused_memory
        self._last_pointers: tuple[int, ...] | None = None
        self._held: list[Any] | None = None  # the first call's returned tensors, alive during the second call
        self._compared = False  # one comparison says it; holding outputs longer would cost memory in every call

    def __call__(self) -> None:
        self.returned = self.function()

    def deliver(self) -> None:
        """Check the last call's returned tensors and copy them into the output buffers (once per call)."""
        import torch

        returned, self.returned = self.returned, None
        if returned is None:
            return
        items = list(returned) if isinstance(returned, (tuple, list)) else [returned]
        if len(items) != len(self.outputs) or not all(isinstance(item, torch.Tensor) for item in items):
            raise SolutionError(f"the solution returned {_returned_text(items)} where the reference returns "
                                f"{len(self.outputs)} tensor(s)", kind="wrong_output")
        inputs = {name: value for name, value in self.values.items()
                  if isinstance(value, torch.Tensor) and name not in self.outputs}
        for name, item in zip(self.outputs, items, strict=True):
            self._check(name, item, self.values[name], inputs)
            self.values[name].copy_(item)
        pointers = tuple(item.untyped_storage().data_ptr() for item in items)
        if self._held is not None:  # the previous outputs were alive during this call: no allocator reused them
            if pointers == self._last_pointers and self._on_reused_memory is not None:
                self._on_reused_memory()
            self._held, self._compared = None, True
        elif not self._compared:
            self._held = items
        self._last_pointers = pointers

    @staticmethod
    def _check(name: str, item: Any, buffer: Any, inputs: dict[str, Any]) -> None:
        for what, got, wanted in (("shape", list(item.shape), list(buffer.shape)), ("dtype", item.dtype, buffer.dtype),
                                  ("device", item.device, buffer.device)):
            if got != wanted:
                raise SolutionError(f"output {name!r}: the solution returned {what} {got}, the reference {wanted}",
                                    kind="wrong_output")
        pointer = item.untyped_storage().data_ptr()
        shared = [input_name for input_name, value in inputs.items() if value.untyped_storage().data_ptr() == pointer]
        if shared and item.numel() > 0:
            raise SolutionError(f"output {name!r}: the solution returned memory of its input {shared[0]!r} (a view or "
                                "the input itself), not a result of its own", kind="output_aliases_input")


def _returned_text(items: list[Any]) -> str:
    kinds = ", ".join(type(item).__name__ for item in items[:4])
    return f"{len(items)} value(s) ({kinds})"


def deliver_outputs(call: Callable[[], Any]) -> None:
    """Outside a timed region: copy what a ReturningCall's solution returned into its buffers; nothing for a call
    that writes its buffers itself."""
    if isinstance(call, ReturningCall):
        call.deliver()
