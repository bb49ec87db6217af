"""2-D max pooling with a 7x7 window, stride 2 (KernelBench level 1 kind: pooling).

Estimate (tools/kernelbench_estimate.py, H100 at 3.03 TB/s): ATen's max_pool2d_with_indices reads the
268 MB float32 input and writes a 67 MB output plus 134 MB of int64 indices nobody asked for: 470 MB,
155 us, a floor (each output takes 49 loads through L1). torch.compile does not generate this pooling
(Inductor falls back to ATen for windows over 25 elements), so a kernel that writes no indices (336 MB,
111 us) and shares loads between neighbouring windows can beat both.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


batch_size = 16
channels = 64
height = 256
width = 256
kernel_size = 7
stride = 2
padding = 3


def get_inputs():
    # mostly negative, so windows over the padding are often all negative: a kernel that pads with 0
    # instead of leaving the padding out returns 0 there and fails
    return [torch.randn(batch_size, channels, height, width) - 1.5]


def get_init_inputs():
    return [kernel_size, stride, padding]
