"""Known good: a Triton kernel on a torch side stream, joined to the caller's stream both ways.

The side stream waits for the caller's stream before the launch (the inputs are ready) and
the caller's stream waits for the side stream after it (the output is ready), and the output's
memory is recorded as used on the side stream. correctness_check must PASS it (exit 0) on a GPU
and under the interpreter, listing vector_add_kernel on another stream on a GPU.
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
    if not x.is_cuda:
        vector_add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
        return
    caller = torch.cuda.current_stream(x.device)
    side = _side_streams.setdefault(x.device, torch.cuda.Stream(x.device))
    side.wait_stream(caller)
    with torch.cuda.stream(side):
        vector_add_kernel[grid](x, y, out, n, BLOCK=BLOCK)
    for tensor in (x, y, out):
        tensor.record_stream(side)
    caller.wait_stream(side)
