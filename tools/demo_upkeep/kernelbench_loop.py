"""The optimization loop's GPU steps over the KernelBench demo set, in one call that ends before a deadline.

For each problem of demo/kernelbench/problems (or those named by --only), as SKILL.md's agent would:
`workspace.py init RUNS/<problem> --kernel demo/kernelbench/v0/<problem>.py --ref <problem file>
--iterations 4 --backend modelnew` where the run folder is missing, then `workspace.py evaluate` of
each version named by --versions, one at a time (evaluate times; two at once would disturb each
other). A version already evaluated is left as it is (its numbers are never replaced). Before it
starts an evaluation the driver checks the deadline: it starts one only when the slowest
evaluation so far (FIRST_EVALUATE_GUESS_S before any) still fits, and names every version it
skipped with the command that resumes them. env_check runs once per call, and a run folder made by
this call gets a copy of its env_check.json and .md (the same machine, checked minutes before).

Under OUT_DIR: logs/ (one log per command), runs.tar.gz (every run folder touched, to unpack
into demo/kernelbench/runs/: tar xzf OUT_DIR/runs.tar.gz -C demo/kernelbench/runs), table.md
(tools/demo_upkeep/kernelbench_loop_table.py's table of the versions asked for) and steps.json (what ran, its
exit code and wall time).
`--eager-only` runs tools/kernelbench_eager.py instead: the Models alone, timed in eager.
`--finish` runs SKILL.md's Finish step on each run instead: its best version (workspace.py status)
benchmarked again beside v0 and every baseline into RUN/benchmark.json, then final_report.py; a run
whose benchmark.json already times its best version gets its report only. The table is then the
final benchmarks' (kernelbench_loop_table.py --versions final).

Usage (from the repository root, on a GPU machine; tools/demo_upkeep/kernelbench_loop.sh wraps it):
  python3 tools/demo_upkeep/kernelbench_loop.py OUT_DIR --eager-only
  python3 tools/demo_upkeep/kernelbench_loop.py OUT_DIR --versions v0
  python3 tools/demo_upkeep/kernelbench_loop.py OUT_DIR --versions v1 --only L1_01_rms_norm,L2_03_causal_attention_fp16
  python3 tools/demo_upkeep/kernelbench_loop.py OUT_DIR --finish

Exit codes: 0 every command started ran (a version that fails its check is a result: evaluate's
exit 1 or 3; a final benchmark's exit 1); 1 an init, evaluate, final benchmark or report failed to
run (exit 2, 4, or a crash), or --eager-only found a problem under 100 us; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parents[1]
if str(TOOLS) not in sys.path:
    sys.path.append(str(TOOLS))
from kernelbench_loop_table import FINAL, final_benchmark, loop_rows, render, timed_version  # noqa: E402

SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
DEMO = REPO / "demo" / "kernelbench"
ITERATIONS = 4  # issue 16 item 4: a fixed budget of iterations per problem
# The device tool stops a command at 600 s; 530 s leaves time for the copy, the table and a margin.
DEADLINE_S = 530.0
# Until one evaluation has been timed here: evaluate of a Triton v0 took 71.3 s on the H100 at commit
# 769a625 (/work/probe_data/evaluate_before.txt), about 44 s after the reference cache arrived; a
# problem's first evaluation also compiles its torch.compile baseline.
FIRST_EVALUATE_GUESS_S = 75.0
RESULT_EXIT_CODES = frozenset({0, 1, 3})  # evaluated: measured (0), wrong results (1), solution at fault (3)
FINAL_BENCHMARK_EXIT_CODES = frozenset({0, 1})  # benchmark.py: measured (0), incorrect or invalid (1)
ENV_CHECK_FILES = ("env_check.json", "env_check.md")


@dataclass
class Step:
    """One thing the driver did, or chose not to do, for one problem."""

    problem: str
    # init, evaluate, skipped_deadline, already_evaluated, missing_version, env_check; with --finish:
    # final_benchmark, already_finished, final_report, nothing_to_finish
    action: str
    version: str | None = None
    exit_code: int | None = None
    wall_s: float | None = None
    log: str | None = None
    recorded_exit_code: int | None = None  # evaluate: the exit code its evaluation.json records

    @property
    def failed_to_run(self) -> bool:
        """An init that did not make its run folder, or an evaluate that ended without a result: an exit
        code that is no verdict, or one its evaluation.json does not record (a crash also exits 1)."""
        if self.action in ("init", "final_report"):
            return self.exit_code != 0
        if self.action == "final_benchmark":
            return self.exit_code not in FINAL_BENCHMARK_EXIT_CODES
        return self.action == "evaluate" and (self.exit_code not in RESULT_EXIT_CODES
                                              or self.recorded_exit_code != self.exit_code)


def run_logged(command: list[str], log: Path) -> int:
    """Run `command` from the repository root, stdout and stderr into `log`; its exit code."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as stream:
        stream.write("$ " + " ".join(command) + "\n")
        stream.flush()
        return subprocess.run(command, cwd=REPO, stdout=stream, stderr=subprocess.STDOUT).returncode


