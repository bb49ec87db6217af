#!/usr/bin/env python3
"""Run the skill's tooling on the bundled examples and say what ran, what passed, what needs a GPU.

This is the README's main job: an environment check, then correctness checks of the bundled
Triton and CUDA solutions (reference/softmax, reference/vector_add). On a machine without a
GPU, Triton kernels run under the Triton interpreter and CUDA kernels are compiled only.

Usage:
  python3 tools/run_example.py --output-dir out/example
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"

# (label, solution, ref, extra arguments on a GPU, extra arguments on the CPU)
EXAMPLES = [
    ("softmax, Triton", "reference/softmax/good/softmax.py", "reference/softmax/ref.py", [], ["--N=64", "--D=1000"]),
    ("softmax, CUDA", "reference/softmax/good/softmax.cu", "reference/softmax/ref.py", [], []),
    ("vector add, Triton", "reference/vector_add/good/vector_add.py", "reference/vector_add/ref.py", [], []),
    ("vector add, CUDA", "reference/vector_add/good/vector_add.cu", "reference/vector_add/ref.py", [], []),
]
OUTCOMES = {0: "pass", 1: "FAIL", 2: "usage error", 3: "solution error", 4: "needs a GPU"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=REPO / "out" / "example")
    args = parser.parse_args(argv)
    out = args.output_dir
    env_code = subprocess.call([sys.executable, str(SCRIPTS / "env_check.py"), "--output-dir", str(out)])
    has_gpu = env_code == 0
    print()
    rows, worst = [], 0
    for index, (label, solution, ref, gpu_args, cpu_args) in enumerate(EXAMPLES):
        target = out / f"example{index}_{Path(solution).stem}_{Path(solution).suffix[1:]}"
        command = [sys.executable, str(SCRIPTS / "correctness_check.py"), str(REPO / solution), "--ref", str(REPO / ref),
                   "--output-dir", str(target), *(gpu_args if has_gpu else cpu_args)]
        print(f"$ correctness_check.py {solution} --ref {ref} --output-dir {target}")
        code = subprocess.call(command)
        print()
        rows.append((label, OUTCOMES.get(code, f"exit {code}"), target / "correctness.md"))
        if code not in (0, 4):
            worst = max(worst, code)
    print("summary:")
    for label, outcome, report in rows:
        print(f"  {label:<20} {outcome:<15} {report}")
    if not has_gpu:
        print("needs a GPU (not run here): CUDA correctness, benchmark, ncu profile; see", out / "env_check.md")
    return worst


if __name__ == "__main__":
    sys.exit(main())
