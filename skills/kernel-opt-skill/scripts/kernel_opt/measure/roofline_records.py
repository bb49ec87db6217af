"""Where benchmark.json places the solution: the work per call, the roofline and its floor, as the record keeps them.

Plain data, no torch. measure/benchmark_assembly.py fills these from the worker's events and
measure/placement.py's arithmetic; the reports, the final report and the tools read them back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_opt.core.records import UNSET, Section, dict_of, section_of


@dataclass
class Work(Section):
    """FLOPs and minimum bytes per call (measure.benchmark_child.problem_work, or the run's reference cache)."""

    flops: float | None = UNSET  # None: torch could not count them and ref.py has no flops()
    flops_source: str | None = UNSET  # "ref.py flops()", "counted by torch FlopCounterMode", ...
    flops_note: str | None = UNSET  # counted: why the count is partial or missing
    flops_lower_bound: bool | None = UNSET  # counted: only part of the reference's arithmetic was counted
    bytes: float | None = UNSET
    bytes_source: str | None = UNSET
    dtype: str | None = UNSET  # the arithmetic's: the largest floating input's, else the first output's
    cached_from: str | None = UNSET  # reused from the run's reference_cache.json: who counted it, when

    def floor_flops(self) -> float | None:
        """The FLOPs a physical floor may rest on: a complete count only.

        A partial count (measure/roofline.count_flops: the matmul of a matmul + GELU) is a lower bound
        of the reference's arithmetic, not of every honest solution's: a causal mask applied after a
        full QK^T counts twice the products a kernel that skips the masked blocks needs. It places a
        kernel under the compute roof, but an INVALID verdict must never rest on it.
        """
        return None if self.flops_lower_bound else self.flops


@dataclass
class CopySameBytes(Section):
    """A device copy moving the problem's bytes, timed like the solution (measure.ceilings.CopyCeiling as written)."""

    buffer_bytes: int | None = UNSET
    bytes_moved: int | None = UNSET
    bandwidth_gbps: float | None = UNSET
    median_us: float | None = UNSET
    p20_us: float | None = UNSET
    p80_us: float | None = UNSET
    method: str | None = UNSET


@dataclass
class RoofCeilings(Section):
    """The two roofs of one roofline point (measure.roofline.Ceilings.to_dict())."""

    memory_bandwidth_gbps: float | None = UNSET
    compute_tflops: float | None = UNSET
    source: str | None = UNSET  # "measured 2026-11-22", "datasheet: H100 SXM", "copy of the same bytes", ...
    dtype: str | None = UNSET
    ridge_point_flop_per_byte: float | None = UNSET


@dataclass
class RoofPoint(Section):
    """The solution against one set of roofs (measure.roofline.RooflinePoint.to_dict())."""

    flops: float | None = UNSET
    traffic_bytes: float | None = UNSET
    time_us: float | None = UNSET
    ceilings: RoofCeilings | None = UNSET
    achieved_bandwidth_gbps: float | None = UNSET
    achieved_tflops: float | None = UNSET
    arithmetic_intensity_flop_per_byte: float | None = UNSET
    ridge_point_flop_per_byte: float | None = UNSET
    bound: str | None = UNSET  # "memory" or "compute"
    memory_floor_us: float | None = UNSET
    compute_floor_us: float | None = UNSET
    floor_time_us: float | None = UNSET
    attainable_tflops: float | None = UNSET
    percent_of_ceiling: float | None = UNSET
    faster_than_floor: bool | None = UNSET
    flops_known: bool | None = UNSET
    tolerance: float | None = UNSET

    readers = {"ceilings": section_of(RoofCeilings)}


@dataclass
class PhysicalFloor(Section):
    """The time no honest call can beat, from true limits, and whether this time beat it (measure/placement.py)."""

    time_us: float
    floor_us: float
    bound: str  # "memory" or "compute": the larger of the two floors
    traffic_bytes: float
    flops: float | None
    bandwidth_gbps: float | None
    bandwidth_basis: str | None
    compute_tflops: float | None
    compute_basis: str | None
    memory_floor_us: float | None
    compute_floor_us: float | None
    margin: float  # the share of the floor a median may undercut it by before it is invalid
    beaten: bool = False
    message: str | None = UNSET  # the record's: the invalid verdict's text where it was beaten, else None

    def invalid_message(self) -> str:
        """Why the result is invalid, and what to do: the verdict's text."""
        if self.bound == "memory":
            what = (f"the memory floor of {self.floor_us:.2f} us ({self.traffic_bytes:.4g} bytes from ref.py's bytes() "
                    f"or the inputs' sizes, at {self.bandwidth_basis})")
        else:
            what = (f"the compute floor of {self.floor_us:.2f} us ({self.flops:.4g} FLOP from ref.py's flops() or the "
                    f"counted ones, at {self.compute_basis})")
        return (f"INVALID: {self.time_us:.2f} us is faster than {what}, by more than the {self.margin:.0%} noise "
                "margin. No kernel can do that; one of two things happened: (1) the work was skipped: outputs "
                "cached or reused across calls, work done outside the timed call or on a stream the timer does not "
                "see; or (2) ref.py overstates the work: bytes() must count each input read once and each output "
                "written once (no re-reads, no intermediates), flops() only the arithmetic the problem needs "
                "(2*M*N*K for a GEMM): fix them in ref.py and run the benchmark again. This time counts for nothing.")


@dataclass
class CeilingBasis(Section):
    """The ceiling the % of ceiling used (measure.placement.basis_record; read by tools/reproduce_case.py)."""

    name: str  # the roofline point: "measured", "same-size copy" or "datasheet"
    memory_bandwidth_gbps: float | None
    compute_tflops: float | None
    dtype: str | None
    source: str | None
    measured_at: str | None  # when the measured ceilings were measured; None for the datasheet
    reason: str | None  # why this basis


@dataclass
class Roofline(Section):
    """benchmark.json "roofline": the cached ceilings, the solution on every roof, its floor and the % basis."""

    measured_ceilings: dict[str, Any] | None = UNSET  # the ceilings cache file as read (measure.ceilings)
    points: dict[str, RoofPoint] | None = UNSET  # by roof: "measured", "same-size copy", "datasheet"
    physical_floor: PhysicalFloor | None = UNSET
    primary: str | None = UNSET  # the point percent_of_ceiling came from
    basis: CeilingBasis | None = UNSET  # that point's ceilings and why (records before it was recorded lack it)

    readers = {"points": dict_of(RoofPoint), "physical_floor": section_of(PhysicalFloor),
               "basis": section_of(CeilingBasis)}
