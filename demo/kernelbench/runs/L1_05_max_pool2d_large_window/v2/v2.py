"""v2: 2-D max pooling, no indices. For the problem's 7x7 window at stride 2, a sliding window down the rows: each
program takes a strip of TILE_OH output rows of one (image, channel) plane and a block of output columns, and
loads each input row of the strip once (the row's 7-wide horizontal maxima, 7 strided loads), instead of 7 times:
consecutive output rows share 5 of their 7 input rows, whose horizontal maxima stay in registers.

Window of output row oh = input rows r0 .. r0+6 (r0 = 2*oh - padding) = one row and three pairs:
    h[r0] | max(h[r0+1], h[r0+2]) | max(h[r0+3], h[r0+4]) | max(h[r0+5], h[r0+6])
The next output row drops h[r0], h[r0+1] and adds the pair (r0+7, r0+8): two new input rows per output row.
Rows and columns outside the image load -inf (padding never wins, as in PyTorch).
v2 (against v1): loads are issued in batches, all of a batch before its first max. v1's SASS interleaved each load
with the max that used it (LDG, FMNMX, LDG, FMNMX...), so a warp waited for one input row before it asked for the
next. Now the prologue's five rows (35 loads per thread) and, per loop iteration, four new input rows (28 loads
per thread; an iteration makes two output rows) are in flight together before any max.

Other window sizes or strides use v0's kernel (each output the max over its window's in-bounds inputs).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_loads7(x_plane, row, col0, col_ok, height, width):
    # the 7 loads of x[row, col0 + 0 .. col0 + 6], returned unreduced so that the caller can issue every load
    # of an iteration before its first max
    row_ok = col_ok & (row >= 0) & (row < height)
    base = x_plane + row * width
    v0 = tl.load(base + col0, mask=row_ok & (col0 >= 0) & (col0 < width), other=-float("inf"))
    v1 = tl.load(base + col0 + 1, mask=row_ok & (col0 + 1 >= 0) & (col0 + 1 < width), other=-float("inf"))
    v2 = tl.load(base + col0 + 2, mask=row_ok & (col0 + 2 >= 0) & (col0 + 2 < width), other=-float("inf"))
    v3 = tl.load(base + col0 + 3, mask=row_ok & (col0 + 3 >= 0) & (col0 + 3 < width), other=-float("inf"))
    v4 = tl.load(base + col0 + 4, mask=row_ok & (col0 + 4 >= 0) & (col0 + 4 < width), other=-float("inf"))
    v5 = tl.load(base + col0 + 5, mask=row_ok & (col0 + 5 >= 0) & (col0 + 5 < width), other=-float("inf"))
    v6 = tl.load(base + col0 + 6, mask=row_ok & (col0 + 6 >= 0) & (col0 + 6 < width), other=-float("inf"))
    return v0, v1, v2, v3, v4, v5, v6


@triton.jit
def _max7(v0, v1, v2, v3, v4, v5, v6):
    return tl.maximum(tl.maximum(tl.maximum(v0, v1), tl.maximum(v2, v3)), tl.maximum(tl.maximum(v4, v5), v6))


@triton.jit
def max_pool2d_7s2_kernel(x_ptr, y_ptr, height, width, out_height, out_width, padding,
                          TILE_OH: tl.constexpr, BLOCK_W: tl.constexpr):
    # strips of one plane are neighbouring programs, so the 5 halo rows two strips share are still in L2
    program = tl.program_id(0)
    n_strips = tl.cdiv(out_height, TILE_OH)
    plane = (program // n_strips).to(tl.int64)
    first_out_row = (program % n_strips) * TILE_OH
    out_col = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)
    col_ok = out_col < out_width
    col0 = out_col * 2 - padding
    x_plane = x_ptr + plane * height * width
    y_plane = y_ptr + plane * out_height * out_width
    r0 = first_out_row * 2 - padding
    # prologue: the first five rows of the first window
    p0, p1, p2, p3, p4, p5, p6 = _row_loads7(x_plane, r0, col0, col_ok, height, width)
    q0, q1, q2, q3, q4, q5, q6 = _row_loads7(x_plane, r0 + 1, col0, col_ok, height, width)
    u0, u1, u2, u3, u4, u5, u6 = _row_loads7(x_plane, r0 + 2, col0, col_ok, height, width)
    v0, v1, v2, v3, v4, v5, v6 = _row_loads7(x_plane, r0 + 3, col0, col_ok, height, width)
    w0, w1, w2, w3, w4, w5, w6 = _row_loads7(x_plane, r0 + 4, col0, col_ok, height, width)
    single = _max7(p0, p1, p2, p3, p4, p5, p6)
    pair1_b = _max7(u0, u1, u2, u3, u4, u5, u6)
    pair1 = tl.maximum(_max7(q0, q1, q2, q3, q4, q5, q6), pair1_b)
    pair2_b = _max7(w0, w1, w2, w3, w4, w5, w6)
    pair2 = tl.maximum(_max7(v0, v1, v2, v3, v4, v5, v6), pair2_b)
    tl.static_assert(TILE_OH % 2 == 0)
    for i in range(0, TILE_OH, 2):
        out_row = first_out_row + i
        row = r0 + 2 * i + 5
        a0, a1, a2, a3, a4, a5, a6 = _row_loads7(x_plane, row, col0, col_ok, height, width)
        b0, b1, b2, b3, b4, b5, b6 = _row_loads7(x_plane, row + 1, col0, col_ok, height, width)
        c0, c1, c2, c3, c4, c5, c6 = _row_loads7(x_plane, row + 2, col0, col_ok, height, width)
        d0, d1, d2, d3, d4, d5, d6 = _row_loads7(x_plane, row + 3, col0, col_ok, height, width)
        pair3_b = _max7(b0, b1, b2, b3, b4, b5, b6)
        pair3 = tl.maximum(_max7(a0, a1, a2, a3, a4, a5, a6), pair3_b)
        pair4_b = _max7(d0, d1, d2, d3, d4, d5, d6)
        pair4 = tl.maximum(_max7(c0, c1, c2, c3, c4, c5, c6), pair4_b)
        best = tl.maximum(tl.maximum(single, pair1), tl.maximum(pair2, pair3))
        tl.store(y_plane + out_row * out_width + out_col, best, mask=col_ok & (out_row < out_height))
        best = tl.maximum(tl.maximum(pair1_b, pair2), tl.maximum(pair3, pair4))
        tl.store(y_plane + (out_row + 1) * out_width + out_col, best, mask=col_ok & (out_row + 1 < out_height))
        single = pair2_b
        pair1 = pair3
        pair1_b = pair3_b
        pair2 = pair4
        pair2_b = pair4_b


@triton.jit
def max_pool2d_kernel(x_ptr, y_ptr, height, width, out_height, out_width, stride, padding,
                      KERNEL: tl.constexpr, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)
    outputs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    out_mask = outputs < out_height * out_width
    out_row = outputs // out_width
    out_col = outputs % out_width
    x_plane = x_ptr + plane * height * width
    best = tl.full((BLOCK,), -float("inf"), tl.float32)
    for kh in tl.static_range(KERNEL):
        row = out_row * stride - padding + kh
        row_ok = (row >= 0) & (row < height)
        for kw in tl.static_range(KERNEL):
            col = out_col * stride - padding + kw
            ok = out_mask & row_ok & (col >= 0) & (col < width)
            value = tl.load(x_plane + row * width + col, mask=ok, other=-float("inf"))
            best = tl.maximum(best, value)
    tl.store(y_ptr + plane * out_height * out_width + outputs, best, mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding

    def forward(self, x):
        x = x.contiguous()
        batch, channels, height, width = x.shape
        out_height = (height + 2 * self.padding - self.kernel_size) // self.stride + 1
        out_width = (width + 2 * self.padding - self.kernel_size) // self.stride + 1
        y = torch.empty(batch, channels, out_height, out_width, device=x.device, dtype=x.dtype)
        if self.kernel_size == 7 and self.stride == 2:
            tile_oh = 16
            block_w = min(triton.next_power_of_2(out_width), 128)
            grid = (batch * channels * triton.cdiv(out_height, tile_oh), triton.cdiv(out_width, block_w))
            max_pool2d_7s2_kernel[grid](x, y, height, width, out_height, out_width, self.padding,
                                        TILE_OH=tile_oh, BLOCK_W=block_w, num_warps=4)
            return y
        block = 256
        grid = (batch * channels, triton.cdiv(out_height * out_width, block))
        max_pool2d_kernel[grid](x, y, height, width, out_height, out_width, self.stride, self.padding,
                                KERNEL=self.kernel_size, BLOCK=block, num_warps=4)
        return y
