"""Known good, on purpose at the edge: (x + y) * (1 + 2.5e-6), a relative error of rtol/4.

A kernel that sums in a different order or uses a fused multiply-add differs from the
reference by this much or more, so this is what "correct" looks like in practice.
The checker must PASS it at float32 (rtol = 1e-5). Its twin that must fail is
wrong/tolerance_edge.py (4 * rtol).
"""

import triton
import triton.language as tl

BLOCK = 1024
RELATIVE_NOISE = 2.5e-6  # rtol / 4 for float32


@triton.jit
def noisy_add_kernel(x_ptr, y_ptr, out_ptr, n, noise, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x + y) * (1.0 + noise), mask=mask)


def run_kernel(x, y, out, n, **_):
    noisy_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, RELATIVE_NOISE, BLOCK=BLOCK)
