#!/usr/bin/env python3
"""Re-profile the demo versions profiled before issue 15 with today's ncu collection and static analysis, in one call.

The demo versions recorded up to 2026-11-24 (demo/<backend>/<case>/vN/) were profiled before the
classifier read the per-pipe roofs and the executed SASS opcode mix (issue 15), and their reports
were not kept, so their labels were provisional. This re-runs, for each of them, what
`workspace.py evaluate` ran: `ncu_profile.py` on the version's kernel with the run's ref.py, dims,
--arch and --nvcc-flags (run.json), and `static_analysis.py` for the compiled SASS. Nothing under
demo/ is written: the outputs go to a scratch folder, and OUT_DIR gets at most 8 files (what the
device tool returns): README.md (device, tools, commands, one row per version), run.log,
reprofile.tar.gz (every version's ncu_summary.json/.md, ncu_details.md, static_analysis.json/.md,
ncu.log and console output, plus manifest.json) and reports-N.tar.gz (the .ncu-rep files, in
priority order, each archive at most REPORT_ARCHIVE_MIB; what does not fit is listed).

Which versions: those whose own ncu_summary.json predates issue 15's classifier. Every summary
written since carries `pipes` and `design` in each kernel, empty or not (profile/records.py
KernelSummary); a summary without them is older. A version evaluated with today's classifier needs
no re-profile, and one never profiled (no ncu_summary.json) needs `workspace.py evaluate`, so
neither is planned. On 2026-11-25 that was all 44 versions then recorded, and it stays those 44 as
the demo grows: every version recorded since (demo/triton/gemm/v3 and v4, demo/cuda/attention_r2,
demo/triton/attention_r2) was evaluated with today's classifier.

Phase 1 runs the static analyses in parallel (CPU work; it also fills the build cache the
profile reuses, since both write to the version's output folder). Phase 2 runs the profiles one
at a time, each time-boxed; once --deadline seconds (default 450) have passed no new profile
starts, and the versions left are listed as skipped, so one call ends in under 9 minutes. Versions
run in priority order: the best version of each case (the final benchmark's, or where that one
was recorded after issue 15, the planned version it grew from: version.json's parent chain), then
the tensor-core cases (their labels are the ones issue 15 changes), then the streaming kernels.
The GPU entry point is tools/demo_upkeep/reprofile_demo.sh, which finds ncu first.

Usage:
  python3 tools/demo_upkeep/reprofile_demo.py plan                          # versions in run order, with their commands
  python3 tools/demo_upkeep/reprofile_demo.py plan --only cuda/gemm/v9,triton/attention --json
  python3 tools/demo_upkeep/reprofile_demo.py run OUT_DIR --dry-run         # the commands a run would execute
  tools/demo_upkeep/reprofile_demo.sh OUT_DIR                               # on the GPU machine

Exit codes: 0 every version profiled and analysed; 1 some version failed, timed out or was
skipped (README.md lists which); 2 usage error (unknown --only, a case or version whose profile
needs no re-profile, no demo version to re-profile); 4 this machine cannot profile (no ncu, no GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from kernel_opt.core.cli import dim_arguments  # noqa: E402
from kernel_opt.core.errors import UsageError  # noqa: E402
from kernel_opt.core.records import now_iso  # noqa: E402
from kernel_opt.core.render import markdown_table  # noqa: E402
from kernel_opt.loop.records import read_run_record, read_version_record  # noqa: E402
from kernel_opt.measure.records import read_benchmark  # noqa: E402

DEMO = REPO / "demo"
# Tensor-core cases first: their labels are the ones the new rules change; the streaming
# kernels (softmax, RMSNorm) are memory_bound either way and go last.
CASE_PRIORITY = ("cuda/gemm", "cuda/attention", "triton/attention", "triton/gemm",
                 "cuda/softmax", "triton/softmax", "triton/rmsnorm")
# Seconds. A profile took 7-11 s in the demo runs (their evaluation.json, build cached): 44 take
# about 400 s after the static analyses (about 40 s on 8 cores). The last profile may start at
# DEADLINE_S and run CASE_TIMEOUT_S, so a run ends by 450 + 75 s plus packing: under 9 minutes.
DEADLINE_S = 450.0
CASE_TIMEOUT_S = 75.0
STATIC_TIMEOUT_S = 120.0
STATIC_DEADLINE_S = 150.0  # the parallel static-analysis phase stops starting new ones after this
STATIC_WORKERS = 8
REPORT_ARCHIVE_MIB = 15.0  # the device returns files of at most 16 MiB
REPORT_ARCHIVES = 5  # with README.md, run.log and reprofile.tar.gz: the device's 8 files
# What the main archive keeps of each version's output folder (profile.ncu-rep goes apart).
KEPT_FILES = ("ncu_summary.json", "ncu_summary.md", "ncu_details.md", "static_analysis.json", "static_analysis.md",
              "ncu.log", "profile_request.json", "profile_events.jsonl", "profile.console.txt", "static.console.txt")
REPORT_FILE = "profile.ncu-rep"
# What the classifier has written into every kernel of an ncu_summary.json since 2026-11-25, empty or not
# (profile/records.py KernelSummary: "absent from records made before they existed"): the per-pipe roofs and the
# design evidence (the asynchronous features the executed SASS shows). A summary whose kernels lack them needs a
# re-profile.
PIPE_AND_DESIGN_FIELDS = ("pipes", "design")


@dataclass(frozen=True)
class VersionJob:
    """One demo version and what its run recorded about how to build and call it."""

    key: str  # "cuda/gemm/v9", also its folder under OUT
    backend: str
    solution: str  # relative to the repository root
    reference: str
    dims: dict[str, Any]
    build_arguments: tuple[str, ...]  # --arch / --nvcc-flags as run.json gives them
    best: bool = False  # its case's best among the planned versions (best_planned_version)

    @property
    def case(self) -> str:
        return self.key.rsplit("/", 1)[0]

    @property
    def version(self) -> str:
        return self.key.rsplit("/", 1)[1]


def _version_number(folder: Path) -> int:
    return int(folder.name[1:]) if folder.name[1:].isdigit() else -1


def _relative(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def predates_pipe_and_design_records(summary: dict[str, Any] | None) -> bool:
    """Whether a version's own ncu_summary.json was written before the classifier recorded per-pipe roofs and
    design evidence, so needs a re-profile.

    True when some kernel lacks the `pipes` or `design` record; False for a summary written since
    (it has both, empty or not) and for no summary at all (a version never profiled is evaluated,
    not re-profiled).
    """
    kernels = (summary or {}).get("kernels") or []
    return any(name not in kernel for kernel in kernels for name in PIPE_AND_DESIGN_FIELDS)


def needs_reprofile(folder: Path) -> bool:
    """The plan's rule for a version folder: its run's own profile predates the pipe and design records."""
    return predates_pipe_and_design_records(read_json_if_any(folder / "ncu_summary.json"))


def case_jobs(case_dir: Path) -> list[VersionJob]:
    """Every vN/ of one recorded run whose solution file exists, in version order; `best` not yet set."""
    run = read_run_record(case_dir)
    if run is None:
        return []
    jobs = []
    folders = sorted((path for path in case_dir.glob("v*") if path.is_dir() and _version_number(path) >= 0),
                     key=_version_number)
    for folder in folders:
        number = _version_number(folder)
        solution = case_dir / run.solution_pattern.format(n=number)
        if not solution.is_file():
            continue
        key = f"{case_dir.parent.name}/{case_dir.name}/{folder.name}"
        jobs.append(VersionJob(key, run.backend, _relative(solution), _relative(case_dir / run.reference_file),
                               dict(run.dims), tuple(run.build_arguments())))
    return jobs


def best_planned_version(case_dir: Path, planned: set[str]) -> str | None:
    """The folder name (vN) of the case's best version among `planned`, or None.

    The final benchmark's version when it is planned; else the nearest planned one it grew from
    (version.json's parent chain): a run continued after the re-profile (demo/triton/gemm's v3
    and v4, from v2) keeps the best version the re-profile knew first in its order.
    """
    final = read_benchmark(case_dir)
    name = Path(final.solution.path if final.solution.has("path") else "").parent.name if final is not None else ""
    seen: set[str] = set()
    while name and name not in seen:
        if name in planned:
            return name
        seen.add(name)
        record = read_version_record(case_dir / name) if (case_dir / name).is_dir() else None
        name = record.parent if record is not None and record.parent else ""
    return None


def _priority(job: VersionJob) -> tuple[int, int, int]:
    case_rank = CASE_PRIORITY.index(job.case) if job.case in CASE_PRIORITY else len(CASE_PRIORITY)
    return (0 if job.best else 1, case_rank, int(job.version[1:]))


def _selected(job: VersionJob, only: list[str]) -> bool:
    return not only or any(job.key == item or job.key.startswith(item.rstrip("/") + "/") for item in only)


def plan_versions(demo: Path = DEMO, only: list[str] | None = None) -> list[VersionJob]:
    """The demo versions profiled before issue 15, in the order a run profiles them.

    `only` keeps cases or versions ("cuda/gemm/v9"); it refuses one that is not on disk, and one
    whose versions were all profiled with today's classifier (or never profiled). Pure: reads
    run.json, each version's ncu_summary.json and version.json, the final benchmark.json and the
    folder names, runs nothing.
    """
    only = [item.strip().strip("/") for item in only or [] if item.strip()]
    jobs, on_disk = [], []
    for case_dir in sorted(path.parent for path in demo.glob("*/*/run.json")):
        case = case_jobs(case_dir)
        on_disk += case
        planned = [job for job in case if needs_reprofile(demo / job.key)]
        best = best_planned_version(case_dir, {job.version for job in planned})
        jobs += [replace(job, best=job.version == best) for job in planned]
    if not jobs:
        raise UsageError(f"no demo version to re-profile under {demo} (expected <backend>/<case>/run.json and vN/ "
                         "folders whose ncu_summary.json predates issue 15)")
    unknown = [item for item in only if not any(_selected(job, [item]) for job in on_disk)]
    if unknown:
        raise UsageError(f"--only {', '.join(unknown)}: no such demo case or version",
                         hint="write backend/case or backend/case/vN, e.g. cuda/gemm/v9")
    current = [item for item in only if not any(_selected(job, [item]) for job in jobs)]
    if current:
        raise UsageError(f"--only {', '.join(current)}: profiled with today's classifier (or not profiled), "
                         "so not re-profiled", hint="the plan covers the versions whose profile predates issue 15")
    return sorted((job for job in jobs if _selected(job, only)), key=_priority)


def profile_command(job: VersionJob, out_root: Path, python: str = "python3",
                    timeout_s: float = CASE_TIMEOUT_S) -> list[str]:
    """ncu_profile.py as `workspace.py evaluate` ran it (3 warm-up calls, 1 profiled), into OUT/<key>/."""
    return [python, _relative(SCRIPTS / "ncu_profile.py"), job.solution, "--ref", job.reference,
            "--output-dir", str(out_root / job.key), "--backend", job.backend,
            "--timeout", f"{max(timeout_s - 10.0, 10.0):g}", *job.build_arguments, *dim_arguments(job.dims)]


def static_command(job: VersionJob, out_root: Path, python: str = "python3") -> list[str]:
    """static_analysis.py into the same folder: the build it leaves there is the one the profile reuses."""
    inputs = ["--ref", job.reference, *dim_arguments(job.dims)] if job.backend == "triton" else []
    return [python, _relative(SCRIPTS / "static_analysis.py"), job.solution, "--output-dir", str(out_root / job.key),
            "--backend", job.backend, *job.build_arguments, *inputs]


@dataclass
class StepRun:
    """One command's outcome: exit code (None: not run), seconds, and why it did not run or finish."""

    exit_code: int | None = None
    seconds: float = 0.0
    skipped: str | None = None  # "past the 450 s deadline", ...
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def describe(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        if self.timed_out:
            return f"timed out after {self.seconds:.0f} s"
        return f"exit {self.exit_code}, {self.seconds:.1f} s"


@dataclass
class VersionOutcome:
    """A version's two steps and what its new profile says, beside what the run's own profile said."""

    key: str
    best: bool
    static: StepRun = field(default_factory=StepRun)
    profile: StepRun = field(default_factory=StepRun)
    reading: dict[str, Any] = field(default_factory=dict)  # from OUT/<key>/ncu_summary.json
    recorded: dict[str, Any] = field(default_factory=dict)  # from demo/<key>/ncu_summary.json


def profile_reading(summary: dict[str, Any] | None) -> dict[str, Any]:
    """The label and what stands behind it, from an ncu_summary.json (old or new); {} without one."""
    if not summary:
        return {}
    kernels = summary.get("kernels") or []
    dominant_name = (summary.get("dominant_kernel") or {}).get("name")
    kernel = next((item for item in kernels if item.get("name") == dominant_name), kernels[0] if kernels else {})
    pipes, design = kernel.get("pipes") or {}, kernel.get("design") or {}
    stalls = kernel.get("top_stalls") or []
    read_next = summary.get("read_next") or []
    return {
        "bottleneck": summary.get("bottleneck"),
        "memory_limiter": summary.get("memory_limiter"),
        "first_advice": read_next[0].get("strategy") if read_next else None,
        "busiest_pipe": pipes.get("busiest"),
        "busiest_pipe_pct": pipes.get("busiest_pct"),
        "tensor_pipe_pct": (kernel.get("metrics") or {}).get("tensor_pipe_pct"),
        "achieved_occupancy_pct": (summary.get("metrics") or {}).get("achieved_occupancy_pct"),
        "async_features": [feature.split(" (")[0] for feature in design.get("async_features") or []],
        "design_source": design.get("source"),
        "top_stall": stalls[0].get("reason") if stalls else summary.get("top_stall"),
        "top_stalls": [f"{share.get('reason')} {share.get('share_pct') or 0:.0f}%" for share in stalls[:2]],
        "unverified": list(summary.get("unverified") or []),
        "reason": summary.get("reason", ""),
    }


def read_json_if_any(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# --- running (the GPU machine) ----------------------------------------------------------------

Executor = Callable[[list[str], Path, float], StepRun]  # (command, console file, timeout in s) -> outcome


@dataclass
class RunOptions:
    out_dir: Path
    ncu: str | None = None
    deadline_s: float = DEADLINE_S
    case_timeout_s: float = CASE_TIMEOUT_S
    static_timeout_s: float = STATIC_TIMEOUT_S
    static_deadline_s: float = STATIC_DEADLINE_S
    static_workers: int = STATIC_WORKERS
    demo: Path = DEMO
    python: str = sys.executable
    report_archive_bytes: int = int(REPORT_ARCHIVE_MIB * 2**20)
    report_archives: int = REPORT_ARCHIVES


def missing_tools(ncu: str | None) -> str | None:
    """Why this machine cannot profile (no ncu, no GPU), or None."""
    if not (ncu or shutil.which("ncu")):
        return ("no ncu (tools/demo_upkeep/reprofile_demo.sh looks on PATH, in /opt/nvidia/nsight-compute and "
                "/usr/local/cuda/bin)")
    if shutil.which("nvidia-smi") is None:
        return "no nvidia-smi, so no NVIDIA driver"
    return None


def subprocess_executor(environment: dict[str, str]) -> Executor:
    """Run a command from the repository root, its output to `console`; past the timeout its process group dies."""

    def execute(command: list[str], console: Path, timeout_s: float) -> StepRun:
        console.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        with console.open("w") as log:
            log.write(f"$ {shlex.join(command)}\n")
            log.flush()
            process = subprocess.Popen(command, cwd=REPO, env=environment, stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                code = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # ncu and the profiled program with it
                process.wait()
                return StepRun(None, time.monotonic() - start, timed_out=True)
        return StepRun(code, time.monotonic() - start)

    return execute


def _environment_for_steps(ncu: str | None) -> dict[str, str]:
    """This process's environment with the chosen ncu first on PATH, so ncu_profile.py finds the same one."""
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if ncu:
        environment["PATH"] = f"{Path(ncu).resolve().parent}{os.pathsep}{environment.get('PATH', '')}"
    return environment


def run_static_phase(jobs: list[VersionJob], root: Path, options: RunOptions, execute: Executor,
                     elapsed: Callable[[], float]) -> dict[str, StepRun]:
    """Every static analysis, in parallel: CPU work that also leaves the CUDA builds the profiles reuse."""

    def one(job: VersionJob) -> StepRun:
        if elapsed() >= options.static_deadline_s:
            return StepRun(skipped=f"past the {options.static_deadline_s:g} s static-analysis deadline")
        return execute(static_command(job, root, options.python), root / job.key / "static.console.txt",
                       options.static_timeout_s)

    with ThreadPoolExecutor(max_workers=max(1, options.static_workers)) as pool:
        return dict(zip([job.key for job in jobs], pool.map(one, jobs), strict=True))


def run_versions(jobs: list[VersionJob], options: RunOptions, execute: Executor | None = None,
                 clock: Callable[[], float] = time.monotonic, environment: dict[str, Any] | None = None) -> int:
    """Both phases, the readings, README.md, manifest.json and the archives in OUT_DIR; 0 when every step ran."""
    start = clock()
    elapsed = lambda: clock() - start  # noqa: E731
    options.out_dir.mkdir(parents=True, exist_ok=True)
    execute = execute or subprocess_executor(_environment_for_steps(options.ncu))
    environment = environment if environment is not None else tool_versions(options.ncu, options.python)
    with tempfile.TemporaryDirectory(prefix="reprofile_demo.") as scratch:
        root = Path(scratch) / "reprofile"
        root.mkdir()
        log = RunLog(root / "run.log")
        log.line(f"{len(jobs)} versions; deadline {options.deadline_s:g} s, {options.case_timeout_s:g} s per profile")
        statics = run_static_phase(jobs, root, options, execute, elapsed)
        log.line(f"static analyses done at {elapsed():.0f} s: "
                 f"{sum(step.ok for step in statics.values())} of {len(jobs)} ok")
        outcomes = []
        for job in jobs:
            outcome = VersionOutcome(job.key, job.best, static=statics[job.key])
            if elapsed() >= options.deadline_s:
                outcome.profile = StepRun(skipped=f"past the {options.deadline_s:g} s deadline")
            else:
                outcome.profile = execute(profile_command(job, root, options.python, options.case_timeout_s),
                                          root / job.key / "profile.console.txt", options.case_timeout_s)
            outcome.reading = profile_reading(read_json_if_any(root / job.key / "ncu_summary.json"))
            outcome.recorded = profile_reading(read_json_if_any(options.demo / job.key / "ncu_summary.json"))
            log.line(_outcome_line(outcome, elapsed()))
            outcomes.append(outcome)
        placement = place_reports([(job.key, _size(root / job.key / REPORT_FILE)) for job in jobs],
                                  options.report_archive_bytes, options.report_archives)
        manifest = {"environment": environment, "options": _options_record(options, jobs, elapsed()),
                    "versions": [asdict(outcome) | {"report": placement.get(outcome.key)} for outcome in outcomes]}
        (root / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str))
        (root / "README.md").write_text(render_readme(manifest))
        log.line(f"finished at {elapsed():.0f} s")
        write_archives(root, options.out_dir, placement)
    failed = [outcome.key for outcome in outcomes if not (outcome.profile.ok and outcome.static.ok)]
    return 1 if failed else 0


class RunLog:
    """run.log in the scratch folder (archived, and copied to OUT_DIR), echoed to stdout."""

    def __init__(self, path: Path):
        self.path = path
        path.write_text("")

    def line(self, text: str) -> None:
        print(text, flush=True)
        with self.path.open("a") as stream:
            stream.write(text + "\n")


def _outcome_line(outcome: VersionOutcome, seconds: float) -> str:
    old, new = outcome.recorded.get("bottleneck"), outcome.reading.get("bottleneck")
    label = f"{old} -> {new}" if new else "no new profile"
    return (f"== {outcome.key}: static {outcome.static.describe()}; profile {outcome.profile.describe()}; "
            f"{label} ({seconds:.0f} s so far)")


def _size(path: Path) -> int | None:
    return path.stat().st_size if path.is_file() else None


def _options_record(options: RunOptions, jobs: list[VersionJob], seconds: float) -> dict[str, Any]:
    first, out = jobs[0], Path("OUT")
    return {"deadline_s": options.deadline_s, "case_timeout_s": options.case_timeout_s,
            "static_deadline_s": options.static_deadline_s, "static_workers": options.static_workers,
            "wall_s": round(seconds, 1), "static_command_example": shlex.join(static_command(first, out)),
            "profile_command_example": shlex.join(profile_command(first, out, timeout_s=options.case_timeout_s))}


def place_reports(sizes: list[tuple[str, int | None]], archive_bytes: int, archives: int) -> dict[str, str]:
    """Version key -> the reports archive its .ncu-rep goes in, or why it stays out; in the order given.

    Each archive holds at most `archive_bytes` of reports (they hardly compress), so it stays
    under the device's file limit; a report that would open archive number `archives + 1` stays out.
    """
    placement: dict[str, str] = {}
    used: list[int] = []
    for key, size in sizes:
        if size is None:
            continue
        if size > archive_bytes:
            placement[key] = f"left out: {size / 2**20:.1f} MiB, more than one archive holds"
            continue
        slot = next((index for index, total in enumerate(used) if total + size <= archive_bytes), None)
        if slot is None and len(used) < archives:
            used.append(0)
            slot = len(used) - 1
        if slot is None:
            placement[key] = f"left out: the {archives} report archives are full"
            continue
        used[slot] += size
        placement[key] = f"reports-{slot + 1}.tar.gz"
    return placement


def write_archives(root: Path, out_dir: Path, placement: dict[str, str]) -> None:
    """reprofile.tar.gz (every kept file), reports-N.tar.gz (the .ncu-rep files), README.md and run.log."""
    with tarfile.open(out_dir / "reprofile.tar.gz", "w:gz") as archive:
        for name in ("README.md", "manifest.json", "run.log"):
            archive.add(root / name, arcname=f"reprofile/{name}")
        for folder in sorted(path for path in root.glob("*/*/v*") if path.is_dir()):
            for name in KEPT_FILES:
                if (folder / name).is_file():
                    archive.add(folder / name, arcname=f"reprofile/{folder.relative_to(root)}/{name}")
    for name in sorted(set(value for value in placement.values() if value.endswith(".tar.gz"))):
        with tarfile.open(out_dir / name, "w:gz") as archive:
            for key in (key for key, value in placement.items() if value == name):
                archive.add(root / key / REPORT_FILE, arcname=f"reprofile/{key}/{REPORT_FILE}")
    shutil.copy(root / "README.md", out_dir / "README.md")
    shutil.copy(root / "run.log", out_dir / "run.log")


def tool_versions(ncu: str | None, python: str) -> dict[str, Any]:
    """Device, driver and tool versions for the README, each 'unknown: why' when it cannot be read."""

    def output(command: list[str]) -> str:
        try:
            completed = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=REPO)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"unknown: {error}"
        text = (completed.stdout or completed.stderr).strip()
        return text if completed.returncode == 0 and text else f"unknown: exit {completed.returncode} {text[-200:]}"

    nvcc_path = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"  # where the CUDA build looks (cuda/build.py)
    nvcc = output([nvcc_path, "--version"]).splitlines()
    return {
        "date": now_iso(),
        "device": output(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]).splitlines()[0],
        "ncu": output([ncu or "ncu", "--version"]).splitlines()[-1] + f" ({ncu or 'ncu on PATH'})",
        "nvcc": next((line for line in nvcc if "release" in line), nvcc[-1] if nvcc else "unknown"),
        "python, torch, triton": output([python, "-c", "import sys, torch, triton; "
                                         "print(sys.version.split()[0], torch.__version__, triton.__version__)"]),
        "commit": checkout_identity(),
    }


