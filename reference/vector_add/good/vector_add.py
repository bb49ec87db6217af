"""Vector add in Triton: one program per BLOCK elements, the tail masked off.

Known good: matches reference/vector_add/ref.py at every shape, in float32 and float16
(bfloat16 too on a GPU; the Triton interpreter on a CPU has no bfloat16).
"""

import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def run_kernel(x, y, out, n, **_):
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
