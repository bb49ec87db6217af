"""`eval.py --gpus N|all`: one worker process per GPU of this host, each evaluating one pair at a time.

Each worker is a fresh Python process (multiprocessing's spawn: nothing of the driver's state, no
CUDA context) that sees one GPU: CUDA_VISIBLE_DEVICES=<nvidia-smi's index of it> with
CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA's device 0 is the board nvidia-smi names. A worker takes a
pair, runs `evaluate_pair` (correctness, then the benchmark, in the same child processes as a
one-GPU run), sends the entry back and takes the next, so no two timed pairs ever share a GPU.
Only the driver writes the entries (suite/driver.py); a worker writes nothing but its pair's folder.

A worker that dies costs its current pair one row (internal_error, retried by the next run) and
is replaced by a fresh one on the same GPU; a pair that runs past the pair timeout has its worker
stopped (SIGTERM, which ends the solution's child process group too, then SIGKILL) and costs
its row (a timeout, as a hang is). The run goes on either way.

Which GPUs: those nvidia-smi lists, narrowed by CUDA_VISIBLE_DEVICES where it is set. With
--device cpu a worker holds the GPU of its number where the host has one, and none past that, so
`--gpus N --device cpu` checks N pairs at once on a machine without a GPU.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from kernel_opt.core.errors import EnvironmentFault, UsageError
from kernel_opt.env.probe_records import SmiGpu
from kernel_opt.env.probes import probe_nvidia_smi
from kernel_opt.measure.reference_cache import machine_key
from kernel_opt.run.runner import STOP_GRACE_S
from kernel_opt.suite.pairs import Pair
from kernel_opt.suite.records import EvalEntry
from kernel_opt.suite.runner import EvalRequest, entry_key, evaluate_pair, lost_entry

Evaluate = Callable[[Pair, EvalRequest, str], EvalEntry]  # evaluate_pair, or a stand-in in the tests
Finished = Callable[[EvalEntry], None]


@dataclass(frozen=True)
class WorkerSlot:
    """One worker's place: its number and the GPU it holds (nvidia-smi's index, model, board, driver), if any."""

    number: int
    gpu: SmiGpu | None = None

    def label(self) -> str:
        return f"GPU {self.gpu.index}" if self.gpu is not None else f"worker {self.number}"

    def environment(self) -> dict[str, str]:
        """What the worker's process (and every child it starts) sees: its GPU alone, in nvidia-smi's order."""
        if self.gpu is None:
            return {}
        return {"CUDA_VISIBLE_DEVICES": str(self.gpu.index), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}

    def gpu_record(self) -> dict[str, Any] | None:
        """The GPU as an entry names it (runner.held_gpu's fields)."""
        if self.gpu is None:
            return None
        return {"index": self.gpu.index, "name": self.gpu.name, "uuid": self.gpu.uuid, "host": socket.gethostname()}

    def identity(self, device: str) -> dict[str, Any]:
        """The identity its entries' keys hold (runner.device_identity, as the worker will compute it)."""
        return {"type": device, **machine_key(self.gpu if device == "cuda" else None)}


def visible_gpus() -> list[SmiGpu]:
    """The GPUs nvidia-smi lists, narrowed and ordered by CUDA_VISIBLE_DEVICES (indices or GPU-... UUIDs) if set."""
    gpus = probe_nvidia_smi().gpus
    wanted = os.environ.get("CUDA_VISIBLE_DEVICES")
    if wanted is None:
        return gpus
    chosen = []
    for item in (part.strip() for part in wanted.split(",")):
        match = next((gpu for gpu in gpus if item in (str(gpu.index), gpu.uuid)), None)
        if match is None:
            break  # CUDA stops at the first entry it cannot use, and so do we
        chosen.append(match)
    return chosen


def worker_slots(gpus: str, device: str) -> list[WorkerSlot]:
    """The workers `--gpus` asks for: "all" (one per visible GPU) or a count.

    Raises UsageError for a count that is not a positive integer, and EnvironmentFault (exit 4)
    where this host has fewer GPUs than asked for (with --device cpu a count needs none).
    """
    found = visible_gpus()
    if gpus == "all":
        if not found:
            raise EnvironmentFault("--gpus all: nvidia-smi lists no GPU here (or CUDA_VISIBLE_DEVICES hides them all)",
                                   hint="without a GPU, --gpus N --device cpu checks N pairs at once")
        count = len(found)
    else:
        if not gpus.isdigit() or int(gpus) < 1:
            raise UsageError(f"--gpus takes a positive count or 'all', not {gpus!r}")
        count = int(gpus)
        if count > len(found) and device == "cuda":
            raise EnvironmentFault(f"--gpus {count}: this host shows {len(found)} GPU(s) to nvidia-smi"
                                   f"{' within CUDA_VISIBLE_DEVICES' if 'CUDA_VISIBLE_DEVICES' in os.environ else ''}",
                                   hint="--gpus all takes every GPU there is")
    return [WorkerSlot(number, found[number] if number < len(found) else None) for number in range(count)]


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds through run_worker's finally, which kills the solution's child


def worker_main(slot: WorkerSlot, request: EvalRequest, device: str, evaluate: Evaluate,
                connection: Connection) -> None:
    """A worker's life: take a pair, evaluate it on this slot's GPU, send its entry back; None ends it."""
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the driver, which stops its workers (SIGTERM)
    os.environ.update(slot.environment())  # before anything starts CUDA: the worker itself never does
    while True:
        try:
            pair = connection.recv()
        except EOFError:  # the driver is gone
            return
        if pair is None:
            return
        connection.send(evaluate(pair, request, device).to_dict())


@dataclass
class _Worker:
    slot: WorkerSlot
    process: Any  # multiprocessing's SpawnProcess
    connection: Connection
    pair: Pair | None = None
    started: float = 0.0  # time.monotonic() when it took its pair


@dataclass
class LocalWorkers:
    """The pool behind `--gpus`: one worker process per slot, pairs handed out as workers come free."""

    slots: list[WorkerSlot]
    request: EvalRequest
    device: str
    evaluate: Evaluate = evaluate_pair
    sequential: bool = False  # the driver hands it every pair at once
    mode: str = "local workers"
    _context: Any = field(default_factory=lambda: multiprocessing.get_context("spawn"))

    @property
    def workers(self) -> int:
        return len(self.slots)

    def devices(self) -> list[dict[str, Any]]:
        """The identities this pool's entries are keyed under: an earlier entry under one of them is reused."""
        unique: list[dict[str, Any]] = []
        for identity in (slot.identity(self.device) for slot in self.slots):
            if identity not in unique:
                unique.append(identity)
        return unique

    def run(self, pairs: list[Pair], finished: Finished) -> None:
        """Evaluate `pairs`, calling `finished` with each entry as it comes; every pair gets exactly one."""
        queue = deque(pairs)
        workers = [self._start(slot) for slot in self.slots[:len(queue)]]
        try:
            while any(worker.pair is not None for worker in workers) or queue:
                for index, worker in enumerate(workers):
                    if worker.pair is None and queue:
                        workers[index] = self._hand(worker, queue.popleft())
                self._collect(workers, finished, bool(queue))
        finally:
            for worker in workers:
                self._stop(worker, politely=True)

    def _start(self, slot: WorkerSlot) -> _Worker:
        ours, theirs = self._context.Pipe()
        process = self._context.Process(target=worker_main, name=f"kernel-opt eval {slot.label()}",
                                        args=(slot, self.request, self.device, self.evaluate, theirs), daemon=True)
        process.start()
        theirs.close()
        return _Worker(slot, process, ours)

    def _hand(self, worker: _Worker, pair: Pair) -> _Worker:
        if not worker.process.is_alive():
            self._stop(worker)
            worker = self._start(worker.slot)
        worker.pair, worker.started = pair, time.monotonic()
        try:
            worker.connection.send(pair)
        except OSError:  # it died just now: _collect finds it dead and gives the pair its row
            pass
        return worker

    def _collect(self, workers: list[_Worker], finished: Finished, more_to_do: bool) -> None:
        """Wait for a busy worker to answer, die or run out of time, and settle each that did."""
        busy = [worker for worker in workers if worker.pair is not None]
        deadline = min(worker.started for worker in busy) + self.request.pair_timeout_s
        wait([handle for worker in busy for handle in (worker.connection, worker.process.sentinel)],
             timeout=max(0.0, deadline - time.monotonic()))
        for index, worker in enumerate(workers):
            if worker.pair is None:
                continue
            entry, lost = self._answer(worker)
            if entry is None:
                continue
            worker.pair = None
            if lost:  # a fresh process takes its place: nothing of the lost one's state carries over
                self._stop(worker)
                if more_to_do:
                    workers[index] = self._start(worker.slot)
            finished(entry)

    def _answer(self, worker: _Worker) -> tuple[EvalEntry | None, bool]:
        """The worker's entry for its pair if it sent one; a row for its pair if it died or ran out of time
        (then True: the worker is lost); (None, False) while it is still at work."""
        elapsed = time.monotonic() - worker.started
        if worker.connection.poll():
            try:
                return EvalEntry.from_dict(worker.connection.recv()), False
            except (EOFError, OSError):
                pass  # it died before answering
        elif worker.process.is_alive() and elapsed < self.request.pair_timeout_s:
            return None, False
        pair, slot = worker.pair, worker.slot
        identity = slot.identity(self.device)
        if worker.process.is_alive():
            return lost_entry(pair, identity, slot.gpu_record(), elapsed, key=entry_key(pair, self.request, identity),
                              kind="timeout", message=f"the pair ran past the pair timeout "
                              f"({self.request.pair_timeout_s:g} s) on {slot.label()}: its worker was stopped"), True
        worker.process.join(STOP_GRACE_S)
        return lost_entry(pair, identity, slot.gpu_record(), elapsed, kind="worker_died",
                          message=f"the evaluation worker on {slot.label()} died (exit code {worker.process.exitcode}) "
                                  "while on this pair: no verdict; the next run tries it again"), True

    def _stop(self, worker: _Worker, politely: bool = False) -> None:
        """End a worker: told to leave where it is idle, else SIGTERM (its solution's child goes too), then SIGKILL."""
        process = worker.process
        if politely and worker.pair is None and process.is_alive():
            try:
                worker.connection.send(None)
            except OSError:
                pass
            process.join(STOP_GRACE_S)
        if process.is_alive():
            process.terminate()
            process.join(STOP_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()
        worker.connection.close()
