"""WRONG (crash): run_kernel reads address 0 through ctypes, so the process dies of SIGSEGV.

The checker must survive it and report a solution fault (exit 3) that says the child
process crashed (killed by signal 11, SIGSEGV). It is the stand-in for any kernel or
host code that takes the process down; it crashes the same way on a CPU and a GPU.
"""

import ctypes

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def run_kernel(x, y, out, n, **_):
    ctypes.string_at(0)  # the bug: a null pointer dereference in the solution's own process
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
