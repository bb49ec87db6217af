"""Run the suite: for each pair the correctness check, then (on a GPU) the benchmark, each in its child process.

`run_eval` is `kernel-opt eval` as a library call. Each pair's records go to OUT/pairs/NAME/
(correctness.json, benchmark.json, build/ and the entry, entry.json). Every solution runs in the
tools' own child processes, whose no-progress timeout ends a hang and whose death is reported,
so one problem crashing or hanging costs that problem only. An entry is kept under a key of
both files' bytes, the options and the device (the GPU model, its driver, torch and triton): a
second run reuses every entry whose key matches (it resumes where a first run stopped; on another
GPU or software stack every pair runs again, so one table never mixes machines) and `force` runs
them all again. Baselines are
timed once per problem and kept in OUT/reference_cache.json (measure/reference_cache.py).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.correctness import DEFAULT_SEEDS, CheckOptions, CorrectnessRequest, check_solution
from kernel_opt.check.integrity.launches import launch_check_of
from kernel_opt.check.integrity.verdict import correctness_failures
from kernel_opt.check.records import CorrectnessReport
from kernel_opt.core.errors import KernelOptError, UsageError, failure_verdict
from kernel_opt.core.files import file_sha256, read_json, write_json_atomic
from kernel_opt.core.records import now_iso
from kernel_opt.env.device import resolve_device
from kernel_opt.env.probes import probe_nvidia_smi
from kernel_opt.measure.benchmark import benchmark_solution
from kernel_opt.measure.benchmark_request import DEFAULT_BASELINES, DEFAULT_COMPILE_MODES, BenchmarkRequest
from kernel_opt.measure.records import EAGER_BASELINE, BenchmarkReport
from kernel_opt.measure.reference_cache import REFERENCE_CACHE_FILE, machine_key, visible_gpu
from kernel_opt.run.events import one_line
from kernel_opt.solution import registry
from kernel_opt.solution.dims import check_dims
from kernel_opt.suite.pairs import Pair, find_pairs
from kernel_opt.suite.records import ENTRY_FILE, EvalEntry, EvalReport, summarize

PAIRS_DIR = "pairs"
CORRECTNESS_VERDICTS = {"pass": "correct", "fail": "incorrect"}  # the others keep their names
BENCHMARK_VERDICTS = {"measured": "correct", "incorrect": "incorrect", "invalid": "invalid"}

Progress = Callable[[int, int, EvalEntry, bool], None]  # (done, total, entry, reused from an earlier run)


@dataclass
class EvalRequest:
    """What `kernel-opt eval` is asked to do, as typed options."""

    problems_dir: Path
    solutions_dir: Path
    output_dir: Path
    kernelbench_tolerances: bool = False
    seeds: int = DEFAULT_SEEDS
    baselines: list[str] = field(default_factory=lambda: list(DEFAULT_BASELINES))
    compile_modes: list[str] = field(default_factory=lambda: list(DEFAULT_COMPILE_MODES))
    timeout_s: float | None = None  # per child step without progress; None: each tool's own default
    only: list[str] = field(default_factory=list)  # problem names; empty: all
    profile: bool = False  # also ncu_profile.py every correct solution (its bottleneck)
    force: bool = False
    device: str = "auto"

    def options(self) -> dict[str, Any]:
        """What an entry's verdict depends on besides the two files (part of its key)."""
        return {"kernelbench_tolerances": self.kernelbench_tolerances, "seeds": self.seeds,
                "baselines": self.baselines, "compile_modes": self.compile_modes, "profile": self.profile}


