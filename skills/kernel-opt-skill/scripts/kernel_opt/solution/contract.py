"""What a reference and a solution must provide, and how their pieces are loaded.

ref.py: `reference(**kwargs)` (writes into the output tensors it is given, or returns them);
optional `setup(seed=..., device=..., **dims) -> {"inputs": {...}, "outputs": [names]}`,
`SHAPES = [dict(...), ...]`, `atol`, `rtol`, `flops(**dims)`, `bytes(**dims)`.
What a solution must provide is its backend's business (kernel_opt.backends: CUDA's
`extern "C" void solve(...)`, Triton's `run_kernel(**kwargs)`); a solution may define `setup(...)`
too, used when ref.py has none.

A KernelBench problem file (Model, get_inputs, get_init_inputs: solution/kernelbench.py) is a
reference too: load_reference recognises it by its content and returns the same Reference,
whose functions solution/kernelbench_problem.py provides.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.dependencies import dependency_fault
from kernel_opt.core.errors import SolutionError, UsageError


def load_module(path: Path, role: str):
    """Import a user file by path under a private name; its folder is importable meanwhile."""
    if not path.is_file():
        raise UsageError(f"{role} file not found: {path}")
    module_name = f"kernel_opt_user_{role}_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {role} file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's module may raise anything at import time
        missing = dependency_fault(error, f"{role} file {path}")
        if missing is not None:  # `import triton` where triton is not installed: not the file's fault
            raise missing from error
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        error_class = SolutionError if role == "solution" else UsageError
        raise error_class(f"{role} file {path} failed to import: {detail}", kind="import_error") from error
    finally:
        sys.path.remove(str(path.parent.resolve()))
    return module


def call_with_accepted(function: Callable, kwargs: dict[str, Any]):
    """Call with the keyword arguments the function accepts (all of them if it takes **kwargs)."""
    return function(**accepted_kwargs(function, kwargs))


def accepted_kwargs(function: Callable, kwargs: dict[str, Any]) -> dict[str, Any]:
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return dict(kwargs)
    names = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return {key: value for key, value in kwargs.items() if key in names}


def default_dims(function: Callable | None) -> dict[str, Any]:
    """The keyword defaults of a setup function, e.g. setup(N=4096, D=1024) -> {N: 4096, D: 1024}."""
    if function is None:
        return {}
    skip = {"seed", "device", "dtype"}
    return {
        p.name: p.default
        for p in inspect.signature(function).parameters.values()
        if p.default is not inspect.Parameter.empty
        and p.name not in skip
        and isinstance(p.default, (int, float))
        and not isinstance(p.default, bool)
    }


@dataclass
class Reference:
    path: Path
    reference: Callable
    setup: Callable | None
    shapes: list[dict[str, Any]]
    atol: float | None
    rtol: float | None
    flops: Callable | None = None
    bytes: Callable | None = None
    allow_tf32: bool = False  # the reference permits TF32 matmuls: baselines and ceilings use TF32 too
    # Extra shapes computed from the run's sizes where SHAPES is empty: base dims -> (shapes, notes).
    derive_shapes: Callable[[dict[str, Any]], tuple[list[dict[str, Any]], list[str]]] | None = None
    # What the benchmark times as eager and compiles, from reference()'s keyword arguments:
    # (callable, args, kwargs). None: reference(**kwargs) itself.
    baseline: Callable[[dict[str, Any]], tuple[Callable, tuple, dict[str, Any]]] | None = None
    kind: str = "ref.py"  # or "kernelbench": a problem file in KernelBench's format
    # The arguments whose first dimension indexes independent rows at these dims (a KernelBench Model's forward
    # inputs), which lets the float64 truth run in row chunks where it does not fit whole (check/truth.py); None:
    # never cut (a ref.py's reference may read its sizes from its keyword arguments).
    row_arguments: Callable[[dict[str, Any]], tuple[str, ...]] | None = None


def load_reference(path: Path) -> Reference:
    """ref.py, or a KernelBench problem file, as the Reference every tool uses."""
    from kernel_opt.solution.kernelbench import is_problem_file

    if is_problem_file(path):
        from kernel_opt.solution.kernelbench_problem import problem_for

        problem = problem_for(path)
        module = problem.module({})
        reference = _reference_from(module, path, problem.reference, problem.setup_function())
        reference.kind, reference.baseline = "kernelbench", problem.baseline
        reference.row_arguments = problem.row_arguments
        if not reference.shapes:
            reference.derive_shapes = problem.derived_shapes
        return reference
    module = load_module(path, "reference")
    function = getattr(module, "reference", None)
    if not callable(function):
        raise UsageError(
            f"{path} has no reference(**kwargs) function",
            hint="ref.py must define reference(**kwargs) that writes the expected outputs into the tensors it is given "
            "(or be a KernelBench problem: class Model, get_inputs(), get_init_inputs())",
        )
    setup = getattr(module, "setup", None)
    return _reference_from(module, path, function, setup if callable(setup) else None)


def _reference_from(module, path: Path, function: Callable, setup: Callable | None) -> Reference:
    """The Reference of a loaded module: its SHAPES, tolerances, work counts and precision policy."""
    shapes = getattr(module, "SHAPES", [])
    if not isinstance(shapes, (list, tuple)) or not all(isinstance(s, dict) for s in shapes):
        raise UsageError(f"{path}: SHAPES must be a list of dicts such as [dict(N=127, D=129)]")
    return Reference(
        path=path,
        reference=function,
        setup=setup,
        shapes=[dict(s) for s in shapes],
        atol=_optional_float(module, "atol", path),
        rtol=_optional_float(module, "rtol", path),
        flops=getattr(module, "flops", None),
        bytes=getattr(module, "bytes", None),
        allow_tf32=bool(getattr(module, "allow_tf32", False)),
    )


def _optional_float(module, name: str, path: Path) -> float | None:
    value = getattr(module, name, None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise UsageError(f"{path}: {name} must be a non-negative number, got {value!r}")
    return float(value)


def problem_cases(
    cli_dims: dict[str, Any], shapes: list[dict[str, Any]], setup: Callable | None
) -> list[dict[str, Any]]:
    """The CLI shape first, then every SHAPES entry (each over the CLI dims), without repeats."""
    base = {**default_dims(setup), **cli_dims}
    cases: list[dict[str, Any]] = []
    for dims in [base] + [{**base, **shape} for shape in shapes]:
        if dims not in cases:
            cases.append(dims)
    return cases


def plan_cases(reference: Reference, cli_dims: dict[str, Any],
               setup: Callable | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The cases a correctness check runs (problem_cases), with SHAPES derived where the reference derives them;
    and notes on how they were derived."""
    shapes, notes = reference.shapes, []
    if not shapes and reference.derive_shapes is not None:
        shapes, notes = reference.derive_shapes({**default_dims(setup), **cli_dims})
    return problem_cases(cli_dims, shapes, setup), notes


@dataclass
class ProblemInstance:
    """One set of inputs: every tensor and scalar a call receives, and which are outputs."""

    values: dict[str, Any]
    outputs: list[str]
    dims: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def set_matmul_precision(allow_tf32: bool) -> dict[str, Any]:
    """Make float32 matmuls strict unless the reference allows TF32; say which."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    torch.set_float32_matmul_precision("high" if allow_tf32 else "highest")
    if allow_tf32:
        note = ("ref.py sets allow_tf32 = True: float32 matmuls and convolutions may use TF32 "
                "(solution, baselines, ceilings)")
    else:
        note = ("float32 matmuls and convolutions are strict FP32 (TF32 off); "
                "set allow_tf32 = True in ref.py to allow it")
    return {"allow_tf32": allow_tf32, "note": note}
