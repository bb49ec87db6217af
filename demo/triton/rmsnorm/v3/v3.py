"""RMSNorm in Triton, written from ref.py's PyTorch: persistent programs over rows.

A fixed grid of programs (PROGRAMS_PER_SM per SM, never more than the rows) loads the weight
once and then walks rows pid, pid + programs, ...; each row is held whole in registers, float32
math, one rounding at the store, in the reference's order ((x * rstd) * weight). Padding lanes
load 0, so they add nothing to the sum of squares; the mean divides by the real N.
v3: persistent programs that load the weight once (v0: one program per row, weight reloaded per row).
"""

import torch
import triton
import triton.language as tl

# Holding the weight across the loop takes 80 registers per thread at 8 warps (v0: 54), which fits
# 3 programs of 256 threads per SM; capping at 64 (maxnreg) spills.
PROGRAMS_PER_SM = 3


@triton.jit
def rmsnorm_kernel(x_ptr, weight_ptr, y_ptr, M, N, eps, BLOCK: tl.constexpr):
    columns = tl.arange(0, BLOCK)
    mask = columns < N
    # Held in its own dtype across the loop (half the registers of float32), widened per use.
    weight = tl.load(weight_ptr + columns, mask=mask, other=0.0)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        row_start = tl.cast(row, tl.int64) * N
        x = tl.load(x_ptr + row_start + columns, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
        tl.store(y_ptr + row_start + columns, (x * rstd * weight.to(tl.float32)).to(y_ptr.dtype.element_ty), mask=mask)


def run_kernel(x, weight, y, M, N, eps, **_):
    block = triton.next_power_of_2(N)
    num_warps = 4 if block <= 2048 else 8 if block <= 8192 else 16
    sm_count = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
    programs = min(M, sm_count * PROGRAMS_PER_SM)
    rmsnorm_kernel[(programs,)](x, weight, y, M, N, eps, BLOCK=block, num_warps=num_warps)