def run_eval(request: EvalRequest, command: str, progress: Progress | None = None) -> EvalReport:
    """Evaluate every pair (reusing entries of an earlier run with the same key) and return the report.

    Writes nothing but the pair folders; the caller writes eval.md/json/png (suite/report.py).
    """
    if request.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    if request.timeout_s is not None and request.timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    pairs, notes = find_pairs(request.problems_dir, request.solutions_dir)
    if request.only:
        unknown = sorted(set(request.only) - {pair.name for pair in pairs})
        if unknown:
            raise UsageError(f"--only names no problem of {request.problems_dir}: {', '.join(unknown)}",
                             hint=f"the problems: {', '.join(pair.name for pair in pairs)}")
        pairs = [pair for pair in pairs if pair.name in request.only]
    device = resolve_device(request.device)
    identity = device_identity(device)
    if device != "cuda":
        notes.append("no GPU: correctness only (Triton under its interpreter, CUDA refused); nothing was timed, so "
                     "fast_p and speedups are not available")
    entries = []
    for index, pair in enumerate(pairs):
        key = entry_key(pair, request, identity)
        entry = None if request.force else reusable_entry(request.output_dir / PAIRS_DIR / pair.name, key)
        resumed = entry is not None
        if entry is None:
            entry = evaluate_pair(pair, request, device, key)
        entries.append(entry)
        if progress is not None:
            progress(index + 1, len(pairs), entry, resumed)
    return EvalReport(
        problems_dir=str(request.problems_dir), solutions_dir=str(request.solutions_dir), command=command,
        created_at=now_iso(), device=identity, options=request.options(), entries=entries,
        summary=summarize(entries), notes=notes)


def device_identity(device: str) -> dict[str, Any]:
    """What the entries' figures depend on besides the files: the device type, on a GPU its model and
    driver (nvidia-smi), and the torch and triton versions. Part of each key and of eval.md."""
    return {"type": device, **machine_key(visible_gpu(probe_nvidia_smi().gpus) if device == "cuda" else None)}


def entry_key(pair: Pair, request: EvalRequest, device: dict[str, Any]) -> str:
    """sha256 of the problem's and the solution's bytes, the options and the device's identity."""
    parts = {"problem": file_sha256(pair.problem), "device": device, "options": request.options(),
             "solution": file_sha256(pair.solution) if pair.solution is not None else None}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def reusable_entry(folder: Path, key: str) -> EvalEntry | None:
    """The entry an earlier run wrote for this very key, or None (then the pair runs)."""
    try:
        payload = read_json(folder / ENTRY_FILE)
        entry = None if payload is None else EvalEntry.from_dict(payload, str(folder / ENTRY_FILE))
    except KernelOptError:
        return None  # unreadable: run it again
    return entry if entry is not None and entry.key == key else None


def evaluate_pair(pair: Pair, request: EvalRequest, device: str, key: str) -> EvalEntry:
    """Check, then time one pair; its entry, also written to OUT/pairs/NAME/entry.json.

    Kept whole: one pair's steps in order, each turning a failure into the entry's verdict, so
    that nothing a pair does (a refused file, a crash, a bug here) stops the suite.
    """
    started = time.time()
    folder = request.output_dir / PAIRS_DIR / pair.name
    for stale in (ENTRY_FILE, "benchmark.json", "correctness.json"):
        (folder / stale).unlink(missing_ok=True)
    entry = EvalEntry(name=pair.name, problem=str(pair.problem), verdict="missing", key=key,
                      solution=None if pair.solution is None else str(pair.solution), source=pair.source,
                      run_version=pair.run_version, bottleneck=pair.bottleneck, message=pair.note)
    try:
        if pair.solution is not None:
            _check_and_time(entry, pair, request, device, folder)
    except KernelOptError as error:
        entry.verdict, entry.error_kind, entry.message = failure_verdict(error.exit_code), error.kind, error.message
    except Exception as error:  # a bug in the tools must not stop the suite: the entry says what happened
        entry.verdict, entry.error_kind, entry.message = "internal_error", "internal_error", one_line(error)
    entry.wall_s = round(time.time() - started, 1)
    write_json_atomic(folder / ENTRY_FILE, entry.to_dict())
    return entry


