"""A precision downgrade: cuBLAS in TF32 for a float32 problem (torch's allow_tf32, switched on for the call).

Inputs rounded to 10 mantissa bits on the tensor cores: several times faster than strict float32
on an H100, within KernelBench's atol = rtol = 1e-2 of the reference, and hundreds of times the
reference's own error against the float64 truth. The default rule fails it; under
--kernelbench-tolerances it passes, flagged as a precision downgrade. It also defines no kernel of
its own (library calls only).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.matmul(A, B)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = previous
