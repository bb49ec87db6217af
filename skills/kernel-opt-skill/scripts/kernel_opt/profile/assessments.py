"""The bottleneck labels, and the parts a label and its findings are decided from: memory SOL, occupancy, the grid.

Each is a pure function of a `KernelMetrics` record. The classifier (classify.py) turns them
into a label and the finding rules (findings.py) into findings; the `*_text` helpers word them
the same way in both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kernel_opt.profile.ncu.metrics import KernelMetrics
from kernel_opt.profile.thresholds import threshold

Label = Literal["memory_bound", "compute_bound", "latency_bound", "occupancy_bound"]
LABELS: tuple[str, ...] = ("memory_bound", "compute_bound", "latency_bound", "occupancy_bound")

# The memory units whose throughput makes up memory SOL, and the metric of each.
MEMORY_UNITS: tuple[tuple[str, str], ...] = (
    ("DRAM", "dram_throughput_pct"),
    ("L2", "l2_throughput_pct"),
    ("L1/shared", "l1_throughput_pct"),
)

# Occupancy limiters: the per-SM block limit fields ncu reports, and what to call each.
OCCUPANCY_LIMITERS: tuple[tuple[str, str], ...] = (
    ("block_limit_registers_blocks", "registers"),
    ("block_limit_shared_memory_blocks", "shared memory"),
    ("block_limit_warps_blocks", "block size"),
    ("block_limit_sm_blocks", "blocks per SM"),
)


@dataclass
class OccupancyAssessment:
    """Occupancy as the classifier sees it: achieved, theoretical, and what limits it."""

    achieved_pct: float | None
    theoretical_pct: float | None
    limiters: list[str]  # what caps theoretical occupancy ("registers", "shared memory", ...); [] at 100%
    blocks_per_sm_limits: dict[str, float | None]
    low: bool  # achieved below low_occupancy_pct
    gap: bool  # achieved well below theoretical


@dataclass
class GridAssessment:
    """Whether the grid fills the GPU, with the numbers that decide it."""

    small_grid: bool
    grid_size_blocks: float | None
    sm_count: float | None
    waves_per_sm: float | None


def memory_sol(metrics: KernelMetrics) -> tuple[float | None, str | None, dict[str, float]]:
    """(memory SOL %, the limiting unit, each unit's %): the busiest of DRAM, L2 and L1/shared.

    ncu's compute-memory throughput is itself a maximum over memory sub-units; it is included so
    that a unit this table does not name still counts, but the limiter is named from the units.
    Every DRAM byte also passes through the L2, so a streaming kernel shows the L2 a few points
    busier than DRAM (93% against 91% on an H200, tests/fixtures/ncu/memory_streaming): DRAM is
    named the limiter whenever it is within `balance_points` of the busiest unit, because only
    fewer DRAM bytes would help. The L2 is the limiter only when it runs well ahead of DRAM
    (traffic that hits in the L2).
    """
    units = {unit: getattr(metrics, name) for unit, name in MEMORY_UNITS if getattr(metrics, name) is not None}
    overall = metrics.memory_throughput_pct
    candidates = list(units.values()) + ([overall] if overall is not None else [])
    if not candidates:
        return None, None, units
    limiter = max(units, key=units.get) if units else None
    dram = units.get("DRAM")
    if limiter == "L2" and dram is not None and units["L2"] - dram < threshold("balance_points"):
        limiter = "DRAM"
    return max(candidates), limiter, units


def assess_occupancy(metrics: KernelMetrics) -> OccupancyAssessment:
    """Achieved and theoretical occupancy, what caps the theoretical one, and whether either is a problem."""
    limits = {label: getattr(metrics, name) for name, label in OCCUPANCY_LIMITERS}
    known = {label: value for label, value in limits.items() if value is not None}
    theoretical = metrics.theoretical_occupancy_pct
    limiters: list[str] = []
    if known and (theoretical is None or theoretical < 99.5):
        smallest = min(known.values())
        limiters = [label for label, value in known.items() if value == smallest]
    achieved = metrics.achieved_occupancy_pct
    low = achieved is not None and achieved < threshold("low_occupancy_pct")
    gap = (achieved is not None and theoretical is not None
           and theoretical - achieved >= threshold("occupancy_gap_points"))
    return OccupancyAssessment(achieved, theoretical, limiters, limits, low, gap)


def assess_grid(metrics: KernelMetrics) -> GridAssessment:
    """Whether the grid can fill the GPU: at least one full wave, and at least one block per SM."""
    waves, grid, sms = metrics.waves_per_sm, metrics.grid_size_blocks, metrics.sm_count
    small = (waves is not None and waves < threshold("full_wave")) or (
        grid is not None and sms is not None and grid < sms
    )
    return GridAssessment(bool(small), grid, sms, waves)


def percent_text(value: float | None) -> str:
    """'42.0%', or 'n/a' for a metric the report lacks."""
    return "n/a" if value is None else f"{value:.1f}%"


def limiters_text(occupancy: OccupancyAssessment) -> str:
    """What caps theoretical occupancy, with each limit in blocks per SM."""
    if not occupancy.limiters:
        return "no per-SM limit below the hardware maximum"
    parts = [f"{label} ({occupancy.blocks_per_sm_limits[label]:g} blocks/SM)" for label in occupancy.limiters]
    return " and ".join(parts)


def grid_text(grid: GridAssessment) -> str:
    """The grid's size in blocks, SMs and waves, as far as the report tells."""
    parts = []
    if grid.grid_size_blocks is not None:
        parts.append(f"{grid.grid_size_blocks:g} blocks")
    if grid.sm_count is not None:
        parts.append(f"{grid.sm_count:g} SMs")
    if grid.waves_per_sm is not None:
        parts.append(f"{grid.waves_per_sm:.2f} waves")
    return ", ".join(parts) or "size not reported"


def occupancy_cause_text(occupancy: OccupancyAssessment) -> str:
    """Why occupancy is low: the per-SM limiter, a gap between achieved and theoretical, or both."""
    causes = []
    if occupancy.limiters:
        causes.append(f"theoretical {percent_text(occupancy.theoretical_pct)}, "
                      f"limited by {limiters_text(occupancy)}")
    if occupancy.gap:
        causes.append(f"achieved is {occupancy.theoretical_pct - occupancy.achieved_pct:.1f} points below theoretical: "
                      "imbalanced blocks or a partial last wave")
    return "; ".join(causes) or f"theoretical {percent_text(occupancy.theoretical_pct)}"
