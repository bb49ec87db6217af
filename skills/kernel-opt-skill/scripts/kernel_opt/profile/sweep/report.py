"""sweep.md and the sweep's lines in other reports, formatted from the record (no verdict is made here).

`sweep_table` is shared with the final report, which embeds a run's sweep.
"""

from __future__ import annotations

from kernel_opt.core.render import markdown_cell, markdown_table, render
from kernel_opt.measure.placement import CEILING_BASIS_RULE
from kernel_opt.profile.sweep.records import Measurement, SweepPoint, SweepRecord

REFERENCE_LABEL = "PyTorch eager (the benchmark's eager baseline)"
STATUS_WORDS = {
    "profiled": "profiled",
    "invalid": "INVALID: faster than the physical floor",
    "incorrect": "WRONG: not profiled",
    "not_checked": "not checked",
    "solution_error": "solution error",
    "usage_error": "ref.py or usage error",
    "environment_error": "this machine could not run it",
    "profile_failed": "not profiled",
}


def _time(measurement: Measurement | None) -> str | None:
    if measurement is None or measurement.time_us is None:
        return None
    spread = "" if measurement.stable is not False else " (unstable)"
    return f"{measurement.time_us:.2f}{spread}"


def _percent(measurement: Measurement | None) -> str | None:
    if measurement is None or measurement.percent_of_ceiling is None:
        return None
    if measurement.bound == "compute" and measurement.compute_roof:  # the binding roof, not the roof set's name
        return f"{measurement.percent_of_ceiling:.1f}% ({measurement.compute_roof})"
    return f"{measurement.percent_of_ceiling:.1f}% ({measurement.ceiling_basis})"


def _rate(value: float | None) -> str | None:
    """Whole numbers from 100 up (GB/s of real kernels), three significant digits below (TFLOP/s, small runs)."""
    if value is None:
        return None
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _row(record: SweepRecord, point: SweepPoint) -> list[object]:
    solution, reference = point.solution, point.reference
    status = STATUS_WORDS.get(point.status, point.status)
    return [
        point.value,
        _time(solution) if point.status in ("profiled", "invalid") else status,
        _time(reference),
        f"{point.speedup_vs_reference:.2f}x" if point.speedup_vs_reference is not None else None,
        _rate(solution.achieved_bandwidth_gbps) if solution else None,
        _rate(solution.dram_bandwidth_gbps) if solution else None,
        _rate(solution.achieved_tflops) if solution else None,
        _percent(solution) if point.status == "profiled" else None,
        _percent(reference),
    ]


def sweep_table(record: SweepRecord) -> str:
    """Size, both times, speedup, the solution's rates and % of ceiling, PyTorch's % of ceiling."""
    headers = [record.dim, "solution µs", "PyTorch µs", "speedup", "solution GB/s", "solution DRAM GB/s",
               "solution TFLOP/s", "solution % of ceiling", "PyTorch % of ceiling"]
    return markdown_table([_row(record, point) for point in record.points], headers)


def size_notes(record: SweepRecord) -> list[str]:
    """One line per size that has something to say: why it was not profiled, or a caveat (a % above 100)."""
    lines = []
    for point in record.points:
        if point.message:
            lines.append(f"{record.dim}={point.value}: {STATUS_WORDS.get(point.status, point.status)}: "
                         f"{markdown_cell(point.message)}")
        for label, measurement in (("the solution", point.solution), (REFERENCE_LABEL, point.reference)):
            note = _above_the_roof(measurement)
            if note:
                lines.append(f"{record.dim}={point.value}: {label} {note}")
    return lines


def _above_the_roof(measurement: Measurement | None) -> str | None:
    """Why a % of ceiling above 100 is not faster than physics, from ncu's own DRAM bytes; None at or under 100.

    The rates count the problem's minimum bytes as if they all crossed DRAM while the kernel ran; ncu's
    clock stops when the kernel ends, so an output still in L2 then (written back afterwards) or an input
    L2 still held is counted without having cost DRAM time. The physical-floor check allows for it only
    within its tolerance, where a same-size copy is not as fast (measure/placement.py).
    """
    if measurement is None or measurement.percent_of_ceiling is None or measurement.percent_of_ceiling <= 100:
        return None
    text = (f"is at {measurement.percent_of_ceiling:.1f}% of the {measurement.ceiling_basis} roof: its counted bytes "
            f"per call over its time give {_rate(measurement.achieved_bandwidth_gbps)} GB/s")
    if measurement.dram_bandwidth_gbps is not None and measurement.achieved_bandwidth_gbps is not None \
            and measurement.dram_bandwidth_gbps < measurement.achieved_bandwidth_gbps:
        return (text + f", while ncu measured {_rate(measurement.dram_bandwidth_gbps)} GB/s of DRAM traffic: part of "
                "the counted bytes did not cross DRAM while the kernel ran (L2 held them), so above 100% here is "
                "not faster than physics")
    return text + "; ncu's DRAM bytes do not show where the rest went"


def kernel_lines(record: SweepRecord) -> list[str]:
    """Which kernels each side launched per call, where they are the same at every size, else per size."""
    lines = []
    for label, side in (("solution", "solution"), (REFERENCE_LABEL, "reference")):
        seen = {point.value: getattr(point, side).kernels for point in record.points if getattr(point, side)}
        distinct = {tuple(kernels) for kernels in seen.values()}
        if len(distinct) == 1:
            kernels = list(next(iter(distinct)))
            lines.append(f"{label}: {len(kernels)} kernel(s) per call: {', '.join(f'`{k}`' for k in kernels)}")
        else:
            for value, kernels in seen.items():
                lines.append(f"{label} at {record.dim}={value}: {len(kernels)} kernel(s): "
                             f"{', '.join(f'`{k}`' for k in kernels)}")
    return lines


def render_sweep_markdown(record: SweepRecord) -> str:
    return render("sweep.md.j2", record=record, table=sweep_table(record), size_notes=size_notes(record),
                  kernel_lines=kernel_lines(record), reference_label=REFERENCE_LABEL, basis_rule=CEILING_BASIS_RULE,
                  other_dims=", ".join(f"{key}={value}" for key, value in record.dims.items()) or "ref.py's defaults")


def summary_lines(record: SweepRecord, output_dir: str) -> list[str]:
    """What ncu_profile.py --sweep prints: one line per size, then where the reports are."""
    lines = [f"sweep {record.dim}={','.join(map(str, record.values))} on {record.gpu or 'the GPU'}: {record.verdict} "
             f"(exit {record.exit_code})"]
    for point in record.points:
        solution = point.solution
        if point.status == "profiled" and solution is not None:
            parts = [f"solution {solution.time_us:.2f} us"]
            if point.reference is not None and point.reference.time_us is not None:
                parts.append(f"PyTorch {point.reference.time_us:.2f} us ({point.speedup_vs_reference:.2f}x)")
            if solution.achieved_bandwidth_gbps is not None:
                parts.append(f"{solution.achieved_bandwidth_gbps:.0f} GB/s")
            if solution.percent_of_ceiling is not None:
                parts.append(f"{solution.percent_of_ceiling:.1f}% of ceiling ({solution.ceiling_basis})")
            lines.append(f"  {record.dim}={point.value}: " + ", ".join(parts))
        else:
            status = STATUS_WORDS.get(point.status, point.status)
            lines.append(f"  {record.dim}={point.value}: {status}: {point.message}")
    files = [record.files[key] for key in ("md", "png", "csv", "json") if key in record.files]
    lines.append(f"report: {', '.join(f'{output_dir}/{name}' for name in files)}")
    return lines
