"""v3: v2 (TMA + fused GroupNorm/Swish epilogue) made persistent.

v2's best tile (128x256) gives 8*32 = 256 tiles = 1.94 waves on 132 SMs, and every CTA pays a full
pipeline fill + a heavy epilogue (reshape, 2 reductions, 2 sigmoids) with the tensor cores idle.
Here a grid of min(#SMs, #tiles) CTAs loops over tiles; with `tl.range(..., flatten=True)` the
software pipeliner flattens the tile and K loops so the TMA loads of the next tile are issued while
the current tile's epilogue runs. Autotune also decides flatten on/off.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

_NUM_SMS = None


def _num_sms():
    global _NUM_SMS
    if _NUM_SMS is None:
        _NUM_SMS = torch.cuda.get_device_properties(0).multi_processor_count if torch.cuda.is_available() else 4
    return _NUM_SMS


def _set_block_shapes(nargs):
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["x_desc"].block_shape = [bm, bk]
    nargs["w_desc"].block_shape = [bn, bk]


def _configs():
    cfgs = []
    for bm, bn, bk, s, w, fl in [
        (128, 256, 32, 3, 8, True), (128, 256, 32, 4, 8, True), (128, 256, 32, 3, 8, False),
        (128, 256, 32, 4, 8, False), (128, 128, 32, 5, 8, True), (128, 128, 64, 3, 8, True),
        (256, 128, 32, 4, 8, True),
    ]:
        cfgs.append(triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "FLATTEN": fl},
                                  num_stages=s, num_warps=w, pre_hook=_set_block_shapes))
    return cfgs


@triton.jit
def _tile_pid(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.autotune(configs=_configs(), key=["M", "N", "K"])
@triton.jit
def fused_gemm_gn_swish_kernel(
    x_desc, w_desc, b_ptr, gamma_ptr, beta_ptr, mw_ptr, out_ptr,
    M, N, eps, stride_om, stride_on,
    K: tl.constexpr,
    GROUP_SIZE: tl.constexpr, NUM_SMS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    FLATTEN: tl.constexpr,
):
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles: tl.constexpr = (K + BLOCK_K - 1) // BLOCK_K
    NG: tl.constexpr = BLOCK_N // GROUP_SIZE
    tile_id_c = start_pid - NUM_SMS  # epilogue tile id recomputed (keeps fewer values live across loops)

    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=FLATTEN):
        pid_m, pid_n = _tile_pid(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = x_desc.load([off_m, ki * BLOCK_K])
            b = w_desc.load([off_n, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)  # TF32 tensor cores, fp32 accumulate

        tile_id_c += NUM_SMS
        pid_m, pid_n = _tile_pid(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        mask_m = offs_m < M
        mask_n = offs_n < N
        bias = tl.load(b_ptr + offs_n, mask=mask_n, other=0.0)
        acc = acc + bias[None, :]
        a3 = tl.reshape(acc, (BLOCK_M, NG, GROUP_SIZE))
        mean = tl.sum(a3, axis=2) / GROUP_SIZE
        d = a3 - mean[:, :, None]
        var = tl.sum(d * d, axis=2) / GROUP_SIZE
        rstd = 1.0 / tl.sqrt(var + eps)
        y = tl.reshape(d * rstd[:, :, None], (BLOCK_M, BLOCK_N))
        gamma = tl.load(gamma_ptr + offs_n, mask=mask_n, other=1.0)
        beta = tl.load(beta_ptr + offs_n, mask=mask_n, other=0.0)
        mw = tl.load(mw_ptr + offs_n, mask=mask_n, other=0.0)
        y = y * gamma[None, :] + beta[None, :]
        y = y * tl.sigmoid(y)
        y = y * mw[None, :]
        y = y * tl.sigmoid(y)
        out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
        tl.store(out_ptrs, y, mask=mask_m[:, None] & mask_n[None, :])


def fused_forward(x, weight, bias, gamma, beta, mw, num_groups, eps):
    M, K = x.shape
    N = weight.shape[0]
    gs = N // num_groups
    assert N % num_groups == 0 and 32 % gs == 0  # every BLOCK_N (>=128) holds whole groups
    out = torch.empty((M, N), device=x.device, dtype=torch.float32)
    dummy = [8, 8]  # real block shapes are set by the autotune pre_hook
    x_desc = TensorDescriptor.from_tensor(x, dummy)
    w_desc = TensorDescriptor.from_tensor(weight, dummy)
    nsm = _num_sms()
    grid = lambda meta: (min(nsm, triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)
    fused_gemm_gn_swish_kernel[grid](
        x_desc, w_desc, bias, gamma, beta, mw, out, M, N, eps, out.stride(0), out.stride(1),
        K=K, GROUP_SIZE=gs, NUM_SMS=nsm)
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, num_groups, multiply_weight_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)
        self.multiply_weight = nn.Parameter(torch.randn(multiply_weight_shape))

    def forward(self, x):
        return fused_forward(x.contiguous(), self.gemm.weight.contiguous(), self.gemm.bias,
                             self.group_norm.weight, self.group_norm.bias, self.multiply_weight,
                             self.group_norm.num_groups, self.group_norm.eps)
