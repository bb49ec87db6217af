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
  benchmark.py out/v2/v2.py --ref out/ref.py --output-dir out/v2 --checked-by out/v2/correctness.json \
      --reference-cache out/reference_cache.json

Writes DIR/benchmark.md and DIR/benchmark.json. Exit codes: 0 measured, 1 incorrect (never
timed, or wrong after timing), 2 usage error, 3 the solution is at fault, 4 no GPU here.
Run measure_ceilings.py once per GPU so "% of ceiling" uses what this GPU really reaches.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from kernel_opt.check.correctness import BuildOptions
from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.measure.benchmark import benchmark_solution
from kernel_opt.measure.benchmark_report import benchmark_summary
from kernel_opt.measure.benchmark_request import (
    DEFAULT_CHECK_SEEDS,
    DEFAULT_COMPILE_MODES,
    DEFAULT_SEED,
    DEFAULT_TIMEOUT_S,
    PROG,
    BenchmarkRequest,
    baselines_option,
)
from kernel_opt.measure.records import DEFAULT_TARGET_PERCENT
from kernel_opt.solution import registry
from kernel_opt.solution.dims import check_dims


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser(PROG, __doc__)
    parser.add_argument("solution", type=Path,
                        help="the solution to time (.cu, Triton .py, or KernelBench ModelNew .py)")
    parser.add_argument("--ref", type=Path, required=True,
                        help="ref.py: reference() is also the PyTorch baseline; or a KernelBench problem file, whose "
                             "Model is the baseline")
    parser.add_argument("--output-dir", type=Path, required=True, help="where benchmark.md and benchmark.json go")
    parser.add_argument("--against", type=Path,
                        help="another version to compare with, timed interleaved (e.g. out/v1/v1.cu)")
    parser.add_argument("--baseline", default="both",
                        help="PyTorch baselines: eager, compile, both (default) or none")
    parser.add_argument("--compile-modes", default=",".join(DEFAULT_COMPILE_MODES), help="torch.compile modes to time")
    parser.add_argument("--backend", choices=["auto", *registry.names()], default="auto")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the timed inputs")
    parser.add_argument("--seeds", type=int, default=DEFAULT_CHECK_SEEDS,
                        help="seeds of the correctness check run first")
    parser.add_argument("--atol", type=float)
    parser.add_argument("--rtol", type=float)
    parser.add_argument("--kernelbench-tolerances", action="store_true",
                        help="judge outputs (the check first and the timed calls' outputs) at KernelBench's "
                             "atol = rtol = 1e-2; precision downgrades are flagged")
    parser.add_argument("--target-percent", type=float, default=DEFAULT_TARGET_PERCENT,
                        help="percent of the roofline ceiling at which the loop may stop (default 90)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="seconds without progress before the run counts as hung")
    parser.add_argument("--arch", default="auto")
    parser.add_argument("--nvcc-flags", default="",
                        help='extra nvcc flags, written with "=" since they start with "-": '
                             '--nvcc-flags="-lcublas --use_fast_math"')
    parser.add_argument("--checked-by", type=Path, metavar="CORRECTNESS_JSON",
                        help="a passing correctness.json of this very solution and ref.py (same bytes, build and "
                             "sizes, on a GPU): relied on instead of running the check again; anything else re-runs it")
    parser.add_argument("--reference-cache", type=Path, metavar="CACHE_JSON",
                        help="a run's reference_cache.json: baselines timed and work counted there under the same GPU, "
                             "driver, torch, triton, ref.py, sizes and seed are reused, and what is measured now is "
                             "added (workspace.py evaluate passes OUT/reference_cache.json)")
    parser.add_argument("--json", action="store_true")
    return parser


def parse_request(argv: list[str]) -> tuple[BenchmarkRequest, bool]:
    """The typed request behind a command line, and whether --json was given."""
    args, dims = parse_args_with_dims(build_parser(), argv)
    baselines = baselines_option(args.baseline)
    request = BenchmarkRequest(
        solution=args.solution, reference=args.ref, output_dir=args.output_dir, dims=dims, against=args.against,
        baselines=baselines, compile_modes=[m.strip() for m in args.compile_modes.split(",") if m.strip()],
        backend=args.backend, seed=args.seed, check_seeds=args.seeds, atol=args.atol, rtol=args.rtol,
        target_percent=args.target_percent, timeout_s=args.timeout, build=BuildOptions(args.arch, args.nvcc_flags),
        checked_by=args.checked_by, reference_cache=args.reference_cache,
        kernelbench_tolerances=args.kernelbench_tolerances,
    )
    return request, args.json


def _main(argv: list[str]) -> int:
    request, wants_json = parse_request(argv)
    request.dims = check_dims(request.reference, request.dims, request.solution, request.backend)
    report = benchmark_solution(request, command=f"{PROG} {shlex.join(argv)}")
    if wants_json:
        print_json({"ok": report.exit_code == 0, "exit_code": report.exit_code,
                    "report": str(request.output_dir / "benchmark.md"), **report.to_dict()})
    else:
        print(benchmark_summary(report, request.output_dir))
    return int(report.exit_code)
