"""A solution made ready for a child process: its backend prepares it here, in the parent.

Every tool that starts a child (the correctness check, the benchmark, the profile, the size
sweep) gets the request's `SolutionSpec` (run/request.py) from `solution_spec`: the backend's
own prepared values (CUDA: the built library and solve's signature), and, for a backend that is
not built in, the module the child imports to find it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_opt.run.request import SolutionSpec
from kernel_opt.solution import registry
from kernel_opt.solution.backend import BuildOptions


def solution_spec(solution: Path, backend: str, device: str, build_dir: Path, options: BuildOptions,
                  notes: list[str]) -> tuple[SolutionSpec, dict[str, Any] | None]:
    """What the worker needs to load a solution (its backend prepares it), and the build record if it has a build."""
    definition = registry.get(backend)
    prepared = definition.prepare(solution, device, build_dir, options, notes)
    module = registry.request_fields(definition).get("backend_module")
    return SolutionSpec(backend, str(solution), dict(prepared.request), module), prepared.build
