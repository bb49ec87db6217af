"""`eval.py --ray ADDRESS|local`: the pairs as Ray tasks, one GPU each, on a cluster that is already running.

Ray places the tasks; nothing here schedules hosts. Each pair is one task asking for one GPU
(`num_gpus=1`; none with --device cpu), which Ray runs on a node with a GPU free and shows that GPU
alone (CUDA_VISIBLE_DEVICES), so no two timed pairs share a GPU. The task carries the pair's two
files and brings its records back (suite/shipped_pair.py); the driver writes them into the output
folder with the entry, as it does for every pool. The package itself travels with the job (Ray's
runtime_env `py_modules`), so the cluster runs the driver's kernel_opt; its nodes need torch and
triton (and nvcc for CUDA solutions) as a GPU machine of a one-host run does.

A task is never retried (`max_retries=0`): one that dies costs its pair one row (internal_error,
tried again by the next run); one still running past the pair timeout, counted from when it was
submitted, is cancelled (KeyboardInterrupt in the task, which ends the solution's child, then a
forced cancel) and costs its row as a timeout. At most as many tasks are in flight as the cluster
has GPUs (CPUs with --device cpu), so a task's clock starts near when it starts to run.

`local` starts a Ray instance on this machine for the run (every GPU of the host, as `--gpus all`
uses them) and stops it after; an ADDRESS (`auto`, `HOST:6379`, `ray://HOST:10001`) joins a running
cluster and leaves it running. A HOST:PORT that nothing answers is refused at once (Ray itself keeps
trying to reach it for minutes).
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernel_opt.core.dependencies import require
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.run.events import one_line
from kernel_opt.run.runner import STOP_GRACE_S
from kernel_opt.suite.pairs import Pair
from kernel_opt.suite.records import EvalEntry
from kernel_opt.suite.runner import EvalRequest, entry_key, evaluate_pair, lost_entry
from kernel_opt.suite.shipped_pair import Evaluate, PairResult, evaluate_shipped, land, ship

Finished = Callable[[EvalEntry], None]
REACH_TIMEOUT_S = 10.0


def endpoint(address: str) -> tuple[str, int] | None:
    """(host, port) of a `HOST:PORT` or `ray://HOST:PORT` address; None where Ray finds the cluster (`auto`)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    return (host.strip("[]"), int(port)) if host and port.isdigit() else None


def require_reachable(address: str, timeout_s: float = REACH_TIMEOUT_S) -> None:
    """Refuse an address whose port does not accept a connection: exit 4 now, not after Ray's minutes of retries."""
    target = endpoint(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=timeout_s).close()
    except OSError as error:
        raise EnvironmentFault(f"--ray {address}: nothing answers at {target[0]}:{target[1]} ({one_line(error)})",
                               hint="start the cluster's head there first (`ray start --head`), check the "
                                    "address and that this machine can reach it, or use --ray local") from None


def _task(shipped: Any, request: EvalRequest, device: str, evaluate: Evaluate) -> PairResult:
    """What runs on the Ray worker (a module-level function, so the task refers to it by name)."""
    return evaluate_shipped(shipped, request, device, evaluate)


@dataclass
class RayTasks:
    """The pool behind `--ray`: Ray tasks on a cluster (or a local instance), as many in flight as it has GPUs."""

    address: str
    request: EvalRequest
    device: str
    evaluate: Evaluate = evaluate_pair
    sequential: bool = False
    mode: str = "ray"
    workers: int = 0  # the tasks in flight at most, once connected
    _ray: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._ray = require("ray", "--ray")  # exit 4 with the install line (core/dependencies.py)

    def devices(self) -> None:
        """Unknown until a task runs: an earlier entry is reused on the machine its own record names."""
        return None

    def run(self, pairs: list[Pair], finished: Finished) -> None:
        """Submit the pairs, collect each task's records as it ends, and leave the cluster as it was."""
        if not pairs:
            return
        self._connect()
        try:
            self._run(pairs, finished)
        finally:
            self._ray.shutdown()  # stops a local instance; disconnects from a cluster, which keeps running

    def _connect(self) -> None:
        import kernel_opt

        runtime_env = {"py_modules": [kernel_opt], "env_vars": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}}
        options: dict[str, Any] = {"runtime_env": runtime_env, "log_to_driver": False}
        if self.address != "local":
            require_reachable(self.address)
        try:
            if self.address == "local":
                self._ray.init(include_dashboard=False, **options)
            else:
                self._ray.init(address=self.address, **options)
        except (ConnectionError, RuntimeError, ValueError) as error:
            raise EnvironmentFault(f"--ray {self.address}: cannot start or reach Ray ({one_line(error)})",
                                   hint="start a cluster first (`ray start --head` on one node), or use --ray local"
                                   ) from None
        resources = self._ray.cluster_resources()
        if self.device == "cuda":
            self.workers = int(resources.get("GPU", 0))
            if self.workers < 1:
                self._ray.shutdown()
                raise EnvironmentFault(f"--ray {self.address}: the cluster has no GPU to give a task",
                                       hint="start its nodes where the GPUs are (`ray start --num-gpus N`), or give "
                                            "--device cpu")
        else:
            self.workers = max(1, int(resources.get("CPU", 1)))

    def _run(self, pairs: list[Pair], finished: Finished) -> None:
        remote = self._ray.remote(num_gpus=1 if self.device == "cuda" else 0, max_retries=0)(_task)
        queue = deque(pairs)
        in_flight: dict[Any, tuple[Pair, float]] = {}
        limit = self.request.pair_timeout_s
        while queue or in_flight:
            while queue and len(in_flight) < self.workers:
                pair = queue.popleft()
                reference = remote.remote(ship(pair), self.request, self.device, self.evaluate)
                in_flight[reference] = (pair, time.monotonic())
            oldest = min(started for _, started in in_flight.values())
            ready, _ = self._ray.wait(list(in_flight), num_returns=1,
                                      timeout=max(0.0, oldest + limit - time.monotonic()))
            for reference in ready:
                pair, started = in_flight.pop(reference)
                finished(self._settle(reference, pair, started))
            for reference, (pair, started) in list(in_flight.items()):
                if time.monotonic() - started >= limit:
                    del in_flight[reference]
                    self._cancel(reference)
                    where = {"type": self.device}  # which node and GPU it held, the cancelled task cannot say
                    finished(lost_entry(pair, where, None, time.monotonic() - started, kind="timeout",
                                        key=entry_key(pair, self.request, where),
                                        message=f"the Ray task ran past the pair timeout ({limit:g} s) and was "
                                                "cancelled"))

    def _settle(self, reference: Any, pair: Pair, started: float) -> EvalEntry:
        """The task's records landed in the output folder, and its entry; a row of its own if the task died."""
        try:
            result = self._ray.get(reference)
        except Exception as error:  # the worker died, or the task raised: this pair alone is lost
            return lost_entry(pair, {"type": self.device}, None, time.monotonic() - started, kind="worker_died",
                              message=f"the Ray task failed ({one_line(error)}): no verdict; the next run tries it "
                                      "again")
        return land(result, self.request.output_dir)

    def _cancel(self, reference: Any) -> None:
        """Cancel a task that ran too long: first as an interrupt (its child process is killed on the way out)."""
        self._ray.cancel(reference, force=False)
        done, _ = self._ray.wait([reference], timeout=STOP_GRACE_S)
        if not done:
            self._ray.cancel(reference, force=True)
