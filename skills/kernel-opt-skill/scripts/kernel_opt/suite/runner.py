"""One pair of the suite: its correctness check, then (on a GPU) its benchmark, each in its child process.

`evaluate_pair` runs in whichever process evaluates the pair: `kernel-opt eval` itself, a worker
of `--gpus` (suite/gpu_pool.py) or a Ray task (suite/ray_pool.py); the run around it is
suite/driver.py. Each pair's records go to its folder, pairs/NAME/ (correctness.json,
benchmark.json, build/); the entry it returns is written to pairs/NAME/entry.json by the driver
alone. Every solution runs in the tools' own child processes, whose no-progress timeout ends a
hang and whose death is reported, so one problem crashing or hanging costs that problem only. An
entry is kept under a key of both files' bytes, the options and the device (the GPU model, its
driver, torch and triton): a later run reuses an entry whose key matches (it resumes where a
first run stopped; on another GPU model or software stack the pair runs again, so one row never
mixes machines). Baselines are timed once per problem and GPU board and kept in
OUT/reference_cache.json (measure/reference_cache.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.correctness import DEFAULT_SEEDS, CheckOptions, CorrectnessRequest, check_solution
from kernel_opt.check.integrity.launches import launch_check_of
from kernel_opt.check.integrity.verdict import correctness_failures, kernelbench_would_pass
from kernel_opt.check.records import CorrectnessReport
from kernel_opt.core.errors import KernelOptError, failure_verdict
from kernel_opt.core.files import file_sha256, read_json, write_json_atomic
from kernel_opt.env.probes import probe_nvidia_smi
from kernel_opt.measure.benchmark import benchmark_solution
from kernel_opt.measure.benchmark_request import DEFAULT_BASELINES, DEFAULT_COMPILE_MODES, BenchmarkRequest
from kernel_opt.measure.records import EAGER_BASELINE, BenchmarkReport
from kernel_opt.measure.reference_cache import REFERENCE_CACHE_FILE, machine_key, visible_gpu
from kernel_opt.run.events import one_line
from kernel_opt.solution import registry
from kernel_opt.solution.dims import check_dims
from kernel_opt.suite.pairs import Pair
from kernel_opt.suite.records import ENTRY_FILE, EvalEntry

PAIRS_DIR = "pairs"
STALE_RECORDS = ("benchmark.json", "correctness.json")  # a pair's records from an earlier run, removed before it runs
CORRECTNESS_VERDICTS = {"pass": "correct", "fail": "incorrect"}  # the others keep their names
BENCHMARK_VERDICTS = {"measured": "correct", "incorrect": "incorrect", "invalid": "invalid"}
# A pair's whole evaluation, past which its worker (--gpus, --ray) is stopped and the pair costs its row: a
# worker stuck outside every child's no-progress watch. The slowest pair seen took 134 s (H100, KernelBench).
DEFAULT_PAIR_TIMEOUT_S = 1800.0
LOST_VERDICTS = {"timeout": "solution_error", "worker_died": "internal_error"}  # lost_entry
# Verdicts that blame no solution: a resumed run evaluates such a pair again (seconds, mostly), since a newer
# version of these tools, a freed GPU or a mended problem file may answer it.
RETRIED_VERDICTS = ("usage_error", "environment_error", "internal_error", "missing")


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
    gpus: str | None = None  # "all" or a count: one worker process per GPU (suite/gpu_pool.py); None: this process
    ray: str | None = None  # a Ray cluster's address, or "local" (suite/ray_pool.py)
    pair_timeout_s: float = DEFAULT_PAIR_TIMEOUT_S  # for --gpus and --ray (DEFAULT_PAIR_TIMEOUT_S)

    def options(self) -> dict[str, Any]:
        """What an entry's verdict depends on besides the two files (part of its key)."""
        return {"kernelbench_tolerances": self.kernelbench_tolerances, "seeds": self.seeds,
                "baselines": self.baselines, "compile_modes": self.compile_modes, "profile": self.profile}


def device_identity(device: str) -> dict[str, Any]:
    """What the entries' figures depend on besides the files: the device type, on a GPU its model and
    driver (nvidia-smi: the GPU this process sees first), and the torch and triton versions. Part of
    each key and of eval.md."""
    return {"type": device, **machine_key(visible_gpu(probe_nvidia_smi().gpus) if device == "cuda" else None)}


def held_gpu(device: str) -> dict[str, Any] | None:
    """The GPU this process holds, as its entries name it: nvidia-smi's index, the model, the board's
    UUID and the host; None where it holds none (--device cpu without CUDA_VISIBLE_DEVICES, or an empty one)."""
    if device != "cuda" and not os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return None
    gpu = visible_gpu(probe_nvidia_smi().gpus)
    if gpu is None:
        return None
    return {"index": gpu.index, "name": gpu.name, "uuid": gpu.uuid, "host": socket.gethostname()}


