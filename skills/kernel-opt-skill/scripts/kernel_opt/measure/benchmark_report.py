"""benchmark.md and the console summary, rendered from a BenchmarkReport (formatting only)."""

from __future__ import annotations

from pathlib import Path

from kernel_opt.check.integrity.launches import launch_summary_line, launch_table
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import format_number, markdown_table, render
from kernel_opt.env.clock_watch import LIMITS
from kernel_opt.measure.placement import CEILING_BASIS_RULE
from kernel_opt.measure.records import BENCHMARK_FILE, BenchmarkReport


def write_benchmark_reports(report: BenchmarkReport, output_dir: Path) -> None:
    """DIR/benchmark.json (the record, its exit code first) and DIR/benchmark.md."""
    write_json_atomic(output_dir / BENCHMARK_FILE, report.to_dict())
    write_text_atomic(output_dir / "benchmark.md", benchmark_markdown(report, report.exit_code))


def benchmark_markdown(report: BenchmarkReport, exit_code: int | None) -> str:
    """benchmark.md's text."""
    launches = report.launch_check()
    return render("benchmark.md.j2", report=report, tables=_tables(report), exit_code=exit_code,
                  launches=launches, launch_table=launch_table(launches) if launches else "",
                  basis_rule=CEILING_BASIS_RULE)


