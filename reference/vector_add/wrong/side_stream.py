"""WRONG (another torch stream, not joined): runs its Triton kernel on a torch stream of its own.

`with torch.cuda.stream(side)` makes Triton (and torch) launch on `side`, which neither waits
for the stream the call was made on nor is waited for by it. What must report it:
- correctness_check on a GPU: FAIL (exit 1): in its profiled call the kernel starts during the
  fence queued on the caller's stream ("vector_add_kernel launched on stream S without waiting
  for the caller's stream");
- under the Triton interpreter (no GPU): PASS (exit 0): there are no streams on a CPU, so the
  kernel runs inline, and nothing is profiled (the report says so).
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024
_side_streams: dict = {}


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def run_kernel(x, y, out, n, **_):
    grid = (triton.cdiv(n, BLOCK),)
    if not x.is_cuda:  # the interpreter: no streams to get wrong
        vector_add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
        return
    side = _side_streams.setdefault(x.device, torch.cuda.Stream(x.device))
    with torch.cuda.stream(side):  # the bug: no side.wait_stream(caller) before, no caller.wait_stream(side) after
        vector_add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