def entry_key(pair: Pair, request: EvalRequest, device: dict[str, Any]) -> str:
    """sha256 of the problem's and the solution's bytes, the options and the device's identity."""
    parts = {"problem": file_sha256(pair.problem), "device": device, "options": request.options(),
             "solution": file_sha256(pair.solution) if pair.solution is not None else None}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def reusable_entry(folder: Path, pair: Pair, request: EvalRequest,
                   devices: list[dict[str, Any]] | None) -> EvalEntry | None:
    """The entry an earlier run wrote for these files and options on one of `devices`, or None (the pair runs).

    An entry whose verdict blames no solution (RETRIED_VERDICTS) is never reused: the pair runs again.

    `devices` are the identities this run's workers have; None where they are known only once a pair
    runs (Ray): then the entry's own device counts, if it is of the requested type and its key holds.
    """
    try:
        payload = read_json(folder / ENTRY_FILE)
        entry = None if payload is None else EvalEntry.from_dict(payload, str(folder / ENTRY_FILE))
    except KernelOptError:
        return None  # unreadable: run it again
    if entry is None or not entry.key or entry.verdict in RETRIED_VERDICTS:
        return None
    if devices is None:
        candidates = [entry.device] if entry.device and entry.device.get("type") == request_type(request) else []
    else:
        candidates = devices
    return entry if any(entry.key == entry_key(pair, request, device) for device in candidates) else None


def request_type(request: EvalRequest) -> str:
    """The device type a pair's entry must have been made on to be reused: cpu only when asked for."""
    return "cpu" if request.device == "cpu" else "cuda"


def new_entry(pair: Pair, key: str = "") -> EvalEntry:
    """A pair's entry before anything ran: "missing" until the check says otherwise."""
    return EvalEntry(name=pair.name, problem=str(pair.problem), verdict="missing", key=key,
                     solution=None if pair.solution is None else str(pair.solution), source=pair.source,
                     run_version=pair.run_version, bottleneck=pair.bottleneck, message=pair.note)


def evaluate_pair(pair: Pair, request: EvalRequest, device: str) -> EvalEntry:
    """Check, then time one pair in this process's device and GPU; its entry (the caller writes it).

    Its key and its GPU are this process's (device_identity, held_gpu): a worker of --gpus or a
    Ray task names the GPU it holds, never the driver's.

    Kept whole: one pair's steps in order, each turning a failure into the entry's verdict, so
    that nothing a pair does (a refused file, a crash, a bug here) stops the suite.
    """
    started = time.time()
    folder = request.output_dir / PAIRS_DIR / pair.name
    for stale in STALE_RECORDS:
        (folder / stale).unlink(missing_ok=True)
    identity = device_identity(device)
    entry = new_entry(pair, entry_key(pair, request, identity))
    entry.device, entry.gpu = identity, held_gpu(device) if pair.solution is not None else None
    try:
        if pair.solution is not None:
            _check_and_time(entry, pair, request, device, folder)
    except KernelOptError as error:
        entry.verdict, entry.error_kind, entry.message = failure_verdict(error.exit_code), error.kind, error.message
    except Exception as error:  # a bug in the tools must not stop the suite: the entry says what happened
        entry.verdict, entry.error_kind, entry.message = "internal_error", "internal_error", one_line(error)
    entry.wall_s = round(time.time() - started, 1)
    return entry


def lost_entry(pair: Pair, device: dict[str, Any], gpu: dict[str, Any] | None, elapsed_s: float, kind: str,
               message: str, key: str = "") -> EvalEntry:
    """The row of a pair whose worker (--gpus, --ray) ran past the pair timeout (`kind` "timeout") or died
    ("worker_died"): the pair's own verdict never came.

    A timeout is the solution's failure, as a child's hang is, and keeps its key (a later run reuses
    it, --force runs it again); a worker that died is the tools' failure and gets no key, so the next
    run tries the pair again.
    """
    entry = new_entry(pair, key)
    entry.verdict = LOST_VERDICTS[kind]
    entry.error_kind, entry.message = kind, message
    entry.device, entry.gpu, entry.wall_s = device, gpu, round(elapsed_s, 1)
    return entry


def write_entry(output_dir: Path, entry: EvalEntry) -> Path:
    """OUT/pairs/NAME/entry.json, written whole or not at all (the driver's, and only its, write)."""
    return write_json_atomic(output_dir / PAIRS_DIR / entry.name / ENTRY_FILE, entry.to_dict())


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
    timed_on = benchmark.gpu.uuid
    if timed_on and entry.gpu and entry.gpu.get("uuid") not in (None, timed_on):
        entry.notes.append(f"timed on the board {timed_on}, not the one this worker holds ({entry.gpu['uuid']})")
    if request.profile and entry.correct:
        _profile(entry, pair, folder)


def _read_correctness(entry: EvalEntry, report: CorrectnessReport) -> None:
    entry.verdict = CORRECTNESS_VERDICTS.get(report.verdict, report.verdict)
    launches = launch_check_of(report)
    if launches is not None and launches.profiled and launches.own_kernels is not None:
        entry.library_only = launches.own_kernels == 0  # what ran on the GPU outranks what the source defines
    entry.precision_downgrade = bool(report.precision_downgrades)
    entry.kernelbench_would_pass = kernelbench_would_pass(report)
    if report.error is not None:
        entry.error_kind, entry.message = report.error.kind, report.error.message
    elif not report.passed:
        failures = correctness_failures(report)
        entry.message = failures[0] if failures else "not every planned case ran"


def _read_benchmark(entry: EvalEntry, report: BenchmarkReport) -> None:
    entry.verdict = BENCHMARK_VERDICTS.get(report.verdict, report.verdict)
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
        entry.speedup_vs_eager = report.speedup_vs_eager  # against the solution in eager's pairs, where it was paired
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
