"""A Triton solution file: `run_kernel(**kwargs)` launches its kernels on the tensors it is given.

It may define `setup(seed=..., device=..., **dims)` too, used when ref.py has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import SolutionError
from kernel_opt.solution.backend import Launcher


@dataclass
class TritonSolution:
    path: Path
    run_kernel: Callable
    setup: Callable | None
    kernels: frozenset[str] = frozenset()  # names of the @triton.jit kernels the module holds


def jit_kernel_names(module: Any) -> frozenset[str]:
    """The kernel names of a module's Triton kernels (@triton.jit, autotuned or not, defined or imported there).

    A compiled Triton kernel is named after its Python function, which is what the profiler shows.
    """
    from triton.runtime.jit import KernelInterface

    names = set()
    for value in vars(module).values():
        if not isinstance(value, KernelInterface):
            continue
        function = value
        while isinstance(function, KernelInterface):  # Autotuner/Heuristics -> JITFunction -> the function
            function = getattr(function, "fn", None)
        name = getattr(function, "__name__", None)
        if isinstance(name, str):
            names.add(name)
    return frozenset(names)


def load_triton_solution(path: Path) -> TritonSolution:
    from kernel_opt.solution.contract import load_module

    module = load_module(path, "solution")
    run_kernel = getattr(module, "run_kernel", None)
    if not callable(run_kernel):
        raise SolutionError(
            f"{path} has no run_kernel(**kwargs) function",
            kind="missing_symbol",
            hint="a Triton solution defines run_kernel(**kwargs) that launches its kernel on the tensors it is given",
        )
    setup = getattr(module, "setup", None)
    return TritonSolution(path=path, run_kernel=run_kernel, setup=setup if callable(setup) else None,
                          kernels=jit_kernel_names(module))


class TritonLauncher(Launcher):
    """run_kernel called with the keyword arguments it accepts; Triton reports launch errors by raising."""

    def __init__(self, solution: Path):
        self.triton = load_triton_solution(solution)
        self.setup = self.triton.setup

    def prepared(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> Callable[[], None]:
        from kernel_opt.solution.contract import accepted_kwargs

        kwargs = accepted_kwargs(self.triton.run_kernel, {**dims, **values})
        run_kernel = self.triton.run_kernel
        return lambda: run_kernel(**kwargs)

    def own_kernel_names(self) -> frozenset[str]:
        return self.triton.kernels
