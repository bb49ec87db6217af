"""A 3x3 convolution, an extra per-channel bias, ReLU and a scale (KernelBench level 2 kind: convolution).

Estimate (tools/kernelbench_estimate.py, H100: 51.2 TFLOP/s strict fp32, 3.03 TB/s): the convolution
(4 x 64 -> 128 channels, 128 x 128, 9.7 GFLOP) takes 189 us at the matmul rate (cuDNN's strict fp32
kernels reach less), then the bias add, ReLU and scale each read and write 34 MB (22 us each): about
255 us. torch.compile keeps cuDNN's convolution and fuses the three into one pass: expected hard,
since the convolution dominates.
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.bias = nn.Parameter(0.1 * torch.randn(bias_shape))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.conv(x)
        x = x + self.bias
        x = torch.relu(x)
        return x * self.scaling_factor


batch_size = 4
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3
bias_shape = (out_channels, 1, 1)
scaling_factor = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape, scaling_factor]
