"""Catch a solution that replaces the timing and checking primitives the harness relies on.

A solution runs in the same Python process as the harness's timers and comparisons, so it can
monkeypatch them: make `torch.cuda.Event.elapsed_time` report a tiny time, make
`torch.cuda.synchronize` run work the call skipped (a lazy output), push a torch function mode
that rewrites what the comparison reads, or turn TF32 on for the whole process so the reference
it is judged by gets as coarse as itself. The child snapshots the identity of every primitive
below (and the value of every setting) before it loads the solution and checks them after
loading and after every call or timing phase; any change is the solution's fault (exit 3, kind
`tampering`), named.

Identities are read with `inspect.getattr_static`, so a property or a classmethod is compared
as the object stored on its class, not as a fresh bound method.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable

from kernel_opt.core.errors import SolutionError

# (module, attribute path): what the timers (measure/timing/), the checks (check/compare.py,
# check/tolerance.py, measure/input_pool.py) and the launch check (check/integrity/launch_profile.py) call.
GUARDED_PRIMITIVES: tuple[tuple[str, str], ...] = (
    ("time", "perf_counter"), ("time", "perf_counter_ns"), ("time", "monotonic"), ("time", "monotonic_ns"),
    ("time", "time"), ("time", "sleep"),
    ("torch", "cuda"), ("torch", "cuda.Event"), ("torch", "cuda.Event.record"), ("torch", "cuda.Event.elapsed_time"),
    ("torch", "cuda.Event.synchronize"), ("torch", "cuda.Event.query"), ("torch", "cuda.Event.wait"),
    ("torch", "cuda.synchronize"), ("torch", "cuda.current_stream"), ("torch", "cuda.default_stream"),
    ("torch", "cuda.Stream"), ("torch", "cuda.Stream.synchronize"), ("torch", "cuda.Stream.wait_stream"),
    ("torch", "cuda.stream"), ("torch", "cuda.graph"), ("torch", "cuda.CUDAGraph"),
    ("torch", "cuda.CUDAGraph.replay"), ("torch", "cuda.CUDAGraph.capture_begin"),
    ("torch", "cuda.CUDAGraph.capture_end"), ("torch", "cuda._sleep"), ("torch", "cuda.is_available"),
    ("torch", "profiler.profile"),
    ("torch", "allclose"), ("torch", "isclose"), ("torch", "equal"), ("torch", "isfinite"), ("torch", "isnan"),
    ("torch", "nan_to_num"), ("torch", "where"), ("torch", "abs"), ("torch", "linalg.vector_norm"),
    ("torch", "testing.assert_close"), ("torch", "empty"), ("torch", "empty_like"),
    ("torch", "Tensor"), ("torch", "Tensor.__torch_function__"), ("torch", "Tensor.__torch_dispatch__"),
    ("torch", "Tensor.fill_"), ("torch", "Tensor.copy_"), ("torch", "Tensor.clone"), ("torch", "Tensor.to"),
    ("torch", "Tensor.double"), ("torch", "Tensor.float"), ("torch", "Tensor.abs"), ("torch", "Tensor.item"),
    ("torch", "Tensor.tolist"), ("torch", "Tensor.sum"), ("torch", "Tensor.max"), ("torch", "Tensor.any"),
    ("torch", "Tensor.all"), ("torch", "Tensor.nonzero"), ("torch", "Tensor.__sub__"), ("torch", "Tensor.__getitem__"),
    ("torch", "Tensor.__ne__"), ("torch", "Tensor.__eq__"), ("torch", "Tensor.__gt__"), ("torch", "Tensor.__le__"),
    ("torch", "Tensor.__and__"), ("torch", "Tensor.__invert__"), ("torch", "Tensor.__truediv__"),
    ("torch", "Tensor.data_ptr"), ("torch", "Tensor._version"),
)
# Hooks that see every torch call without replacing anything: a torch function or dispatch mode
# pushed and left on the stack. Each is read by a function that returns the stack's depth.
MODE_STACKS: tuple[tuple[str, str], ...] = (
    ("torch function mode", "_len_torch_function_stack"),
    ("torch dispatch mode", "_len_torch_dispatch_stack"),
)
# Precision settings the harness fixes before loading the solution (solution.contract.set_matmul_precision):
# a solution that turns TF32 on for the whole process also loosens the reference it is judged by.
PRECISION_SETTINGS: tuple[tuple[str, str], ...] = (
    ("torch.backends.cuda.matmul.allow_tf32", "backends.cuda.matmul.allow_tf32"),
    ("torch.backends.cudnn.allow_tf32", "backends.cudnn.allow_tf32"),
    ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
     "backends.cuda.matmul.allow_fp16_reduced_precision_reduction"),
    ("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
     "backends.cuda.matmul.allow_bf16_reduced_precision_reduction"),
)
MISSING = object()  # where a guarded name does not exist (or no longer does)


def _resolve(module_name: str, path: str) -> object:
    """The object stored at module.path, read without running properties or binding methods."""
    try:
        target: object = importlib.import_module(module_name)
    except ImportError:
        return MISSING
    for part in path.split("."):
        try:
            target = inspect.getattr_static(target, part)
        except AttributeError:
            return MISSING
    return target


def _values() -> dict[str, object]:
    """The mode stacks' depths and the precision settings: compared by value."""
    import torch

    values: dict[str, object] = {name: getattr(torch._C, reader)() for name, reader in MODE_STACKS
                                 if hasattr(torch._C, reader)}
    for name, path in PRECISION_SETTINGS:
        target: object = torch
        for part in path.split("."):
            target = getattr(target, part, MISSING)
        values[name] = target
    values["torch.float32_matmul_precision"] = torch.get_float32_matmul_precision()
    return values