def checkout_identity(repo: Path = REPO) -> str:
    """The code that ran: the checkout's HEAD, and the tree its files make when they are not HEAD's.

    The device tool runs a copy of the lead's files whose .git can be older than they are: the
    2026-11-25 re-profile recorded HEAD 769a625 (the session's first commit) while its files were
    main with this branch merged. The tree id of the files as they are (`git add -A` into a scratch
    index, `git write-tree`: .gitignore'd build outputs left out) names them exactly; `git log --all
    --format='%H %T' | grep TREE` finds their commit where the history is.
    """
    def git(*arguments: str, index: Path | None = None) -> str | None:
        environment = {**os.environ, "GIT_INDEX_FILE": str(index)} if index else None
        try:
            completed = subprocess.run(["git", *arguments], capture_output=True, text=True, timeout=120, cwd=repo,
                                       env=environment)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return completed.stdout.strip() if completed.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    with tempfile.TemporaryDirectory(prefix="reprofile_index.") as scratch:
        index = Path(scratch) / "index"
        tree = git("write-tree", index=index) if git("add", "-A", index=index) is not None else None
    if not tree:
        return f"HEAD {head or 'unknown'}; the files' own tree could not be read (no git here?)"
    if tree == git("rev-parse", "HEAD^{tree}"):
        return f"{head} (the files are HEAD's)"
    return (f"files of tree {tree}, not HEAD {head or 'unknown'}'s (their commit: git log --all --format='%H %T' | "
            f"grep {tree})")


