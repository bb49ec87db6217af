"""Start, extend, evaluate and inspect a versioned optimization run (OUT/run.json, OUT/vN/).

Usage:
  workspace.py init out/softmax --kernel softmax.cu --ref ref.py --iterations 3 --name softmax --N=4096 --D=4096
  workspace.py next out/softmax
  workspace.py evaluate out/softmax v0
  workspace.py evaluate out/softmax v2 --json
  workspace.py evaluate out/softmax v3 --no-sanitize
  workspace.py status out/softmax

init copies the kernel to OUT/v0/ and the reference to OUT/ref.py, and fixes the run's shapes,
iteration budget and roofline target in OUT/run.json (refuses a folder that is not empty).
next creates v<n+1>/ as a copy of the best version so far, with a hypothesis.txt template;
it refuses once the budget is spent, the target is reached (while no PyTorch baseline is faster),
or the newest version is not evaluated. evaluate runs, in order: correctness -> hypothesis check
(v1 on) -> compute-sanitizer memcheck on the smallest shape (and racecheck when the kernel's SASS uses shared memory; a
finding fails the version like a wrong result; --no-sanitize skips both; these three run side
by side, as separate processes that time nothing) -> the GPU's
measured ceilings (read from the cache, measured once per machine) -> benchmark with
--against the best version so far -> ncu profile with --baseline that version -> experience
recommendations for the best version's bottleneck; it prints each step's wall time and writes
vN/evaluation.json (each tool's own output: vN/evaluate.log). A timed version is never
re-evaluated without --force. Without a GPU, evaluate runs what can run (Triton correctness
under the interpreter, CUDA compile check, static analysis) and lists what needs a GPU.
status shows every version's time, speedup, verdict and bottleneck, the best so far, the
budget left, and whether the target is reached.

Exit codes: 0 ok; 1 a check failed (evaluate: incorrect, hypothesis invalid); 2 usage error or
refusal: bad arguments, a ref.py without reference() or an unknown size at init, init on a
non-empty folder, evaluate on a timed version without --force, next refused by the run's
state (budget spent, target reached, the newest version not evaluated; --json names the kind
"refused"); 3 the solution is at fault (compile error, crash); 4 this machine could not run
every step (no GPU, no ncu, no compute-sanitizer): what ran is recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_opt.core.cli import (
    comma_list,
    make_parser,
    parse_args_with_dims,
    print_json,
    python_command,
    run_command,
    script_path,
)
from kernel_opt.core.errors import UsageError
from kernel_opt.core.render import markdown_table
from kernel_opt.experience.hypothesis import check_hypothesis
from kernel_opt.experience.time_prediction import prediction_verdict
from kernel_opt.loop.evaluate import (
    EVALUATE_BASELINES,
    EVALUATE_COMPILE_MODES,
    EVALUATE_LOG,
    EvaluateOptions,
    evaluate_version,
)
from kernel_opt.loop.next_version import create_next_version
from kernel_opt.loop.records import EVALUATION_FILE, EvaluationRecord
from kernel_opt.loop.versions import version_number
from kernel_opt.loop.workspace import HYPOTHESIS_FILE, RunStatus, create_run, run_status
from kernel_opt.measure.benchmark_request import baselines_option
from kernel_opt.measure.records import DEFAULT_TARGET_PERCENT
from kernel_opt.profile.sweep.plan import suggested_sweep
from kernel_opt.profile.sweep.records import SWEEP_FOLDER
from kernel_opt.solution import registry
from kernel_opt.solution.dims import check_dims
from kernel_opt.solution.kernelbench import is_problem_file, outline_problem

PROG = "workspace.py"


def main(argv=None) -> int:
    return run_command(_main, argv)


def _script(name: str, gpu: bool = False) -> str:
    """How a printed line calls one of the skill's scripts; `gpu`: a line for a machine with an NVIDIA GPU."""
    return f"{python_command(for_gpu=gpu)} {script_path(name)}"


