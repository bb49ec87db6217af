"""`kernel-opt eval` as a library call: the pairs, the entries an earlier run left, the rest evaluated, the report.

`run_eval` is the driver. It finds the pairs, reuses every entry an earlier run wrote under the
same key (suite/runner.py: both files, the options, the machine), and hands the rest to a pool:
this process, one pair after another (the default); one worker process per GPU of this host
(`--gpus`, suite/gpu_pool.py); or Ray tasks on a cluster (`--ray`, suite/ray_pool.py). Whatever
the pool, each pair is evaluated alone on its device by `evaluate_pair`, and the driver alone
writes its entry (OUT/pairs/NAME/entry.json, atomically) as it arrives, so a run stopped at any
point keeps every finished pair and resumes from there. The entries are listed in the pairs'
order whatever order they finished in; the report says how the run was spread and what that bought.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kernel_opt.core.errors import UsageError
from kernel_opt.core.records import now_iso
from kernel_opt.env.device import resolve_device
from kernel_opt.suite.gpu_pool import LocalWorkers, worker_slots
from kernel_opt.suite.pairs import Pair, find_pairs
from kernel_opt.suite.records import ENTRY_FILE, EvalEntry, EvalExecution, EvalReport, summarize, summarize_by_gpu_model
from kernel_opt.suite.runner import (
    PAIRS_DIR,
    EvalRequest,
    device_identity,
    evaluate_pair,
    reusable_entry,
    write_entry,
)

Progress = Callable[[int, int, EvalEntry, bool], None]  # (done, total, entry, reused from an earlier run)


class Pool(Protocol):
    """Where pairs are evaluated: `run` calls `finished` once per pair, with its entry, as each ends."""

    sequential: bool  # True: pairs are handed over one at a time, in order (this process)
    workers: int
    mode: str  # EvalExecution.mode

    def devices(self) -> list[dict[str, Any]] | None: ...  # the identities its entries are keyed under; None: unknown

    def run(self, pairs: list[Pair], finished: Callable[[EvalEntry], None]) -> None: ...


@dataclass
class OneProcess:
    """The default pool: this process evaluates one pair after another."""

    request: EvalRequest
    device: str
    sequential: bool = True
    workers: int = 1
    mode: str = "one process"

    def devices(self) -> list[dict[str, Any]]:
        return [device_identity(self.device)]

    def run(self, pairs: list[Pair], finished: Callable[[EvalEntry], None]) -> None:
        for pair in pairs:
            finished(evaluate_pair(pair, self.request, self.device))


def make_pool(request: EvalRequest, device: str) -> Pool:
    """The pool the request asks for: --ray, --gpus, or this process."""
    if request.gpus and request.ray:
        raise UsageError("--gpus and --ray are two ways of spreading the run: give one",
                         hint="--gpus for the GPUs of this host, --ray for a cluster (or --ray local)")
    if request.ray:
        from kernel_opt.suite.ray_pool import RayTasks

        return RayTasks(request.ray, request, device)
    if request.gpus:
        return LocalWorkers(worker_slots(request.gpus, device), request, device)
    return OneProcess(request, device)


def run_eval(request: EvalRequest, command: str, progress: Progress | None = None,
             pool: Pool | None = None) -> EvalReport:
    """Evaluate every pair (reusing entries of an earlier run with the same key) and return the report.

    Writes nothing but the pair folders; the caller writes eval.md/json/png (suite/report.py).
    `pool` replaces the one the request asks for (make_pool), e.g. to stand in for GPUs in a test.
    """
    started = time.time()
    pairs, notes = _select_pairs(request)
    device = resolve_device(request.device)
    pool = pool or make_pool(request, device)
    devices = pool.devices()
    entries: dict[str, EvalEntry] = {}
    ran: list[EvalEntry] = []

    def finished(entry: EvalEntry, reused: bool = False) -> None:
        if not reused:
            write_entry(request.output_dir, entry)
            ran.append(entry)
        entries[entry.name] = entry
        if progress is not None:
            progress(len(entries), len(pairs), entry, reused)

    waiting: list[Pair] = []
    for pair in pairs:
        reused = None if request.force else reusable_entry(request.output_dir / PAIRS_DIR / pair.name, pair,
                                                            request, devices)
        if reused is not None:
            finished(reused, reused=True)
            continue
        (request.output_dir / PAIRS_DIR / pair.name / ENTRY_FILE).unlink(missing_ok=True)
        if pair.solution is None and not pool.sequential:
            finished(evaluate_pair(pair, request, device))  # nothing to run: no worker needed
        else:
            waiting.append(pair)
        if pool.sequential:
            pool.run(waiting, finished)
            waiting = []
    pool.run(waiting, finished)
    ordered = [entries[pair.name] for pair in pairs]
    return _report(request, command, ordered, notes + _device_notes(device, ordered),
                   _execution(pool, ran, len(pairs) - len(ran), time.time() - started),
                   run_device(ordered, devices or [device_identity(device)]))


def _select_pairs(request: EvalRequest) -> tuple[list[Pair], list[str]]:
    if request.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    if request.timeout_s is not None and request.timeout_s <= 0:
        raise UsageError("--timeout must be positive")
    if request.pair_timeout_s <= 0:
        raise UsageError("--pair-timeout must be positive")
    pairs, notes = find_pairs(request.problems_dir, request.solutions_dir)
    if request.only:
        unknown = sorted(set(request.only) - {pair.name for pair in pairs})
        if unknown:
            raise UsageError(f"--only names no problem of {request.problems_dir}: {', '.join(unknown)}",
                             hint=f"the problems: {', '.join(pair.name for pair in pairs)}")
        pairs = [pair for pair in pairs if pair.name in request.only]
    return pairs, notes


def _device_notes(device: str, entries: list[EvalEntry]) -> list[str]:
    notes = []
    if device != "cuda":
        notes.append("no GPU: correctness only (Triton under its interpreter, CUDA refused); nothing was timed, so "
                     "fast_p and speedups are not available")
    models = sorted({entry.gpu_model for entry in entries if entry.gpu_model})
    if len(models) > 1:
        notes.append(f"the pairs ran on {len(models)} GPU models ({', '.join(models)}): each pair's speedups are "
                     "against baselines timed on its own GPU, but the summary's fast_p and geometric mean mix the "
                     "models; \"By GPU model\" gives each model's figures apart")
    return notes


def run_device(entries: list[EvalEntry], fallback: list[dict[str, Any]]) -> dict[str, Any]:
    """The report's device: the one machine identity the entries were made on, or all of them joined with " + "."""
    identities: list[dict[str, Any]] = []
    for identity in [entry.device for entry in entries if entry.device and entry.solution] or fallback:
        if identity not in identities:
            identities.append(identity)
    if len(identities) == 1:
        return identities[0]
    joined = {}
    for name in ("type", "gpu", "driver", "torch", "triton"):
        values = sorted({str(identity.get(name)) for identity in identities if identity.get(name)})
        joined[name] = " + ".join(values) if values else None
    return joined


