"""v2: the distillation loss with each row split over several Triton programs, then one Triton program combines.

Per row, with p = softmax(t / T) and log q = s / T - lse_s:
    sum p * (log p - log q) = sum p * (t - s) / T - lse_t + lse_s        (sum p = 1)
and sum p * (t - s) / T = A / Z_t, where Z_t = sum exp(t / T - m_t) and A = sum exp(t / T - m_t) * (t - s) / T
share the teacher's running max m_t: both are rescaled by exp(m_old - m_new) when it rises (as in v1).

v1 gave each row to one program: 512 programs of 256 threads, 3 resident per SM (registers), 396 slots, so
1.29 waves and a second wave of 116 programs that ran with most of the GPU idle. v2 splits each row into
chunks of CHUNK columns (4096 at the benchmark's size: 8 chunks per row, 4096 programs, ~10 waves). Each
program does v1's one-pass online update over its chunk and writes five partials (the student's max and
sum, the teacher's max and sum, and A, all relative to the chunk's own maxima). A second kernel of one
program merges each row's partials exactly as v1 merged its lanes, adds the rows' KL values and writes
sum / batch * T^2 (kl_div's batchmean times T^2), which also replaces v1's three torch epilogue kernels.

The row length and row count are compile-time constants (one compile per size): loop bounds are known when
the kernels compile, which also lets Triton 3.6's interpreter run them under NumPy 2.4 (triton-lang/triton#9171).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _online_update(running_max, running_sum, x):
    new_max = tl.maximum(running_max, x)
    rescale = tl.where(new_max == -float("inf"), 0.0, tl.exp(running_max - new_max))
    added = tl.where(new_max == -float("inf"), 0.0, tl.exp(x - new_max))
    return new_max, running_sum * rescale + added, rescale, added


@triton.jit
def distillation_kl_chunks_kernel(student_ptr, teacher_ptr, partial_ptr, n_partials, n_cols: tl.constexpr,
                                  inverse_temperature, SPLIT: tl.constexpr, CHUNK: tl.constexpr,
                                  BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    row = (pid // SPLIT).to(tl.int64)
    chunk_start = (pid % SPLIT) * CHUNK
    student_row = student_ptr + row * n_cols
    teacher_row = teacher_ptr + row * n_cols
    student_max = tl.full((BLOCK,), -float("inf"), tl.float32)
    student_sum = tl.zeros((BLOCK,), tl.float32)
    teacher_max = tl.full((BLOCK,), -float("inf"), tl.float32)
    teacher_sum = tl.zeros((BLOCK,), tl.float32)
    weighted_gap = tl.zeros((BLOCK,), tl.float32)  # A: sum of exp(t/T - m_t) * (t - s)/T per lane
    for start in range(0, CHUNK, BLOCK):
        cols = chunk_start + start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        s = tl.load(student_row + cols, mask=mask, other=-float("inf")) * inverse_temperature
        t = tl.load(teacher_row + cols, mask=mask, other=-float("inf")) * inverse_temperature
        student_max, student_sum, student_rescale, student_added = _online_update(student_max, student_sum, s)
        teacher_max, teacher_sum, rescale, added = _online_update(teacher_max, teacher_sum, t)
        weighted_gap = weighted_gap * rescale + tl.where(mask, added * (t - s), 0.0)
    student_chunk_max = tl.max(student_max, axis=0)
    student_scale = tl.where(student_max == -float("inf"), 0.0, tl.exp(student_max - student_chunk_max))
    teacher_chunk_max = tl.max(teacher_max, axis=0)
    teacher_scale = tl.where(teacher_max == -float("inf"), 0.0, tl.exp(teacher_max - teacher_chunk_max))
    # partials laid out as [5, rows * SPLIT]: slot pid holds chunk pid % SPLIT of row pid // SPLIT
    tl.store(partial_ptr + pid, student_chunk_max)
    tl.store(partial_ptr + n_partials + pid, tl.sum(student_sum * student_scale, axis=0))
    tl.store(partial_ptr + 2 * n_partials + pid, teacher_chunk_max)
    tl.store(partial_ptr + 3 * n_partials + pid, tl.sum(teacher_sum * teacher_scale, axis=0))
    tl.store(partial_ptr + 4 * n_partials + pid, tl.sum(weighted_gap * teacher_scale, axis=0))


@triton.jit
def distillation_kl_combine_kernel(partial_ptr, out_ptr, n_rows: tl.constexpr, out_scale, SPLIT: tl.constexpr,
                                   SPLIT_P2: tl.constexpr, ROWS_BLOCK: tl.constexpr):
    n_partials = n_rows * SPLIT
    splits = tl.arange(0, SPLIT_P2)
    total = tl.zeros((ROWS_BLOCK,), tl.float32)
    for start in range(0, n_rows, ROWS_BLOCK):
        rows = start + tl.arange(0, ROWS_BLOCK)
        row_mask = rows < n_rows
        mask = row_mask[:, None] & (splits[None, :] < SPLIT)
        offs = rows[:, None] * SPLIT + splits[None, :]
        student_max = tl.load(partial_ptr + offs, mask=mask, other=-float("inf"))
        student_sum = tl.load(partial_ptr + n_partials + offs, mask=mask, other=0.0)
        teacher_max = tl.load(partial_ptr + 2 * n_partials + offs, mask=mask, other=-float("inf"))
        teacher_sum = tl.load(partial_ptr + 3 * n_partials + offs, mask=mask, other=0.0)
        gap = tl.load(partial_ptr + 4 * n_partials + offs, mask=mask, other=0.0)
        student_row_max = tl.max(student_max, axis=1)
        student_scale = tl.where(student_max == -float("inf"), 0.0, tl.exp(student_max - student_row_max[:, None]))
        student_lse = student_row_max + tl.log(tl.sum(student_sum * student_scale, axis=1))
        teacher_row_max = tl.max(teacher_max, axis=1)
        teacher_scale = tl.where(teacher_max == -float("inf"), 0.0, tl.exp(teacher_max - teacher_row_max[:, None]))
        teacher_z = tl.sum(teacher_sum * teacher_scale, axis=1)
        teacher_lse = teacher_row_max + tl.log(teacher_z)
        expected_gap = tl.sum(gap * teacher_scale, axis=1) / teacher_z
        total += tl.where(row_mask, expected_gap - teacher_lse + student_lse, 0.0)
    tl.store(out_ptr, tl.sum(total, axis=0) * out_scale)


class ModelNew(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, student_logits, teacher_logits):
        student_logits, teacher_logits = student_logits.contiguous(), teacher_logits.contiguous()
        rows, cols = student_logits.shape
        block = min(triton.next_power_of_2(cols), 2048)
        chunk = block * min(2, triton.cdiv(cols, block))  # 4096 columns per program at 32768 columns
        split = triton.cdiv(cols, chunk)
        partials = torch.empty((5, rows * split), device=student_logits.device, dtype=torch.float32)
        distillation_kl_chunks_kernel[(rows * split,)](student_logits, teacher_logits, partials, rows * split, cols,
                                                       1.0 / self.temperature, SPLIT=split, CHUNK=chunk,
                                                       BLOCK=block, num_warps=8)
        out = torch.empty((), device=student_logits.device, dtype=torch.float32)
        split_p2 = triton.next_power_of_2(split)
        rows_block = min(triton.next_power_of_2(rows), max(1, 2048 // split_p2))
        t = self.temperature
        distillation_kl_combine_kernel[(1,)](partials, out, rows, t * t / rows, SPLIT=split, SPLIT_P2=split_p2,
                                             ROWS_BLOCK=rows_block, num_warps=8)
        return out
