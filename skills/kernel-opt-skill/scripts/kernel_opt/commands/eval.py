"""Evaluate a folder of solutions against a folder of problems: correct rate, fast_p, geometric-mean speedup.

Pairs PROBLEMS_DIR/NAME.py (a KernelBench problem, or a ref.py) with SOLUTIONS_DIR/NAME.py or
NAME.cu (a ModelNew, a Triton run_kernel, a CUDA solve) or SOLUTIONS_DIR/NAME/, a workspace.py run
folder (its best measured version). Each pair runs correctness_check, then benchmark (on a GPU),
in child processes: a solution that crashes or hangs costs its own row only. A second run reuses
every pair whose files and options are unchanged (OUT/pairs/NAME/entry.json); --force re-runs all.

With --gpus N|all one worker process per GPU of this host evaluates the pairs (each alone on its
GPU); with --ray ADDRESS|local they are Ray tasks asking for one GPU each, on a running cluster or
a local Ray instance (pip install "ray[default]"). Either way the records are the same as those
of a one-GPU run, each entry names the GPU it ran on, and the summary gives the wall time against
the sum of the pairs' times, and the figures per GPU model where more than one was used.

Usage:
  eval.py tests/fixtures/kernelbench/problems tests/fixtures/kernelbench/solutions --output-dir out/eval
  eval.py problems/ solutions/ --output-dir out/eval --kernelbench-tolerances --compile-modes default
  eval.py problems/ runs/ --output-dir out/eval --only 19_ReLU,23_Softmax --profile --json
  eval.py problems/ solutions/ --output-dir out/eval --gpus all
  eval.py problems/ solutions/ --output-dir out/eval --ray auto --pair-timeout 900

Writes OUT/eval.md, OUT/eval.json (the record) and OUT/eval.png (speedups, on a GPU); per pair
OUT/pairs/NAME/ holds correctness.md/json, benchmark.md/json and entry.json. Progress goes to
stderr. Exit codes: 0 every problem correct, 1 some problem not correct (wrong, invalid, broken,
hung or missing), 2 usage error, 4 some pair could not run on this machine and none failed (or
--gpus asks for more GPUs than there are, or --ray finds no Ray or no cluster).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from kernel_opt.check.correctness import DEFAULT_SEEDS
from kernel_opt.core.cli import comma_list, make_parser, print_json, run_command
from kernel_opt.core.errors import ExitCode
from kernel_opt.measure.benchmark_request import DEFAULT_COMPILE_MODES, baselines_option
from kernel_opt.suite.driver import run_eval
from kernel_opt.suite.records import FAILED_VERDICTS, EvalEntry, EvalReport
from kernel_opt.suite.report import EVAL_MARKDOWN, eval_summary, write_eval_reports
from kernel_opt.suite.runner import DEFAULT_PAIR_TIMEOUT_S, EvalRequest

PROG = "eval.py"
PROGRESS_WIDTH = 20


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser(PROG, __doc__)
    parser.add_argument("problems", type=Path, help="folder of problem files (KernelBench .py or ref.py)")
    parser.add_argument("solutions", type=Path, help="folder of solutions named after the problems, or run folders")
    parser.add_argument("--output-dir", type=Path, required=True, help="where eval.md/json/png and pairs/ go")
    parser.add_argument("--kernelbench-tolerances", action="store_true",
                        help="judge outputs at KernelBench's atol = rtol = 1e-2 (precision downgrades flagged)")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="random input sets per shape (default 3)")
    parser.add_argument("--baseline", default="both", help="PyTorch baselines: eager, compile, both (default) or none")
    parser.add_argument("--compile-modes", default=",".join(DEFAULT_COMPILE_MODES), help="torch.compile modes to time")
    parser.add_argument("--timeout", type=float,
                        help="seconds without progress before a solution counts as hung (default: each tool's own)")
    parser.add_argument("--only", default="", help="comma-separated problem names to evaluate (default: all)")
    parser.add_argument("--profile", action="store_true", help="also profile every correct solution with ncu")
    parser.add_argument("--force", action="store_true", help="re-run every pair, even those an earlier run finished")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    parser.add_argument("--gpus", metavar="N|all",
                        help="one worker process per GPU of this host, N of them or all (with --device cpu, N workers "
                             "without a GPU)")
    parser.add_argument("--ray", metavar="ADDRESS|local",
                        help="Ray tasks, one GPU each, on the cluster at ADDRESS (auto, HOST:6379, ray://HOST:10001) "
                             "or on a Ray instance started here for the run (local)")
    parser.add_argument("--pair-timeout", type=float, default=DEFAULT_PAIR_TIMEOUT_S,
                        help=f"with --gpus or --ray: seconds a pair may take in all before its worker is stopped "
                             f"(default {DEFAULT_PAIR_TIMEOUT_S:g})")
    parser.add_argument("--json", action="store_true", help="print one JSON object (the record) instead of tables")
    return parser


def exit_code_of(report: EvalReport) -> int:
    """0 all correct; 1 any problem not correct; 4 only this machine's limits stood in the way."""
    verdicts = {entry.verdict for entry in report.entries}
    if verdicts & set(FAILED_VERDICTS):
        return int(ExitCode.CHECK_FAILED)
    if "environment_error" in verdicts:
        return int(ExitCode.ENVIRONMENT_FAULT)
    return int(ExitCode.OK)


def show_progress(done: int, total: int, entry: EvalEntry, resumed: bool) -> None:
    filled = PROGRESS_WIDTH * done // max(total, 1)
    timing = f", {entry.speedup_vs_eager:.2f}x eager" if entry.speedup_vs_eager else ""
    flags = " PRECISION DOWNGRADE" if entry.precision_downgrade else ""
    flags += " (KernelBench's rule would pass it)" if entry.kernelbench_would_pass and not entry.correct else ""
    where = f", GPU {entry.gpu['index']}" if entry.gpu and entry.gpu.get("index") is not None else ""
    how = "earlier run" if resumed else f"{entry.wall_s:.0f} s{where}"
    print(f"[{'#' * filled}{'-' * (PROGRESS_WIDTH - filled)}] {done}/{total} {entry.name}: "
          f"{entry.verdict}{flags}{timing} ({how})", file=sys.stderr, flush=True)


def _main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    request = EvalRequest(
        problems_dir=args.problems, solutions_dir=args.solutions, output_dir=args.output_dir,
        kernelbench_tolerances=args.kernelbench_tolerances, seeds=args.seeds, baselines=baselines_option(args.baseline),
        compile_modes=comma_list(args.compile_modes), timeout_s=args.timeout, only=comma_list(args.only),
        profile=args.profile, force=args.force, device=args.device, gpus=args.gpus, ray=args.ray,
        pair_timeout_s=args.pair_timeout)
    report = run_eval(request, command=f"{PROG} {shlex.join(argv)}", progress=show_progress)
    write_eval_reports(report, args.output_dir)
    code = exit_code_of(report)
    if args.json:
        print_json({"ok": code == 0, "exit_code": code, "report": str(args.output_dir / EVAL_MARKDOWN),
                    **report.to_dict()})
    else:
        print(eval_summary(report, args.output_dir, code))
    return code
