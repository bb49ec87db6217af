"""Which kernels a ModelNew defines itself: what the launch check lists as its own, the rest as library code.

A ModelNew may launch Triton kernels, CUDA it builds with load_inline or cpp_extension, and any
number of torch ops. Its own are read from the modules loaded from the solution's folder (the file
and the helpers it imports from beside it, never the problem file):

- Triton: the @triton.jit kernels those modules hold (autotuned or not), named as the profiler
  names them, after the Python function;
- CUDA: the __global__ functions in their source text and in the .cu/.cuh files beside them.

None, "cannot tell", wherever a kernel could exist that these cannot name: CUDA built from source
without a __global__ that the text shows, a cupy RawKernel, Triton code without a kernel object.
The launch check then says so rather than call a kernel of the solution's library code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from kernel_opt.backends.modelnew.source_signs import BUILDS_CUDA, TRITON_KERNEL

_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\s*\([^)]*\)")
# __global__, then qualifiers and the return type (words), then the kernel's name and its parameter list.
_GLOBAL_FUNCTION = re.compile(r"__global__\s+(?:[A-Za-z_][\w:]*\s*\*?\s+)*?([A-Za-z_]\w*)\s*\(")
_UNNAMEABLE = re.compile(r"\bRawKernel\b|\bRawModule\b")
CUDA_SUFFIXES = (".cu", ".cuh")
_ENVIRONMENT_FOLDERS = ("site-packages", "dist-packages", "__pypackages__")


def cuda_kernel_names(source: str) -> frozenset[str]:
    """The __global__ functions a CUDA source text defines (templates and __launch_bounds__ included)."""
    return frozenset(_GLOBAL_FUNCTION.findall(_LAUNCH_BOUNDS.sub(" ", source)))


def solution_modules(solution: Path, problem: Path) -> list[Any]:
    """The modules loaded from the solution's folder and the folders under it: the solution and the helpers it
    imported from there. Not the problem file, the harness's own package, or what lives in a hidden folder or
    an environment's site-packages there (a project's .venv, an installed skill under .claude/)."""
    folder, problem = solution.resolve().parent, problem.resolve()
    found = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not file or name.split(".")[0] == "kernel_opt":
            continue
        path = Path(file).resolve()
        if path == problem or not path.is_relative_to(folder):
            continue
        inside = path.relative_to(folder).parts[:-1]
        if not any(part.startswith(".") or part in _ENVIRONMENT_FOLDERS for part in inside):
            found.append(module)
    return found


def own_kernel_names(modules: list[Any], cuda_files: list[Path]) -> frozenset[str] | None:
    """Base names of the kernels the ModelNew defines (module docstring); None where some cannot be named."""
    from kernel_opt.backends.triton.solution import jit_kernel_names

    sources = [_source(module) for module in modules]
    names: set[str] = set()
    for module, source in zip(modules, sources, strict=True):
        triton = jit_kernel_names(module) if "triton" in sys.modules else frozenset()
        if _UNNAMEABLE.search(source) or (TRITON_KERNEL.search(source) and not triton):
            return None
        names |= triton
    in_text = set().union(*(cuda_kernel_names(source) for source in sources))
    named_files = [path for path in cuda_files if any(path.name in source for source in sources)]
    if any(BUILDS_CUDA.search(source) for source in sources) and not in_text and not named_files:
        return None  # CUDA built from sources this cannot read
    for path in named_files:
        in_text |= cuda_kernel_names(path.read_text(errors="replace"))
    return frozenset(names | in_text)


def cuda_files_beside(solution: Path) -> list[Path]:
    """The .cu and .cuh files in the solution's folder (own_kernel_names reads those a module names)."""
    return sorted(path for path in solution.resolve().parent.iterdir() if path.suffix in CUDA_SUFFIXES)


def _source(module: Any) -> str:
    try:
        return Path(module.__file__).read_text(errors="replace")
    except (OSError, TypeError, AttributeError):
        return ""
