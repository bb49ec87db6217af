"""WRONG (timer tampering in the call): on its first call, slows time.perf_counter down a thousandfold.

Loading it changes nothing, so only a check after the call sees it: from then on, every host
timing (and anything measured with perf_counter) reads a thousandth of the real time. What must
report it: correctness_check (and benchmark.py): exit 3, kind `tampering`, "the solution
replaced time.perf_counter (found after the solution's call)", on a GPU and under the Triton
interpreter alike.
"""

import time

import triton
import triton.language as tl

BLOCK = 1024
_real_perf_counter = time.perf_counter


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def run_kernel(x, y, out, n, **_):
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    time.perf_counter = lambda: _real_perf_counter() / 1000.0  # the cheat
