"""Decode attention, split along the KV length (flash-decoding), in two passes, its math on the CUDA cores.

Pass 1: one program per (batch, KV head, split) reads its slice of K and V once for all the query
heads that share them, and writes each head's running max, sum and unnormalised output (float32).
Pass 2: one program per (batch, query head) merges the splits, each rescaled by
exp(its max - the global max). The split length is chosen so pass 1 has about four programs per SM.
D must be a power of two. Logits, probabilities and sums stay in float32, computed as broadcast products
reduced across the program's threads: the reductions go through shared memory, which bounds it
(`good/decode_attention.py` moves them to the tensor cores).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def split_kernel(q_ptr, k_ptr, v_ptr, m_ptr, total_ptr, acc_ptr, L, scale, num_splits,
                 HQ: tl.constexpr, HKV: tl.constexpr, GROUP: tl.constexpr, GROUP_PAD: tl.constexpr,
                 D: tl.constexpr, SPLIT: tl.constexpr, BLOCK_N: tl.constexpr):
    stream = tl.program_id(0)  # batch * HKV + KV head
    split = tl.program_id(1)
    batch = stream // HKV
    heads = (stream % HKV) * GROUP + tl.arange(0, GROUP_PAD)  # the query heads this KV head serves
    head_ok = tl.arange(0, GROUP_PAD) < GROUP
    dims = tl.arange(0, D)
    q = tl.load(q_ptr + (batch * HQ + heads)[:, None] * D + dims[None, :], mask=head_ok[:, None], other=0.0)
    q = q.to(tl.float32) * scale
    m = tl.full([GROUP_PAD], float("-inf"), tl.float32)
    total = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, D], tl.float32)
    cache = stream.to(tl.int64) * L * D
    for offset in range(0, SPLIT, BLOCK_N):
        keys = split * SPLIT + offset + tl.arange(0, BLOCK_N)
        key_ok = keys < L
        rows = cache + keys[:, None] * D + dims[None, :]
        k = tl.load(k_ptr + rows, mask=key_ok[:, None], other=0.0).to(tl.float32)
        logits = tl.sum(q[:, None, :] * k[None, :, :], axis=2)  # [GROUP_PAD, BLOCK_N]
        logits = tl.where(key_ok[None, :], logits, float("-inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))  # finite: the split's first key is always in range
        alpha = tl.exp(m - m_new)
        p = tl.exp(logits - m_new[:, None])
        v = tl.load(v_ptr + rows, mask=key_ok[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        total = total * alpha + tl.sum(p, axis=1)
        m = m_new
    partial = (batch * HQ + heads) * num_splits + split
    tl.store(m_ptr + partial, m, mask=head_ok)
    tl.store(total_ptr + partial, total, mask=head_ok)
    tl.store(acc_ptr + partial[:, None] * D + dims[None, :], acc, mask=head_ok[:, None])


@triton.jit
def merge_kernel(m_ptr, total_ptr, acc_ptr, o_ptr, num_splits, D: tl.constexpr, SPLITS_PAD: tl.constexpr):
    row = tl.program_id(0)  # batch * HQ + query head
    splits = tl.arange(0, SPLITS_PAD)
    split_ok = splits < num_splits
    dims = tl.arange(0, D)
    m = tl.load(m_ptr + row * num_splits + splits, mask=split_ok, other=float("-inf"))
    total = tl.load(total_ptr + row * num_splits + splits, mask=split_ok, other=0.0)
    acc = tl.load(acc_ptr + (row * num_splits + splits)[:, None] * D + dims[None, :], mask=split_ok[:, None],
                  other=0.0)
    weight = tl.where(split_ok, tl.exp(m - tl.max(m, axis=0)), 0.0)
    out = tl.sum(acc * weight[:, None], axis=0) / tl.sum(total * weight, axis=0)
    tl.store(o_ptr + row * D + dims, out.to(o_ptr.dtype.element_ty))


def split_length(streams: int, L: int, sm_count: int, block_n: int) -> int:
    """A power-of-two split (at least one block) giving about four pass-1 programs per SM."""
    wanted = max(1, (4 * sm_count) // streams)
    return max(block_n, triton.next_power_of_2(triton.cdiv(L, wanted)))


def run_kernel(q, k, v, o, B, HQ, HKV, L, D, **_):
    block_n = 16
    group = HQ // HKV
    sm_count = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 8
    split = split_length(B * HKV, L, sm_count, block_n)
    num_splits = triton.cdiv(L, split)
    m = torch.empty(B * HQ * num_splits, device=q.device, dtype=torch.float32)
    total = torch.empty_like(m)
    acc = torch.empty(B * HQ * num_splits, D, device=q.device, dtype=torch.float32)
    split_kernel[(B * HKV, num_splits)](q, k, v, m, total, acc, L, D**-0.5, num_splits, HQ=HQ, HKV=HKV, GROUP=group,
                                       GROUP_PAD=triton.next_power_of_2(group), D=D, SPLIT=split,
                                       BLOCK_N=block_n, num_warps=4)
    merge_kernel[(B * HQ,)](m, total, acc, o, num_splits, D=D, SPLITS_PAD=triton.next_power_of_2(num_splits),
                            num_warps=4)
