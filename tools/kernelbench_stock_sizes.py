"""KernelBench's problems at their stock sizes with the identity ModelNew: the folders to run, and what came of it.

tools/kernelbench_stock_sizes.sh runs this in two steps around `kernel-opt eval` on a GPU:

  prepare KERNELBENCH OUT   copies the problems (PROBLEMS, from a KernelBench checkout: its
                            KernelBench/level1/, or a folder holding level1/, such as
                            reference/kernelbench_stock) to OUT/problems and writes each one's identity
                            solution to OUT/solutions: the problem file itself plus
                            `class ModelNew(Model): pass`, the simplest correct solution there is; and the
                            blame rows (reference/kernelbench_stock/blame) to OUT/blame/<row>/.
                            With --levels 1,2: every problem of those levels instead, named L1_<file>,
                            L2_<file> (the acceptance sweep), and no blame rows.
  summary OUT               reads every pair's records under OUT/eval/pairs and the blame rows under
                            OUT/blame, and writes OUT/summary.md and OUT/summary.json: per problem the
                            verdict, each step's exit code, wall time, the highest peak GPU memory and
                            the step it was reached in, and what the memory plan chose.

Usage (from the repository root):
  python3 tools/kernelbench_stock_sizes.py prepare reference/kernelbench_stock OUT
  python3 tools/kernelbench_stock_sizes.py summary OUT

Exit codes: prepare 0, or 2 when a problem file is missing; summary 0 when every problem is correct
and timed and each blame row exited as expected, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

# Level 1 at stock size: three that ran the harness out of memory on an H200 (23, 36, 89), the one
# that took 134 s (47), and two ordinary ones (a square matmul, a LayerNorm with weights). With the
# inputs drawn on the GPU, 47_Sum takes about 22 s on an H200; the three whose float64 truth waits
# on the host (23, 36, 89) take 95-175 s, most of it in the benchmark's input pool and timing.
PROBLEMS = ("23_Softmax", "36_RMSNorm_", "89_cumsum", "47_Sum_reduction_over_a_dimension",
            "1_Square_matrix_multiplication_", "40_LayerNorm")
IDENTITY = "\n\n\nclass ModelNew(Model):  # the identity solution: the problem's own Model\n    pass\n"
# name -> (problem, solution or None for the identity, the exit code and error kind the check must end with)
BLAME_ROWS = {
    "reference_allocates_too_much": ("reference_allocates_too_much.py", None, 4, "harness_out_of_memory"),
    "solution_allocates_too_much": ("small_relu.py", "small_relu_solution_allocates_too_much.py", 3, "out_of_memory"),
}
BLAME_DIR = Path(__file__).resolve().parents[1] / "reference" / "kernelbench_stock" / "blame"  # this project's
EXIT_CODES = {"pass": 0, "fail": 1, "usage_error": 2, "solution_error": 3, "environment_error": 4}


def level_folder(kernelbench: Path, level: int = 1) -> Path:
    """KERNELBENCH/KernelBench/levelN (a checkout) or KERNELBENCH/levelN (a copy of the problem files)."""
    for candidate in (kernelbench / "KernelBench" / f"level{level}", kernelbench / f"level{level}"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no level{level}/ folder under {kernelbench} (nor KernelBench/level{level}/)")


def level1_folder(kernelbench: Path) -> Path:
    return level_folder(kernelbench, 1)


def _sources(kernelbench: Path, levels: list[int] | None) -> dict[str, Path]:
    """name in OUT -> problem file: PROBLEMS of level 1, or every problem of `levels` as L<level>_<file>."""
    if not levels:
        return {name: level1_folder(kernelbench) / f"{name}.py" for name in PROBLEMS}
    found: dict[str, Path] = {}
    for level in levels:
        files = sorted(level_folder(kernelbench, level).glob("*.py"), key=lambda path: _number(path.stem))
        found.update({f"L{level}_{path.stem}": path for path in files})
    return found


def _number(stem: str) -> tuple[int, str]:
    head = stem.split("_", 1)[0]
    return (int(head), stem) if head.isdigit() else (10**9, stem)


def prepare(kernelbench: Path, out: Path, blame: Path | None = None, levels: list[int] | None = None) -> list[str]:
    """Write OUT/problems, OUT/solutions (and, for PROBLEMS, OUT/blame/<row>/{problem,solution}.py); the names."""
    problems, solutions = out / "problems", out / "solutions"
    problems.mkdir(parents=True, exist_ok=True)
    solutions.mkdir(parents=True, exist_ok=True)
    sources = _sources(kernelbench, levels)
    for name, source in sources.items():
        if not source.is_file():
            raise FileNotFoundError(f"{source} is missing")
        shutil.copyfile(source, problems / f"{name}.py")
        (solutions / f"{name}.py").write_text(source.read_text() + IDENTITY)
    (out / "problems.txt").write_text("\n".join(sources) + "\n")
    blame = blame or BLAME_DIR
    if not levels and blame.is_dir():
        for row, (problem, solution, _, _) in BLAME_ROWS.items():
            folder = out / "blame" / row
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(blame / problem, folder / "problem.py")
            text = (blame / solution).read_text() if solution else (blame / problem).read_text() + IDENTITY
            (folder / "solution.py").write_text(text)
    return list(sources)


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def correctness_exit(record: dict | None) -> int | None:
    """correctness_check.py's exit code, from its record (commands/correctness_check.py: exit_code_of)."""
    if record is None:
        return None
    if record.get("error"):
        return int(record["error"].get("exit_code", 3))
    return EXIT_CODES.get(record.get("verdict"), 1)


