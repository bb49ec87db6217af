#!/usr/bin/env python3
"""The compute-sanitizer corpus on a GPU: every fixture under each tool its manifest names, and back.

reference/*/expected.yaml gives a fixture's plain exit (`exit`) and, under `sanitize:`, the exit
of `correctness_check.py --sanitize TOOL` per tool, with `sanitize_at` the source line its first
finding must name. This runs, in parallel (the runs are mostly CPU-bound start-up under the
tool): each such fixture's plain check, each of its tools, and `workspace.py evaluate` v0 of
wrong/smem_race.cu (memcheck clean, racecheck chosen from the SASS, its finding fails the
version). It prints a table fixture -> expected -> got and writes every log and record under
OUT_DIR. Exit 0 when every row got what it expected, 1 otherwise.

Usage (from the repository root, on a GPU machine with compute-sanitizer):
  bash tools/sanitizer_corpus.sh OUT_DIR
  python3 tools/sanitizer_corpus.py OUT_DIR --jobs 6

Exit codes: 0 every row as expected, 1 a mismatch, 4 no compute-sanitizer here.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
# A backstop only: each run's own --timeout kills a stalled child first (SANITIZED_STEP_TIMEOUT under the
# tool, x10), so nothing is left running on the GPU when a job ends.
JOB_TIMEOUT_S = 900
SANITIZED_STEP_TIMEOUT = "--timeout=20"  # 200 s per step under compute-sanitizer
EVALUATE_FIXTURE = "wrong/smem_race.cu"


@dataclass
class Job:
    """One command of the corpus and what it must give."""

    name: str  # "vector_add/wrong/tail_write.cu memcheck"
    step: str  # plain, memcheck, racecheck, initcheck, synccheck, evaluate
    expected_exit: int
    command: list[str]
    folder: Path  # where its records go
    record: str  # the record to read back, relative to folder
    expected_at: str | None = None  # the source line the first finding must name
    expected_steps: dict[str, str] = field(default_factory=dict)  # evaluate: step -> status


def manifest_jobs(manifest: Path, out: Path) -> list[Job]:
    """The jobs for one problem's expected.yaml: plain and sanitized checks of every fixture with `sanitize:`."""
    problem = manifest.parent
    jobs: list[Job] = []
    for entry in yaml.safe_load(manifest.read_text())["fixtures"]:
        tools = entry.get("sanitize") or {}
        if not tools:
            continue
        label = f"{problem.name}/{entry['file']}"
        slug = label.replace("/", "_").replace(".", "_")
        base = [sys.executable, str(SCRIPTS / "correctness_check.py"), str(problem / entry["file"]), "--ref",
                str(problem / "ref.py"), *entry.get("args", [])]
        folder = out / "runs" / slug / "plain"
        jobs.append(Job(label, "plain", entry["exit"], [*base, "--output-dir", str(folder)], folder,
                        "correctness.json"))
        for tool, expected in tools.items():
            folder = out / "runs" / slug / tool
            command = [*base, SANITIZED_STEP_TIMEOUT, "--output-dir", str(folder), "--sanitize", tool]
            jobs.append(Job(label, tool, expected, command, folder, f"correctness_{tool}.json",
                            entry.get("sanitize_at") if expected == 3 else None))
    return jobs


def evaluate_job(problem: Path, out: Path) -> Job:
    """workspace.py evaluate v0 of the shared-memory race: memcheck clean, racecheck runs and fails it."""
    folder = out / "runs" / "evaluate_smem_race"
    workspace = [sys.executable, str(SCRIPTS / "workspace.py")]
    init = [*workspace, "init", str(folder), "--kernel", str(problem / EVALUATE_FIXTURE), "--ref",
            str(problem / "ref.py"), "--iterations", "1", "--name", "vector_add"]
    evaluate = [*workspace, "evaluate", str(folder), "v0"]
    command = ["bash", "-c", f"{_quote(init)} && {_quote(evaluate)}"]
    return Job(f"{problem.name}/{EVALUATE_FIXTURE}", "evaluate", 3, command, folder / "v0", "evaluation.json",
               expected_steps={"correctness": "ok", "memcheck": "ok", "racecheck": "solution_error",
                               "benchmark": "skipped"})


def _quote(command: list[str]) -> str:
    return shlex.join(command)