def _us(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _tables(report: BenchmarkReport) -> dict:
    rows = []
    s = report.solution
    if s.median_us:
        rows.append(["solution", _us(s.median_us), _us(s.p20_us), _us(s.p80_us), s.reps, "—", "1.00x"])
    for extra in (report.kernel_time, report.cuda_graph):
        if extra and extra.median_us:
            rows.append([extra.name, _us(extra.median_us), _us(extra.p20_us), _us(extra.p80_us), extra.reps, "—", "—"])
    median = s.median_us
    for b in report.baselines:
        against = b.solution_us_beside(median)
        relative = f"{b.median_us / against:.2f}x" if b.median_us and against else "—"
        compile_s = f"{b.compile_s:.1f}" if b.compile_s is not None else "—"
        if b.error:
            rows.append([b.name, "failed", "—", "—", "—", "—", b.error])
        else:
            name = b.name + (" (reused: see below)" if b.cached_from else "")
            if b.paired_solution_us:
                name += f" (in alternation with the solution, {_us(b.paired_solution_us)} µs there)"
            rows.append([name, _us(b.median_us), _us(b.p20_us), _us(b.p80_us), b.reps, compile_s, relative])
    timings = markdown_table(rows, ["what", "median µs", "p20 µs", "p80 µs", "reps", "compile s",
                                    "its time / solution's"])
    roofline_rows = []
    for source, point in report.roofline_points().items():
        c = point.ceilings
        roofline_rows.append([
            source, f"{c.memory_bandwidth_gbps:.0f}", f"{c.compute_tflops:.1f} ({c.dtype})",
            f"{point.achieved_bandwidth_gbps:.0f}", format_number(point.achieved_tflops),
            format_number(point.arithmetic_intensity_flop_per_byte), point.bound, _us(point.floor_time_us),
            f"{point.percent_of_ceiling:.1f}%",
        ])
    roofline = markdown_table(roofline_rows, ["ceilings", "GB/s", "TFLOP/s", "achieved GB/s", "achieved TFLOP/s",
                                              "FLOP/byte", "bound", "floor µs", "% of ceiling"])
    clocks = markdown_table(
        [[when, g.name, g.sm_clock_mhz, g.max_sm_clock_mhz, g.memory_clock_mhz]
         for when, gpus in (("start", report.clocks_start), ("end", report.clocks_end)) for g in gpus],
        ["when", "GPU", "SM MHz", "max SM MHz", "memory MHz"],
    )
    checks = markdown_table(
        [[name, "pass" if c.passed else "FAIL", max((o.mismatches for o in c.outputs), default=0)]
         for name, c in report.post_timing_check.items()],
        ["outputs of the timed calls", "result", "mismatches"],
    )
    phases = markdown_table([[name, f"{seconds:.1f}"] for name, seconds in report.phases_s.items()], ["step", "wall s"])
    return {"timings": timings, "roofline": roofline, "clocks": clocks, "clocks_during": _clocks_during(report),
            "checks": checks, "phases": phases}


def _clocks_during(report: BenchmarkReport) -> str | None:
    """Each GPU's busy samples while the child ran: lowest and median SM clock, memory clock, power, limits."""
    during = report.clocks_during
    if during is None or not during.gpus:
        return None
    rows = [[gpu.index, gpu.busy_samples, format_number(gpu.sm_clock_mhz_min), format_number(gpu.sm_clock_mhz_median),
             format_number(gpu.memory_clock_mhz_min), format_number(gpu.power_w_max),
             ", ".join(f"{LIMITS[limit]} {share:.0%}" for limit, share in gpu.limits.items()) or "none"]
            for gpu in during.gpus]
    return markdown_table(rows, ["GPU", "busy samples", "lowest SM MHz", "median SM MHz", "lowest memory MHz",
                                 "highest W", "limits in force (share of busy samples)"])


def benchmark_summary(report: BenchmarkReport, output_dir: Path) -> str:
    """What benchmark.py prints: the times, the comparison, the roofline share, and the next step."""
    where = output_dir / "benchmark.md"
    if report.verdict == "invalid":
        return (f"{report.failure_reason()}\nreport: {where}\n"
                "next: find the work the solution skips, or fix ref.py's flops()/bytes(), then re-run benchmark.py")
    if report.verdict != "measured":
        reason = report.failure_reason() or "; ".join(report.warnings[-1:])
        return (f"NOT TIMED ({report.verdict}): {reason}\nreport: {where}\n"
                "next: fix the solution, then re-run correctness_check.py")
    s = report.solution
    lines = [f"MEASURED on {report.gpu.name}: solution median {s.median_us:.2f} us "
             f"(p20 {s.p20_us:.2f}, p80 {s.p80_us:.2f}; {s.reps} reps, L2 flushed before each)"]
    if report.kernel_time and report.kernel_time.median_us:
        lines.append(f"  kernel time without launch overhead: {report.kernel_time.median_us:.2f} us "
                     "(CUDA graph, L2 flushed)")
    for b in report.baselines:
        lines.append(f"  {b.name}: " + (f"failed: {b.error}" if b.error else f"{b.median_us:.2f} us")
                     + (" (reused from the run's reference_cache.json)" if b.cached_from else "")
                     + (f" (in alternation with the solution, which read {b.paired_solution_us:.2f} us in those "
                        "pairs)" if b.paired_solution_us else ""))
    if report.best_baseline:
        lines.append(f"  best PyTorch baseline: {report.best_baseline}; solution speedup over it "
                     f"{report.speedup_vs_best_baseline:.2f}x")
    if report.percent_of_ceiling is not None:
        reached = "reached" if report.target_reached else "not reached"
        if report.target_reached and report.percent_of_ceiling < report.target_percent:
            reached += ": faster than every roof measured on this GPU"
        basis = (report.ceiling_basis().name if report.ceiling_basis() else None) or report.roofline.primary
        lines.append(f"  {report.percent_of_ceiling:.1f}% of the ceiling ({basis} ceilings; "
                     f"target {report.target_percent:g}%: {reached})")
    if report.comparison:
        c = report.comparison
        lines.append(f"  vs {c.against}: {c.speedup:.3f}x [{c.ci_low:.3f}, {c.ci_high:.3f}] -> {c.verdict}")
    launches = launch_summary_line(report.launch_check())
    if launches:
        lines.append(f"  {launches}")
    for warning in report.warnings:
        lines.append(f"WARNING: {warning}")
    lines.append(f"report: {where}")
    lines.append("next: profile this version to see why it is not faster (SKILL.md, the profile step)")
    return "\n".join(lines)