def _add_init(commands) -> None:
    init = commands.add_parser("init", allow_abbrev=False,
                               help="create OUT with ref.py, v0/ and run.json (the budget is fixed here)",
                               description="Create OUT with ref.py, v0/ and run.json; dims as --NAME=VALUE.")
    init.add_argument("out", type=Path, help="the run folder to create (must not exist, or be empty)")
    init.add_argument("--kernel", type=Path, required=True, help="the starting kernel: a .cu or a Triton .py")
    init.add_argument("--ref", type=Path, required=True, help="ref.py with reference(**kwargs)")
    init.add_argument("--iterations", type=int, required=True, help="versions v1..vN this run may create")
    init.add_argument("--name", help="the operation, e.g. softmax (default: the kernel file's name)")
    init.add_argument("--target-percent", type=float, default=DEFAULT_TARGET_PERCENT,
                      help="%% of the roofline ceiling at which the loop may stop "
                           f"(default {DEFAULT_TARGET_PERCENT:g})")
    init.add_argument("--kernelbench-tolerances", action="store_true",
                      help="judge every check of the run at KernelBench's atol = rtol = 1e-2 (precision downgrades "
                           "such as TF32 flagged and accepted) instead of the reference's own rounding; the user's "
                           "choice, fixed for the run")
    init.add_argument("--backend", choices=["auto", *registry.names()], default="auto")
    init.add_argument("--arch", default="auto", help="CUDA target passed to every tool (default: this GPU; sm_90 on a "
                      "machine without one, whose compile check then targets Hopper: name your GPU's, e.g. sm_80)")
    init.add_argument("--nvcc-flags", default="",
                      help='extra nvcc flags for every tool, in "=" form: --nvcc-flags="-lcublas"')
    init.add_argument("--json", action="store_true")


def build_parser():
    parser = make_parser(PROG, __doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_init(commands)

    following = commands.add_parser(
        "next", allow_abbrev=False, help="create v<n+1>/ from the best version so far",
        description="Create v<n+1>/ from the best version so far, with a hypothesis template.",
    )
    following.add_argument("out", type=Path, help="the run folder")
    following.add_argument("--ignore-target", action="store_true",
                           help="continue within the budget although the roofline target is reached")
    following.add_argument("--json", action="store_true")

    evaluate = commands.add_parser("evaluate", allow_abbrev=False,
                                   help="correctness, hypothesis, sanitizer, benchmark, profile, recommendation",
                                   description="Evaluate one version: correctness -> hypothesis check -> "
                                               "compute-sanitizer -> benchmark against the best so far -> profile "
                                               "-> recommendation.")
    evaluate.add_argument("out", type=Path, help="the run folder")
    evaluate.add_argument("version", help="v0, v1, ...")
    evaluate.add_argument("--force", action="store_true", help="re-evaluate a version that was already timed")
    evaluate.add_argument("--baseline", default=",".join(EVALUATE_BASELINES),
                          help=f"PyTorch baselines the benchmark shows: eager, compile, both or none "
                               f"(default {','.join(EVALUATE_BASELINES)}; timed once per run and kept in "
                               "OUT/reference_cache.json for later versions; the final benchmark times them all again)")
    evaluate.add_argument("--compile-modes", default=",".join(EVALUATE_COMPILE_MODES),
                          help=f"torch.compile modes the benchmark times (default {','.join(EVALUATE_COMPILE_MODES)}; "
                               "the final benchmark times max-autotune too)")
    evaluate.add_argument("--static-analysis", action="store_true",
                          help="also run static_analysis.py on a GPU machine (it always runs without a GPU)")
    evaluate.add_argument("--no-sanitize", dest="sanitize", action="store_false",
                          help="skip compute-sanitizer (memcheck, and racecheck for kernels that use shared memory), "
                               "which otherwise runs on the smallest shape before anything is timed")
    evaluate.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                          help="seconds without progress before a check counts the solution as hung (default: "
                               "correctness_check.py's); raise it for a slow kernel under the CPU interpreter")
    evaluate.add_argument("--json", action="store_true")

    status = commands.add_parser("status", allow_abbrev=False, help="versions, best so far, budget left, target",
                                 description="Versions, best so far, budget left, and whether the target is reached.")
    status.add_argument("out", type=Path, help="the run folder")
    status.add_argument("--json", action="store_true")
    return parser


