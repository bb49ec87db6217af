"""Sizes the CPU interpreter can check in seconds, for a problem shipped at GPU sizes.

KernelBench problems ship at sizes meant for a GPU (level 1's L1Norm: 32768 x 65535 float32, 8.6 GB
per tensor; level 2's Gemm_BatchNorm: a 16384 x 4096 x 4096 matmul). Under TRITON_INTERPRET=1 on a
CPU a check at those sizes needs tens of GB and hours, so evaluate's CPU steps check smaller sizes
instead: the problem's sizes halved in turn, each as often as the others (the largest first among
equals), until the forward's largest tensor (an input, a weight or an output) holds at most
INTERPRETER_ELEMENTS and its matmuls and convolutions at most INTERPRETER_FLOPS (shapes and FLOPs
from PyTorch's meta device: nothing is allocated or computed), keeping only sizes the Model accepts.
The sizes halved are the constants get_inputs()'s shapes and get_init_inputs()'s arguments use: a
Linear's out_features sets its weight and output as much as the batch does. A size only
get_init_inputs() passes stays at INIT_SIZE_FLOOR or more, so kernel sizes, strides and groups are
never changed: the check keeps the problem's own operation. Halving every size alike keeps the
problem's proportions: a long row stays long against the batch (64 x 128 x 65536 becomes
8 x 16 x 4096, not 64 x 64 x 128), so a kernel's path over several blocks of a row is checked here
too. The check then adds its own smaller and odd shapes below those. On a GPU, evaluate checks the
run's own sizes in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.solution.kernelbench import is_problem_file
from kernel_opt.solution.kernelbench_problem import KernelBenchProblem, problem_for

INTERPRETER_ELEMENTS = 1 << 20  # about a million: seconds per case under the interpreter
# The interpreter's tl.dot ran a 1024 x 1024 x 4096 float32 matmul (8.6 GFLOP) in 30-105 s a call on a
# 2-core CPU, depending on the tiles: about 0.1-0.3 GFLOP/s. 2**28 FLOPs keeps a call to seconds.
INTERPRETER_FLOPS = 1 << 28
Size = int | tuple[int, ...]  # a size, or a tuple size (input_shape = (32768,)) whose largest element is halved
# An input size of 1 makes what runs across it trivial (a batch norm's batch statistics, a reduction's tail): a
# check there says nothing about them, so an input size is never halved below 2.
INPUT_SIZE_FLOOR = 2
INIT_SIZE_FLOOR = 16  # below it a Model's own argument is a kernel size, a stride or a group count, not a width
# Past this many times the limits at the smallest sizes the Model takes, a check under the interpreter would take
# hours or the host's memory (its float64 truth of 1G elements ran a 23 GB machine out of memory): it is not run.
OUT_OF_REACH_FACTOR = 16


@dataclass(frozen=True)
class Work:
    """What one forward at some sizes holds and computes: its largest tensor's elements, and the FLOPs torch's
    FLOP counter gives its matmuls and convolutions (None where the forward could not run on the meta device)."""

    largest: int
    flops: int | None

    def fits(self, elements: int, flops: int) -> bool:
        return self.largest <= elements and (self.flops or 0) <= flops

    def text(self) -> str:
        counted = f", {_flop_text(self.flops)}" if self.flops else ""
        return f"largest tensor {self.largest:,} elements{counted}"


def _flop_text(flops: int) -> str:
    for scale, unit in ((1e9, "GFLOP"), (1e6, "MFLOP")):
        if flops >= scale:
            return f"{flops / scale:.3g} {unit}"
    return f"{flops} FLOP"


def interpreter_sizes(reference: Path, dims: dict[str, Any], limit: int = INTERPRETER_ELEMENTS,
                      flop_limit: int = INTERPRETER_FLOPS) -> tuple[dict[str, Any], str | None]:
    """`dims` with the problem's sizes reduced for the interpreter, and a sentence saying so (None: unchanged)."""
    if not is_problem_file(reference):
        return dict(dims), None
    problem = problem_for(reference)
    outline = problem.outline
    sizes: dict[str, Size] = {name: dims.get(name, outline.constants[name]) for name in outline.shape_sizes}
    sizes = {name: value for name, value in sizes.items() if isinstance(value, int) and value > 1}
    sizes.update({name: tuple(dims.get(name, value)) for name, value in outline.tuple_sizes.items()
                  if _magnitude(value) > 1})
    first = forward_work(problem, {**dims, **sizes})
    if first is None or first.fits(limit, flop_limit):
        return dict(dims), None
    current, work = dict(sizes), first
    floors = {name: INPUT_SIZE_FLOOR if name in outline.input_sizes or name in outline.tuple_sizes
              else INIT_SIZE_FLOOR for name in sizes}
    halvings = dict.fromkeys(sizes, 0)
    while not work.fits(limit, flop_limit):
        smaller = _halved(problem, dims, current, floors, halvings)
        if smaller is None:
            break
        halvings.update({name: halvings[name] + 1 for name in current if smaller[0][name] != current[name]})
        current, work = smaller
    if not work.fits(limit * OUT_OF_REACH_FACTOR, flop_limit * OUT_OF_REACH_FACTOR):
        raise _out_of_reach(current, work)
    changed = {name: value for name, value in current.items() if value != sizes[name]}
    if not changed:
        return dict(dims), (f"checked under the interpreter at the run's own sizes ({first.text()}): the Model "
                            "accepts none of them halved")
    shown = ", ".join(f"{name}={value}" for name, value in changed.items())
    run = ", ".join(f"{name}={sizes[name]}" for name in changed)
    return {**dims, **current}, (f"checked under the interpreter at {shown}, not the run's {run} (one forward: "
                                 f"{work.text()} here, {first.text()} there); on a GPU the check runs the "
                                 "run's own sizes")


