"""WRONG (tail write): stores a whole block, zeros past n, with no mask on the store.

The Triton twin of tail_write.cu: BLOCK=256, the loads masked, the store not, so the last
program writes zeros past the end of out, up to the grid rounded up to whole blocks. The plain
check sees it only where the tail hits another tensor; compute-sanitizer memcheck must report
it at the store's line of this file (Triton 3.6 compiles with line info unless
TRITON_DISABLE_LINE_INFO=1). GPU only: under the Triton interpreter the store would write past
the end of a host buffer.
"""

import triton
import triton.language as tl

BLOCK = 256


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, tl.where(mask, x + y, 0.0))  # the bug: no mask on the store


def run_kernel(x, y, out, n, **_):
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
