"""WRONG (tolerance edge): (x + y) * (1 + 4e-5), a relative error of 4 * rtol at float32.

The checker must FAIL it (exit 1) with a max relative error of about 4e-5 > rtol = 1e-5.
Elements with |x + y| < 1/3 still pass (atol = 1e-5 covers them), so a tiny shape such as
n=1 may pass by luck; the default shape and n >= 127 fail. Its twin that must pass is
good/rounding_noise.py (rtol / 4).
"""

import triton
import triton.language as tl

BLOCK = 1024
RELATIVE_ERROR = 4e-5  # 4 * rtol for float32


@triton.jit
def noisy_add_kernel(x_ptr, y_ptr, out_ptr, n, error, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, (x + y) * (1.0 + error), mask=mask)


def run_kernel(x, y, out, n, **_):
    noisy_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, RELATIVE_ERROR, BLOCK=BLOCK)
