"""A comparison trial's "fast" kernel judged by this project's own checks, on the GPU host.

An agent without the skill reports its own speedup and its own idea of correct. This runs what
the skill would have run on its best ModelNew, against the unchanged KernelBench problem file:

  correctness        correctness_check.py (the reference-error rule, re-drawn weights, poisoned outputs)
  kernelbench_rule   the same check at KernelBench's atol = rtol = 1e-2 (what a KernelBench user would accept)
  benchmark          benchmark.py against eager and torch.compile (default, max-autotune-no-cudagraphs) where
                     the strict check passed; where only KernelBench's rule did, timed under that rule
                     (--kernelbench-tolerances), and the judgement says so
  memcheck           one case under compute-sanitizer memcheck (last: the slowest, and no figure rests on it)

Each step's records go under DEST/<step>/; JUDGEMENT.md and JUDGEMENT.json sum them up.

Usage (from the repository root, on the GPU host):
  python3 tools/trial_judge.py .trials/L2_88_...-without-skill/out/v2/model_new.py \\
      .trials/L2_88_...-without-skill/88_Gemm_GroupNorm_Swish_Multiply_Swish.py "$OUT/judge"

`--env NAME=VALUE` sets a variable the solution reads (an opt-in mode of its own) for every step and names it
in the judgement; `--only memcheck` (steps comma-separated) runs those steps again and keeps the others' records
already in DEST, for a judgement a time limit cut short.

Exit codes: 0 judged (whatever the verdict); 2 a file that does not exist, or a bad --env or --only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
STEP_TIMEOUT_S = 420


def commands(solution: Path, problem: Path, dest: Path) -> dict[str, list[str]]:
    """Each step's command line, in the order they run."""
    check = [sys.executable, str(SCRIPTS / "correctness_check.py"), str(solution), "--ref", str(problem)]
    return {
        "correctness": [*check, "--output-dir", str(dest / "correctness")],
        "kernelbench_rule": [*check, "--kernelbench-tolerances", "--output-dir", str(dest / "kernelbench_rule")],
        "benchmark": _benchmark(solution, problem, dest, "correctness"),
        "memcheck": [*check, "--sanitize", "memcheck", "--output-dir", str(dest / "memcheck")],
    }


def kernelbench_benchmark(solution: Path, problem: Path, dest: Path) -> list[str]:
    """The benchmark under KernelBench's atol = rtol = 1e-2, relying on that rule's passing check."""
    return _benchmark(solution, problem, dest, "kernelbench_rule")


def _benchmark(solution: Path, problem: Path, dest: Path, checked_by: str) -> list[str]:
    """benchmark.py relying on the passing check under DEST/`checked_by`, at that check's rule."""
    rule = ["--kernelbench-tolerances"] if checked_by == "kernelbench_rule" else []
    return [sys.executable, str(SCRIPTS / "benchmark.py"), str(solution), "--ref", str(problem),
            "--output-dir", str(dest / "benchmark"), "--baseline", "both", *rule,
            "--checked-by", str(dest / checked_by / "correctness.json")]


def _record(folder: Path, name: str) -> dict | None:
    try:
        return json.loads((folder / name).read_text())
    except (OSError, ValueError):
        return None


def _check_line(record: dict | None, exit_code: int | None, log: str) -> dict:
    """One check's verdict and, where it did not pass, why: the CLI's own first line and first reason."""
    if record is None:
        verdict = "no record"
    else:
        verdict = record.get("verdict") or ("pass" if record.get("passed") else "fail")
    why = ""
    if verdict != "pass":
        lines = [line.strip() for line in log.splitlines() if line.strip()]
        reasons = [line for line in lines if line.startswith("- ")]
        why = " ".join(([lines[0]] if lines else []) + reasons[:1])
    return {"verdict": verdict, "exit_code": exit_code, "why": why[:400]}


def _log(dest: Path, name: str) -> str:
    try:
        return (dest / f"{name}.log").read_text(errors="replace")
    except OSError:
        return ""


