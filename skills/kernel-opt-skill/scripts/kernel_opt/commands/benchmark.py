"""Time a solution honestly against PyTorch (eager, torch.compile) and, optionally, another version.

The solution must first pass the same correctness check as correctness_check.py; it is then
timed at the command-line shape with the L2 flushed before every call (median, p20/p80), its
outputs re-checked after timing, placed on the roofline, and compared interleaved with
--against. Needs an NVIDIA GPU.

Usage:
  benchmark.py reference/softmax/good/softmax.py --ref reference/softmax/ref.py --output-dir out/v0
  benchmark.py out/v2/v2.cu --ref out/ref.py --output-dir out/v2 --against out/v1/v1.cu --N=4096 --D=4096
  benchmark.py kernel.cu --ref ref.py --output-dir out/v0 --baseline eager --json
  benchmark.py kernel.py --ref ref.py --output-dir out/v0 --compile-modes default --target-percent 85

Writes DIR/benchmark.md and DIR/benchmark.json. Exit codes: 0 measured, 1 incorrect (never
timed, or wrong after timing), 2 usage error, 3 the solution is at fault, 4 no GPU here.
Run measure_ceilings.py once per GPU so "% of ceiling" uses what this GPU really reaches.
"""

from __future__ import annotations

import shlex
import time
from dataclasses import asdict
from pathlib import Path

from kernel_opt.backends import registry
from kernel_opt.check.compare import summarize_failures
from kernel_opt.check.correctness import BuildOptions, CheckOptions, check_correctness, exit_code_of, solution_spec
from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.core.errors import EnvironmentFault, ExitCode, KernelOptError, UsageError
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import format_number, markdown_table, render
from kernel_opt.env.device import resolve_device
from kernel_opt.measure.benchmark import (
    DEFAULT_COMPILE_MODES,
    DEFAULT_TARGET_PERCENT,
    BenchmarkReport,
    assemble_report,
    phase_durations,
)

DEFAULT_TIMEOUT_S = 900.0  # max-autotune compiles of a matmul baseline can take minutes


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser("benchmark.py", __doc__)
    parser.add_argument("solution", type=Path, help="the solution to time (.cu or Triton .py)")
    parser.add_argument("--ref", type=Path, required=True, help="ref.py: reference() is also the PyTorch baseline")
    parser.add_argument("--output-dir", type=Path, required=True, help="where benchmark.md and benchmark.json go")
    parser.add_argument("--against", type=Path, help="another version to compare with, timed interleaved (e.g. out/v1/v1.cu)")
    parser.add_argument("--baseline", default="eager,compile", help="PyTorch baselines: eager, compile, both (default) or none")
    parser.add_argument("--compile-modes", default=",".join(DEFAULT_COMPILE_MODES), help="torch.compile modes to time")
    parser.add_argument("--backend", choices=["auto", *registry.names()], default="auto")
    parser.add_argument("--seed", type=int, default=0, help="seed of the timed inputs")
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the correctness check run first")
    parser.add_argument("--atol", type=float)
    parser.add_argument("--rtol", type=float)
    parser.add_argument("--target-percent", type=float, default=DEFAULT_TARGET_PERCENT,
                        help="percent of the roofline ceiling at which the loop may stop (default 90)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds without progress before the run counts as hung")
    parser.add_argument("--arch", default="auto")
    parser.add_argument("--nvcc-flags", default="", help='extra nvcc flags, written with "=" since they start with "-": --nvcc-flags="-lcublas --use_fast_math"')
    parser.add_argument("--json", action="store_true")
    return parser


