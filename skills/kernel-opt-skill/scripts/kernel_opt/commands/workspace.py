"""Start, extend, evaluate and inspect a versioned optimization run (OUT/run.json, OUT/vN/).

Usage:
  workspace.py init out/softmax --kernel softmax.cu --ref ref.py --iterations 3 --name softmax --N=4096 --D=4096
  workspace.py next out/softmax
  workspace.py evaluate out/softmax v0
  workspace.py evaluate out/softmax v2 --json
  workspace.py status out/softmax

init copies the kernel to OUT/v0/ and the reference to OUT/ref.py, and fixes the run's shapes,
iteration budget and roofline target in OUT/run.json (refuses a folder that is not empty).
next creates v<n+1>/ as a copy of the best version so far, with a hypothesis.txt template;
it refuses once the budget is spent, the target is reached, or the newest version is not
evaluated. evaluate runs, in order: correctness -> hypothesis check (v1 on) -> the GPU's
measured ceilings (read from the cache, measured once per machine) -> benchmark with
--against the best version so far -> ncu profile with --baseline that version -> experience
recommendations for the best version's bottleneck; it prints each step's wall time and writes
vN/evaluation.json (each tool's own output: vN/evaluate.log). A timed version is never
re-evaluated without --force. Without a GPU, evaluate runs what can run (Triton correctness
under the interpreter, CUDA compile check, static analysis) and lists what needs a GPU.
status shows every version's time, speedup, verdict and bottleneck, the best so far, the
budget left, and whether the target is reached.

Exit codes: 0 ok; 1 refused by the run's state (next), or a check failed (evaluate: incorrect,
hypothesis invalid); 2 usage error, including init on a non-empty folder and evaluate on a
timed version without --force; 3 the solution is at fault (compile error, crash); 4 this
machine could not run every step (no GPU, no ncu): what ran is recorded.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import shlex
import time
from pathlib import Path
from typing import Any

from kernel_opt.backends import registry
from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.core.errors import ExitCode, UsageError
from kernel_opt.core.files import write_text_atomic
from kernel_opt.core.render import markdown_table
from kernel_opt.loop.hypothesis import check_hypothesis
from kernel_opt.loop.workspace import (
    EVALUATION_FILE,
    HYPOTHESIS_FILE,
    STEP_STATUS_BY_EXIT_CODE,
    EvaluationRecord,
    RunRecord,
    RunStatus,
    StepResult,
    VersionState,
    best_measured,
    best_so_far,
    check_can_evaluate,
    conclude_evaluation,
    create_next_version,
    create_run,
    list_versions,
    now_iso,
    read_json,
    read_run,
    run_status,
    version_number,
    write_evaluation,
)
from kernel_opt.measure.benchmark import DEFAULT_TARGET_PERCENT

PROG = "workspace.py"
SCRIPTS_DIR = Path(__file__).resolve().parents[2]
EVALUATE_LOG = "evaluate.log"
RECOMMENDATIONS_SHOWN = 5
# The correctness step has just run every shape with several seeds on this very file; the
# benchmark's own pre-timing check then needs one seed only (its post-timing check stays).
BENCHMARK_SEEDS_AFTER_CHECK = 1
# Each iteration is judged against the best version (interleaved), not against PyTorch; the
# baselines per version are context. torch.compile's baseline costs 15-23 s of an evaluation
# in a fresh process (imports, tracing, code generation; H100, 2026-11-22) and does not change
# between versions, so evaluate times it at v0 only (default mode) and the final benchmark of
# SKILL.md's Finish step times every mode, max-autotune included, against the best version.
EVALUATE_COMPILE_MODES = "default"
BASELINES_AT_V0 = "eager,compile"
BASELINES_AFTER_V0 = "eager"


def main(argv=None) -> int:
    return run_command(_main, argv)


def _script(name: str) -> str:
    return f"python {SCRIPTS_DIR / name}"


def build_parser():
    parser = make_parser(PROG, __doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    init = commands.add_parser("init", help="create OUT with ref.py, v0/ and run.json (the budget is fixed here)",
                               description="Create OUT with ref.py, v0/ and run.json; dims as --NAME=VALUE.")
    init.add_argument("out", type=Path, help="the run folder to create (must not exist, or be empty)")
    init.add_argument("--kernel", type=Path, required=True, help="the starting kernel: a .cu or a Triton .py")
    init.add_argument("--ref", type=Path, required=True, help="ref.py with reference(**kwargs)")
    init.add_argument("--iterations", type=int, required=True, help="versions v1..vN this run may create")
    init.add_argument("--name", help="the operation, e.g. softmax (default: the kernel file's name)")
    init.add_argument("--target-percent", type=float, default=DEFAULT_TARGET_PERCENT,
                      help=f"%% of the roofline ceiling at which the loop may stop (default {DEFAULT_TARGET_PERCENT:g})")
    init.add_argument("--backend", choices=["auto", *registry.names()], default="auto")
    init.add_argument("--arch", default="auto", help="CUDA target passed to every tool (default: this GPU)")
    init.add_argument("--nvcc-flags", default="", help='extra nvcc flags for every tool, in "=" form: --nvcc-flags="-lcublas"')
    init.add_argument("--json", action="store_true")

    following = commands.add_parser("next", help="create v<n+1>/ from the best version so far",
                                    description="Create v<n+1>/ from the best version so far, with a hypothesis template.")
    following.add_argument("out", type=Path, help="the run folder")
    following.add_argument("--ignore-target", action="store_true",
                           help="continue within the budget although the roofline target is reached")
    following.add_argument("--json", action="store_true")

    evaluate = commands.add_parser("evaluate", help="correctness, hypothesis, benchmark, profile, recommendation",
                                   description="Evaluate one version: correctness -> hypothesis check -> benchmark "
                                               "against the best so far -> profile -> recommendation.")
    evaluate.add_argument("out", type=Path, help="the run folder")
    evaluate.add_argument("version", help="v0, v1, ...")
    evaluate.add_argument("--force", action="store_true", help="re-evaluate a version that was already timed")
    evaluate.add_argument("--baseline", default=None,
                          help=f"PyTorch baselines the benchmark times: eager, compile, eager,compile or none "
                               f"(default: {BASELINES_AT_V0} for v0, {BASELINES_AFTER_V0} after it; the final "
                               "benchmark times them all)")
    evaluate.add_argument("--compile-modes", default=EVALUATE_COMPILE_MODES,
                          help=f"torch.compile modes the benchmark times (default {EVALUATE_COMPILE_MODES}; "
                               "the final benchmark times max-autotune too)")
    evaluate.add_argument("--static-analysis", action="store_true",
                          help="also run static_analysis.py on a GPU machine (it always runs without a GPU)")
    evaluate.add_argument("--json", action="store_true")

    status = commands.add_parser("status", help="versions, best so far, budget left, target",
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
    name = args.name or args.kernel.stem
    run = create_run(args.out, args.kernel, args.ref, args.iterations, name, backend, dims, args.target_percent,
                     args.nvcc_flags, args.arch)
    if args.json:
        print_json({"ok": True, "out": str(args.out), "run": run.to_dict()})
        return 0
    shape = " ".join(run.dim_arguments()) or "ref.py's defaults"
    print(f"created {args.out}: {name} ({backend}), shape {shape}, budget {run.iterations_budget} iteration(s), "
          f"target {run.target_percent:g}% of the roofline ceiling")
    print(f"  {args.out / run.reference_file}  {run.solution_path(args.out, 0)}  {args.out / 'run.json'}")
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


def run_tool(command: str, argv: list[str]) -> tuple[int, str]:
    """Run another command's main() in this process with its output captured.

    In-process, the tools share one torch import (seconds saved per step), and their code
    paths are exactly the ones the agent would run by hand. Their summaries go to evaluate.log;
    evaluate prints its own, shorter one.
    """
    module = importlib.import_module(f"{__package__}.{command}")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        code = module.main(argv)
    return int(code), buffer.getvalue()


def gpu_available() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # torch missing or broken: certainly no GPU to time on
        return False


class _Evaluation:
    """The steps of one `evaluate`, recorded as they run."""

    def __init__(self, out: Path, run: RunRecord, version: VersionState, against: VersionState | None):
        self.out, self.run, self.version, self.against = out, run, version, against
        self.folder = Path(version.directory)
        self.solution = Path(version.solution)
        self.reference = out / run.reference_file
        self.steps: list[StepResult] = []
        self.needs_gpu: list[str] = []
        self.warnings: list[str] = []
        self.log: list[str] = []
        self.last_output = ""
        self.recommendations: dict[str, Any] = {}

    @property
    def stopped(self) -> bool:
        """A check failed: later steps would measure a wrong or untestable kernel."""
        return any(step.status in ("failed", "usage_error", "solution_error") for step in self.steps)

    def tool(self, name: str, command: str, argv: list[str], outputs: list[str]) -> StepResult:
        started = time.perf_counter()
        code, text = run_tool(command, argv)
        wall_s = time.perf_counter() - started
        self.log.append(f"$ {command}.py {shlex.join(argv)}\n{text.rstrip()}\nexit {code}, {wall_s:.1f} s\n")
        self.last_output = text
        status = STEP_STATUS_BY_EXIT_CODE.get(code, "solution_error")
        written = [str(self.folder / f) for f in outputs if (self.folder / f).exists()]
        step = StepResult(name, status, round(wall_s, 2), code, _step_summary(name, self.folder, code, text), written)
        self.steps.append(step)
        if status == "cannot_run_here":
            self.needs_gpu.append(f"{name}: {step.summary}")
        return step

    def cannot_run(self, name: str, why: str) -> None:
        self.steps.append(StepResult(name, "cannot_run_here", 0.0, int(ExitCode.ENVIRONMENT_FAULT), why))
        self.needs_gpu.append(f"{name}: {why}")

    def skip(self, name: str, why: str) -> None:
        self.steps.append(StepResult(name, "skipped", 0.0, None, why))


def _evaluate(args, dims) -> int:
    out: Path = args.out
    number = version_number(args.version)
    version = check_can_evaluate(out, number, args.force)
    run = read_run(out)
    versions = list_versions(out, run)
    against = best_measured(versions, below=number)
    evaluation = _Evaluation(out, run, version, against)
    started_at, started = now_iso(), time.perf_counter()
    has_gpu = gpu_available()
    _warn_unchanged(evaluation, versions)

    if has_gpu:
        _gpu_steps(evaluation, args)
    else:
        _cpu_steps(evaluation)
    _recommend_step(evaluation)

    state, exit_code = conclude_evaluation(evaluation.steps)
    record = EvaluationRecord(
        version=version.name, state=state, exit_code=exit_code, started_at=started_at,
        wall_s=round(time.perf_counter() - started, 2), gpu_available=has_gpu,
        against=against.name if against else None, steps=evaluation.steps, needs_gpu=evaluation.needs_gpu,
        recommendations=evaluation.recommendations, warnings=evaluation.warnings,
    )
    write_text_atomic(evaluation.folder / EVALUATE_LOG, "\n".join(evaluation.log))
    write_evaluation(out, record)
    status = run_status(out)
    if args.json:
        print_json({"ok": exit_code == 0, "exit_code": exit_code, **record.to_dict(), "run": _brief_status(status)})
    else:
        print(_evaluation_summary(record, status, out))
    return exit_code


def _warn_unchanged(evaluation: _Evaluation, versions: list[VersionState]) -> None:
    parent = next((v for v in versions if v.name == evaluation.version.parent), None)
    if parent is not None and parent.has_solution:
        if Path(parent.solution).read_bytes() == evaluation.solution.read_bytes():
            evaluation.warnings.append(f"{evaluation.version.name}'s source is identical to {parent.name}'s: "
                                       "no change was made, so any difference measured is noise")


def _hypothesis_step(evaluation: _Evaluation) -> None:
    if evaluation.version.number == 0:
        return
    started = time.perf_counter()
    path = evaluation.folder / HYPOTHESIS_FILE
    if not path.is_file():
        step = StepResult("hypothesis", "failed", 0.0, int(ExitCode.CHECK_FAILED),
                          f"no {path}: write it before changing the code (reference/hypothesis.md)")
    else:
        check = check_hypothesis(path.read_text(encoding="utf-8", errors="replace"), str(path))
        summary = (f"valid (Expected names {', '.join(check.metrics_named)})" if check.ok
                   else f"{len(check.problems)} problem(s): " + "; ".join(check.problems))
        step = StepResult("hypothesis", "ok" if check.ok else "failed", 0.0,
                          int(ExitCode.OK if check.ok else ExitCode.CHECK_FAILED), summary, [str(path)])
    step.wall_s = round(time.perf_counter() - started, 2)
    evaluation.steps.append(step)


def _gpu_steps(evaluation: _Evaluation, args) -> None:
    run, folder, solution = evaluation.run, evaluation.folder, evaluation.solution
    common = ["--ref", str(evaluation.reference), "--output-dir", str(folder), *run.build_arguments()]
    evaluation.tool("correctness", "correctness_check", [str(solution), *common, *run.dim_arguments()],
                    ["correctness.json", "correctness.md"])
    if not evaluation.stopped:
        _hypothesis_step(evaluation)
    if evaluation.stopped:
        for name in ("benchmark", "profile"):
            evaluation.skip(name, "an earlier check failed")
        return
    against = evaluation.against
    baselines = args.baseline or (BASELINES_AT_V0 if evaluation.version.number == 0 else BASELINES_AFTER_V0)
    bench = [str(solution), *common, "--target-percent", f"{run.target_percent:g}", "--baseline", baselines,
             "--compile-modes", args.compile_modes, "--seeds", str(BENCHMARK_SEEDS_AFTER_CHECK)]
    if against is not None:
        bench += ["--against", against.solution]
    elif evaluation.version.number > 0:
        evaluation.warnings.append("no earlier version was timed: nothing to compare with (evaluate v0 first)")
    _ceilings_step(evaluation)
    evaluation.tool("benchmark", "benchmark", bench + run.dim_arguments(), ["benchmark.json", "benchmark.md"])
    if evaluation.stopped:
        evaluation.skip("profile", "the benchmark found the kernel wrong or broken")
        return
    profile = [str(solution), *common]
    if against is not None and (Path(against.directory) / "ncu_summary.json").is_file():
        profile += ["--baseline", against.directory]
    evaluation.tool("profile", "ncu_profile", profile + run.dim_arguments(),
                    ["ncu_summary.json", "ncu_summary.md", "ncu_details.md"])
    if args.static_analysis:
        _static_analysis_step(evaluation)


def _ceilings_step(evaluation: _Evaluation) -> None:
    """Read this GPU's measured ceilings, measuring them first on a machine that has none cached.

    Without them benchmark falls back to the datasheet's peaks, so a run whose versions are
    evaluated on different machines (a fresh lease, a CI runner) would change the basis of its
    % of ceiling between versions without anyone asking. A failure here is only a warning: the
    benchmark still runs, and its report says which ceilings it used.
    """
    step = evaluation.tool("ceilings", "measure_ceilings", [], [])
    if step.exit_code != 0:
        step.status = "skipped"
        evaluation.warnings.append(f"the GPU's ceilings could not be read or measured ({step.summary}): this "
                                   "version's % of ceiling is against the datasheet's peaks")


def _cpu_steps(evaluation: _Evaluation) -> None:
    run, folder, solution = evaluation.run, evaluation.folder, evaluation.solution
    backend = registry.get(run.backend)
    if backend.runs_on_cpu:
        evaluation.tool("correctness", "correctness_check",
                        [str(solution), "--ref", str(evaluation.reference), "--output-dir", str(folder),
                         "--device", "cpu", *run.dim_arguments()],
                        ["correctness.json", "correctness.md"])
    elif not backend.builds_ahead:
        evaluation.cannot_run("correctness", backend.gpu_only_reason)
    else:
        evaluation.cannot_run("correctness", f"{backend.gpu_only_reason} (it was compiled instead)")
        # Compile-only results go to a subfolder: vN/correctness.json must never read "pass"
        # for a kernel that has not run.
        evaluation.tool("compile_check", "correctness_check",
                        [str(solution), "--ref", str(evaluation.reference), "--output-dir", str(folder / "compile_check"),
                         "--compile-only", *run.build_arguments()],
                        ["compile_check/correctness.json"])
    if not evaluation.stopped:
        _hypothesis_step(evaluation)
    if evaluation.stopped:
        evaluation.skip("static_analysis", "an earlier check failed")
        return
    evaluation.cannot_run("benchmark", "timing needs an NVIDIA GPU (torch sees none here)")
    evaluation.cannot_run("profile", "Nsight Compute profiles only on an NVIDIA GPU")
    _static_analysis_step(evaluation)


def _static_analysis_step(evaluation: _Evaluation) -> None:
    run = evaluation.run
    argv = [str(evaluation.solution), "--output-dir", str(evaluation.folder), *run.build_arguments()]
    if registry.get(run.backend).static_analysis_needs_inputs:  # e.g. Triton kernels, specialised on setup()'s inputs
        argv += ["--ref", str(evaluation.reference), *run.dim_arguments()]
    evaluation.tool("static_analysis", "static_analysis", argv, ["static_analysis.json", "static_analysis.md"])


def _recommend_step(evaluation: _Evaluation) -> None:
    """Experience recommendations for the version the next iteration starts from (the best so far)."""
    if evaluation.stopped:
        evaluation.skip("recommend", "an earlier check failed")
        return
    versions = list_versions(evaluation.out, evaluation.run)
    best = best_so_far(versions) or evaluation.version
    run = evaluation.run
    argv = ["recommend", "--kernel", run.kernel_name, "--backend", run.backend, "-n", str(RECOMMENDATIONS_SHOWN), "--json"]
    chip = best.gpu_name or evaluation.version.gpu_name
    if chip:
        argv += ["--chip", chip]
    if best.bottleneck:
        argv += ["--bottleneck", best.bottleneck]
    step = evaluation.tool("recommend", "experience_log", argv, [])
    profile = read_json(Path(best.directory) / "ncu_summary.json") or {}
    try:
        answer = _json_object(evaluation.last_output) if step.status == "ok" else {}
    except ValueError:
        answer = {}
    strategies = [
        {k: item.get(k) for k in ("strategy", "successes", "failures", "neutral", "median_speedup", "warnings")}
        for item in answer.get("recommendations", [])
    ]
    evaluation.recommendations = {
        "for_version": best.name,
        "bottleneck": best.bottleneck,
        "chip": chip,
        "strategies": strategies,
        "avoid": [item.get("optimization") or item.get("strategy") for item in answer.get("avoid", [])],
        "read_next": [item["link"] for item in profile.get("read_next", [])[:RECOMMENDATIONS_SHOWN] if item.get("link")],
    }
    names = ", ".join(s["strategy"] for s in strategies) or "no matching records in the experience log"
    label = best.bottleneck or "bottleneck not profiled yet"
    step.summary = f"for {best.name} ({label}): {names}"


def _json_object(log_entry: str) -> dict[str, Any]:
    """The JSON object a tool printed with --json, out of its captured output."""
    start, end = log_entry.find("{"), log_entry.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object")
    return json.loads(log_entry[start:end + 1])


# --- one-line summaries of what each tool wrote ------------------------------------------------------


def _last_error_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors[-1].removeprefix("error:").strip() if errors else lines[-1] if lines else "no output")


def _step_summary(name: str, folder: Path, code: int, text: str) -> str:
    """One line per step, from the record the tool wrote (its console text only as a fallback)."""
    try:
        if name == "correctness":
            record = read_json(folder / "correctness.json")
            if record is not None:
                if record.get("error"):
                    return f"{record['verdict']}: {record['error'].get('message', '')}"[:300]
                cases = record.get("cases") or []
                failed = sum(1 for case in cases if not case.get("passed"))
                mode = " (Triton interpreter)" if record.get("interpreter") else ""
                return (f"pass{mode}: {len(cases)} cases" if record.get("passed")
                        else f"FAIL: {failed} of {len(cases)} cases differ from the reference")
        elif name == "compile_check":
            record = read_json(folder / "compile_check" / "correctness.json")
            if record is not None and record.get("build") and not record.get("error"):
                kernels = record["build"].get("kernels") or []
                registers = ", ".join(f"{k.get('name', '?').split('(')[0]}: {k.get('registers')} registers" for k in kernels)
                return f"compiled for {record['build'].get('arch')}; {registers}"
        elif name == "ceilings" and code == 0:
            origin = next((line for line in text.splitlines() if line.startswith("ceilings ")), None)
            if origin is not None:
                return origin.rsplit(": ", 1)[0]  # "ceilings read from cache, measured at <date>"
        elif name == "benchmark":
            record = read_json(folder / "benchmark.json")
            if record is not None:
                return _benchmark_summary(record)
        elif name == "profile":
            record = read_json(folder / "ncu_summary.json")
            if record is not None and code == 0:
                metrics = record.get("metrics") or {}
                limiter = f" ({record['memory_limiter']})" if record.get("memory_limiter") else ""
                occupancy = metrics.get("achieved_occupancy_pct")
                return (f"{record.get('bottleneck')}{limiter}, top stall {record.get('top_stall')}"
                        + (f", achieved occupancy {occupancy:.0f}%" if occupancy is not None else ""))
        elif name == "static_analysis":
            record = read_json(folder / "static_analysis.json")
            if record is not None and code == 0:
                return "; ".join(
                    f"{k.get('name', '?').split('(')[0]}: {k.get('registers_per_thread')} registers, "
                    + (f"{k['spill_stores_bytes']} B spilled, " if k.get("spill_stores_bytes") is not None else "")
                    + f"{len(k.get('findings') or [])} finding(s)"
                    for k in record.get("kernels") or []) or "no kernels found"
    except (KeyError, TypeError, AttributeError, UsageError):
        pass  # a record in an unexpected shape: fall back to the tool's own words
    return _last_error_line(text)[:300]


def _benchmark_summary(record: dict[str, Any]) -> str:
    if record.get("verdict") != "measured":
        message = (record.get("error") or {}).get("message") or "; ".join((record.get("correctness") or {}).get("failures") or [])
        return f"{record.get('verdict')}: {message}"[:300]
    parts = [f"{record['solution']['median_us']:.2f} us"]
    comparison = record.get("comparison")
    if comparison:
        against = Path(comparison.get("against_dir") or "").name or comparison.get("against")
        parts.append(f"vs {against} {comparison['speedup']:.3f}x [{comparison['ci_low']:.3f}, {comparison['ci_high']:.3f}] "
                     f"{comparison['verdict']}")
    if record.get("speedup_vs_best_baseline") is not None:
        parts.append(f"{record['speedup_vs_best_baseline']:.2f}x vs {record.get('best_baseline')}")
    if record.get("percent_of_ceiling") is not None:
        parts.append(f"{record['percent_of_ceiling']:.1f}% of ceiling")
    return "; ".join(parts)


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
    return (f"best so far: {best_text} · budget: {budget.iterations_used} of {budget.iterations_total} iteration(s) "
            f"used, {budget.iterations_left} left · target {status.run.target_percent:g}% of the roofline ceiling: {target}")


def _evaluation_summary(record: EvaluationRecord, status: RunStatus, out: Path) -> str:
    against = f", compared with {record.against}" if record.against else ""
    lines = [f"{record.version}: {record.state.upper().replace('_', ' ')} in {record.wall_s:.1f} s{against} (exit {record.exit_code})"]
    rows = [[step.name, step.status, f"{step.wall_s:.1f}", step.summary] for step in record.steps]
    lines.append(markdown_table(rows, ["step", "result", "wall s", "what it says"]))
    for warning in record.warnings:
        lines.append(f"WARNING: {warning}")
    if record.needs_gpu:
        lines.append("needs a GPU machine: " + "; ".join(record.needs_gpu))
    read_next = record.recommendations.get("read_next") if record.recommendations else None
    if read_next:
        lines.append(f"read next: {read_next[0]}")
    lines.append(_run_line(status))
    folder = out / record.version
    lines.append(f"record: {folder / EVALUATION_FILE} (each tool's output: {folder / EVALUATE_LOG})")
    lines.extend(_next_steps(record, status, out))
    return "\n".join(lines)


def _next_steps(record: EvaluationRecord, status: RunStatus, out: Path) -> list[str]:
    folder = out / record.version
    workspace = _script("workspace.py")
    if record.state == "needs_gpu":
        return [f"next: run `{workspace} evaluate {out} {record.version}` on a machine with an NVIDIA GPU"]
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
        where = " on a machine with an NVIDIA GPU" if status.newest.evaluation_state == "needs_gpu" else ""
        return [f"next: {_script('workspace.py')} evaluate {out} {status.newest.name}{where}"]
    if status.stop_reason is None:
        return [f"next: {_script('workspace.py')} next {out}"]
    best = status.best
    finish = [f"finish ({status.stop_reason.replace('_', ' ')}):"]
    if best is not None and status.best_is_measured:
        # Against v0 unless the best is v0: a kernel timed against itself measures only the method's bias.
        against = f"--against {status.run.solution_path(out, 0)} " if best.number != 0 else ""
        finish.append(f"  {_script('benchmark.py')} {best.solution} --ref {out / status.run.reference_file} "
                      f"--output-dir {out} {against}{' '.join(status.run.dim_arguments())}".rstrip())
    finish.append(f"  {_script('final_report.py')} {out}")
    return finish


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