def judgement(dest: Path, exit_codes: dict[str, int | None], claimed: str | None = None) -> dict:
    """What the records under `dest` say, in one place: each check's verdict, and the timings where it passed."""
    records = {"correctness": "correctness.json", "kernelbench_rule": "correctness.json",
               "memcheck": "correctness_memcheck.json"}
    checks = {name: _check_line(_record(dest / name, record), exit_codes.get(name), _log(dest, name))
              for name, record in records.items()}
    bench = _record(dest / "benchmark", "benchmark.json")
    timing = None
    if bench is not None and (bench.get("solution") or {}).get("median_us") is not None:
        baselines = {b["name"]: b["median_us"] for b in bench.get("baselines", []) if b.get("median_us")}
        compiled = {name: us for name, us in baselines.items() if name.startswith("torch.compile")}
        best_compile = min(compiled, key=compiled.get) if compiled else None
        median = bench["solution"]["median_us"]
        timing = {"device": (bench.get("gpu") or {}).get("name"), "median_us": median,
                  "eager_us": baselines.get("eager"), "best_compile": best_compile,
                  "best_compile_us": compiled.get(best_compile) if best_compile else None,
                  "speedup_vs_eager": baselines["eager"] / median if baselines.get("eager") else None,
                  "speedup_vs_best_compile": compiled[best_compile] / median if best_compile else None,
                  "verdict": bench.get("verdict")}
    if timing is not None and timing["verdict"] == "invalid":
        # faster than the physical floor: the time counts for nothing, so no speedup is read from it
        timing.update(speedup_vs_eager=None, speedup_vs_best_compile=None,
                      why=next((line.strip() for line in _log(dest, "benchmark").splitlines()
                                if line.startswith("INVALID")), "benchmark.py called the time invalid"))
    verdicts = {checks["correctness"]["verdict"], checks["memcheck"]["verdict"]}
    correct: bool | None = verdicts == {"pass"}
    if "no record" in verdicts and verdicts <= {"pass", "no record"}:
        correct = None  # a check that did not finish says nothing either way: not known, not "no"
    if timing is not None:
        timing["rule"] = ("the strict rule" if checks["correctness"]["verdict"] == "pass"
                          else "KernelBench's rule (atol = rtol = 1e-2)")
    return {"correct": correct, "checks": checks, "timing": timing, "claimed": claimed,
            "benchmark_exit_code": exit_codes.get("benchmark")}


def markdown(solution: str, problem: str, result: dict) -> str:
    lines = [f"# Judgement of `{solution}`", "",
             f"Against the unchanged problem file `{problem}`, by this project's checks "
             "(tools/trial_judge.py).", "",
             *([f"Run with {', '.join(f'`{k}={v}`' for k, v in result['environment'].items())} set for every step.",
                ""] if result.get("environment") else []),
             f"**Correct under this project's checks: {_correct(result)}.**", "",
             "| check | verdict | exit | why |", "| --- | --- | --- | --- |"]
    for name, check in result["checks"].items():
        lines.append(f"| {name} | {check['verdict']} | {check['exit_code']} | {check['why'].replace('|', '/')} |")
    timing = result["timing"]
    if timing:
        def us(value):
            return "—" if value is None else f"{value:.2f} µs"

        def x(value):
            return "—" if value is None else f"{value:.2f}x"

        if timing["verdict"] == "invalid":
            lines += ["", f"Timed on {timing['device']} under {timing['rule']}, and **invalid**: {timing['why']}"]
            return "\n".join(lines + _claim(result)) + "\n"
        lines += ["", f"Timed on {timing['device']} under {timing['rule']}: {us(timing['median_us'])}; "
                  f"eager {us(timing['eager_us'])} "
                  f"({x(timing['speedup_vs_eager'])}); best torch.compile ({timing['best_compile']}) "
                  f"{us(timing['best_compile_us'])} ({x(timing['speedup_vs_best_compile'])})."]
    else:
        lines += ["", f"Not timed (benchmark exit {result['benchmark_exit_code']}): the check must pass first."]
    return "\n".join(lines + _claim(result)) + "\n"