def _main(argv: list[str]) -> int:
    args, dims = parse_args_with_dims(build_parser(), argv)
    if dims and args.command != "init":
        raise UsageError(f"{args.command} takes no problem sizes (they were fixed by init in run.json)",
                         hint=f"remove {' '.join('--' + name for name in dims)}")
    return {"init": _init, "next": _next, "evaluate": _evaluate, "status": _status}[args.command](args, dims)


# --- init, next -------------------------------------------------------------------------------


def _init(args, dims) -> int:
    backend = registry.detect(args.kernel, args.backend)
    dims = check_dims(args.ref, dims, args.kernel, backend)  # also refuses a ref.py without reference()
    name = args.name or args.kernel.stem
    run = create_run(args.out, args.kernel, args.ref, args.iterations, name, backend, dims, args.target_percent,
                     args.nvcc_flags, args.arch, args.kernelbench_tolerances)
    if args.json:
        print_json({"ok": True, "out": str(args.out), "run": run.to_dict()})
        return 0
    shape = " ".join(run.dim_arguments()) or "ref.py's defaults"
    rule = ("KernelBench's atol = rtol = 1e-2" if run.kernelbench_tolerances
            else "the reference's own rounding (strict)")
    print(f"created {args.out}: {name} ({backend}), shape {shape}, budget {run.iterations_budget} iteration(s), "
          f"target {run.target_percent:g}% of the roofline ceiling, outputs judged at {rule}")
    print(f"  {args.out / run.reference_file}  {run.solution_path(args.out, 0)}  {args.out / 'run.json'}")
    print(f"v0 is {run.solution_path(args.out, 0)}, a copy of {args.kernel}: from now on the run reads only the copy, "
          "so make any fix to v0 there")
    print(f"next: {_script('env_check.py')} --output-dir {args.out}")
    print(f"then: {_script('workspace.py')} evaluate {args.out} v0")
    return 0


def _next(args, dims) -> int:
    created = create_next_version(args.out, args.ignore_target)
    if args.json:
        print_json({"ok": True, "version": created.name, "parent": created.parent.name,
                    "solution": str(created.solution), "hypothesis": str(created.hypothesis)})
        return 0
    timing = f" ({created.parent.median_us:.2f} us)" if created.parent.median_us else ""
    print(f"created {created.solution} from {created.parent.name}, the best version so far{timing}")
    print(f"1. write {created.hypothesis} (replace every <...>; format: reference/hypothesis.md), then check it:")
    print(f"   {_script('hypothesis_check.py')} {created.solution.parent}")
    print(f"2. make exactly that one change in {created.solution}")
    print(f"3. {_script('workspace.py')} evaluate {args.out} {created.name}")
    return 0


# --- evaluate -----------------------------------------------------------------------------------


def _evaluate(args, dims) -> int:
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, got {args.timeout:g}")
    options = EvaluateOptions(force=args.force, baselines=baselines_option(args.baseline),
                              compile_modes=comma_list(args.compile_modes), static_analysis=args.static_analysis,
                              sanitize=args.sanitize, check_timeout_s=args.timeout)
    record = evaluate_version(args.out, version_number(args.version), options)
    status = run_status(args.out)
    if args.json:
        print_json({"ok": record.exit_code == 0, "exit_code": record.exit_code, **record.to_dict(),
                    "run": _brief_status(status)})
    else:
        print(_evaluation_summary(record, status, args.out))
    return record.exit_code


# --- printing ------------------------------------------------------------------------------------


