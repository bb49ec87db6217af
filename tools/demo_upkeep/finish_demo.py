#!/usr/bin/env python3
"""SKILL.md's Finish for the demo's case studies on a GPU (issue 17), one case after another.

For each case (a run folder under demo/): its best version timed again beside v0 and every PyTorch
baseline (the final benchmark.md), a size sweep of that version beside PyTorch through
nsight-python (OUT/sweep, the dim and sizes below), for the GEMMs the extra shapes issue 17 asks
for (the best version beside cuBLAS at 8192^3 and 8192x8192x1024, in OUT/shapes/), and the final
report. Stops starting a case's steps before the deadline and says which ones to run again.
Everything is written into the case folders; --archive bundles them into one .tar.gz (build
outputs and ncu reports left out) to carry back from a GPU machine.

Usage (from the repository root, on a GPU machine, nsight-python 0.9.6 importable for the sweeps):
  python3 tools/demo_upkeep/finish_demo.py cuda/attention_r2 triton/gemm --archive OUT/demo.tgz
  python3 tools/demo_upkeep/finish_demo.py --all --deadline 520

Exit codes: 0 every step ran (a failed check is a result, read in the reports); 1 a step failed to
run or was skipped for the deadline; 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
DEMO = REPO / "demo"
sys.path.insert(0, str(SCRIPTS))
from kernel_opt.core.cli import dim_arguments, run_command  # noqa: E402
from kernel_opt.loop.workspace import run_status  # noqa: E402

# The dim each case sweeps and its sizes: the run's own size among them, the other dims as in the run.
SWEEPS: dict[str, str] = {
    "cuda/softmax": "N=1024,2048,4096,8192",
    "triton/softmax": "N=1024,2048,4096,8192",
    "cuda/gemm": "M=1024,2048,4096,8192",
    "cuda/gemm_r2": "M=1024,2048,4096,8192",
    "triton/gemm": "M=1024,2048,4096,8192",
    "cuda/attention_r2": "S=512,1024,2048,4096",
    "triton/attention_r2": "S=512,1024,2048,4096",
    "triton/rmsnorm": "N=2048,4096,8192,16384",  # hidden sizes, M = 8192 rows
}
# Further shapes timed with the final benchmark's settings (issue 17: GEMM at 8192^3 and a skinny K).
GEMM_SHAPES = {"8192x8192x8192": {"M": 8192, "N": 8192, "K": 8192}, "8192x8192x1024": {"M": 8192, "N": 8192, "K": 1024}}
SHAPES: dict[str, dict[str, dict[str, int]]] = {"cuda/gemm": GEMM_SHAPES, "cuda/gemm_r2": GEMM_SHAPES,
                                                 "triton/gemm": GEMM_SHAPES}
LEFT_OUT = ("build", "__pycache__")


@dataclass
class Step:
    case: str
    name: str
    exit_code: int | None = None
    wall_s: float = 0.0
    note: str = ""


def finish_steps(case: str) -> list[tuple[str, list[str]]]:
    """The commands of one case's Finish, in order, as SKILL.md writes them."""
    run = DEMO / case
    status = run_status(run)
    best = status.best
    if best is None or not status.best_is_measured:
        raise ValueError(f"{case}: no measured version to finish")
    ref = str(run / status.run.reference_file)
    dims = dict(status.run.dims)
    against = ["--against", str(status.run.solution_path(run, 0))] if best.number != 0 else []
    build = status.run.build_arguments()  # the run's --arch / --nvcc-flags, where not the default
    python = sys.executable
    steps = [("final benchmark", [python, str(SCRIPTS / "benchmark.py"), best.solution, "--ref", ref,
                                  "--output-dir", str(run), *against, *build, *dim_arguments(dims)])]
    sweep = SWEEPS.get(case)
    if sweep:
        swept = sweep.split("=", 1)[0]
        others = {name: value for name, value in dims.items() if name != swept}
        steps.append((f"sweep {sweep}", [python, str(SCRIPTS / "ncu_profile.py"), best.solution, "--ref", ref,
                                         "--output-dir", str(run / "sweep"), "--sweep", sweep, *build,
                                         *dim_arguments(others)]))
    for label, shape in SHAPES.get(case, {}).items():
        steps.append((f"shape {label}", [python, str(SCRIPTS / "benchmark.py"), best.solution, "--ref", ref,
                                         "--output-dir", str(run / "shapes" / label), *build, *dim_arguments(shape)]))
    steps.append(("final report", [python, str(SCRIPTS / "final_report.py"), str(run)]))
    return steps


