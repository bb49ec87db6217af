"""WRONG (precision downgrade in torch): a float32 GEMM run through bfloat16 (tensor cores on a GPU).

run_kernel casts both inputs to bfloat16, multiplies with torch.matmul (cuBLAS's bf16 tensor-core
GEMM on a GPU, fp32 accumulation) and writes the product back as float32: fast, and off by
about 2.4e-3 normwise (bf16 keeps 7 mantissa bits), far above the float32 floor (1e-5). The
checker must FAIL it (exit 1), on a GPU and on the CPU alike (torch's CPU matmul takes bfloat16
inputs; the interpreter's lack of bfloat16 concerns Triton kernels only). It launches no kernel
of its own: on a GPU its listing would say library only.
"""

import torch


def run_kernel(a, b, c, **_):
    c.copy_(torch.matmul(a.to(torch.bfloat16), b.to(torch.bfloat16)))