def render_readme(manifest: dict[str, Any]) -> str:
    """README.md of the run, from its manifest: what ran where, and one row per version."""
    environment, options = manifest["environment"], manifest["options"]
    rows = []
    for version in manifest["versions"]:
        old, new = version["recorded"], version["reading"]
        pipe = (f"{new['busiest_pipe']} {new['busiest_pipe_pct']:.1f}%" if new.get("busiest_pipe_pct") is not None
                else "—")
        rows.append([version["key"] + (" (best)" if version["best"] else ""),
                     _step_text(version["static"]), _step_text(version["profile"]),
                     f"{old.get('bottleneck')} → {new.get('bottleneck', '—')}",
                     f"{old.get('first_advice')} → {new.get('first_advice', '—')}", pipe,
                     ", ".join(new.get("async_features") or []) or "—", new.get("top_stall") or "—",
                     version.get("report") or "no report"])
    lines = ["# Demo re-profile (issue 15)", "",
             "Written by `tools/demo_upkeep/reprofile_demo.sh OUT_DIR` (tools/demo_upkeep/reprofile_demo.py). "
             "Label and first advice: the run's own profile (demo/<version>/ncu_summary.json) → this re-profile.", ""]
    lines += [f"- {name}: {value}" for name, value in environment.items()]
    lines += [f"- deadline {options['deadline_s']:g} s, {options['case_timeout_s']:g} s per profile, "
              f"wall {options['wall_s']:g} s",
              f"- static analysis, per version: `{options['static_command_example']}`",
              f"- profile, per version: `{options['profile_command_example']}`", "",
              markdown_table(rows, ["version", "static analysis", "profile", "label", "first advice", "busiest pipe",
                                    "asynchronous design", "top stall", "report"])]
    missed = [version["key"] for version in manifest["versions"]
              if version["profile"]["skipped"] or version["static"]["skipped"]]
    if missed:
        lines += ["", f"Skipped (rerun with `--only {','.join(missed)}`): {', '.join(missed)}"]
    return "\n".join(lines) + "\n"


