"""The final report's two charts, drawn from a FinalReport: every number was read from the records before."""

from __future__ import annotations

from pathlib import Path

from kernel_opt.loop.final_report import FinalReport

TIME_CHART = "time_per_version.png"
ROOFLINE_CHART = "roofline.png"


def load_pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display on a GPU server; the same bytes everywhere
    import matplotlib.pyplot as pyplot

    return pyplot


def save_figure(figure, path: Path) -> Path:
    # No "Software" stamp: the PNG depends on the records only (and the matplotlib version).
    figure.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    return path


def draw_time_chart(report: FinalReport, path: Path) -> Path:
    """Bars of each version's median (p20-p80 whiskers), PyTorch baselines as lines."""
    pyplot = load_pyplot()
    figure, axes = pyplot.subplots(figsize=(max(5.0, 1.0 + 0.8 * len(report.versions)), 3.6))
    names = [row.name for row in report.versions]
    positions = list(range(len(names)))
    tallest = max([row.p80_us or row.median_us or 0 for row in report.versions]
                  + [b.median_us or 0 for b in report.final_baselines] + [1e-9])
    for position, row in zip(positions, report.versions, strict=True):
        if row.median_us is None:
            axes.text(position, tallest * 0.02, "not\nmeasured", ha="center", va="bottom", fontsize=8, color="gray")
            continue
        low = row.median_us - row.p20_us if row.p20_us is not None else 0
        high = row.p80_us - row.median_us if row.p80_us is not None else 0
        axes.bar(position, row.median_us, color="tab:green" if row.is_best else "tab:blue",
                 yerr=[[max(low, 0)], [max(high, 0)]], capsize=4)
        label_at = row.p80_us if row.p80_us is not None and row.p80_us > row.median_us else row.median_us
        axes.text(position, label_at + tallest * 0.01, f"{row.median_us:.3g}", ha="center", va="bottom", fontsize=8)
    styles = iter(["--", ":", "-."] * 4)
    for baseline in report.final_baselines:
        if baseline.median_us:
            axes.axhline(baseline.median_us, linestyle=next(styles), color="tab:red", linewidth=1,
                         label=f"{baseline.name}: {baseline.median_us:.3g} µs")
    axes.set_xticks(positions, names)
    axes.set_ylabel("median time per call (µs)")
    axes.set_ylim(0, tallest * 1.15)
    title = f"{report.kernel_name or 'kernel'}: time per version"
    axes.set_title(title + (" (green: best)" if report.best else ""))
    if report.final_baselines:  # below the axes: inside, it covered the bars' labels
        axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
    save_figure(figure, path)
    pyplot.close(figure)
    return path


def draw_roofline_chart(report: FinalReport, path: Path) -> Path:
    """Log-log roofline: each set of recorded roofs, and every version placed by its achieved FLOP/s."""
    pyplot = load_pyplot()
    figure, axes = pyplot.subplots(figsize=(6.0, 4.2))
    placed = [row for row in report.versions
              if row.arithmetic_intensity_flop_per_byte and row.achieved_tflops and row.median_us is not None]
    intensities = [row.arithmetic_intensity_flop_per_byte for row in placed]
    ridges = [c.compute_tflops * 1e3 / c.memory_bandwidth_gbps for c in report.ceilings]
    low = min(intensities + ridges + [1.0]) / 10
    high = max(intensities + ridges + [1.0]) * 10
    xs = [low * (high / low) ** (i / 199) for i in range(200)]
    for ceilings, style in zip(report.ceilings, ("-", ":", "--"), strict=False):  # up to 3 sets of roofs, often fewer
        ys = [min(ceilings.compute_tflops, x * ceilings.memory_bandwidth_gbps / 1e3) for x in xs]
        axes.plot(xs, ys, style, color="black", linewidth=1.2,
                  label=f"{ceilings.source} roofs: {ceilings.memory_bandwidth_gbps:.0f} GB/s, "
                        f"{ceilings.compute_tflops:.0f} TFLOP/s ({ceilings.dtype})")
    for index, row in enumerate(placed):
        axes.plot(row.arithmetic_intensity_flop_per_byte, row.achieved_tflops, "o",
                  color="tab:green" if row.is_best else "tab:blue")
        # Versions of one problem share its intensity, so their labels are staggered sideways.
        axes.annotate(row.name, (row.arithmetic_intensity_flop_per_byte, row.achieved_tflops),
                      textcoords="offset points", xytext=(6 + 16 * (index % 4), -3), fontsize=8)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlim(low, high)
    axes.set_xlabel("arithmetic intensity (FLOP/byte, minimum traffic)")
    axes.set_ylabel("achieved TFLOP/s")
    axes.set_title(f"{report.kernel_name or 'kernel'}: roofline (green: best)")
    if report.ceilings:
        axes.legend(fontsize=7, loc="lower right")
    axes.grid(True, which="both", linewidth=0.3)
    save_figure(figure, path)
    pyplot.close(figure)
    return path


def chart_blockers(report: FinalReport) -> dict[str, str | None]:
    """Why a chart cannot be drawn from these records (None: it can)."""
    timed = any(row.median_us is not None for row in report.versions)
    placed = any(row.arithmetic_intensity_flop_per_byte and row.achieved_tflops and row.median_us is not None
                 for row in report.versions)
    return {
        "time": None if timed else "no version was timed",
        "roofline": None if placed and report.ceilings else (
            "no version has a roofline point with a known FLOP count" if not placed else "no ceilings were recorded"),
    }
