"""An honest Triton solution for L2_linear_zero_bias_relu in this project's contract: the Model's weights by name.

run_kernel receives forward's input `x`, the Model's `linear.weight` and `linear.bias` as `linear_weight`
and `linear_bias` (state_dict keys with dots made underscores), the output buffer `output` and the module
constants as sizes. One program per 32 x 32 output tile, IEEE float32 products, the bias added and the
ReLU applied in the epilogue. K (in_features) is a constexpr, so the loop bound is known when the kernel
compiles (and the Triton interpreter under NumPy 2.4 runs it, triton-lang/triton#9171).
"""

import triton
import triton.language as tl


@triton.jit
def linear_bias_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K: tl.constexpr, BLOCK_M: tl.constexpr,
                            BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, K, BLOCK_K):
        ks = start + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rows[:, None] * K + ks[None, :], mask=(rows[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + cols[None, :] * K + ks[:, None], mask=(cols[None, :] < N) & (ks[:, None] < K), other=0.0)
        accumulator += tl.dot(x, w, input_precision="ieee")
    bias = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    result = tl.maximum(accumulator + bias[None, :], 0.0)
    tl.store(out_ptr + rows[:, None] * N + cols[None, :], result, mask=(rows[:, None] < M) & (cols[None, :] < N))


def run_kernel(x, linear_weight, linear_bias, output, in_features, BLOCK=32, **_):
    M, N = output.shape
    grid = (triton.cdiv(M, BLOCK), triton.cdiv(N, BLOCK))
    linear_bias_relu_kernel[grid](x, linear_weight, linear_bias, output, M, N, in_features,
                                  BLOCK_M=BLOCK, BLOCK_N=BLOCK, BLOCK_K=BLOCK)