def _brief_status(status: RunStatus) -> dict[str, Any]:
    best = status.best
    return {
        "best": best.name if best else None,
        "best_median_us": best.median_us if best else None,
        "best_speedup_vs_v0": status.speedup_vs_v0(best) if best else None,
        "iterations_left": status.budget.iterations_left,
        "target_reached": status.target_reached,
        "stop_reason": status.stop_reason,
    }


def _run_line(status: RunStatus) -> str:
    best = status.best
    if best is not None and status.best_is_measured:
        speedup = status.speedup_vs_v0(best)
        best_text = f"{best.name} ({best.median_us:.2f} us" + (f", {speedup:.2f}x vs v0)" if speedup else ")")
    else:
        best_text = "none timed yet (v0 is the starting point)"
    budget = status.budget
    target = {True: "reached", False: "not reached", None: "not measured"}[status.target_reached]
    if status.behind_baseline:
        target += f", but {status.behind_baseline} is still faster" + (": the run goes on" if status.stop_reason
                                                                          is None else "")
    rule = " · outputs judged at KernelBench's atol = rtol = 1e-2" if status.run.kernelbench_tolerances else ""
    return (f"best so far: {best_text} · budget: {budget.iterations_used} of {budget.iterations_total} iteration(s) "
            f"used, {budget.iterations_left} left · "
            f"target {status.run.target_percent:g}% of the roofline ceiling: {target}{rule}")


def _evaluation_summary(record: EvaluationRecord, status: RunStatus, out: Path) -> str:
    against = f", compared with {record.against}" if record.against else ""
    lines = [f"{record.version}: {record.state.upper().replace('_', ' ')} in {record.wall_s:.1f} s{against} "
             f"(exit {record.exit_code})"]
    rows = [[step.name, step.status, f"{step.wall_s:.1f}", step.summary] for step in record.steps]
    lines.append(markdown_table(rows, ["step", "result", "wall s", "what it says"]))
    for warning in record.warnings:
        lines.append(f"WARNING: {warning}")
    if record.needs_gpu:
        lines.append("needs a GPU machine: " + "; ".join(record.needs_gpu))
    prediction = _prediction_line(status, out / record.version)
    if prediction:
        lines.append(prediction)
    read_next = record.recommendations.get("read_next") if record.recommendations else None
    if read_next:
        lines.append(f"read next: {read_next[0]}")
    lines.append(_run_line(status))
    folder = out / record.version
    lines.append(f"record: {folder / EVALUATION_FILE} (each tool's output: {folder / EVALUATE_LOG})")
    lines.extend(_next_steps(record, status, out))
    return "\n".join(lines)


def _prediction_line(status: RunStatus, folder: Path) -> str | None:
    """A faster version's time set against the number its Expected gave, where it gave one."""
    version = next((v for v in status.versions if v.name == folder.name), None)
    hypothesis = folder / HYPOTHESIS_FILE
    if version is None or version.comparison_verdict != "success" or not hypothesis.is_file():
        return None
    expected = check_hypothesis(hypothesis.read_text(encoding="utf-8", errors="replace"), str(hypothesis)).fields
    said = prediction_verdict(expected.get("expected"), version.median_us, version.comparison_speedup,
                              version.compared_with)
    return f"prediction: {said}" if said else None


def _next_steps(record: EvaluationRecord, status: RunStatus, out: Path) -> list[str]:
    folder = out / record.version
    workspace = _script("workspace.py")
    if record.state == "needs_gpu":
        return [f"next: run `{_script('workspace.py', gpu=True)} evaluate {out} {record.version}` on a machine with "
                "an NVIDIA GPU"]
    if record.state == "invalid_hypothesis":
        return [f"next: fix {folder / HYPOTHESIS_FILE} (reference/hypothesis.md), then evaluate again"]
    if record.state == "error":
        return [f"next: read {folder / EVALUATE_LOG}: a tool refused its arguments or ref.py"]
    lines = []
    if record.version != "v0":
        lines.append(f"record it: {_script('experience_log.py')} add --from {folder} --kernel {status.run.kernel_name} "
                     "--strategy <strategy name from the guides>")
    if record.state == "failed" and record.version == "v0":
        return [f"next: fix {status.run.solution_path(out, 0)} in place until it is correct, then "
                f"`{workspace} evaluate {out} v0`"]
    lines.extend(_continue_lines(status, out))
    return lines


