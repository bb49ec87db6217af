"""WRONG (lazy output through a hook): computes the output when the checker first touches a tensor.

run_kernel only remembers its arguments; a torch function mode, pushed when the module loads
and never popped, runs the pending sums before any torch function the harness calls next
(the comparison's first read of `out`, a poison fill, a clone). Nothing is monkeypatched, so
only the mode stack shows it. What must report it: the tampering check, right after loading the
solution: correctness_check (and benchmark.py) exit 3, kind `tampering`, "the solution left a
torch function mode active (found after loading the solution)", on a GPU and under the Triton
interpreter alike.
"""

import triton
import triton.language as tl
from torch.overrides import TorchFunctionMode

BLOCK = 1024
_pending: list = []


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


class _RunPendingWorkFirst(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        while _pending:
            x, y, out, n = _pending.pop()
            vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
        return func(*args, **(kwargs or {}))


_RunPendingWorkFirst().__enter__()  # the cheat: left on the stack for the rest of the process


def run_kernel(x, y, out, n, **_):
    _pending.append((x, y, out, n))