def _step_text(step: dict[str, Any]) -> str:
    return StepRun(**step).describe()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    actions = parser.add_subparsers(dest="action", required=True)
    plan = actions.add_parser("plan", help="list the versions in run order with their commands")
    run = actions.add_parser("run", help="re-profile (GPU); --dry-run prints the commands only")
    run.add_argument("out_dir", type=Path)
    run.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    run.add_argument("--ncu", default=None,
                     help="the ncu binary (tools/demo_upkeep/reprofile_demo.sh passes the one it found)")
    run.add_argument("--deadline", type=float, default=DEADLINE_S,
                     help=f"seconds after which no new profile starts (default {DEADLINE_S:g})")
    run.add_argument("--case-timeout", type=float, default=CASE_TIMEOUT_S,
                     help=f"seconds one version's profile may take (default {CASE_TIMEOUT_S:g})")
    run.add_argument("--static-workers", type=int, default=STATIC_WORKERS)
    for sub in (plan, run):
        sub.add_argument("--demo", type=Path, default=DEMO)
        sub.add_argument("--only", default="", help="comma-separated cases or versions: cuda/gemm,triton/gemm/v2")
        sub.add_argument("--json", action="store_true", help="print the plan as JSON")
    args = parser.parse_args(argv)
    try:
        jobs = plan_versions(args.demo, args.only.split(","))
    except UsageError as error:
        print(f"error: {error.message}" + (f" ({error.hint})" if error.hint else ""), file=sys.stderr)
        return 2
    if args.action == "plan" or args.dry_run:
        # A run writes into a scratch folder and archives what it keeps into OUT_DIR.
        _print_plan(jobs, Path("OUT") if args.action == "plan" else Path("SCRATCH/reprofile"), args.json)
        return 0
    missing = missing_tools(args.ncu)
    if missing:
        print(f"error: this machine cannot profile: {missing}", file=sys.stderr)
        return 4
    options = RunOptions(out_dir=args.out_dir.resolve(), ncu=args.ncu, deadline_s=args.deadline,
                         case_timeout_s=args.case_timeout, static_workers=args.static_workers, demo=args.demo)
    return run_versions(jobs, options)


def _print_plan(jobs: list[VersionJob], out_root: Path, as_json: bool) -> None:
    if as_json:
        print(json.dumps([asdict(job) | {"static_command": static_command(job, out_root),
                                         "profile_command": profile_command(job, out_root)} for job in jobs], indent=2))
        return
    for number, job in enumerate(jobs, start=1):
        print(f"# {number}/{len(jobs)} {job.key}{' (best version of its case)' if job.best else ''}")
        print(shlex.join(static_command(job, out_root)))
        print(shlex.join(profile_command(job, out_root)))


if __name__ == "__main__":
    sys.exit(main())
