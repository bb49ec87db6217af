"""Where a timed result stands: the physical floor it must not beat, and its % of ceiling on a stated basis.

Two different questions, two different roofs:

- **Is the time possible at all?** The physical floor uses only true limits, which honest work
  cannot beat: the problem's bytes at the higher of the datasheet's memory bandwidth and the
  best bandwidth measured on this GPU, and its FLOPs at the datasheet's peak, which NVIDIA
  quotes at the maximum boost clock of the unit that does them (H100 SXM: tensor rates at
  1830 MHz, the tensor-core boost clock of the whitepaper's Table 3; FP32 at 1980 MHz:
  132 SMs x 128 lanes x 2 FLOP x 1.98 GHz = 66.9 TFLOP/s). A time under it, beyond the
  noise margin below, is `invalid`: the work was skipped, or ref.py's flops()/bytes()
  overstate it. A GPU without a datasheet entry gets no such check (measured roofs alone
  are not limits: cuBLAS beats the 8192^3 matmul roof at 4096^3 on an H100).
- **How close to the roof is it?** The % of ceiling uses the best measured roofs (the cached
  copy and matmuls, the copy of the same bytes timed beside the solution), the practical
  limits the loop's target is set against. A solution faster than every measured roof is
  placed against the datasheet instead, and the report says so, so that an honest result
  never reads above 100% (it has reached the target all the same: it is at the practical
  roof, whatever it reads against the datasheet); one faster than the compute roof of its counted FLOPs does not
  perform them all, and is placed on the memory roof alone (place_on_roofs).

Pure arithmetic on the benchmark's record: no torch, no GPU.
"""

from __future__ import annotations

from typing import Any

from kernel_opt.measure import roofline
from kernel_opt.measure.datasheet import GpuDatasheet
from kernel_opt.measure.roofline_records import CeilingBasis, PhysicalFloor, RoofPoint

# A timed median may undercut the physical floor by this fraction before it is invalid. The
# floor's own numbers are exact to better than 1% (datasheet figures printed to three
# digits, "3.35 TB/s"); a median of hundreds of event-timed calls moves by 1-2% between runs
# of one kernel (measure/verdicts.py, H100); and event timing adds launch latency, which only
# makes a time longer. 5% is more than their sum, so honest work at its floor is never
# invalid, while skipped work (a cached result is 5-600x under the floor) always is.
PHYSICAL_FLOOR_MARGIN = 0.05

MEASURED_SOURCES = ("measured", "same-size copy")  # roofline points measured on this GPU
SAME_SIZE_SOURCE = "copy of the same bytes"
# Without cached measured ceilings the same-size point's compute roof is the datasheet's peak, not a measurement.
# The rule choose_basis applies, in the one sentence every report that shows a % of ceiling carries (benchmark.md,
# evaluate's summary, final_report.md, sweep.md): the same run can show different bases, and this says why.
CEILING_BASIS_RULE = (
    "Each % of ceiling names its basis: the stricter of the roofs measured on this GPU (\"measured\": the cached 2 GiB "
    "copy and large matmuls of measure_ceilings.py; \"same-size copy\": a copy of this problem's own bytes, timed the "
    "same way), or the datasheet's peaks where the kernel beat both (part of a large output still in L2 when the "
    "clock stopped), so versions, sizes and tools of one run can show different bases.")
SHEET_COMPUTE_NOTE = "; compute roof: the datasheet's peak (no measured matmul ceiling is cached)"


def datasheet_compute_limit(sheet: GpuDatasheet, dtype: str) -> tuple[float | None, str | None]:
    """The datasheet's dense peak bounding honest work in `dtype` (TFLOP/s), and which row it is.

    float32 takes the larger of the FP32 and TF32 tensor rates whatever ref.py says about TF32:
    fp32-accurate products can be built from tensor-core passes (3xTF32, split bf16), so the
    CUDA-core FP32 rate is not a limit on honest float32 work.
    """
    name = dtype.removeprefix("torch.")
    candidates = [(sheet.peak_tflops(name), f"{name} peak")]
    if name == "float32":
        candidates.append((sheet.peak_tflops("float32", allow_tf32=True), "TF32 tensor peak"))
    known = [(value, label) for value, label in candidates if value]
    if not known:
        return None, None
    value, label = max(known)
    return value, f"{value:g} TFLOP/s ({sheet.display_name} datasheet, {label}, at its max boost clock)"


