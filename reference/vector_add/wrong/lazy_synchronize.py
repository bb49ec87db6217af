"""WRONG (lazy output through torch.cuda.synchronize): the call only remembers its arguments.

The module replaces torch.cuda.synchronize with a version that first computes every pending
sum, then synchronises; run_kernel launches nothing. A harness that synchronises before reading
the outputs would see correct values, and a timer that records events around the call would
time nothing. What must report it: the tampering check, right after loading the solution:
correctness_check (and benchmark.py) exit 3, kind `tampering`, "the solution replaced
torch.cuda.synchronize (found after loading the solution)", on a GPU and under the Triton
interpreter alike. (Were the patch made inside the call, the check after the call would name it;
and on a GPU the launch check would find the call launched no kernel.)
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
_pending: list = []
_real_synchronize = torch.cuda.synchronize


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def _synchronize_after_the_work(*args, **kwargs):
    while _pending:
        x, y, out, n = _pending.pop()
        vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    return _real_synchronize(*args, **kwargs)


torch.cuda.synchronize = _synchronize_after_the_work  # the cheat


def run_kernel(x, y, out, n, **_):
    _pending.append((x, y, out, n))
