"""Sizes the CPU interpreter can check in seconds, for a problem shipped at GPU sizes.

KernelBench problems ship at sizes meant for a GPU (level 1's L1Norm: 32768 x 65535 float32, 8.6 GB
per tensor). Under TRITON_INTERPRET=1 on a CPU a check at those sizes needs tens of GB and hours, so
evaluate's CPU steps check smaller sizes instead: the problem's input sizes halved, the largest
first, until get_inputs()'s largest tensor holds at most INTERPRETER_ELEMENTS (shapes from PyTorch's
meta device: nothing is allocated), keeping only sizes the Model accepts. The check then adds its own
smaller and odd shapes below those. On a GPU, evaluate checks the run's own sizes in full.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_opt.solution.kernelbench import is_problem_file
from kernel_opt.solution.kernelbench_problem import KernelBenchProblem, problem_for

INTERPRETER_ELEMENTS = 1 << 20  # about a million: seconds per case under the interpreter


def interpreter_sizes(reference: Path, dims: dict[str, Any],
                      limit: int = INTERPRETER_ELEMENTS) -> tuple[dict[str, Any], str | None]:
    """`dims` with the input sizes reduced for the interpreter, and a sentence saying so (None: unchanged)."""
    if not is_problem_file(reference):
        return dict(dims), None
    problem = problem_for(reference)
    constants = problem.outline.constants
    sizes = {name: dims.get(name, constants[name]) for name in problem.outline.input_sizes}
    sizes = {name: value for name, value in sizes.items() if isinstance(value, int) and value > 1}
    first = largest_input(problem, {**dims, **sizes})
    if first is None or first <= limit:
        return dict(dims), None
    current, largest = dict(sizes), first
    while largest > limit:
        smaller = _halved(problem, dims, current)
        if smaller is None:
            break
        current, largest = smaller
    shown = ", ".join(f"{name}={value}" for name, value in current.items())
    run = ", ".join(f"{name}={value}" for name, value in sizes.items())
    return {**dims, **current}, (f"checked under the interpreter at {shown}, not the run's {run} (get_inputs()'s "
                                 f"largest tensor: {largest:,} elements here, {first:,} there); evaluate on a GPU "
                                 "checks the run's sizes")


def _halved(problem: KernelBenchProblem, dims: dict[str, Any],
            current: dict[str, int]) -> tuple[dict[str, int], int] | None:
    """One size halved, the largest the Model accepts halved, with the new largest tensor; None when none can be."""
    for name in sorted(current, key=lambda size: -current[size]):
        if current[name] < 2:
            continue
        trial = {**current, name: current[name] // 2}
        elements = largest_input(problem, {**dims, **trial})
        if elements is not None and problem.meta_failure(problem.sizes({**dims, **trial})) is None:
            return trial, elements
    return None


def largest_input(problem: KernelBenchProblem, dims: dict[str, Any]) -> int | None:
    """The element count of get_inputs()'s largest tensor at these sizes (meta device), None if it cannot be told."""
    import torch

    try:
        module = problem.module(problem.sizes(dims))
        with torch.device("meta"):
            inputs = module.get_inputs()
    except Exception:  # a host-only step (numpy) or a size the file rejects: keep the run's sizes
        return None
    return max((value.numel() for value in inputs if isinstance(value, torch.Tensor)), default=0)
