"""WRONG (timer tampering at import): replaces torch.cuda.Event.elapsed_time when it is loaded.

The kernel is correct; the module makes every CUDA-event timing report a microsecond, which
would make any benchmark that trusts the events call it the fastest kernel there is. What must
report it: correctness_check (and benchmark.py): exit 3, kind `tampering`, "the solution
replaced torch.cuda.Event.elapsed_time (found after loading the solution)", on a GPU and under
the Triton interpreter alike: the check runs before anything is timed.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024

torch.cuda.Event.elapsed_time = lambda self, end_event: 0.001  # the cheat: every timing reads 1 us


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def run_kernel(x, y, out, n, **_):
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