def physical_floor(time_us: float, flops: float | None, traffic_bytes: float, dtype: str,
                   sheet: GpuDatasheet | None, measured_bandwidths_gbps: dict[str, float],
                   measured_tflops: float | None) -> PhysicalFloor | None:
    """The floor from true limits (module docstring); None without a datasheet entry for this GPU.

    Args:
        measured_bandwidths_gbps: bandwidths measured on this GPU by source ("measured copy", "same-size copy").
        measured_tflops: the measured matmul rate for the dtype; counts only where it beats the datasheet.
    """
    if sheet is None:
        return None
    bandwidth, bandwidth_basis = None, None
    if sheet.memory_bandwidth_gbps:
        best_source, best = max(measured_bandwidths_gbps.items(), key=lambda item: item[1], default=(None, 0.0))
        if best > sheet.memory_bandwidth_gbps:
            bandwidth, bandwidth_basis = best, f"{best:.0f} GB/s ({best_source}, above the datasheet's)"
        else:
            bandwidth = sheet.memory_bandwidth_gbps
            bandwidth_basis = f"{bandwidth:g} GB/s ({sheet.display_name} datasheet)"
    compute, compute_basis = datasheet_compute_limit(sheet, dtype)
    if compute is not None and measured_tflops and measured_tflops > compute:
        compute, compute_basis = measured_tflops, f"{measured_tflops:.1f} TFLOP/s (measured, above the datasheet's)"
    memory_floor = traffic_bytes / (bandwidth * 1e9) * 1e6 if bandwidth and traffic_bytes else None
    compute_floor = flops / (compute * 1e12) * 1e6 if compute and flops else None
    floors = {name: value for name, value in (("memory", memory_floor), ("compute", compute_floor)) if value}
    if not floors:
        return None
    bound = max(floors, key=floors.get)
    floor = floors[bound]
    return PhysicalFloor(
        time_us=time_us, floor_us=floor, bound=bound, traffic_bytes=traffic_bytes, flops=flops,
        bandwidth_gbps=bandwidth, bandwidth_basis=bandwidth_basis, compute_tflops=compute, compute_basis=compute_basis,
        memory_floor_us=memory_floor, compute_floor_us=compute_floor, margin=PHYSICAL_FLOOR_MARGIN,
        beaten=time_us < floor * (1.0 - PHYSICAL_FLOOR_MARGIN),
    )


def choose_basis(points: dict[str, dict[str, Any]]) -> tuple[str | None, str]:
    """The roofline point the % of ceiling comes from, and why.

    The best measured roofs first (of the cached ceilings and the same-size copy, the one with
    the higher roof, i.e. the lower %); when the solution beat all of them, the datasheet.
    """
    measured = [name for name in MEASURED_SOURCES if name in points]
    if measured:
        name = min(measured, key=lambda source: points[source]["percent_of_ceiling"])
        percent = points[name]["percent_of_ceiling"]
        if percent <= 100.0 or "datasheet" not in points:
            measured_what = ("the best roofs measured on this GPU" if compute_roof(points, name) == "measured matmul"
                             else "the best memory roof measured on this GPU, with the datasheet's compute peak")
            reason = (measured_what if percent <= 100.0 else
                      f"{measured_what} (the solution beat them, and there is no datasheet entry)")
            return name, reason
        return "datasheet", (f"the solution ran at {percent:.1f}% of the best measured roof ({name}): measured roofs "
                             "are not limits, so its % of ceiling is against the datasheet's peaks")
    if "datasheet" in points:
        return "datasheet", "no measured ceilings for this GPU (run measure_ceilings.py): the datasheet's peaks"
    return None, "no ceilings"


