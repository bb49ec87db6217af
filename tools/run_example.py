#!/usr/bin/env python3
"""The README's main job: the loop's tooling on the bundled examples, and what needs a GPU.

For a Triton softmax and a CUDA softmax (reference/softmax): an environment check, then for
each a run folder (`workspace.py init`), one evaluation of v0 (correctness, benchmark against
PyTorch, Nsight Compute profile and bottleneck, static analysis, experience recommendation), on
a GPU a size sweep of v0 beside PyTorch (`ncu_profile.py --sweep`, into OUT/sweep: needs
nsight-python 0.9.6), and the generated final report, which embeds the sweep. On a machine
without a GPU every step that can run does (Triton correctness under the interpreter, the CUDA
compile check, static analysis, the report) and each step that needs a GPU is listed.

Each run writes into a fresh folder OUT/run-N (N one more than the highest there), so the
command can be run again as it is; OUT/latest links to the newest run, and the summary names
this run's reports.

Usage:
  python3 tools/run_example.py --output-dir out/example
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from kernel_opt.loop.records import read_evaluation  # noqa: E402  (the checkout's package)

# (label, run folder, kernel, dims on a GPU, dims on the CPU: the interpreter needs a small problem)
EXAMPLES = [
    ("softmax, Triton", "softmax_triton", "reference/softmax/good/softmax.py",
     ["--N=4096", "--D=4096"], ["--N=64", "--D=1000"]),
    ("softmax, CUDA", "softmax_cuda", "reference/softmax/good/softmax.cu",
     ["--N=4096", "--D=4096"], ["--N=4096", "--D=4096"]),
]
REFERENCE = "reference/softmax/ref.py"
# The size sweep on a GPU: rows from 1024 to 8192 at the examples' row length (16 MiB to 128 MiB of float32 input).
SWEEP = ["--sweep", "N=1024,2048,4096,8192", "--D=4096"]
RUN_FOLDER = re.compile(r"run-(\d+)")
OUTCOMES = {0: "evaluated", 1: "FAILED", 2: "usage error", 3: "solution error", 4: "partial: needs a GPU"}
SWEEP_OUTCOMES = {0: "profiled", 1: "FAILED (a size)", 2: "usage error", 3: "solution error",
                  4: "not run (see its error)"}


def run(*arguments: str) -> int:
    print("$", " ".join(arguments))
    code = subprocess.call([sys.executable, *arguments])
    print()
    return code


def fresh_run_folder(output_dir: Path) -> Path:
    """Create and return OUT/run-N, N one more than the highest run there (never an existing folder)."""
    output_dir.mkdir(parents=True, exist_ok=True)
    taken = [int(match.group(1)) for path in output_dir.iterdir() if (match := RUN_FOLDER.fullmatch(path.name))]
    number = max(taken, default=0) + 1
    while True:
        folder = output_dir / f"run-{number}"
        try:
            folder.mkdir()
            return folder
        except FileExistsError:  # another run took it meanwhile
            number += 1


def point_latest_at(run_folder: Path) -> None:
    """OUT/latest -> run-N, replaced atomically; a `latest` that is not our link is left alone."""
    latest = run_folder.parent / "latest"
    if latest.exists() and not latest.is_symlink():
        return
    temporary = run_folder.parent / f".latest.{os.getpid()}"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(run_folder.name)
    os.replace(temporary, latest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] + "\n\n" + __doc__.split("\n\n")[2],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output-dir", type=Path, default=REPO / "out" / "example",
                        help="where the runs go: each run makes OUT/run-N (default out/example)")
    args = parser.parse_args(argv)
    out = fresh_run_folder(args.output_dir)
    point_latest_at(out)
    has_gpu = run(str(SCRIPTS / "env_check.py"), "--output-dir", str(out)) == 0
    rows, sweeps, worst, missing = [], [], 0, {}
    for label, folder, kernel, gpu_dims, cpu_dims in EXAMPLES:
        target = out / folder
        code = run(str(SCRIPTS / "workspace.py"), "init", str(target), "--kernel", str(REPO / kernel), "--ref",
                   str(REPO / REFERENCE), "--iterations", "0", "--name", "softmax",
                   *(gpu_dims if has_gpu else cpu_dims))
        if code == 0:
            copy_environment_check(out, target)  # SKILL.md's step 2 writes it into each run folder
            code = run(str(SCRIPTS / "workspace.py"), "evaluate", str(target), "v0")
            if has_gpu and code == 0:
                sweep_code = run(str(SCRIPTS / "ncu_profile.py"), str(target / "v0" / f"v0{Path(kernel).suffix}"),
                                 "--ref", str(target / "ref.py"), "--output-dir", str(target / "sweep"), *SWEEP)
                sweeps.append((label, SWEEP_OUTCOMES.get(sweep_code, f"exit {sweep_code}"),
                               target / "sweep" / "sweep.md"))
                if sweep_code not in (0, 4):  # 4: no nsight-python here; the example itself still ran
                    worst = max(worst, sweep_code)
            report_code = run(str(SCRIPTS / "final_report.py"), str(target))
            if report_code != 0:
                code = max(code, report_code)
        evaluation = read_evaluation(target / "v0")
        if evaluation is not None:
            missing[label] = [step.split(":")[0] for step in evaluation.needs_gpu] + ([] if has_gpu else ["size sweep"])
        rows.append((label, OUTCOMES.get(code, f"exit {code}"), target / "final_report.md"))
        if code not in (0, 4):
            worst = max(worst, code)
    print(f"summary (this run: {out}; {out.parent / 'latest'} links to it):")
    for label, outcome, report in rows:
        print(f"  {label:<16} {outcome:<22} {report}")
    for label, outcome, report in sweeps:
        print(f"  {label:<16} {'sweep ' + outcome:<22} {report}")
    needs = [f"{label}: {', '.join(steps)}" for label, steps in missing.items() if steps]
    if needs:
        print(f"needs a GPU (not run here): {'; '.join(needs)}; see {out / 'env_check.md'}")
    return worst


def copy_environment_check(out: Path, target: Path) -> None:
    """The one environment check of this run, into a run folder: its final report reads OUT/env_check.json."""
    for name in ("env_check.json", "env_check.md"):
        if (out / name).is_file():
            shutil.copyfile(out / name, target / name)


if __name__ == "__main__":
    sys.exit(main())