def peak(records: list[dict | None]) -> tuple[float | None, str | None, list[str]]:
    """The highest peak (GB) over the records' memory sections, the step it was reached in, and their plans."""
    best, where, plans = None, None, []
    for record in records:
        memory = (record or {}).get("memory") or {}
        for step in memory.get("steps") or []:
            if best is None or step["peak_bytes"] > best:
                best, where = step["peak_bytes"], step["step"]
        plans += [plan for plan in memory.get("plans") or [] if plan not in plans]
    return (None if best is None else round(best / 1e9, 2)), where, plans


def pair_row(out: Path, name: str) -> dict:
    folder = out / "eval" / "pairs" / name
    entry, correctness, benchmark = (_read(folder / f) for f in ("entry.json", "correctness.json", "benchmark.json"))
    peak_gb, step, plans = peak([correctness, benchmark])
    timed = bool(entry and entry.get("timed"))
    return {
        "name": name, "verdict": (entry or {}).get("verdict", "not run"), "timed": timed,
        "correctness_exit": correctness_exit(correctness),
        "benchmark_exit": None if benchmark is None else benchmark.get("exit_code"),
        "wall_s": (entry or {}).get("wall_s"), "peak_gb": peak_gb, "peak_step": step, "plans": plans,
        "message": (entry or {}).get("message"),
        "slowest_phases_s": dict(sorted(((benchmark or {}).get("phases_s") or {}).items(),
                                        key=lambda item: -item[1])[:4]),
        "ok": bool(entry) and entry.get("verdict") == "correct" and timed,
    }


def blame_row(out: Path, name: str) -> dict:
    _, _, expected_exit, expected_kind = BLAME_ROWS[name]
    record = _read(out / "blame" / name / "out" / "correctness.json")
    error = (record or {}).get("error") or {}
    got_exit = correctness_exit(record)
    return {"name": name, "expected_exit": expected_exit, "expected_kind": expected_kind, "exit": got_exit,
            "kind": error.get("kind"), "message": error.get("message"),
            "ok": got_exit == expected_exit and error.get("kind") == expected_kind}


def totals(rows: list[dict]) -> dict:
    """The acceptance figures: pairs run, correct and timed, each failing exit code, median and slowest wall time."""
    ran = [row for row in rows if row["verdict"] != "not run"]
    walls = sorted(row["wall_s"] for row in ran if row["wall_s"] is not None)
    exits = [code for row in ran for code in (row["correctness_exit"], row["benchmark_exit"]) if code]
    slowest = max(ran, key=lambda row: row["wall_s"] or 0.0, default=None)
    return {"problems": len(rows), "ran": len(ran), "correct_and_timed": sum(row["ok"] for row in ran),
            "harness_or_environment_errors": exits.count(4), "blamed_on_the_solution": exits.count(3),
            "out_of_memory": sum("out of memory" in (row["message"] or "") for row in ran),
            "median_wall_s": walls[len(walls) // 2] if walls else None,
            "slowest": None if slowest is None else [slowest["name"], slowest["wall_s"]]}


def summary(out: Path) -> int:
    """OUT/summary.json and OUT/summary.md from the records; 0 when every row is as expected."""
    listed = out / "problems.txt"
    names = listed.read_text().split() if listed.is_file() else list(PROBLEMS)
    rows = [pair_row(out, name) for name in names]
    blame = [blame_row(out, name) for name in BLAME_ROWS] if (out / "blame").is_dir() else []
    counted = totals(rows)
    (out / "summary.json").write_text(json.dumps({"totals": counted, "problems": rows, "blame": blame},
                                                 indent=2) + "\n")
    lines = [", ".join(f"{key.replace('_', ' ')}: {value}" for key, value in counted.items()), "",
             "| problem | verdict | correctness exit | benchmark exit | wall s | peak GB (step) | memory plan |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        where = f"{row['peak_gb']} ({row['peak_step']})" if row["peak_gb"] is not None else "—"
        lines.append(f"| {row['name']} | {row['verdict']}{'' if row['timed'] else ', not timed'} | "
                     f"{row['correctness_exit']} | {row['benchmark_exit']} | {row['wall_s']} | {where} | "
                     f"{'; '.join(row['plans']) or ('all in one run on the GPU' if row['peak_gb'] else '—')} |")
    if blame:
        lines += ["", "| blame row | expected | got | message |", "| --- | --- | --- | --- |"]
        lines += [f"| {row['name']} | exit {row['expected_exit']} {row['expected_kind']} | exit {row['exit']} "
                  f"{row['kind']} | {row['message']} |" for row in blame]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(row["ok"] for row in rows + blame) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare_parser = commands.add_parser("prepare", help="problems and identity solutions into OUT")
    prepare_parser.add_argument("kernelbench", type=Path, help="a KernelBench checkout, or a folder holding level1/")
    prepare_parser.add_argument("out", type=Path)
    prepare_parser.add_argument("--levels", default="", help="every problem of these levels (e.g. 1,2) instead of "
                                "the stock-size six")
    summary_parser = commands.add_parser("summary", help="OUT/summary.md and .json from the records")
    summary_parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        try:
            levels = [int(level) for level in args.levels.split(",") if level.strip()]
        except ValueError:
            print(f"error: --levels takes level numbers separated by commas (1,2), not {args.levels!r}",
                  file=sys.stderr)
            return 2
        try:
            print(" ".join(prepare(args.kernelbench, args.out, levels=levels)))
        except FileNotFoundError as missing:
            print(f"error: {missing}", file=sys.stderr)
            return 2
        return 0
    return summary(args.out)


if __name__ == "__main__":
    sys.exit(main())
