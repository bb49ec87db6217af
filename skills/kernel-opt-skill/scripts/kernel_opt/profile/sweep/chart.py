"""sweep.png from the record: time, achieved rate and % of ceiling against size, solution beside PyTorch.

Only sizes the record charts are drawn (profiled and correct, time above the physical floor);
every number was computed before (profile/sweep/assemble.py). Log-scale size axis (sweeps
usually double the size); linear value axes from zero, so a value reads off its axis as it is.
"""

from __future__ import annotations

from pathlib import Path

from kernel_opt.profile.sweep.records import Measurement, SweepRecord

SIDES = (("solution", "solution", "tab:green", "o-"), ("reference", "PyTorch", "tab:red", "s--"))
RATES = {"bandwidth": ("achieved_bandwidth_gbps", "achieved GB/s (counted bytes)"),
         "flops": ("achieved_tflops", "achieved TFLOP/s")}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display on a GPU server
    import matplotlib.pyplot as pyplot

    return pyplot


def _series(record: SweepRecord, side: str, field: str) -> tuple[list[int], list[float]]:
    sizes, values = [], []
    for point in record.charted():
        measurement: Measurement | None = getattr(point, side)
        value = getattr(measurement, field) if measurement is not None else None
        if value is not None:
            sizes.append(point.value)
            values.append(value)
    return sizes, values


def draw_sweep_chart(record: SweepRecord, path: Path) -> Path:
    """Three panels side by side, each with the solution and PyTorch as lines over the charted sizes."""
    pyplot = _pyplot()
    rate_field, rate_label = RATES[record.rate]
    panels = (("time_us", "time per call (µs, ncu)"), (rate_field, rate_label), ("percent_of_ceiling", "% of ceiling"))
    figure, axes = pyplot.subplots(1, 3, figsize=(13.0, 3.8))
    for axis, (field, label) in zip(axes, panels, strict=True):
        drawn = []
        for side, name, color, style in SIDES:
            sizes, values = _series(record, side, field)
            if sizes:
                axis.plot(sizes, values, style, color=color, label=name, markersize=5)
                drawn += values
        if not drawn:
            why = "not measured" if record.ceilings or field != "percent_of_ceiling" else (
                "not measured: no ceilings\nfor this GPU (measured or datasheet)")
            axis.text(0.5, 0.5, why, transform=axis.transAxes, ha="center", color="gray")
        axis.set_xscale("log", base=2)
        axis.set_xlim(min(record.values) / 1.3, max(record.values) * 1.3)
        axis.set_xticks(record.values, [str(value) for value in record.values])
        axis.set_ylim(0, max(drawn, default=1.0) * 1.15)
        axis.set_xlabel(record.dim)
        axis.set_ylabel(label)
        axis.grid(True, linewidth=0.3)
    axes[2].axhline(100.0, color="black", linewidth=0.8)
    axes[2].set_ylim(0, max([110.0] + [value * 1.1 for value in _series(record, "solution", "percent_of_ceiling")[1]]))
    axes[0].legend(fontsize=8)
    others = ", ".join(f"{key}={value}" for key, value in record.dims.items())
    figure.suptitle(f"{Path(record.solution).name} against PyTorch over {record.dim}"
                    + (f" ({others})" if others else "") + (f" on {record.gpu}" if record.gpu else ""), fontsize=10)
    figure.tight_layout()
    # No "Software" stamp: the PNG depends on the record only (and the matplotlib version).
    figure.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    pyplot.close(figure)
    return path
