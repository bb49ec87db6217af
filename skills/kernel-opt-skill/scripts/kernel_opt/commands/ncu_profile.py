"""Profile a solution with Nsight Compute and classify its bottleneck from the numbers.

Only the solution's own launches are profiled: warm-up calls (JIT, autotuning) run first, then
the measured calls run inside the NVTX range `kernel_opt_solution`, the only range ncu looks
at; the reference never runs. Clocks are not locked (--clock-control none), so ncu durations
are never comparable with benchmark timings. The verdict (memory_bound, compute_bound,
latency_bound, occupancy_bound, overlap_bound, plus small_grid) is computed by kernel_opt.profile.classify from the
metrics shown beside it. `--from-report` reads an existing .ncu-rep and needs no GPU.

`--sweep NAME=V1,V2,...` profiles the solution and PyTorch eager (as the benchmark times it) at each
size instead, through nsight-python (pinned: env_check.py says which version and whether it is
installed), after checking every size's correctness; a wrong size is never profiled. It writes
DIR/sweep.md (time, speedup, GB/s, TFLOP/s, % of ceiling per size), DIR/sweep.png, DIR/sweep.csv
(nsight-python's DataFrame), DIR/sweep.json, DIR/check/ (that correctness check) and DIR/nsight/
(ncu's log and nsight-python's CSVs per size; its full .ncu-rep per size only with --keep-reports). Put a
run's sweep in OUT/sweep: final_report.py embeds it.

Usage:
  ncu_profile.py OUT/v1/v1.cu --ref OUT/ref.py --output-dir OUT/v1 --N=4096 --D=4096
  ncu_profile.py OUT/v2/v2.py --ref OUT/ref.py --output-dir OUT/v2 --baseline OUT/v1 --N=4096 --D=4096
  ncu_profile.py OUT/v1/v1.cu --ref OUT/ref.py --output-dir OUT/v1 --set full --N=4096 --D=4096
  ncu_profile.py --from-report OUT/v1/profile.ncu-rep --output-dir OUT/v1 --json
  ncu_profile.py OUT/v2/v2.py --ref OUT/ref.py --output-dir OUT/sweep --sweep N=1024,2048,4096,8192 --D=4096

Writes DIR/ncu_summary.md (verdict, evidence, what to try, what moved since --baseline),
DIR/ncu_details.md (every metric with its unit), DIR/ncu_summary.json ("bottleneck": the label),
and, when profiling, DIR/profile.ncu-rep (ncu's report) and DIR/ncu.log (ncu's own output).
Exit codes: 0 profiled and classified (with --sweep: every size profiled), 1 (--sweep) a size
gave wrong results or a time faster than the physical floor, 2 usage error (bad arguments,
missing or unreadable report), 3 the solution is at fault (compile error, crash, no kernel
launched), 4 this machine cannot profile (no GPU, no ncu, no ncu_report, no permission to read
GPU counters; with --sweep also no nsight-python at its pinned version).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from kernel_opt.check.correctness import BuildOptions
from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.core.errors import ExitCode, UsageError
from kernel_opt.profile.ncu_summary import DETAILS_MD, SUMMARY_MD, profile_summary
from kernel_opt.profile.profiler import (
    DEFAULT_PROFILED_CALLS,
    DEFAULT_SECTION_SET,
    DEFAULT_WARMUP_CALLS,
    PROG,
    ProfileRequest,
    profile_solution,
)
from kernel_opt.profile.sweep.plan import DEFAULT_SWEEP_RUNS
from kernel_opt.solution import registry
from kernel_opt.solution.dims import check_dims

# Options of the single-size profile that a sweep has no use for, with their defaults.
NOT_FOR_SWEEPS = {"from_report": None, "baseline": None, "section_set": DEFAULT_SECTION_SET,
                  "calls": DEFAULT_PROFILED_CALLS, "warmup": DEFAULT_WARMUP_CALLS, "max_launches": None}


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser(PROG, __doc__)
    parser.add_argument("solution", type=Path, nargs="?",
                        help="the solution: a .cu with extern \"C\" solve(...) or a Triton .py")
    parser.add_argument("--ref", type=Path, help="ref.py (its setup() makes the inputs); required unless --from-report")
    parser.add_argument("--output-dir", type=Path, required=True, help="where the reports (and profile.ncu-rep) go")
    parser.add_argument("--from-report", type=Path, help="read this .ncu-rep instead of profiling (no GPU needed)")
    parser.add_argument("--set", dest="section_set", choices=["targeted", "full"], default=DEFAULT_SECTION_SET,
                        help="targeted: the sections the classifier reads (default); full: ncu's full set (slower)")
    parser.add_argument("--baseline", type=Path,
                        help="a previous version's folder (with ncu_summary.json): report what moved")
    parser.add_argument("--backend", choices=["auto", *registry.names()], default="auto",
                        help="auto: from the suffix; with --from-report, auto links both guides")
    parser.add_argument("--calls", type=int, default=DEFAULT_PROFILED_CALLS,
                        help=f"solution calls inside the profiled range (default {DEFAULT_PROFILED_CALLS})")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP_CALLS,
                        help=f"solution calls before the profiled range (default {DEFAULT_WARMUP_CALLS})")
    parser.add_argument("--max-launches", type=int, default=None,
                        help="stop profiling after this many kernel launches (ncu --launch-count; default 100)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds ncu may take (default 600)")
    parser.add_argument("--arch", default="auto",
                        help="CUDA target: auto (this GPU; Hopper as sm_90a), sm_90, sm_90a, ...")
    parser.add_argument("--nvcc-flags", default="",
                        help='extra nvcc flags, written with "=" since they start with "-": '
                             '--nvcc-flags="-lcublas --use_fast_math"')
    parser.add_argument("--sweep", metavar="NAME=V1,V2,...",
                        help="profile the solution beside PyTorch at each size of one dim through nsight-python "
                             "(e.g. N=1024,2048,4096,8192); the other dims as --NAME=VALUE")
    parser.add_argument("--sweep-runs", type=int, default=DEFAULT_SWEEP_RUNS,
                        help=f"with --sweep: nsight-python's runs per size (default {DEFAULT_SWEEP_RUNS})")
    parser.add_argument("--keep-reports", action="store_true",
                        help="with --sweep: keep nsight-python's full .ncu-rep per size under DIR/nsight/ (tens of MB "
                             "each; by default they are removed once the sweep's CSVs are written)")
    parser.add_argument("--kernelbench-tolerances", action="store_true",
                        help="with --sweep: its correctness check judges outputs at KernelBench's atol = rtol = 1e-2 "
                             "(as a run made with workspace.py init --kernelbench-tolerances)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (ncu_summary.json plus paths)")
    return parser


def parse_request(argv: list[str]) -> tuple[ProfileRequest, bool]:
    """The typed request behind a command line, and whether --json was given."""
    args, dims = parse_args_with_dims(build_parser(), argv)
    request = ProfileRequest(
        output_dir=args.output_dir, solution=args.solution, reference=args.ref, dims=dims, from_report=args.from_report,
        section_set=args.section_set, baseline=args.baseline, backend=args.backend, calls=args.calls,
        warmup=args.warmup, max_launches=args.max_launches, timeout_s=args.timeout,
        build=BuildOptions(args.arch, args.nvcc_flags),
    )
    return request, args.json


def _sweep(args, dims: dict, argv: list[str]) -> int:
    """--sweep: every size checked, then profiled through nsight-python; the record's exit code."""
    from kernel_opt.core.cli import script_command
    from kernel_opt.profile.sweep.plan import plan_sweep
    from kernel_opt.profile.sweep.report import summary_lines
    from kernel_opt.profile.sweep.runner import SweepRequest, sweep_solution

    given = [name for name, default in NOT_FOR_SWEEPS.items() if getattr(args, name) != default]
    if given:
        flags = ", ".join("--" + name.replace("_", "-").replace("section-set", "set") for name in given)
        raise UsageError(f"{flags} cannot be combined with --sweep", hint="a sweep profiles sizes; run the single-size "
                         "profile separately for the bottleneck of one size")
    if args.solution is None or args.ref is None:
        raise UsageError("--sweep needs a solution and --ref ref.py")
    plan = plan_sweep(args.sweep, dims, args.ref, args.solution, args.backend)
    request = SweepRequest(
        solution=args.solution, reference=args.ref, output_dir=args.output_dir, plan=plan, backend=args.backend,
        runs=args.sweep_runs, build=BuildOptions(args.arch, args.nvcc_flags), keep_reports=args.keep_reports,
        kernelbench_tolerances=args.kernelbench_tolerances,
        command=f"{script_command('ncu_profile')} {shlex.join(argv)}",
        **({"timeout_s": args.timeout} if args.timeout is not None else {}),
    )
    record = sweep_solution(request)
    if args.json:
        print_json({"ok": record.exit_code == 0, "exit_code": record.exit_code, "output_dir": str(args.output_dir),
                    **record.to_dict()})
    else:
        print("\n".join(summary_lines(record, str(args.output_dir))))
    return record.exit_code


def _main(argv: list[str]) -> int:
    args, dims = parse_args_with_dims(build_parser(), argv)
    if args.sweep is not None:
        return _sweep(args, dims, argv)
    if args.keep_reports:
        raise UsageError("--keep-reports is for --sweep", hint="a single-size profile always keeps DIR/profile.ncu-rep")
    if args.kernelbench_tolerances:
        raise UsageError("--kernelbench-tolerances is for --sweep's correctness check",
                         hint="a single-size profile checks no values; correctness_check.py takes the flag")
    request, wants_json = parse_request(argv)
    if request.reference is not None and request.from_report is None:
        request.dims = check_dims(request.reference, request.dims, request.solution, request.backend)
    summary = profile_solution(request)
    output_dir = request.output_dir
    if wants_json:
        print_json({"ok": True, "exit_code": 0, "summary": str(output_dir / SUMMARY_MD),
                    "details": str(output_dir / DETAILS_MD), **summary.to_dict()})
    else:
        print(profile_summary(summary, output_dir))
    return int(ExitCode.OK)