def judge(job: Job, exit_code: int | None, record: dict | None) -> tuple[bool, str]:
    """(as expected, what it got in a few words) for one finished job and its record."""
    if exit_code is None:
        return False, f"no exit: killed after {JOB_TIMEOUT_S} s"
    if record is None:
        return False, f"exit {exit_code}: no {job.record}"
    if job.step == "evaluate":
        steps = {step["name"]: step["status"] for step in record.get("steps") or []}
        racecheck = next((s["summary"] for s in record.get("steps") or [] if s["name"] == "racecheck"), "")
        got = f"exit {exit_code}: {record.get('state')}; " + ", ".join(f"{k} {v}" for k, v in steps.items())
        wanted = all(steps.get(name) == status for name, status in job.expected_steps.items())
        return exit_code == job.expected_exit and wanted, f"{got}; racecheck: {racecheck[:120]}"
    text = f"exit {exit_code}: {record.get('verdict')}"
    error = record.get("error") or {}
    if error:
        text += f" ({error.get('kind')}: {error.get('message', '')[:140]})"
    sanitizer = record.get("sanitizer") or {}
    if sanitizer:
        text += f"; {sanitizer.get('errors')} errors, {sanitizer.get('warnings')} warnings"
    location_ok = True
    if job.expected_at is not None:
        from kernel_opt.check.records import SanitizerRun
        from kernel_opt.check.sanitizer import first_finding

        findings = SanitizerRun.from_dict(sanitizer).findings if sanitizer else []
        where = (first_finding(findings).location or "") if findings else ""  # the finding the verdict names
        location_ok = job.expected_at in where
        text += f"; first at {where or 'no line'}"
    return exit_code == job.expected_exit and location_ok, text


def run_job(job: Job, logs: Path) -> tuple[int | None, float]:
    started = time.perf_counter()
    # evaluate's run folder is made by `workspace.py init`, which refuses one that is not empty
    (job.folder.parent.parent if job.step == "evaluate" else job.folder).mkdir(parents=True, exist_ok=True)
    log = logs / f"{job.name.replace('/', '_')}.{job.step}.log"
    with open(log, "w") as handle:
        handle.write("$ " + _quote(job.command) + "\n")
        handle.flush()
        try:
            completed = subprocess.run(job.command, stdout=handle, stderr=subprocess.STDOUT, timeout=JOB_TIMEOUT_S,
                                       cwd=REPO)
            code: int | None = completed.returncode
        except subprocess.TimeoutExpired:
            code = None
    return code, time.perf_counter() - started


def read_record(job: Job) -> dict | None:
    path = job.folder / job.record
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="where logs, records and table.md go")
    parser.add_argument("--jobs", type=int, default=6, help="commands run at once (default 6)")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    sys.path.insert(0, str(SCRIPTS))
    from kernel_opt.env.probes import probe_compute_sanitizer

    sanitizer = probe_compute_sanitizer()
    if not sanitizer.found:
        print(f"{sanitizer.error}: nothing to run", file=sys.stderr)
        return 4
    print(f"compute-sanitizer {sanitizer.version} at {sanitizer.path}")
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    jobs = [job for manifest in sorted((REPO / "reference").glob("*/expected.yaml"))
            for job in manifest_jobs(manifest, out)]
    jobs.append(evaluate_job(REPO / "reference" / "vector_add", out))
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda job: run_job(job, logs), jobs))
    rows = []
    for job, (code, wall_s) in zip(jobs, results, strict=True):
        ok, got = judge(job, code, read_record(job))
        rows.append([job.name, job.step, f"exit {job.expected_exit}", got, f"{wall_s:.0f}", "ok" if ok else "MISMATCH"])
        print(f"[{'ok' if ok else 'MISMATCH'}] {job.name} {job.step}: {got}")
    from tabulate import tabulate

    table = tabulate(rows, headers=["fixture", "step", "expected", "got", "wall s", "result"], tablefmt="github")
    mismatches = sum(row[-1] != "ok" for row in rows)
    summary = f"{len(rows) - mismatches} of {len(rows)} rows as expected in {time.perf_counter() - started:.0f} s"
    (out / "table.md").write_text(table + "\n\n" + summary + "\n")
    print("\n" + table + "\n\n" + summary)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