def select_problems(problems: Path, only: str) -> list[str]:
    """The problem names to run, in file order; a ValueError naming any --only name with no file."""
    names = sorted(path.stem for path in problems.glob("*.py"))
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in names]
    if unknown:
        raise ValueError(f"no problem file for {', '.join(unknown)} in {problems}")
    return [name for name in names if not wanted or name in wanted]


def expected_evaluate_s(durations: list[float]) -> float:
    """How long the next evaluation may take: the slowest so far, or the first guess before any."""
    return max(durations, default=FIRST_EVALUATE_GUESS_S)


def fits_before_deadline(elapsed_s: float, durations: list[float], deadline_s: float) -> bool:
    return elapsed_s + expected_evaluate_s(durations) <= deadline_s


def evaluation_record(run: Path, version: str) -> dict:
    """The version's evaluation.json ({} where there is none or it does not parse)."""
    try:
        return json.loads((run / version / "evaluation.json").read_text())
    except (OSError, ValueError):
        return {}


class Driver:
    """Init and evaluate the problems' runs in order, one command at a time, until the deadline."""

    def __init__(self, out: Path, runs: Path, versions: list[str], deadline_s: float,
                 runner: Callable[[list[str], Path], int] = run_logged, clock: Callable[[], float] = time.monotonic):
        self.out, self.runs, self.versions, self.deadline_s = out, runs, versions, deadline_s
        self.runner, self.clock = runner, clock
        self.started = clock()
        self.steps: list[Step] = []
        self.durations: list[float] = []

    def _timed(self, step: Step, command: list[str]) -> Step:
        began = self.clock()
        name = ".".join(part for part in (step.problem, step.version, step.action) if part)
        step.log = str(self.out / "logs" / f"{name}.log")
        step.exit_code = self.runner(command, Path(step.log))
        step.wall_s = round(self.clock() - began, 1)
        self.steps.append(step)
        print(f"{step.problem} {step.version or ''} {step.action}: exit {step.exit_code}, {step.wall_s} s",
              flush=True)
        return step

    def env_check(self) -> None:
        folder = self.out / "env_check"
        self._timed(Step("machine", "env_check"), [sys.executable, str(SCRIPTS / "env_check.py"),
                                                    "--output-dir", str(folder)])

    def init(self, problem: str, problem_file: Path, v0: Path) -> bool:
        """Make the run folder where it is missing; False when init failed to run."""
        run = self.runs / problem
        if (run / "run.json").is_file():
            return True
        step = self._timed(Step(problem, "init"), [
            sys.executable, str(SCRIPTS / "workspace.py"), "init", str(run), "--kernel", str(v0), "--ref",
            str(problem_file), "--iterations", str(ITERATIONS), "--backend", "modelnew", "--name", problem])
        for name in ENV_CHECK_FILES:
            if step.exit_code == 0 and (self.out / "env_check" / name).is_file():
                shutil.copy2(self.out / "env_check" / name, run / name)
        return step.exit_code == 0

    def evaluate(self, problem: str, version: str) -> None:
        run = self.runs / problem
        if evaluation_record(run, version).get("state") == "measured":
            self.steps.append(Step(problem, "already_evaluated", version))
            return
        if not (run / version).is_dir():
            self.steps.append(Step(problem, "missing_version", version))
            return
        if not fits_before_deadline(self.clock() - self.started, self.durations, self.deadline_s):
            self.steps.append(Step(problem, "skipped_deadline", version))
            return
        step = self._timed(Step(problem, "evaluate", version),
                           [sys.executable, str(SCRIPTS / "workspace.py"), "evaluate", str(run), version])
        step.recorded_exit_code = evaluation_record(run, version).get("exit_code")
        self.durations.append(step.wall_s or 0.0)

    def finish(self, problem: str) -> None:
        """SKILL.md's Finish for one run: the best version timed again beside v0 and the baselines, then its report."""
        from kernel_opt.loop.workspace import run_status

        run = self.runs / problem
        status = run_status(run)
        best = status.best
        if best is None or not status.best_is_measured:
            self.steps.append(Step(problem, "nothing_to_finish"))
            return
        if finished_with(run, best.name):
            self.steps.append(Step(problem, "already_finished", best.name))
        elif not fits_before_deadline(self.clock() - self.started, self.durations, self.deadline_s):
            self.steps.append(Step(problem, "skipped_deadline", best.name))
            return
        else:
            # against v0 unless the best is v0 (as workspace.py status prints it)
            against = ["--against", str(status.run.solution_path(run, 0))] if best.number != 0 else []
            step = self._timed(Step(problem, "final_benchmark", best.name), [
                sys.executable, str(SCRIPTS / "benchmark.py"), best.solution, "--ref",
                str(run / status.run.reference_file), "--output-dir", str(run), *against])
            self.durations.append(step.wall_s or 0.0)
        self._timed(Step(problem, "final_report", best.name),
                    [sys.executable, str(SCRIPTS / "final_report.py"), str(run)])

    def run(self, problems: list[str], problem_dir: Path, v0_dir: Path) -> None:
        self.env_check()
        for problem in problems:
            if self.init(problem, problem_dir / f"{problem}.py", v0_dir / f"{problem}.py"):
                for version in self.versions:
                    self.evaluate(problem, version)

    def run_finish(self, problems: list[str]) -> None:
        for problem in problems:
            if (self.runs / problem / "run.json").is_file():
                self.finish(problem)
            else:
                self.steps.append(Step(problem, "nothing_to_finish"))

    def skipped(self) -> list[Step]:
        return [step for step in self.steps if step.action == "skipped_deadline"]


