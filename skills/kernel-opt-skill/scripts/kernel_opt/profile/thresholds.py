"""Every number the bottleneck classifier and its findings compare against, in one place.

profiling/NCU.md repeats this table (a test keeps the two equal). Each threshold says what it
means and where the number comes from; "Nsight Compute" origins quote its rule messages.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Threshold:
    """One number the classifier compares against: its value and unit, what it means, where it comes from."""

    value: float
    unit: str
    meaning: str
    origin: str


# Every number the classifier compares against, in one place. profiling/NCU.md repeats this
# table (a test keeps the two equal). "Nsight Compute" origins quote its rule messages.
THRESHOLDS: dict[str, Threshold] = {
    "high_throughput_pct": Threshold(
        80.0, "%", "a unit at or above this share of its peak is saturated: only less work on it helps",
        "Nsight Compute SpeedOfLight rule: 'utilizing greater than 80.0% of the available compute or memory "
        "performance'"),
    "pipe_roof_pct": Threshold(
        80.0, "%", "a math pipe (tensor, FMA, ALU, FP64, XU) at or above this share of its own peak is at its roof: "
        "compute_bound on that pipe, even when L1/shared is busy too",
        "Nsight Compute HighPipeUtilization rule: 'The pipeline is over-utilized and likely a performance "
        "bottleneck' at 80% of the pipe's peak (bottleneck_utilization_threshold)"),
    "latency_line_pct": Threshold(
        60.0, "%", "SM and memory throughput both below this: latency, not throughput, limits the kernel",
        "Nsight Compute SpeedOfLight rule: 'below 60.0% of peak typically indicate latency issues'"),
    "balance_points": Threshold(
        10.0, "points", "memory and SM throughput closer than this are balanced (label: the higher one)",
        "Nsight Compute's balanced compute/memory case; the 10-point margin is this project's reading of it"),
    "low_occupancy_pct": Threshold(
        50.0, "%", "achieved occupancy below this, in a latency-limited kernel that fills the GPU: occupancy_bound "
        "when warps starve the schedulers, overlap_bound when the kernel is an asynchronous pipeline; a kernel whose "
        "theoretical occupancy reaches it and whose achieved is within occupancy_gap_points of that is not below it",
        "project choice: under half the warp slots leaves each scheduler at most 8 warps (sm_80/sm_90) to hide "
        "latency; ncu has no absolute line. Achieved is a time average a block's start and the last wave pull a "
        "fraction of a point below theoretical (demo CUDA GEMM v1: 49.8% of 50%)"),
    "occupancy_gap_points": Threshold(
        10.0, "points", "achieved occupancy this far below theoretical: imbalance, tail effects or too few blocks",
        "project choice, the same margin as the balance rule"),
    "few_eligible_warps": Threshold(
        1.0, "warps", "fewer eligible warps per scheduler per cycle than this: schedulers idle on the cycles with no "
        "ready warp, so more resident warps could help",
        "Nsight Compute IssueSlotUtilization rule: 'Every cycle with no eligible warp results in no instruction being "
        "issued'; one ready warp per cycle is the least that keeps an issue slot busy"),
    "issue_active_target_pct": Threshold(
        60.0, "%", "issue slots busier than this: the schedulers are not starved of warps",
        "Nsight Compute IssueSlotUtilization rule: issueActiveTarget = 0.6 (below it the rule reports too few "
        "eligible warps)"),
    "full_wave": Threshold(
        1.0, "waves", "fewer waves per SM than this (or fewer blocks than SMs): the grid cannot fill the GPU",
        "Nsight Compute LaunchStats rule: 'grid is too small to fill the available resources on this device'"),
    "uncoalesced_ideal_ratio": Threshold(
        2.0, "x ideal", "global sectors per request at or above this multiple of the ideal for the executed "
        "accesses' width (32 threads x bytes per thread / 32-byte sectors: 2 for 2-byte, 16 for 16-byte accesses): "
        "scattered accesses",
        "project choice: at least half of every fetched sector unused; a contiguous warp access off a 32-byte "
        "boundary costs one sector more (3 of 2, 17 of 16) and stays below it"),
    "uncoalesced_sectors_per_request": Threshold(
        16.0, "sectors/request", "without the executed opcode mix (so no access widths): more 32-byte sectors per "
        "global request than this are scattered (coalesced ones need 4 for 4-byte and 16 for 16-byte accesses)",
        "memory model: a warp's 32 coalesced 16-byte accesses touch 16 sectors"),
    "misaligned_extra_sectors": Threshold(
        1.0, "sectors/request", "what a contiguous warp access off a 32-byte boundary adds to the ideal; cp.async "
        "loads further above the ideal (but below uncoalesced_ideal_ratio) are copies split by their shared-memory "
        "destination",
        "memory model: contiguous bytes that start inside a sector straddle one more. ncu counts a cp.async sector "
        "once per L1 wavefront: the demo's CUDA GEMM v4-v6 (rows padded by 16 bytes) show 18-19 per 16-byte request "
        "and 1.5x the L2-to-L1 sectors of v7-v8 (128-byte swizzle, 16 per request) at the same tiles"),
    "async_copy_majority_pct": Threshold(
        50.0, "% of global loads", "cp.async (LDGSTS) above this share of the executed global load instructions: "
        "the load sectors per request describe the copies",
        "project choice: most of the loads"),
    "uncoalesced_lead_pct": Threshold(
        50.0, "% of global sectors", "scattered accesses whose excess sectors reach this share of all global load "
        "and store sectors lead the advice (coalesce first); below it they are a side cost, listed after the "
        "label's own strategies",
        "project choice: most of the traffic through L1 is waste. Demo, H100: CUDA GEMM v9's fragment-layout "
        "epilogue stores waste 75% (its loads are TMA's; v10 coalesced them: 1.32x); the same stores in v1-v8 "
        "waste 1-6% beside their loads"),
    "bank_conflict_pct": Threshold(
        10.0, "% of wavefronts", "shared-memory bank conflicts at or above this share of shared wavefronts: a real "
        "shared-memory problem (below it, busy L1/shared in a tensor-core kernel is operand staging)",
        "Nsight Compute SharedMemoryConflicts rule: bank_conflicts_threshold = 10.0% of wavefronts (ncu applies it "
        "to loads and stores apart; here to their sum, the unit's whole traffic)"),
    "divergent_threads_per_instruction": Threshold(
        24.0, "threads of 32", "fewer active threads per warp instruction than this: divergence or partial warps",
        "project choice: a quarter of each warp idle"),
    "low_branch_uniformity_pct": Threshold(
        90.0, "%", "fewer uniform branches than this: divergent branches",
        "project choice"),
    "tensor_pipe_idle_pct": Threshold(
        10.0, "%", "a tensor pipe below this is idle: a compute-bound kernel does its math on the FMA/ALU pipes, and "
        "its L1/shared traffic is not tensor-core operand staging",
        "project choice"),
    "minimum_traffic_ratio": Threshold(
        1.10, "x minimum bytes", "DRAM bytes per call (every profiled kernel, read and written) at or below this "
        "multiple of the problem's counted minimum (benchmark.json's work.bytes): the solution reads each byte once, "
        "so no strategy that only saves bytes (a single pass, fusion, reuse) can help it",
        "demo records, H100: one-pass kernels moved 0.84-1.04x the minimum (writes still in L2 when the kernel ends, "
        "inputs left in L2 by the warmup calls); a second pass over each row read 1.23-1.47x (KernelBench log_softmax "
        "v0-v1, Triton softmax v0), a chain of unfused kernels 1.44-1.94x (group_norm_silu v0-v1)"),
    "short_kernel_us": Threshold(
        5.0, "us", "kernels shorter than this are dominated by launch overhead",
        "project choice: a few microseconds is the order of a kernel launch"),
}


def threshold(name: str) -> float:
    """The value of the named threshold (a KeyError names a typo at once)."""
    return THRESHOLDS[name].value
