#!/usr/bin/env python3
"""Play versions written in advance through SKILL.md's loop, command for command, on a GPU machine.

A GPU lease is short and each call starts a machine, so versions are written (with their
hypothesis, before any of them is timed) on a machine without a GPU and evaluated here in one
go. Each planned version goes through exactly the commands SKILL.md gives an agent:

  workspace.py init / env_check.py / workspace.py evaluate v0   (only when OUT has no run yet)
  workspace.py next OUT          -> must create the planned vN from the planned parent
  copy the planned source and hypothesis.txt into OUT/vN/
  hypothesis_check.py OUT/vN
  workspace.py evaluate OUT vN
  experience_log.py add --from OUT/vN ...      (with --record)
  benchmark.py BEST --against v0 --output-dir OUT and final_report.py OUT  (with --finish)

A version is written against one parent. `next` copies the best version so far, so when an
outcome makes another version the best, the plan has diverged: the driver stops there and the
rest is rewritten from the new evidence. Versions already evaluated are skipped, so a plan can
grow between leases.

plan.yaml (paths relative to the plan's folder, except `run`, relative to the working directory):

  run: demo/cuda/softmax
  ignore_target: true        # optional: `next --ignore-target`
  init: {kernel: v0.cu, ref: ref.py, iterations: 6, name: softmax, dims: {N: 4096, D: 4096},
         options: ["--arch=sm_90a"]}
  versions:
    - {version: v1, parent: v0, source: v1.cu, hypothesis: v1.txt, strategy: vectorized_loads}

Usage:
  python3 tools/demo_upkeep/drive_versions.py plans/softmax_cuda/plan.yaml [--record] [--finish] [--deadline-s 400]

Exit codes: 0 every planned version evaluated (or skipped as done); 1 a step failed or the plan
diverged (the log says which); 2 a malformed plan.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from kernel_opt.loop.records import read_evaluation  # noqa: E402  (the checkout's package)
from kernel_opt.loop.workspace import FINAL_STATES, run_status  # noqa: E402


class PlanError(Exception):
    """The plan file is malformed: nothing was run."""


@dataclass
class PlannedVersion:
    version: str
    parent: str
    source: Path
    hypothesis: Path
    strategy: str
    optimization: str = ""


@dataclass
class Plan:
    run: Path
    kernel_name: str
    init: dict
    versions: list[PlannedVersion] = field(default_factory=list)
    ignore_target: bool = False  # `next --ignore-target`: the case's goal lies beyond the roofline target


def load_plan(path: Path) -> Plan:
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise PlanError(f"{path}: {error}") from error
    if not isinstance(raw, dict) or "run" not in raw or "init" not in raw:
        raise PlanError(f"{path}: needs `run` and `init`")
    base = path.parent
    init = dict(raw["init"])
    for key in ("kernel", "ref", "iterations", "name"):
        if key not in init:
            raise PlanError(f"{path}: init needs `{key}`")
    init["kernel"], init["ref"] = base / init["kernel"], base / init["ref"]
    versions = []
    for index, entry in enumerate(raw.get("versions") or []):
        missing = [key for key in ("version", "parent", "source", "hypothesis", "strategy") if key not in entry]
        if missing:
            raise PlanError(f"{path}: versions[{index}] lacks {', '.join(missing)}")
        planned = PlannedVersion(entry["version"], entry["parent"], base / entry["source"], base / entry["hypothesis"],
                                 entry["strategy"], entry.get("optimization", ""))
        for file in (planned.source, planned.hypothesis):
            if not file.is_file():
                raise PlanError(f"{path}: {planned.version}: no file {file}")
        versions.append(planned)
    return Plan(Path(raw["run"]), init["name"], init, versions, bool(raw.get("ignore_target", False)))


class Driver:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.out = plan.run

    def script(self, name: str, *arguments: str, check: bool = False) -> tuple[int, str]:
        command = [sys.executable, str(SCRIPTS / name), *arguments]
        print("$", " ".join(command), flush=True)
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        output = result.stdout + result.stderr
        print(output.rstrip(), flush=True)
        print(f"[exit {result.returncode} after {time.perf_counter() - started:.1f} s]\n", flush=True)
        return result.returncode, result.stdout

    def dims(self) -> list[str]:
        return [f"--{name}={value}" for name, value in (self.plan.init.get("dims") or {}).items()]

    def state(self, version: str) -> str | None:
        evaluation = read_evaluation(self.out / version)
        return evaluation.state if evaluation is not None else None

    def start(self) -> bool:
        init = self.plan.init
        code, _ = self.script("workspace.py", "init", str(self.out), "--kernel", str(init["kernel"]), "--ref",
                              str(init["ref"]), "--iterations", str(init["iterations"]), "--name", init["name"],
                              *init.get("options", []), *self.dims())
        if code != 0:
            return False
        code, _ = self.script("env_check.py", "--output-dir", str(self.out))
        return code == 0

    def evaluate(self, version: str) -> bool:
        code, _ = self.script("workspace.py", "evaluate", str(self.out), version)
        return code == 0

    def prepare(self, planned: PlannedVersion) -> str:
        """'ready', 'ended' (next refused: budget spent or target reached) or 'stopped'."""
        options = ["--ignore-target"] if self.plan.ignore_target else []
        code, text = self.script("workspace.py", "next", str(self.out), "--json", *options)
        if code != 0:
            try:
                kind = (json.loads(text).get("error") or {}).get("kind")
            except ValueError:
                kind = None  # it crashed before printing its JSON answer
            return "ended" if code == 2 and kind == "refused" else "stopped"
        created = json.loads(text)
        if created["version"] != planned.version or created["parent"] != planned.parent:
            print(f"plan diverged: next made {created['version']} from {created['parent']}, the plan has "
                  f"{planned.version} from {planned.parent}; rewrite the rest from the new evidence", flush=True)
            return "stopped"
        shutil.copyfile(planned.source, created["solution"])
        shutil.copyfile(planned.hypothesis, created["hypothesis"])
        code, _ = self.script("hypothesis_check.py", str(Path(created["solution"]).parent))
        return "ready" if code == 0 else "stopped"

    def record_outcome(self, planned: PlannedVersion) -> None:
        arguments = ["add", "--from", str(self.out / planned.version), "--kernel", self.plan.kernel_name,
                     "--strategy", planned.strategy]
        if planned.optimization:
            arguments += ["--optimization", planned.optimization]
        self.script("experience_log.py", *arguments)

    def finish(self) -> None:
        """SKILL.md's Finish: the final benchmark of the best version against v0, then the report."""
        status = run_status(self.out)
        best, run = status.best, status.run
        if best is not None and status.best_is_measured:
            against = ["--against", str(run.solution_path(self.out, 0))] if best.number != 0 else []
            self.script("benchmark.py", best.solution, "--ref", str(self.out / run.reference_file), "--output-dir",
                        str(self.out), *against, *run.build_arguments(), *run.dim_arguments())
        self.script("final_report.py", str(self.out))