def _main(argv: list[str]) -> int:
    args, dims = parse_args_with_dims(build_parser(), argv)
    baselines = [] if args.baseline == "none" else [b.strip() for b in args.baseline.split(",") if b.strip()]
    unknown = set(baselines) - {"eager", "compile"}
    if unknown:
        raise UsageError(f"unknown --baseline {sorted(unknown)}; use eager, compile, eager,compile or none")
    if not 0 < args.target_percent <= 100:
        raise UsageError("--target-percent must be in (0, 100]")
    solution, reference = args.solution.resolve(), args.ref.resolve()
    for path, role in ((solution, "solution"), (reference, "reference"), (args.against, "--against")):
        if path is not None and not Path(path).is_file():
            raise UsageError(f"{role} file not found: {path}")
    backend = registry.detect(solution, args.backend)
    if resolve_device("auto") != "cuda":
        raise EnvironmentFault(
            "the benchmark times kernels on an NVIDIA GPU and torch sees none on this machine; "
            "here you can run correctness_check.py (Triton interpreter, or --compile-only for CUDA)"
        )
    command = "benchmark.py " + shlex.join(argv)
    report = BenchmarkReport(solution={"path": str(args.solution), "backend": backend}, reference=str(args.ref),
                             backend=backend, command=command, target_percent=args.target_percent)
    build = BuildOptions(args.arch, args.nvcc_flags)
    build_dir = args.output_dir / "build"
    started = time.time()
    correctness = check_correctness(solution, reference, backend, "cuda", dims,
                                    CheckOptions(args.seeds, args.atol, args.rtol, min(args.timeout, 300.0)),
                                    build, build_dir, command)
    report.correctness = {
        "passed": correctness.passed,
        "verdict": correctness.verdict,
        "cases": len(correctness.cases),
        "failures": summarize_failures(correctness.cases)[:5],
        "error": correctness.error,
    }
    report.warnings += correctness.warnings
    report.phases_s["correctness check"] = round(time.time() - started, 2)
    if not correctness.passed:
        report.verdict = "incorrect" if correctness.verdict == "fail" else correctness.verdict
        report.error = correctness.error
        return _finish(report, args, exit_code_of(correctness))
    try:
        spec, build_record = solution_spec(solution, backend, "cuda", build_dir, build, report.notes)
        if build_record:
            report.solution["build"] = {k: build_record[k] for k in ("arch", "kernels", "signature")
                                        if k in build_record}
        report.warnings += registry.get(backend).source_warnings(solution)
        against_spec = None
        if args.against is not None:
            other = args.against.resolve()
            against_spec, _ = solution_spec(other, registry.detect(other), "cuda", build_dir, build, report.notes)
        from kernel_opt.env.probes import probe_nvidia_smi
        from kernel_opt.run.runner import run_worker

        report.clocks_start = [asdict(gpu) for gpu in probe_nvidia_smi().gpus]
        request = {**spec, "mode": "benchmark", "reference": str(reference), "device": "cuda", "cli_dims": dims,
                   "seed": args.seed, "baselines": baselines, "atol": args.atol, "rtol": args.rtol, "against": against_spec,
                   "compile_modes": [m.strip() for m in args.compile_modes.split(",") if m.strip()]}
        spawned = time.time()
        outcome = run_worker(request, timeout_s=args.timeout)
        report.phases_s.update(phase_durations(outcome.events, spawned, time.time()))
        report.clocks_end = [asdict(gpu) for gpu in probe_nvidia_smi().gpus]
        against_dir = str(args.against.parent) if args.against is not None else None
        assemble_report(report, outcome, str(args.against) if args.against else None, against_dir)
    except KernelOptError as error:
        report.error = error.to_dict()
        report.verdict = {ExitCode.USAGE: "usage_error", ExitCode.ENVIRONMENT_FAULT: "environment_error"}.get(
            error.exit_code, "solution_error")
    code = {"measured": 0, "incorrect": 1}.get(report.verdict, (report.error or {}).get("exit_code", 3))
    return _finish(report, args, int(code))


def _finish(report: BenchmarkReport, args, exit_code: int) -> int:
    tables = _tables(report)
    write_json_atomic(args.output_dir / "benchmark.json", {"exit_code": exit_code, **report.to_dict()})
    write_text_atomic(args.output_dir / "benchmark.md", render("benchmark.md.j2", report=report, tables=tables, exit_code=exit_code))
    if args.json:
        print_json({"ok": exit_code == 0, "exit_code": exit_code, "report": str(args.output_dir / "benchmark.md"), **report.to_dict()})
    else:
        print(_summary(report, args.output_dir))
    return exit_code


def _us(value) -> str:
    return "—" if value is None else f"{value:.2f}"