def _execution(pool: Pool, ran: list[EvalEntry], reused: int, wall_s: float) -> EvalExecution:
    gpus: dict[tuple, dict[str, Any]] = {}
    for entry in ran:
        if entry.gpu:
            where = (entry.gpu.get("host"), entry.gpu.get("index"), entry.gpu.get("uuid"))
            used = gpus.setdefault(where, {**entry.gpu, "pairs": 0, "pair_s": 0.0})
            used["pairs"] += 1
            used["pair_s"] = round(used["pair_s"] + entry.wall_s, 1)
    return EvalExecution(mode=pool.mode, workers=pool.workers, wall_s=round(wall_s, 1), pairs_run=len(ran),
                         pairs_reused=reused, pair_s=round(sum(entry.wall_s for entry in ran), 1),
                         gpus=sorted(gpus.values(), key=lambda gpu: (str(gpu.get("host")), gpu.get("index") or 0)))


def _report(request: EvalRequest, command: str, entries: list[EvalEntry], notes: list[str],
            execution: EvalExecution, device: dict[str, Any]) -> EvalReport:
    return EvalReport(
        problems_dir=str(request.problems_dir), solutions_dir=str(request.solutions_dir), command=command,
        created_at=now_iso(), device=device, options=request.options(), entries=entries,
        summary=summarize(entries), notes=notes, by_gpu_model=summarize_by_gpu_model(entries), execution=execution)