def _continue_lines(status: RunStatus, out: Path) -> list[str]:
    if status.newest_pending and status.newest is not None:
        on_gpu = status.newest.evaluation_state == "needs_gpu"
        where = " on a machine with an NVIDIA GPU" if on_gpu else ""
        return [f"next: {_script('workspace.py', gpu=on_gpu)} evaluate {out} {status.newest.name}{where}"]
    if status.stop_reason is None:
        return [f"next: {_script('workspace.py')} next {out}"]
    best = status.best
    finish = [f"finish ({status.stop_reason.replace('_', ' ')}):"]
    if best is not None and status.best_is_measured:
        # Against v0 unless the best is v0: a kernel timed against itself measures only the method's bias.
        against = f"--against {status.run.solution_path(out, 0)} " if best.number != 0 else ""
        tolerance = "".join(f" {argument}" for argument in status.run.tolerance_arguments())
        finish.append(f"  {_script('benchmark.py', gpu=True)} {best.solution} --ref {out / status.run.reference_file} "
                      f"--output-dir {out} {against}{' '.join(status.run.dim_arguments())}".rstrip() + tolerance)
        sweep = suggested_sweep(_sweep_dims(status, out))
        if sweep is not None:  # optional: a GPU with nsight-python 0.9.6 (env_check's size sweep row)
            reference = out / status.run.reference_file
            finish.append(f"  {_script('ncu_profile.py', gpu=True)} {best.solution} --ref {reference} "
                          f"--output-dir {out / SWEEP_FOLDER} {' '.join(sweep)}{tolerance}   "
                          "# size sweep (nsight-python 0.9.6)")
    finish.append(f"  {_script('final_report.py')} {out}")
    return finish


def _sweep_dims(status: RunStatus, out: Path) -> dict[str, Any]:
    """The sizes a sweep halves: the run's own, else a KernelBench problem's input sizes (the file's constants)."""
    if status.run.dims:
        return status.run.dims
    reference = out / status.run.reference_file
    if not is_problem_file(reference):
        return {}
    outline = outline_problem(reference)
    return {name: outline.constants[name] for name in outline.input_sizes}


# --- status --------------------------------------------------------------------------------------


def _status(args, dims) -> int:
    status = run_status(args.out)
    if args.json:
        print_json({"ok": True, **status.to_dict()})
        return 0
    run = status.run
    shape = " ".join(run.dim_arguments()) or "ref.py's defaults"
    print(f"{args.out}: {run.kernel_name} ({run.backend}), shape {shape}, started {run.created_at}")
    rows = []
    for version in status.versions:
        speedup = status.speedup_vs_v0(version)
        comparison = "—"
        if version.comparison_verdict:
            comparison = f"{version.comparison_speedup:.3f}x vs {version.compared_with}: {version.comparison_verdict}"
        rows.append([
            version.name + (" (best)" if status.best is version and status.best_is_measured else ""),
            f"{version.median_us:.2f}" if version.measured else "—",
            f"{speedup:.2f}x" if speedup else "—",
            comparison,
            f"{version.percent_of_ceiling:.1f}%" if version.percent_of_ceiling is not None else "—",
            version.bottleneck or "—",
            version.evaluation_state or "not evaluated",
        ])
    print(markdown_table(rows, ["version", "median µs", "vs v0", "vs the best before it", "% of ceiling",
                                "bottleneck", "evaluation"]))
    print(_run_line(status))
    for line in _continue_lines(status, args.out):
        print(line)
    return 0
