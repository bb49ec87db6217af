"""WRONG (CLI shape only): assumes n is a multiple of BLOCK, so the tail is never written.

No mask and a grid of n // BLOCK programs, so it is right whenever n % 1024 == 0, as at
the default n = 1 << 20. The checker must FAIL it (exit 1) on every SHAPES entry
(n=1, 127, 128, 129, 4097): their last n % 1024 elements keep the NaN fill, and below 1024
the grid is empty and nothing is written. A checker that tests only the CLI shape passes it.
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets) + tl.load(y_ptr + offsets))


def run_kernel(x, y, out, n, **_):
    # The bug: floor division drops the last n % BLOCK elements. An empty grid launches nothing.
    vector_add_kernel[(n // BLOCK,)](x, y, out, BLOCK=BLOCK)
