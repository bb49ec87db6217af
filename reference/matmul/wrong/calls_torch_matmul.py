"""Library only (calls the reference's own op): run_kernel is torch.matmul, in strict float32.

The same GEMM as the reference, so correctness_check must PASS it (exit 0); on a GPU its
launch listing shows only cuBLAS's kernel (`own_kernels: 0`), and correctness.md and
benchmark.md say plainly that no kernel of the solution's own ran: what a benchmark times here
is cuBLAS. Under the Triton interpreter (no GPU) it passes and nothing is profiled.
"""

import torch


def run_kernel(a, b, c, **_):
    torch.matmul(a, b, out=c)