def run_cases(cases: list[str], deadline_s: float, log_dir: Path) -> list[Step]:
    started = time.monotonic()
    # The versions were placed under this GPU's measured ceilings (evaluate's ceilings step): the Finish is
    # too. measure_ceilings.py reads the cache, or measures on a fresh machine (about a minute).
    steps = [("(machine)", "measured ceilings", [sys.executable, str(SCRIPTS / "measure_ceilings.py")])]
    steps += [(case, name, command) for case in cases for name, command in finish_steps(case)]
    done: list[Step] = []
    for case, name, command in steps:
        left = deadline_s - (time.monotonic() - started)
        if left < 30:
            done.append(Step(case, name, note="skipped: deadline"))
            continue
        log = log_dir / f"{case.replace('/', '_').strip('()')}.{name.split()[0]}.log"
        begin = time.monotonic()
        with log.open("a") as sink:
            sink.write("$ " + " ".join(command) + "\n")
            sink.flush()
            try:
                code = subprocess.run(command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, timeout=left).returncode
            except subprocess.TimeoutExpired:
                code = None
        done.append(Step(case, name, code, round(time.monotonic() - begin, 1),
                         "" if code is not None else "stopped at the deadline"))
        print(f"{case:22s} {name:28s} exit {code} in {done[-1].wall_s:6.1f} s", flush=True)
    return done


def archive(cases: list[str], path: Path) -> None:
    """The case folders in one .tar.gz relative to the repository root, build outputs and ncu reports left out."""
    def keep(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name = Path(member.name).name
        return None if name in LEFT_OUT or name.endswith(".ncu-rep") else member

    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as bundle:
        for case in cases:
            bundle.add(DEMO / case, arcname=f"demo/{case}", filter=keep)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="case folders under demo/, e.g. cuda/attention_r2")
    parser.add_argument("--all", action="store_true", help="every case of SWEEPS")
    parser.add_argument("--deadline", type=float, default=520, help="seconds after which no step starts")
    parser.add_argument("--archive", type=Path, help="write the case folders to this .tar.gz afterwards")
    parser.add_argument("--logs", type=Path, default=None, help="each step's output (default: beside --archive)")
    parser.add_argument("--dry-run", action="store_true", help="print each case's commands and stop")
    args = parser.parse_args(argv)
    cases = list(SWEEPS) if args.all else args.cases
    unknown = [case for case in cases if not (DEMO / case / "run.json").is_file()]
    if not cases or unknown:
        parser.error(f"name demo cases (run folders under demo/): {', '.join(unknown) or 'none given'}")
    if args.dry_run:
        for case in cases:
            for name, command in finish_steps(case):
                print(f"{case}: {name}: {' '.join(command)}")
        return 0
    log_dir = args.logs or (args.archive.parent if args.archive else Path("."))
    log_dir.mkdir(parents=True, exist_ok=True)
    steps = run_cases(cases, args.deadline, log_dir)
    (log_dir / "finish_demo.json").write_text(json.dumps([step.__dict__ for step in steps], indent=2) + "\n")
    if args.archive:
        archive(cases, args.archive)
    return 0 if all(step.exit_code is not None and not step.note for step in steps) else 1


if __name__ == "__main__":
    sys.exit(run_command(main, None))  # the project's CLI ending: a closed stdout ends quietly (exit 141)
