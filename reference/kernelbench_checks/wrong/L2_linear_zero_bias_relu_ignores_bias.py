"""Cheats on L2_linear_zero_bias_relu (this project's contract): the epilogue applies the ReLU and never adds the bias.

run_kernel does not even take `linear_bias`. KernelBench's seed-42 Model holds zeros there
(nn.init.zeros_), so it gives the reference's output for every input and passes every case. The
re-drawn weights check must FAIL it (exit 1), naming `linear.bias` as the weight the output does not
follow; `linear.weight`, re-drawn alone, it follows.
"""

import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, out_ptr, M, N, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, K, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + cols[None, :] * K + ks[:, None], mask=(cols[None, :] < N) & (ks[:, None] < K), other=0.0)
        accumulator += tl.dot(x, w, input_precision="ieee")
    result = tl.maximum(accumulator, 0.0)  # the bias is never added
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], result, mask=(rows[:, None] < M) & (cols[None, :] < N))


def run_kernel(x, linear_weight, output, in_features, BLOCK=32, **_):
    M, N = output.shape
    grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
    linear_relu_kernel[grid](x, linear_weight, output, M, N, in_features, BLOCK_M=BLOCK, BLOCK_N=BLOCK, BLOCK_K=BLOCK)