def _tables(report: BenchmarkReport) -> dict:
    rows = []
    if report.solution.get("median_us"):
        s = report.solution
        rows.append(["solution", _us(s["median_us"]), _us(s["p20_us"]), _us(s["p80_us"]), s["reps"], "—", "1.00x"])
    for extra in (report.kernel_time, report.cuda_graph):
        if extra and extra.get("median_us"):
            rows.append([extra["name"], _us(extra["median_us"]), _us(extra["p20_us"]), _us(extra["p80_us"]), extra["reps"], "—", "—"])
    median = report.solution.get("median_us")
    for b in report.baselines:
        relative = f"{b.median_us / median:.2f}x" if b.median_us and median else "—"
        compile_s = f"{b.compile_s:.1f}" if b.compile_s is not None else "—"
        if b.error:
            rows.append([b.name, "failed", "—", "—", "—", "—", b.error])
        else:
            rows.append([b.name, _us(b.median_us), _us(b.p20_us), _us(b.p80_us), b.reps, compile_s, relative])
    timings = markdown_table(rows, ["what", "median µs", "p20 µs", "p80 µs", "reps", "compile s", "its time / solution's"])
    roofline_rows = []
    for source, point in (report.roofline.get("points") or {}).items():
        c = point["ceilings"]
        roofline_rows.append([
            source, f"{c['memory_bandwidth_gbps']:.0f}", f"{c['compute_tflops']:.1f} ({c.get('dtype')})",
            f"{point['achieved_bandwidth_gbps']:.0f}", format_number(point["achieved_tflops"]),
            format_number(point["arithmetic_intensity_flop_per_byte"]), point["bound"], _us(point["floor_time_us"]),
            f"{point['percent_of_ceiling']:.1f}%",
        ])
    roofline = markdown_table(roofline_rows, ["ceilings", "GB/s", "TFLOP/s", "achieved GB/s", "achieved TFLOP/s",
                                              "FLOP/byte", "bound", "floor µs", "% of ceiling"])
    clocks = markdown_table(
        [[when, g.get("name"), g.get("sm_clock_mhz"), g.get("max_sm_clock_mhz"), g.get("memory_clock_mhz")]
         for when, gpus in (("start", report.clocks_start), ("end", report.clocks_end)) for g in gpus],
        ["when", "GPU", "SM MHz", "max SM MHz", "memory MHz"],
    )
    checks = markdown_table(
        [[name, "pass" if c["passed"] else "FAIL", max((o["mismatches"] for o in c["outputs"]), default=0)]
         for name, c in report.post_timing_check.items()],
        ["outputs of the timed calls", "result", "mismatches"],
    )
    phases = markdown_table([[name, f"{seconds:.1f}"] for name, seconds in report.phases_s.items()], ["step", "wall s"])
    return {"timings": timings, "roofline": roofline, "clocks": clocks, "checks": checks, "phases": phases}


def _summary(report: BenchmarkReport, output_dir: Path) -> str:
    where = output_dir / "benchmark.md"
    if report.verdict != "measured":
        reason = (report.error or {}).get("message") or "; ".join(report.correctness.get("failures") or report.warnings[-1:])
        return f"NOT TIMED ({report.verdict}): {reason}\nreport: {where}\nnext: fix the solution, then re-run correctness_check.py"
    s = report.solution
    lines = [f"MEASURED on {report.gpu.get('name')}: solution median {s['median_us']:.2f} us "
             f"(p20 {s['p20_us']:.2f}, p80 {s['p80_us']:.2f}; {s['reps']} reps, L2 flushed before each)"]
    if report.kernel_time and report.kernel_time.get("median_us"):
        lines.append(f"  kernel time without launch overhead: {report.kernel_time['median_us']:.2f} us (CUDA graph, L2 flushed)")
    for b in report.baselines:
        lines.append(f"  {b.name}: " + (f"failed: {b.error}" if b.error else f"{b.median_us:.2f} us"))
    if report.best_baseline:
        lines.append(f"  best PyTorch baseline: {report.best_baseline}; solution speedup over it {report.speedup_vs_best_baseline:.2f}x")
    if report.percent_of_ceiling is not None:
        reached = "reached" if report.target_reached else "not reached"
        lines.append(f"  {report.percent_of_ceiling:.1f}% of the ceiling (target {report.target_percent:g}%: {reached})")
    if report.comparison:
        c = report.comparison
        lines.append(f"  vs {c.against}: {c.speedup:.3f}x [{c.ci_low:.3f}, {c.ci_high:.3f}] -> {c.verdict}")
    for warning in report.warnings:
        lines.append(f"WARNING: {warning}")
    lines.append(f"report: {where}")
    lines.append("next: profile this version to see why it is not faster (SKILL.md, the profile step)")
    return "\n".join(lines)