def place_on_roofs(flops: float | None, traffic: float, time_us: float, measured_roofs: roofline.Ceilings | None,
                   sheet_roofs: roofline.Ceilings | None, copy_bandwidth_gbps: float | None
                   ) -> tuple[dict[str, Any], str | None, str, str | None]:
    """roofline_points and choose_basis, with the counted FLOPs set aside where the solution beat their compute roof
    on the chosen basis: (points, basis, why that basis, why the FLOPs were set aside or None).

    A time under the compute floor of the counted FLOPs means the solution does not perform them
    all: the count is the reference's arithmetic (a matmul whose result is then summed away), and an
    algebraic shortcut needs less. Against that roof it would read several times 100% and end the
    loop at "target reached"; against the memory roof alone it reads what it achieves. The bytes
    stay a floor: a time under them is the physical floor's business (physical_floor).
    """
    points = roofline_points(flops, traffic, time_us, measured_roofs, sheet_roofs, copy_bandwidth_gbps)
    basis, reason = choose_basis(points)
    if basis is None or not flops:
        return points, basis, reason, None
    point = points[basis]
    compute_floor = point["compute_floor_us"]
    if not (compute_floor and compute_floor > point["memory_floor_us"] and time_us < compute_floor):
        return points, basis, reason, None
    set_aside = (f"the solution ran at {point['percent_of_ceiling']:.0f}% of the compute roof for the counted "
                 f"{flops:.3g} FLOPs ({basis}): it does less arithmetic than counted (an algebraic shortcut of the "
                 "reference's), or computes in a way that roof does not bound, so its % of ceiling is against the "
                 "memory roof alone; a flops(**dims) in ref.py with the arithmetic the problem needs at least places "
                 "it on both")
    points = roofline_points(None, traffic, time_us, measured_roofs, sheet_roofs, copy_bandwidth_gbps)
    basis, reason = choose_basis(points)
    return points, basis, f"{reason}; the memory roof alone (the solution beat the counted FLOPs' roof)", set_aside


def compute_roof(points: dict[str, dict[str, Any]], name: str) -> str:
    """Where the compute roof of roofline point `name` comes from: "measured matmul" or "datasheet peak".

    The same-size copy measures bandwidth only; roofline_points gives it the measured matmul's roof
    when there is one (then the "measured" point exists too), else the datasheet's.
    """
    return "measured matmul" if name == "measured" or (name in MEASURED_SOURCES and "measured" in points) \
        else "datasheet peak"


def basis_record(name: str, point: RoofPoint, reason: str, measured_at: str | None) -> CeilingBasis:
    """What benchmark.json records about the ceiling its % of ceiling used (read by reproduce_case.py)."""
    ceilings = point.ceilings
    return CeilingBasis(name=name, memory_bandwidth_gbps=ceilings.memory_bandwidth_gbps,
                        compute_tflops=ceilings.compute_tflops, dtype=ceilings.dtype, source=ceilings.source,
                        measured_at=measured_at if name in MEASURED_SOURCES else None, reason=reason)


def datasheet_roofs(sheet: GpuDatasheet | None, dtype: str, allow_tf32: bool) -> roofline.Ceilings | None:
    """The datasheet's roofs for a dtype (its dense peak, for strict float32 the 3xTF32 rate where higher, and memory
    bandwidth); None where the sheet lacks either."""
    if sheet is None or not sheet.memory_bandwidth_gbps:
        return None
    tf32 = sheet.peak_tflops("float32", allow_tf32=True)
    peak, source = roofline.dtype_compute_roof(dtype, allow_tf32, sheet.peak_tflops(dtype, allow_tf32), tf32,
                                               f"datasheet: {sheet.display_name}")
    if not peak:
        return None
    return roofline.Ceilings(sheet.memory_bandwidth_gbps, peak, source=source, dtype=dtype)


def roofline_points(flops: float | None, traffic: float, time_us: float, measured_roofs: roofline.Ceilings | None,
                    sheet_roofs: roofline.Ceilings | None, copy_bandwidth_gbps: float | None) -> dict[str, Any]:
    """The solution on every set of roofs known for this run: measured, same-size copy, datasheet."""
    points: dict[str, Any] = {}
    if measured_roofs is not None:
        points["measured"] = roofline.roofline_point(flops, traffic, time_us, measured_roofs).to_dict()
    compute_roofs = measured_roofs or sheet_roofs
    if copy_bandwidth_gbps and compute_roofs is not None:
        # The copy measures only bandwidth: its compute roof is the measured matmul's, else the datasheet's.
        source = SAME_SIZE_SOURCE if measured_roofs is not None else SAME_SIZE_SOURCE + SHEET_COMPUTE_NOTE
        same_size = roofline.Ceilings(copy_bandwidth_gbps, compute_roofs.compute_tflops,
                                      source=source, dtype=compute_roofs.dtype)
        points["same-size copy"] = roofline.roofline_point(flops, traffic, time_us, same_size).to_dict()
    if sheet_roofs is not None:
        points["datasheet"] = roofline.roofline_point(flops, traffic, time_us, sheet_roofs).to_dict()
    return points
