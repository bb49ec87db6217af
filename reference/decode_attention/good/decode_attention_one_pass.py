"""Decode attention, one program per (batch, KV head) over the whole KV length: correct, and slow.

Each program reads its K and V once for all the query heads that share them, with an online softmax
in float32. At the default size that is 64 programs for a GPU of 132 SMs (an H100 SXM), each
streaming 8 MiB: most SMs idle, the busy ones bound by how many loads one program keeps in flight.
The starting point of the decode-attention case. D must be a power of two; L is a compile-time
constant (one build per cache length; a runtime loop bound fails under the Triton interpreter with NumPy 2.4).
"""

import triton
import triton.language as tl


@triton.jit
def decode_kernel(q_ptr, k_ptr, v_ptr, o_ptr, scale, L: tl.constexpr, HQ: tl.constexpr, HKV: tl.constexpr,
                  GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr):
    stream = tl.program_id(0)  # batch * HKV + KV head
    batch = stream // HKV
    heads = (stream % HKV) * GROUP + tl.arange(0, GROUP_PAD)
    head_ok = tl.arange(0, GROUP_PAD) < GROUP
    dims = tl.arange(0, D)
    rows_q = (batch * HQ + heads)[:, None] * D + dims[None, :]
    q = tl.load(q_ptr + rows_q, mask=head_ok[:, None], other=0.0).to(tl.float32) * scale
    m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    total = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, D], tl.float32)
    cache = stream.to(tl.int64) * L * D
    for start in range(0, L, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        key_ok = keys < L
        rows = cache + keys[:, None] * D + dims[None, :]
        k = tl.load(k_ptr + rows, mask=key_ok[:, None], other=0.0).to(tl.float32)
        logits = tl.where(key_ok[None, :], tl.sum(q[:, None, :] * k[None, :, :], axis=2), float("-inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(logits - m_new[:, None])
        v = tl.load(v_ptr + rows, mask=key_ok[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        total = total * alpha + tl.sum(p, axis=1)
        m = m_new
    tl.store(o_ptr + rows_q, (acc / total[:, None]).to(o_ptr.dtype.element_ty), mask=head_ok[:, None])


def run_kernel(q, k, v, o, B, HQ, HKV, L, D, **_):
    group = HQ // HKV
    decode_kernel[(B * HKV,)](q, k, v, o, D**-0.5, L=L, HQ=HQ, HKV=HKV, GROUP=group,
                              GROUP_PAD=triton.next_power_of_2(group), D=D, BLOCK_N=16, num_warps=4)
