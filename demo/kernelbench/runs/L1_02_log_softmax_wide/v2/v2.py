"""v2: log_softmax, persistent: one 16-warp program per SM walks rows (row = pid, pid + grid, ...), an online
max and sum over the row in chunks, then a write pass that walks the row's chunks in reverse order.

v2 adds L2 eviction priorities (the only change from v1): the statistics pass loads x with evict_last (the row
must survive until its re-read), the write pass re-reads x with evict_first (last use) and stores y streaming
(.cs: evict-first), so the 34 MB of output written while rows are in flight no longer pushes the rows out.
v1's ncu read 411 MB from DRAM, 1.53x the input: only ~47% of the re-read hit L2.

v0 launched 1024 programs, ~6 resident per SM (~790 rows, ~200 MB, in flight), so by the time a row's write
pass re-read it the row had left the 50 MB L2: ncu counted 2.00x the input read from DRAM. Here only one row per
SM is in flight (132 x 256 KB = 34 MB) and the write pass starts from the chunks read last, so the re-read
is served by L2 and DRAM sees one read and one write.

The row length is a compile-time constant (one compile per size): the loop bounds are known when the kernel
compiles, which also lets Triton 3.6's interpreter run it under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, n_rows, n_cols: tl.constexpr, BLOCK: tl.constexpr):
    N_CHUNKS: tl.constexpr = (n_cols + BLOCK - 1) // BLOCK
    pid = tl.program_id(0).to(tl.int64)  # row offsets exceed 2**31 elements at the real size
    n_progs = tl.num_programs(0)
    for row in range(pid, n_rows, n_progs):
        x_row = x_ptr + row * n_cols
        y_row = y_ptr + row * n_cols
        running_max = tl.full((BLOCK,), -float("inf"), tl.float32)
        running_sum = tl.zeros((BLOCK,), tl.float32)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"), eviction_policy="evict_last")
            new_max = tl.maximum(running_max, x)
            # lanes that have seen only -inf keep a sum of 0 (exp(-inf - -inf) would be NaN)
            rescale = tl.where(new_max == -float("inf"), 0.0, tl.exp(running_max - new_max))
            added = tl.where(new_max == -float("inf"), 0.0, tl.exp(x - new_max))
            running_sum = running_sum * rescale + added
            running_max = new_max
        row_max = tl.max(running_max, axis=0)
        lane_scale = tl.where(running_max == -float("inf"), 0.0, tl.exp(running_max - row_max))
        log_sum = tl.log(tl.sum(running_sum * lane_scale, axis=0))
        # write pass in reverse chunk order: the chunks read last are still in L2
        for i in range(0, N_CHUNKS):
            cols = (N_CHUNKS - 1 - i) * BLOCK + tl.arange(0, BLOCK)
            mask = cols < n_cols
            x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_first")
            tl.store(y_row + cols, x - row_max - log_sum, mask=mask, cache_modifier=".cs")


_NUM_SMS = {}


def _num_sms(device):
    if device.type != "cuda":
        return 4
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _NUM_SMS:
        _NUM_SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _NUM_SMS[index]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        rows, cols = x.shape
        block = min(triton.next_power_of_2(cols), 8192)
        grid = (max(1, min(rows, _num_sms(x.device))),)
        log_softmax_kernel[grid](x, y, rows, cols, BLOCK=block, num_warps=16)
        return y
