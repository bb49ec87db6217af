"""v2: GroupNorm and SiLU fused into one persistent Triton kernel fed by an ordered work queue, so each group's
second read of the input comes from L2.

The work is v1's two per-plane tasks (one plane = one (image, channel) span in NCHW):
- stats task: read the plane once and write its mean and M2 (sum of squared deviations from that mean; chunks of
  the plane are combined with Chan's parallel formula, each chunk's M2 taken about its own mean, so no
  E[x^2] - E[x]^2 cancellation), then count the plane as done for its group (an atomic with release order);
- norm task: wait until the group's channels_per_group planes are counted, combine their (mean, M2) pairs the same
  way, normalise the plane with the channel's affine and apply SiLU.

v1 ran them as two kernels of 2048 programs: the second kernel re-read the whole 134 MB input from DRAM (ncu:
134 MB read by each kernel). Here 2 programs per SM take tickets from one atomic counter, in the order
stats(group s), norm(group s - LAG) for s = 0, 1, ...: a group's planes are re-read LAG groups (~LAG x 1 MB of
reads and writes) after they were read, well inside the 50 MB L2, and LAG is chosen so the group's stats tasks
(taken by programs that were already running) have finished when its norm tasks are taken.
No deadlock: a task waits only on stats tasks, which hold lower tickets, so a running program took them, and stats
tasks never wait. Under the Triton interpreter programs run one after another: the first program takes every
ticket in order, so its waits are already satisfied.

The plane size is a compile-time constant (one compile per size): the loop bounds are known when the kernel
compiles, which also lets Triton 3.6's interpreter run it under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def group_norm_silu_kernel(x_ptr, stats_ptr, sync_ptr, weight_ptr, bias_ptr, y_ptr, plane_size: tl.constexpr,
                           num_groups, channels, channels_per_group, lag, num_tickets, eps,
                           BLOCK: tl.constexpr, GROUP_BLOCK: tl.constexpr):
    # sync_ptr[0]: the ticket counter; sync_ptr[1 + g]: how many of group g's planes have their stats written
    ticket = tl.atomic_add(sync_ptr, 1)
    while ticket < num_tickets:
        step = ticket // (2 * channels_per_group)
        slot = ticket % (2 * channels_per_group)
        if slot < channels_per_group:
            # stats task for plane `slot` of group `step`
            group = step
            if group < num_groups:
                plane = (group * channels_per_group + slot).to(tl.int64)
                start = plane * plane_size
                mean = 0.0
                m2 = 0.0
                for offset in range(0, plane_size, BLOCK):
                    index = offset + tl.arange(0, BLOCK)
                    mask = index < plane_size
                    x = tl.load(x_ptr + start + index, mask=mask, other=0.0)
                    count = tl.minimum(plane_size - offset, BLOCK).to(tl.float32)
                    chunk_mean = tl.sum(x, axis=0) / count
                    centered = tl.where(mask, x - chunk_mean, 0.0)
                    chunk_m2 = tl.sum(centered * centered, axis=0)
                    # Chan et al.: merge (offset values, mean, m2) with (count values, chunk_mean, chunk_m2)
                    seen = offset * 1.0
                    total = seen + count
                    delta = chunk_mean - mean
                    mean = mean + delta * (count / total)
                    m2 = m2 + chunk_m2 + delta * delta * (seen * count / total)
                tl.store(stats_ptr + 2 * plane, mean)
                tl.store(stats_ptr + 2 * plane + 1, m2)
                tl.debug_barrier()  # the stores above happen before the release below
                tl.atomic_add(sync_ptr + 1 + group, 1, sem="release")
        else:
            # norm task for plane `slot - channels_per_group` of group `step - lag`
            group = step - lag
            if group >= 0:
                done = tl.atomic_add(sync_ptr + 1 + group, 0, sem="acquire")
                while done < channels_per_group:
                    done = tl.atomic_add(sync_ptr + 1 + group, 0, sem="acquire")
                first_plane = (group * channels_per_group).to(tl.int64)
                plane = first_plane + (slot - channels_per_group)
                channel = plane % channels
                members = tl.arange(0, GROUP_BLOCK)
                member_mask = members < channels_per_group
                # .cg: read the stats from L2, never from a stale L1 line
                means = tl.load(stats_ptr + 2 * (first_plane + members), mask=member_mask, other=0.0,
                                cache_modifier=".cg")
                m2s = tl.load(stats_ptr + 2 * (first_plane + members) + 1, mask=member_mask, other=0.0,
                              cache_modifier=".cg")
                mean = tl.sum(means, axis=0) / channels_per_group
                spread = tl.where(member_mask, means - mean, 0.0)
                m2 = tl.sum(m2s, axis=0) + tl.sum(spread * spread, axis=0) * plane_size
                inverse_std = 1.0 / tl.sqrt(m2 / (channels_per_group * plane_size) + eps)
                scale = tl.load(weight_ptr + channel) * inverse_std
                bias = tl.load(bias_ptr + channel)
                start = plane * plane_size
                for offset in range(0, plane_size, BLOCK):
                    index = offset + tl.arange(0, BLOCK)
                    mask = index < plane_size
                    x = tl.load(x_ptr + start + index, mask=mask, other=0.0)
                    y = (x - mean) * scale + bias
                    tl.store(y_ptr + start + index, y * tl.sigmoid(y), mask=mask)
        ticket = tl.atomic_add(sync_ptr, 1)


_NUM_SMS = {}
PROGRAMS_PER_SM = 2  # 8-warp programs; keeps the tickets in flight (and so LAG and the L2 reuse distance) small


def _num_sms(device):
    if device.type != "cuda":
        return 4
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _NUM_SMS:
        _NUM_SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _NUM_SMS[index]


class ModelNew(nn.Module):
    def __init__(self, num_groups, channels, eps):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, channels, eps=eps)  # weight and bias copied from the Model by name

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        batch, channels = x.shape[:2]
        plane_size = x.numel() // (batch * channels)
        groups = self.norm.num_groups
        channels_per_group = channels // groups
        num_groups = batch * groups
        num_planes = batch * channels
        stats = torch.empty((num_planes, 2), device=x.device, dtype=torch.float32)
        sync = torch.zeros(1 + num_groups, device=x.device, dtype=torch.int32)
        block = min(triton.next_power_of_2(plane_size), 4096)
        programs = max(1, min(num_planes, PROGRAMS_PER_SM * _num_sms(x.device)))
        # a group's norm tasks come `lag` groups after its stats tasks: more tickets than programs in flight,
        # so its stats tasks are done (two groups of margin) when its norm tasks are taken
        lag = triton.cdiv(programs, 2 * channels_per_group) + 2
        num_tickets = 2 * channels_per_group * (num_groups + lag)
        group_norm_silu_kernel[(programs,)](x, stats, sync, self.norm.weight, self.norm.bias, y, plane_size,
                                            num_groups, channels, channels_per_group, lag, num_tickets,
                                            self.norm.eps, BLOCK=block,
                                            GROUP_BLOCK=triton.next_power_of_2(channels_per_group), num_warps=8)
        return y
