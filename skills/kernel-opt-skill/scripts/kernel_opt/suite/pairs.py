"""Which solution answers which problem: by file name, or the best version of a workspace run folder.

PROBLEMS_DIR holds problem files (KernelBench's format, or ref.py's contract); for a problem
`NAME.py` the solution is SOLUTIONS_DIR/NAME.<suffix> (a ModelNew or Triton .py, a CUDA .cu), or
SOLUTIONS_DIR/NAME/, a run folder of `workspace.py`, whose best measured version answers it (the
one `workspace.py status` calls best, with that version's profile). A problem without either is
"missing" and counts against every rate, as KernelBench counts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernel_opt.core.errors import KernelOptError, UsageError
from kernel_opt.loop.records import RUN_FILE
from kernel_opt.loop.workspace import run_status
from kernel_opt.solution import kernelbench, registry
from kernel_opt.solution.outline import outline_module


@dataclass(frozen=True)
class Pair:
    """One problem and what answers it (None: nothing does, `note` says why)."""

    name: str
    problem: Path
    solution: Path | None
    source: str | None = None  # "file" or "run folder"
    run_version: str | None = None  # the run folder's best version, e.g. "v3"
    bottleneck: str | None = None  # that version's profile label, where it was profiled
    note: str | None = None
    run_dims: tuple[tuple[str, object], ...] = ()  # the sizes the run was made at (the eval uses the problem's)


def is_problem_file(path: Path) -> bool:
    """A KernelBench problem, or a ref.py (it defines reference())."""
    try:
        outline = outline_module(path)
    except KernelOptError:
        return False
    return kernelbench.is_problem(outline) or "reference" in outline.functions


def find_pairs(problems_dir: Path, solutions_dir: Path) -> tuple[list[Pair], list[str]]:
    """Every problem of PROBLEMS_DIR with its solution, in name order; and notes on files that paired with nothing."""
    for folder, role in ((problems_dir, "problems"), (solutions_dir, "solutions")):
        if not folder.is_dir():
            raise UsageError(f"{role} folder not found: {folder}")
    candidates = sorted(path for path in problems_dir.glob("*.py") if path.is_file())
    problems = [path for path in candidates if is_problem_file(path)]
    notes = [f"{path.name} in {problems_dir} is not a problem (no class Model with get_inputs/get_init_inputs, "
             "no reference()): skipped" for path in candidates if path not in problems]
    if not problems:
        raise UsageError(f"{problems_dir} holds no problem file",
                         hint="a problem is a KernelBench .py (class Model, get_inputs, get_init_inputs) or a ref.py")
    pairs = [_pair(problem, solutions_dir) for problem in problems]
    names = {problem.stem for problem in problems}
    suffixes = {backend.suffix for backend in registry.backends()}
    notes += [f"{path.name} in {solutions_dir} answers no problem of {problems_dir}: not evaluated"
              for path in sorted(solutions_dir.iterdir())
              if path.stem not in names and (path.suffix in suffixes or (path / RUN_FILE).is_file())]
    return pairs, notes


def _pair(problem: Path, solutions_dir: Path) -> Pair:
    name = problem.stem
    folder = solutions_dir / name
    if (folder / RUN_FILE).is_file():
        return _from_run(name, problem, folder)
    suffixes = sorted({backend.suffix for backend in registry.backends()})
    files = [solutions_dir / f"{name}{suffix}" for suffix in suffixes if (solutions_dir / f"{name}{suffix}").is_file()]
    if len(files) > 1:
        return Pair(name, problem, None, note=f"two solutions answer it ({', '.join(f.name for f in files)}): "
                                               "keep one")
    if not files:
        return Pair(name, problem, None, note=f"no {name}{'/'.join(suffixes)} and no run folder {name}/ in "
                                               f"{solutions_dir}")
    return Pair(name, problem, files[0], source="file")


def _from_run(name: str, problem: Path, folder: Path) -> Pair:
    """The run's best measured version (workspace.py's rule: interleaved comparisons decide)."""
    try:
        status = run_status(folder)
    except KernelOptError as error:
        return Pair(name, problem, None, note=f"run folder {folder} cannot be read: {error.message}")
    if status.best is None or not status.best_is_measured:
        return Pair(name, problem, None, note=f"run folder {folder} has no measured version yet")
    best = status.best
    return Pair(name, problem, Path(best.solution), source="run folder", run_version=best.name,
                bottleneck=best.bottleneck, run_dims=tuple(status.run.dims.items()))
