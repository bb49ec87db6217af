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
        "when warps starve the schedulers, overlap_bound when the kernel is an asynchronous pipeline",
        "project choice: under half the warp slots leaves each scheduler at most 8 warps (sm_80/sm_90) to hide "
        "latency; ncu has no absolute line"),
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
    "uncoalesced_sectors_per_request": Threshold(
        16.0, "sectors/request", "more 32-byte sectors per global request than this: accesses are scattered "
        "(coalesced ones need 4 for 4-byte and 16 for 16-byte accesses per thread)",
        "memory model: a warp's 32 coalesced 16-byte accesses touch 16 sectors"),
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
    "short_kernel_us": Threshold(
        5.0, "us", "kernels shorter than this are dominated by launch overhead",
        "project choice: a few microseconds is the order of a kernel launch"),
}


def threshold(name: str) -> float:
    """The value of the named threshold (a KeyError names a typo at once)."""
    return THRESHOLDS[name].value
