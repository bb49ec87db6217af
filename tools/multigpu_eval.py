"""The same pairs evaluated two ways (one GPU, `--gpus all`, `--ray`): the wall times and verdicts side by side.

On a host with several GPUs (the 2-GPU machine, nvidia-h200-x2), eval.py runs a fixed set of pairs
twice into two output folders, by default first as it runs without options (one process, one GPU),
then with one worker per GPU (`--runs one_gpu,all_gpus`). `--runs all_gpus,ray` sets the local
pool beside Ray tasks of one GPU each (`--ray-address`, default local: a Ray instance started for
the run). Each run starts with empty Triton and TorchInductor caches of its own, so the second does
not reuse the first's compiled kernels. It writes under OUT_DIR: a folder per run (each eval.md,
eval.json, pairs/, progress.log, output.log), machine.txt, and comparison.md / comparison.json:
each run's wall time, the sum of its pairs' times, the ratio of the two wall times, and each pair's
verdict, speedups and GPU in both runs.

The default set is 8 problems of demo/kernelbench with their v0 solutions (Triton), one
torch.compile mode and 2 seeds. The recorded eval of that set (demo/kernelbench/eval, NVIDIA H100,
two compile modes, 3 seeds) took 31-46 s a pair; with one mode and 2 seeds a pair takes less, so
the 8 pairs once on one GPU and once on two should stay well inside the device tool's 10 minutes.

Usage (from the repository root):
  python3 tools/multigpu_eval.py OUT_DIR
  python3 tools/multigpu_eval.py OUT_DIR --only L1_01_rms_norm,L2_05_residual_add_layer_norm
  python3 tools/multigpu_eval.py OUT_DIR --runs all_gpus,ray   (Ray installed: pip install -e ".[ray]")
  python3 tools/multigpu_eval.py OUT_DIR --problems DIR --solutions DIR --device cpu --gpus 2   (no GPU: a dry run)

Exit codes: 0 the verdicts agree pair by pair; 1 they do not (or a run failed to write its record);
2 bad arguments; 4 fewer than two GPUs (with --device cuda and a run over all GPUs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tabulate import tabulate

REPO_ROOT = Path(__file__).resolve().parents[1]
EVAL_SCRIPT = REPO_ROOT / "skills" / "kernel-opt-skill" / "scripts" / "eval.py"
DEFAULT_PROBLEMS = REPO_ROOT / "demo" / "kernelbench" / "problems"
DEFAULT_SOLUTIONS = REPO_ROOT / "demo" / "kernelbench" / "v0"
DEFAULT_ONLY = ("L1_01_rms_norm,L1_02_log_softmax_wide,L1_04_smooth_l1_loss,L1_06_reverse_cumsum,"
                "L2_01_linear_gelu_scale,L2_04_silu_gate_clamp,L2_05_residual_add_layer_norm,L2_06_group_norm_silu")
RUN_NAMES = ("one_gpu", "all_gpus", "ray")


def run_options(name: str, args: argparse.Namespace) -> list[str]:
    """What eval.py is given for a run of that name."""
    return {"one_gpu": [], "all_gpus": ["--gpus", args.gpus], "ray": ["--ray", args.ray_address]}[name]


def run_names(text: str) -> tuple[str, str]:
    """--runs: two different names of RUN_NAMES."""
    names = tuple(name.strip() for name in text.split(","))
    if len(names) != 2 or len(set(names)) != 2 or not set(names) <= set(RUN_NAMES):
        raise argparse.ArgumentTypeError(f"two different runs of {', '.join(RUN_NAMES)}, e.g. one_gpu,all_gpus")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--problems", type=Path, default=DEFAULT_PROBLEMS)
    parser.add_argument("--solutions", type=Path, default=DEFAULT_SOLUTIONS)
    parser.add_argument("--only", default=DEFAULT_ONLY, help="comma-separated problem names ('' for all)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--runs", type=run_names, default=("one_gpu", "all_gpus"),
                        help=f"the two runs, from {', '.join(RUN_NAMES)} (default one_gpu,all_gpus)")
    parser.add_argument("--gpus", default="all", help="what the all_gpus run passes to --gpus (default all)")
    parser.add_argument("--ray-address", default="local", help="what the ray run passes to --ray (default local)")
    parser.add_argument("--eval-args", default="--compile-modes default --seeds 2 --timeout 300",
                        help="further eval.py options for both runs")
    return parser


def gpu_count() -> int:
    """GPUs nvidia-smi lists here (0 where it is absent)."""
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))


def run_eval(name: str, extra: list[str], args: argparse.Namespace) -> dict:
    """One eval.py run into OUT/NAME with caches of its own; its exit code and wall time as measured here."""
    folder = args.output_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(EVAL_SCRIPT), str(args.problems), str(args.solutions), "--output-dir",
               str(folder), "--device", args.device, "--force", *args.eval_args.split(), *extra]
    if args.only:
        command += ["--only", args.only]
    with tempfile.TemporaryDirectory(prefix=f"multigpu-{name}-") as caches:
        environment = {**os.environ, "TRITON_CACHE_DIR": f"{caches}/triton",
                       "TORCHINDUCTOR_CACHE_DIR": f"{caches}/inductor"}
        started = time.monotonic()
        with open(folder / "output.log", "w") as output, open(folder / "progress.log", "w") as progress:
            code = subprocess.run(command, stdout=output, stderr=progress, env=environment, check=False).returncode
        wall_s = time.monotonic() - started
    print(f"{name}: exit {code}, {wall_s:.0f} s ({' '.join(command[1:])})", flush=True)
    return {"name": name, "command": command[1:], "exit_code": code, "wall_s": round(wall_s, 1)}


def compare(one: dict, spread: dict, names: tuple[str, str] = ("one_gpu", "all_gpus")) -> dict:
    """The two eval.json records side by side: the verdicts pair by pair, and the wall times."""
    first = {entry["name"]: entry for entry in one["entries"]}
    second = {entry["name"]: entry for entry in spread["entries"]}
    a_name, b_name = names
    rows = []
    for name in sorted(set(first) | set(second)):
        a, b = first.get(name, {}), second.get(name, {})
        rows.append({"pair": name, f"verdict_{a_name}": a.get("verdict"), f"verdict_{b_name}": b.get("verdict"),
                     "same": (a.get("verdict"), a.get("precision_downgrade")) == (b.get("verdict"),
                                                                                   b.get("precision_downgrade")),
                     f"speedup_{a_name}": a.get("speedup_vs_eager"), f"speedup_{b_name}": b.get("speedup_vs_eager"),
                     f"gpu_{a_name}": (a.get("gpu") or {}).get("index"),
                     f"gpu_{b_name}": (b.get("gpu") or {}).get("index"),
                     f"pair_s_{a_name}": a.get("wall_s"), f"pair_s_{b_name}": b.get("wall_s")})
    executions = [record.get("execution") or {} for record in (one, spread)]
    return {"runs_compared": list(names), "verdicts_identical": all(row["same"] for row in rows), "rows": rows,
            "wall_s": [execution.get("wall_s") for execution in executions],
            "pair_s": [execution.get("pair_s") for execution in executions],
            "gpus_used": [len(execution.get("gpus") or []) for execution in executions],
            "wall_ratio": (executions[1].get("wall_s") / executions[0]["wall_s"]
                           if executions[0].get("wall_s") and executions[1].get("wall_s") else None)}


def comparison_markdown(comparison: dict, runs: list[dict]) -> str:
    ratio = comparison["wall_ratio"]
    a_name, b_name = comparison.get("runs_compared", ("one_gpu", "all_gpus"))
    lines = [f"# {a_name} against {b_name}", "",
             tabulate([[run["name"], run["exit_code"], run["wall_s"], wall, pairs, gpus]
                       for run, wall, pairs, gpus in zip(runs, comparison["wall_s"], comparison["pair_s"],
                                                         comparison["gpus_used"], strict=True)],
                      ["run", "exit", "wall s (here)", "wall s (eval.json)", "sum of pair s", "GPUs used"],
                      tablefmt="github"), "",
             f"wall time, {b_name} / {a_name}: {ratio:.2f}" if ratio else "wall time ratio: not available",
             f"verdicts identical: {'yes' if comparison['verdicts_identical'] else 'NO'}", "",
             tabulate([[row[key] for key in row] for row in comparison["rows"]],
                      list(comparison["rows"][0]) if comparison["rows"] else [], tablefmt="github")]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.problems.is_dir() or not args.solutions.is_dir():
        print(f"not a folder: {args.problems} or {args.solutions}", file=sys.stderr)
        return 2
    if args.device == "cuda" and gpu_count() < 2:
        print("fewer than two GPUs here: nothing to compare (run on the 2-GPU machine)", file=sys.stderr)
        return 4
    args.output_dir.mkdir(parents=True, exist_ok=True)
    machine = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False).stdout \
        if gpu_count() else "no nvidia-smi\n"
    (args.output_dir / "machine.txt").write_text(machine)
    runs = [run_eval(name, run_options(name, args), args) for name in args.runs]
    try:
        records = [json.loads((args.output_dir / run["name"] / "eval.json").read_text()) for run in runs]
    except (OSError, json.JSONDecodeError) as error:
        print(f"a run wrote no eval.json ({error}): see its output.log and progress.log", file=sys.stderr)
        return 1
    comparison = {**compare(*records, names=args.runs), "runs": runs}
    (args.output_dir / "comparison.json").write_text(json.dumps(comparison, indent=2) + "\n")
    markdown = comparison_markdown(comparison, runs)
    (args.output_dir / "comparison.md").write_text(markdown)
    print(markdown)
    return 0 if comparison["verdicts_identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
