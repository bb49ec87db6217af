"""The toy backend: a `.toy` file of Python that defines toy_solution(**kwargs), run with torch ops wherever torch runs.

It builds nothing, so it takes the interface's defaults for prepare(), static analysis and the
rest; a solution that writes its outputs with torch ops runs on the CPU as well as on a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_opt.run.request import ChildRequest
from kernel_opt.solution.backend import Backend, Launcher
from kernel_opt.solution.contract import accepted_kwargs


class ToyLauncher(Launcher):
    """toy_solution(**kwargs) from a .toy file, called with the keyword arguments it accepts."""

    def __init__(self, path: Path):
        namespace: dict[str, Any] = {"__name__": "toy_solution", "__file__": str(path)}
        exec(compile(path.read_text(), str(path), "exec"), namespace)  # a .toy file is Python under another suffix
        self.function = namespace["toy_solution"]
        self.setup = namespace.get("setup")

    def prepared(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> Callable[[], None]:
        kwargs = accepted_kwargs(self.function, {**dims, **values})
        return lambda: self.function(**kwargs)


class ToyBackend(Backend):
    """Every .toy file is a toy solution."""

    name = "toy"
    title = "toy"
    suffix = ".toy"
    contract = "a .toy file (Python) that defines toy_solution(**kwargs)"
    aliases = ("toy_ops", "torch_toy")
    runs_on_cpu = True

    def claims(self, solution: Path, source: str | None) -> bool:
        return solution.suffix == self.suffix

    def load(self, request: ChildRequest) -> Launcher:
        return ToyLauncher(Path(request.solution.path))


BACKEND = ToyBackend()
