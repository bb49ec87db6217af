import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
                  stride_xm, stride_xk, stride_wn, stride_wk, stride_ym, stride_yn,
                  HAS_BIAS: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # one BLOCK_M x BLOCK_N tile of y = x @ W^T (+ b) per program, fp32 throughout
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + kk[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + kk[:, None] * stride_wk,
                    mask=(offs_n[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    if HAS_BIAS:
        bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)
        acc += bias[None, :]
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def _gelu(x):
    return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))


@triton.jit
def lse_act_kernel(y_ptr, out_ptr, N, stride_ym, BLOCK: tl.constexpr):
    # one program per row: logsumexp over the row, then leaky, leaky, gelu, gelu
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m_run = tl.full((BLOCK,), float("-inf"), dtype=tl.float32)
    s_run = tl.zeros((BLOCK,), dtype=tl.float32)
    for n0 in range(0, N, BLOCK):
        nn_ = n0 + offs
        v = tl.load(y_ptr + row * stride_ym + nn_, mask=nn_ < N, other=float("-inf"))
        m_new = tl.maximum(m_run, v)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s_run = s_run * tl.exp(m_run - m_safe) + tl.exp(v - m_safe)
        m_run = m_new
    m = tl.max(m_run, axis=0)
    s = tl.sum(s_run * tl.exp(m_run - m), axis=0)
    r = m + tl.log(s)
    r = tl.where(r > 0, r, r * 0.01)
    r = tl.where(r > 0, r, r * 0.01)
    r = _gelu(r)
    r = _gelu(r)
    tl.store(out_ptr + row, r)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=bias)

    def forward(self, x):
        w = self.linear.weight
        b = self.linear.bias
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        BM, BN, BK = 64, 64, 32
        grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
        linear_kernel[grid](x, w, b if b is not None else w, y, M, N, K,
                            x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                            y.stride(0), y.stride(1),
                            HAS_BIAS=b is not None, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                            num_warps=4, num_stages=3)
        out = torch.empty((M, 1), device=x.device, dtype=torch.float32)
        lse_act_kernel[(M,)](y, out, N, y.stride(0), BLOCK=1024, num_warps=4)
        return out