def _check_and_time(entry: EvalEntry, pair: Pair, request: EvalRequest, device: str, folder: Path) -> None:
    solution = pair.solution
    entry.backend = registry.detect(solution)
    own_kernels = registry.get(entry.backend).defines_own_kernels(solution)
    entry.library_only = None if own_kernels is None else not own_kernels
    dims = check_dims(pair.problem, {}, solution, entry.backend)  # refuses a broken problem file (exit 2)
    if pair.run_dims:
        entry.notes.append(f"the run folder's versions were made at {dict(pair.run_dims)}; the eval uses the "
                           "problem's own sizes")
    check = CheckOptions(request.seeds, kernelbench_tolerances=request.kernelbench_tolerances)
    if request.timeout_s is not None:
        check.timeout_s = request.timeout_s
    correctness = check_solution(CorrectnessRequest(solution, pair.problem, folder, dims, entry.backend, device,
                                                    check))
    _read_correctness(entry, correctness)
    if not correctness.passed:
        return
    if device != "cuda":
        entry.notes.append("not timed: no GPU here")
        return
    benchmark = benchmark_solution(BenchmarkRequest(
        solution, pair.problem, folder, dims, baselines=list(request.baselines),
        compile_modes=list(request.compile_modes), backend=entry.backend, check_seeds=request.seeds,
        checked_by=folder / "correctness.json", reference_cache=request.output_dir / REFERENCE_CACHE_FILE,
        kernelbench_tolerances=request.kernelbench_tolerances,
        **({} if request.timeout_s is None else {"timeout_s": request.timeout_s})))
    _read_benchmark(entry, benchmark)
    if request.profile and entry.correct:
        _profile(entry, pair, folder)


def _read_correctness(entry: EvalEntry, report: CorrectnessReport) -> None:
    entry.verdict = CORRECTNESS_VERDICTS.get(report.verdict, report.verdict)
    launches = launch_check_of(report)
    if launches is not None and launches.profiled and launches.own_kernels is not None:
        entry.library_only = launches.own_kernels == 0  # what ran on the GPU outranks what the source defines
    entry.precision_downgrade = bool(report.precision_downgrades)
    if report.error is not None:
        entry.error_kind, entry.message = report.error.kind, report.error.message
    elif not report.passed:
        failures = correctness_failures(report)
        entry.message = failures[0] if failures else "not every planned case ran"


def _read_benchmark(entry: EvalEntry, report: BenchmarkReport) -> None:
    entry.verdict = BENCHMARK_VERDICTS.get(report.verdict, report.verdict)
    entry.precision_downgrade = entry.precision_downgrade or any(
        output.precision_downgrade for check in report.post_timing_check.values() for output in check.outputs or [])
    if report.verdict != "measured":
        entry.error_kind = (report.error.kind if report.error else None) or report.verdict
        entry.message = report.failure_reason() or "; ".join(report.warnings[-1:])
        return
    entry.timed, entry.solution_us = True, report.median_us
    entry.percent_of_ceiling = report.percent_of_ceiling
    entry.eager_us = report.baseline_medians().get(EAGER_BASELINE)
    fastest = report.fastest_compile()
    if fastest is not None:
        entry.compile_mode, entry.compile_us = fastest
    if entry.solution_us:
        entry.speedup_vs_eager = entry.eager_us / entry.solution_us if entry.eager_us else None
        entry.speedup_vs_compile = entry.compile_us / entry.solution_us if entry.compile_us else None


def _profile(entry: EvalEntry, pair: Pair, folder: Path) -> None:
    """ncu_profile.py on the pair: its bottleneck label; a profile that fails is a note, not a verdict."""
    from kernel_opt.profile.profiler import ProfileRequest, profile_solution

    try:
        summary = profile_solution(ProfileRequest(folder, pair.solution, pair.problem, backend=entry.backend or "auto"))
    except KernelOptError as error:
        entry.notes.append(f"profile failed ({error.kind}): {error.message}")
        return
    entry.bottleneck = summary.bottleneck