def drive(plan: Plan, record: bool, finish: bool, deadline_s: float) -> int:
    started = time.perf_counter()
    driver = Driver(plan)
    if not (plan.run / "run.json").is_file() and not driver.start():
        return 1
    if driver.state("v0") != "measured":
        driver.evaluate("v0")
        if driver.state("v0") != "measured":
            return 1
    for planned in plan.versions:
        if driver.state(planned.version) in FINAL_STATES:
            print(f"{planned.version}: evaluated already, skipped", flush=True)
            continue
        if time.perf_counter() - started > deadline_s:
            print(f"deadline of {deadline_s:.0f} s passed: {planned.version} and later are left for the next lease")
            return 1
        if not (plan.run / planned.version).exists():
            prepared = driver.prepare(planned)
            if prepared == "ended":
                print(f"the loop ended before {planned.version} (see `next` above): on to the finish", flush=True)
                break
            if prepared == "stopped":
                return 1
        driver.evaluate(planned.version)  # a failed idea is an outcome: it is recorded and the plan goes on
        if driver.state(planned.version) not in FINAL_STATES:
            return 1
        if record:
            driver.record_outcome(planned)
    if finish:
        driver.finish()
    driver.script("workspace.py", "status", str(plan.run))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", type=Path)
    parser.add_argument("--record", action="store_true", help="run experience_log.py add after each version")
    parser.add_argument("--finish", action="store_true", help="final benchmark and final_report.py at the end")
    parser.add_argument("--deadline-s", type=float, default=float("inf"),
                        help="start no new version after this many seconds")
    args = parser.parse_args(argv)
    try:
        plan = load_plan(args.plan)
    except PlanError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return drive(plan, args.record, args.finish, args.deadline_s)


if __name__ == "__main__":
    sys.exit(main())