def finished_with(run: Path, version: str) -> bool:
    """RUN/benchmark.json is a Finish benchmark of `version`."""
    benchmark = final_benchmark(run)
    return benchmark is not None and timed_version(benchmark) == version


# Left out of the archive: build outputs, and the profiler's reports (megabytes each; git ignores them
# in demo/, and each version's ncu_summary.md/ncu_details.md keep what was read from them).
ARCHIVE_LEFT_OUT = ("build", "__pycache__", "*.ncu-rep")


def archive_runs(runs: Path, problems: list[str], archive: Path) -> None:
    """Every run folder of `problems` in one .tar.gz (relative to runs/), build outputs and reports left out.

    One file, because a GPU machine may hand back only so many files of a call: a folder of run
    folders (dozens of records per version) came back empty from the device tool once (2026-11-25).
    """
    import tarfile

    left_out = shutil.ignore_patterns(*ARCHIVE_LEFT_OUT)

    def keep(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        path = Path(member.name)
        return None if left_out(str(path.parent), [path.name]) else member

    archive.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "w:gz") as bundle:
        for problem in problems:
            if (runs / problem).is_dir():
                bundle.add(runs / problem, arcname=problem, filter=keep)


def summary(driver: Driver, out: Path, mode: str | None = None) -> list[str]:
    """The lines printed after the table: what was skipped (and how to resume it), what failed to run.

    `mode`: "--finish" when the driver ran the Finish step (its resume command says so).
    """
    lines = []
    skipped = driver.skipped()
    if skipped:
        names = ",".join(dict.fromkeys(step.problem for step in skipped))
        versions = ",".join(dict.fromkeys(step.version or "" for step in skipped))
        lines.append(f"skipped before the {driver.deadline_s:.0f} s deadline: {names} ({versions}); resume with:")
        lines.append(f"  bash tools/demo_upkeep/kernelbench_loop.sh {out} {mode or '--versions ' + versions} "
                     f"--only {names}")
    missing = [f"{step.problem} {step.version}" for step in driver.steps if step.action == "missing_version"]
    if missing:
        lines.append(f"no such version (create it with workspace.py next): {'; '.join(missing)}")
    failed = [f"{step.problem} {step.version or ''} {step.action} exit {step.exit_code} ({step.log})"
              for step in driver.steps if step.failed_to_run]
    lines.extend(f"FAILED TO RUN: {line}" for line in failed)
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="where logs, the table and runs.tar.gz (the run folders) go")
    parser.add_argument("--versions", default="v0", help="comma-separated versions to evaluate (default v0)")
    parser.add_argument("--only", default="", help="comma-separated problem names (default: every problem)")
    parser.add_argument("--eager-only", action="store_true", help="only time each problem's Model in eager")
    parser.add_argument("--finish", action="store_true",
                        help="SKILL.md's Finish on each run: its best version benchmarked again, then final_report.py")
    parser.add_argument("--runs", type=Path, default=DEMO / "runs", help="the run folders (default %(default)s)")
    parser.add_argument("--problems", type=Path, default=DEMO / "problems", help=argparse.SUPPRESS)
    parser.add_argument("--v0", type=Path, default=DEMO / "v0", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=DEADLINE_S,
                        help="seconds after which no evaluation starts (default %(default)s)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None, runner: Callable[[list[str], Path], int] = run_logged,
         clock: Callable[[], float] = time.monotonic) -> int:
    args = parse_args(argv)
    try:
        problems = select_problems(args.problems, args.only)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    versions = [version.strip() for version in args.versions.split(",") if version.strip()]
    if not problems or not versions or any(not v.startswith("v") or not v[1:].isdigit() for v in versions):
        print(f"error: --versions takes v0, v1, ... (got {args.versions!r}) and at least one problem",
              file=sys.stderr)
        return 2
    if args.eager_only:
        command = [sys.executable, str(REPO / "tools" / "kernelbench_eager.py"), str(args.problems), "--output-dir",
                   str(args.out / "eager")] + (["--only", ",".join(problems)] if args.only else [])
        code = runner(command, args.out / "logs" / "eager.log")
        report = args.out / "eager" / "eager.md"
        print(report.read_text() if report.is_file() else f"no eager table: see {args.out / 'logs' / 'eager.log'}")
        return code
    driver = Driver(args.out, args.runs, versions, args.deadline, runner, clock)
    if args.finish:
        driver.run_finish(problems)
    else:
        driver.run(problems, args.problems, args.v0)
    archive_runs(args.runs, problems, args.out / "runs.tar.gz")
    table = render(loop_rows(args.runs, [FINAL] if args.finish else versions, problems))
    (args.out / "table.md").write_text(table + "\n")
    (args.out / "steps.json").write_text(json.dumps([asdict(step) for step in driver.steps], indent=1) + "\n")
    print(table)
    for line in summary(driver, args.out, "--finish" if args.finish else None):
        print(line)
    print(f"elapsed: {clock() - driver.started:.0f} s")
    return 1 if any(step.failed_to_run for step in driver.steps) else 0


if __name__ == "__main__":
    sys.exit(main())