def snapshot(primitives: Iterable[tuple[str, str]] = GUARDED_PRIMITIVES) -> dict[str, object]:
    """Each guarded primitive's object (compared by identity later), each mode stack's depth and each setting."""
    taken: dict[str, object] = {f"{module}.{path}": _resolve(module, path) for module, path in primitives}
    return {**taken, **_values()}


def replaced(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """The names whose object (or stack depth) differs between two snapshots, in the snapshot's order.

    A replaced class or module stands for its members: torch.cuda.Event, not also its methods.
    """
    changed = []
    for name, original in before.items():
        current = after.get(name, MISSING)
        same = current == original if isinstance(original, (int, str)) else current is original
        if not same:
            changed.append(name)
    return [name for name in changed if not any(name.startswith(parent + ".") for parent in changed)]


def _is_setting(name: str) -> bool:
    return name == "torch.float32_matmul_precision" or any(name == setting for setting, _ in PRECISION_SETTINGS)


class PrimitiveGuard:
    """A snapshot taken before the solution loads, and the check against it."""

    def __init__(self, runtime_modules: Iterable[str] = ()):
        for module in runtime_modules:  # their import-time effects are theirs, not the solution's
            try:
                importlib.import_module(module)
            except ImportError:  # the load reports a missing package itself
                pass
        self.before = snapshot()

    def verify(self, after: str, who: str = "the solution") -> None:
        """Raise SolutionError (exit 3, kind tampering) naming every primitive changed since the snapshot.

        Args:
            after: what just ran, for the message ("loading the solution", "the solution's call").
            who: whose code ran since the last check ("the --against version" while loading that).
        """
        changed = replaced(self.before, snapshot())
        if changed:
            modes = {name for name, _ in MODE_STACKS}
            swapped = [name for name in changed if name not in modes and not _is_setting(name)]
            settings = [name for name in changed if _is_setting(name)]
            what = ([f"replaced {', '.join(swapped)}"] if swapped else []) + (
                [f"changed {', '.join(settings)}"] if settings else []) + [
                f"left a {name} active" for name in changed if name in modes]
            raise SolutionError(
                f"{who} {' and '.join(what)} (found after {after}): the harness times and checks "
                "results with these, so a solution that patches them fakes its timing or its results",
                kind="tampering",
                hint="remove the monkeypatching (of torch, torch.cuda or time) and any torch function or dispatch "
                     "mode left active; a solution computes its outputs on the GPU inside its call",
            )