def _out_of_reach(current: dict[str, Size], work: Work) -> EnvironmentFault:
    """Why the interpreter cannot check this problem: its smallest forward at the sizes it could reach."""
    kept = ", ".join(f"{name}={value}" for name, value in current.items()) or "none"
    return EnvironmentFault(
        f"too large for the CPU interpreter: at the smallest sizes the Model accepts ({kept}) one forward holds "
        f"{work.text()}, over {OUT_OF_REACH_FACTOR}x what the interpreter checks in seconds",
        hint="check it on a GPU at the run's sizes; do not edit the run's ref.py, which is the user's problem",
        kind="too_large_for_interpreter")


def _magnitude(value: Size) -> int:
    """A size's weight in the halving order: the int, or a tuple size's largest element."""
    return max(value) if isinstance(value, tuple) else value


def _half(value: Size) -> Size:
    """The size halved: an int, or a tuple size with its largest element halved."""
    if not isinstance(value, tuple):
        return value // 2
    largest = value.index(max(value))
    return (*value[:largest], value[largest] // 2, *value[largest + 1:])


def _halved(problem: KernelBenchProblem, dims: dict[str, Any], current: dict[str, Size], floors: dict[str, int],
            halvings: dict[str, int]) -> tuple[dict[str, Size], Work] | None:
    """One size halved, the one halved least so far that the Model accepts halved (the largest among those; none
    below its floor), with its forward's work; where no single one is accepted, the largest sizes of one value
    halved together (a batch the Model needs equal to a row length, HingeLoss's batch_size and input_shape); None
    when nothing can be. A forward that ran on the meta device was accepted; only one that could not run there is
    asked again (meta_failure: a real run on the CPU where the sizes are small)."""
    open_sizes = [name for name in sorted(current, key=lambda size: (halvings[size], -_magnitude(current[size])))
                  if _magnitude(current[name]) // 2 >= floors[name]]
    tied = [name for name in open_sizes if _magnitude(current[name]) == _magnitude(current[open_sizes[0]])] \
        if open_sizes else []
    for names in [[name] for name in open_sizes] + ([tied] if len(tied) > 1 else []):
        trial = {**current, **{name: _half(current[name]) for name in names}}
        work = forward_work(problem, {**dims, **trial})
        if work is None:
            continue
        if work.flops is not None or problem.meta_failure(problem.sizes({**dims, **trial})) is None:
            return trial, work
    return None


def forward_work(problem: KernelBenchProblem, dims: dict[str, Any]) -> Work | None:
    """The Model's forward at these sizes on the meta device; get_inputs()'s tensors alone where the forward cannot
    run there (an operation without a meta kernel); None where not even those can be told."""
    import torch

    try:
        module = problem.module(problem.sizes(dims))
        with torch.device("meta"):
            inputs = module.get_inputs()
    except Exception:  # a host-only step (numpy) or a size the file rejects: keep the run's sizes
        return None
    tensors = [value for value in inputs if isinstance(value, torch.Tensor)]
    flops = None
    try:
        from torch.utils.flop_counter import FlopCounterMode

        with torch.device("meta"), torch.no_grad():
            model = module.Model(*module.get_init_inputs())
            counter = FlopCounterMode(display=False)
            with counter:
                returned = model(*inputs)
        tensors += [*model.parameters(), *model.buffers()]
        tensors += [value for value in torch.utils._pytree.tree_leaves(returned) if isinstance(value, torch.Tensor)]
        flops = counter.get_total_flops()
    except Exception:  # noqa: S110 - data-dependent shapes or no meta kernel: the inputs still tell the size
        pass
    return Work(max((tensor.numel() for tensor in tensors), default=0), flops)