def _correct(result: dict) -> str:
    if result["correct"] is None:
        missing = [name for name, check in result["checks"].items() if check["verdict"] == "no record"]
        return f"not known ({', '.join(missing)} left no record)"
    return "yes" if result["correct"] else "no"


def _claim(result: dict) -> list[str]:
    return ["", f"The agent's own claim: {result['claimed']}"] if result.get("claimed") else []


def run(solution: Path, problem: Path, dest: Path, claimed: str | None = None, environment: dict | None = None,
        only: set[str] | None = None) -> dict:
    """Run the steps (all, or `only` those, keeping the other steps' records already in `dest`) and judge.

    `environment`: variables the solution reads (an opt-in mode of its own), set for every step and
    named in the judgement.
    """
    dest.mkdir(parents=True, exist_ok=True)
    exit_codes = _earlier_exit_codes(dest) if only else {}
    for name, command in commands(solution, problem, dest).items():
        if only and name not in only:
            continue
        if name == "benchmark" and exit_codes.get("correctness") != 0:
            if exit_codes.get("kernelbench_rule") != 0:
                exit_codes[name] = None
                continue
            command = kernelbench_benchmark(solution, problem, dest)
        start = time.monotonic()
        with open(dest / f"{name}.log", "w") as log:
            try:
                exit_codes[name] = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=STEP_TIMEOUT_S,
                                                  env={**os.environ, **(environment or {})}).returncode
            except subprocess.TimeoutExpired:
                exit_codes[name] = None
                log.write(f"\n[trial_judge] stopped after {STEP_TIMEOUT_S} s\n")
        print(f"{name}: exit {exit_codes[name]}, {time.monotonic() - start:.0f} s", flush=True)
    result = {**judgement(dest, exit_codes, claimed), "environment": environment or {}}
    (dest / "JUDGEMENT.json").write_text(json.dumps(result, indent=2) + "\n")
    (dest / "JUDGEMENT.md").write_text(markdown(str(solution), str(problem), result))
    return result


def _earlier_exit_codes(dest: Path) -> dict[str, int | None]:
    """The steps' exit codes as the last judgement in `dest` recorded them."""
    earlier = _record(dest, "JUDGEMENT.json") or {}
    codes = {name: check.get("exit_code") for name, check in (earlier.get("checks") or {}).items()}
    return {**codes, "benchmark": earlier.get("benchmark_exit_code")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("solution", type=Path, help="the agent's best ModelNew")
    parser.add_argument("problem", type=Path, help="the unchanged KernelBench problem file")
    parser.add_argument("dest", type=Path, help="where the records and JUDGEMENT.md go")
    parser.add_argument("--claimed", help="the agent's own figures, quoted into the judgement")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a variable the solution reads (an opt-in mode of its own), for every step")
    parser.add_argument("--only", help="comma-separated steps to run again (correctness, kernelbench_rule, benchmark, "
                                       "memcheck), keeping the other steps' records in DEST")
    args = parser.parse_args(argv)
    if any("=" not in item for item in args.env):
        print("error: --env takes NAME=VALUE", file=sys.stderr)
        return 2
    only = set(args.only.split(",")) if args.only else None
    if only and not only <= {"correctness", "kernelbench_rule", "benchmark", "memcheck"}:
        print(f"error: --only names unknown steps: {', '.join(sorted(only))}", file=sys.stderr)
        return 2
    for path in (args.solution, args.problem):
        if not path.is_file():
            print(f"error: no such file: {path}", file=sys.stderr)
            return 2
    run(args.solution, args.problem, args.dest, args.claimed, dict(item.split("=", 1) for item in args.env), only)
    print((args.dest / "JUDGEMENT.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
