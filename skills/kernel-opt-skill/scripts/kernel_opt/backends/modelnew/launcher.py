"""A ModelNew loaded in the child process: built per problem size like KernelBench builds it, given the Model's weights.

- Import: the solution file is imported once; load_inline builds its CUDA extension then, under
  OUT/build/torch_extensions (TORCH_EXTENSIONS_DIR). A build failure is the solution's fault,
  kind compile_error, with the compiler's error lines.
- Construction, per problem size and device: the problem's get_init_inputs() after
  torch.manual_seed(42), then torch.manual_seed(42) and ModelNew(*init_inputs), as KernelBench's
  eval does; the solution file's module constants of the same name take the run's sizes first.
- Weights: the Model's state_dict is copied into ModelNew by name (load_state_dict, strict=False,
  only where the shapes agree), from the problem's own Model, never from a call's buffers: the
  benchmark builds an --against version on fresh, unfilled buffer sets (measure/benchmark_child.py),
  and a ModelNew built from those got garbage weights (H100, 2026-11-25: five v0s "wrong" beside
  their v1). KernelBench copies nothing and relies on both models drawing the same numbers from
  the same seed; copying is exact wherever the names match, and the seed still covers parameters
  named otherwise. Which were copied, which ModelNew initialised itself and
  which Model weights found no place is written to the run's notes.
- Calls: `model(*inputs)` returns the outputs; solution.returning_call.ReturningCall keeps them and
  delivers them into the checked buffers outside the timed region.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import KernelOptError, SolutionError, UsageError
from kernel_opt.run.events import EventLog, NoteEvent, one_line
from kernel_opt.solution.backend import Launcher, WeightHolder
from kernel_opt.solution.kernelbench import is_problem_file
from kernel_opt.solution.kernelbench_problem import WEIGHT_SEED, Arguments, KernelBenchProblem, device_key, problem_for
from kernel_opt.solution.returning_call import ReturningCall

_COMPILER_ERROR_LINE = re.compile(r"error", re.IGNORECASE)
MAX_ERROR_LINES = 6


class ModelNewLauncher(Launcher):
    """ModelNew per problem size, weights from the Model, called on the problem's inputs."""

    def __init__(self, solution: Path, reference: str | None, prepared: dict[str, Any] | None = None,
                 events: str | None = None):
        prepared = prepared or {}
        if not reference or not is_problem_file(Path(reference)):
            raise UsageError(f"a ModelNew solution is checked against a KernelBench problem file (class Model, "
                             f"get_inputs(), get_init_inputs()); {Path(reference).name if reference else 'none'} "
                             "is not one", hint="pass the problem file as --ref")
        self.problem: KernelBenchProblem = problem_for(Path(reference))
        self.events = EventLog(events) if events else None
        if prepared.get("extensions_dir"):
            Path(prepared["extensions_dir"]).mkdir(parents=True, exist_ok=True)
            os.environ["TORCH_EXTENSIONS_DIR"] = prepared["extensions_dir"]
        if prepared.get("cuda_arch_list"):
            os.environ["TORCH_CUDA_ARCH_LIST"] = prepared["cuda_arch_list"]
        self.solution = Path(solution)
        self.module = _import_solution(solution)
        self.model_class = getattr(self.module, "ModelNew", None)
        if not callable(self.model_class):
            raise SolutionError(f"{solution} defines no class ModelNew", kind="missing_symbol")
        self._models: dict[tuple, Any] = {}
        self._held: dict[tuple, Any] = {}  # (sizes, device) -> a ModelNew holding other weights (use_weights)
        self._noted: set[str] = set()

    def prepared(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> Callable[[], None]:
        import torch

        device = next(str(v.device) for v in values.values() if isinstance(v, torch.Tensor))
        sizes = self.problem.sizes(dims)
        arguments = self.problem.arguments(sizes, device)
        model = self._held.get(self._key(sizes, device)) or self._model(sizes, device, arguments)
        inputs = tuple(values[name] for name in arguments.inputs)
        return ReturningCall(lambda: model(*inputs), values, outputs, self._note_reused_memory)

    def own_kernel_names(self) -> frozenset[str] | None:
        """The Triton kernels and CUDA __global__ functions of the solution's own modules (own_kernels.py)."""
        from kernel_opt.backends.modelnew.own_kernels import cuda_files_beside, own_kernel_names, solution_modules

        beside = solution_modules(self.solution, self.problem.path)
        modules = [self.module, *(module for module in beside if module is not self.module)]
        return own_kernel_names(modules, cuda_files_beside(self.solution))

    def arguments_taken_once(self, dims: dict[str, Any], device: str) -> frozenset[str]:
        """The Model's weights: copied into ModelNew when it is built for a size, never passed to forward."""
        return frozenset(self.problem.arguments(self.problem.sizes(dims), device).weights)

    def weight_holders(self, dims: dict[str, Any], device: str) -> dict[str, WeightHolder]:
        """Per weight argument, the tensor of a ModelNew built for these sizes that holds it (find_holders)."""
        sizes = self.problem.sizes(dims)
        arguments = self.problem.arguments(sizes, device)
        holders = find_holders(self._construct(sizes, device), self.problem.model(sizes, device),
                               list(arguments.weights.values()))
        return {argument: holders[key] for argument, key in arguments.weights.items()}

    def use_weights(self, dims: dict[str, Any], device: str, weights: dict[str, Any] | None) -> None:
        """A ModelNew of its own for these sizes, built as any other, whose holders of `weights` take those values."""
        import torch

        sizes = self.problem.sizes(dims)
        key = self._key(sizes, device)
        if weights is None:
            self._held.pop(key, None)
            return
        arguments = self.problem.arguments(sizes, device)
        model, stock = self._construct(sizes, device), self.problem.model(sizes, device)
        holders = find_holders(model, stock, list(arguments.weights.values()))  # before any weight is copied in
        copy_weights(model, {state_key: stock.state_dict()[state_key] for state_key in arguments.weights.values()})
        own = model.state_dict()
        with torch.no_grad():
            for argument, value in weights.items():
                holder = holders[arguments.weights[argument]]
                if holder.key is not None:
                    own[holder.key].copy_(value.reshape(own[holder.key].shape))
        self._held[key] = model

    def _key(self, sizes: dict[str, Any], device: str) -> tuple:
        return self.problem.overrides(sizes), device_key(device)

    def _model(self, sizes: dict[str, Any], device: str, arguments: Arguments):
        """ModelNew for these sizes, built and given the Model's weights once (they depend on the sizes alone)."""
        key = (self.problem.overrides(sizes), device)
        if key in self._models:
            return self._models[key]
        model = self._construct(sizes, device)
        weights = self.problem.model(sizes, device).state_dict()  # what setup() hands every call, cloned
        self._note(copy_weights(model, {key: weights[key] for key in arguments.weights.values()}))
        self._models[key] = model
        return model

    def _construct(self, sizes: dict[str, Any], device: str):
        """A new ModelNew for these sizes as KernelBench builds it (seeded init inputs, seeded construction)."""
        import torch

        for name, value in sizes.items():  # the solution's own copies of the problem's constants
            if hasattr(self.module, name):
                setattr(self.module, name, value)
        init_inputs = self.problem.seeded_init_inputs(sizes, device)
        torch.manual_seed(WEIGHT_SEED)
        try:
            model = self.model_class(*init_inputs).to(device)
        except KernelOptError:
            raise
        except Exception as error:
            raise SolutionError(f"ModelNew(*get_init_inputs()) raised {one_line(error)}", kind="load_error") from error
        for parameter in model.parameters():
            parameter.requires_grad_(False)  # no autograd graph on any call, as for the Model
        return model

    def _note(self, text: str | None) -> None:
        if text and text not in self._noted and self.events is not None:
            self._noted.add(text)
            self.events.emit(NoteEvent(text))

    def _note_reused_memory(self) -> None:
        self._note("ModelNew returned the same output memory on consecutive calls while the first call's output "
                   "was still held (an output buffer it keeps, not the allocator handing a freed block back): "
                   "each call's result was copied out before the next call, so reusing it cannot pass off an "
                   "earlier result")


def copy_weights(model, weights: dict[str, Any]) -> str:
    """Load the Model's weights into ModelNew where name and shape agree; what happened, in one note."""
    own = model.state_dict()
    matched = {key: value for key, value in weights.items() if key in own and own[key].shape == value.shape}
    model.load_state_dict(matched, strict=False)
    other_shape = [key for key in weights if key in own and key not in matched]
    unused = [key for key in weights if key not in own]
    initialised = [key for key in own if key not in matched]
    parts = [f"ModelNew got {len(matched)} of the Model's {len(weights)} weights by name (load_state_dict, "
             f"strict=False){': ' + ', '.join(matched) if matched else ''}"]
    if initialised:
        parts.append(f"its own, initialised from seed {WEIGHT_SEED} as in KernelBench: {', '.join(initialised)}")
    if other_shape:
        parts.append(f"same name, other shape (not copied): {', '.join(other_shape)}")
    if unused:
        parts.append(f"Model weights it has no place for: {', '.join(unused)}")
    return "; ".join(parts)


def find_holders(model_new, model, keys: list[str]) -> dict[str, WeightHolder]:
    """Which tensor of `model_new` (freshly built, seed 42) holds each of `model`'s state entries `keys`.

    By name where the key and the shape agree (what copy_weights loads). Otherwise by value: the one
    tensor of its own, not held by name, with the same dtype, number of elements and values as that
    Model entry (the same seed drew both), which no other of those entries matches; parameters are
    paired with parameters and buffers with buffers before a match is called ambiguous.
    """
    import torch

    own, theirs = model_new.state_dict(), model.state_dict()
    own_kinds, their_kinds = _state_kinds(model_new), _state_kinds(model)
    holders = {key: WeightHolder("by name", key) for key in keys
               if key in own and own[key].shape == theirs[key].shape}
    free = [key for key in own if key not in holders]
    unheld = [key for key in keys if key not in holders]

    def same(mine: str, key: str) -> bool:
        a, b = own[mine], theirs[key]
        return a.dtype == b.dtype and a.numel() == b.numel() and torch.equal(a.reshape(-1), b.reshape(-1))

    def narrowed(candidates: list[str], kinds: dict[str, str], kind: str | None) -> list[str]:
        alike = [candidate for candidate in candidates if kinds.get(candidate) == kind]
        return alike if len(candidates) > 1 and alike else candidates

    for key in unheld:
        mine = narrowed([name for name in free if same(name, key)], own_kinds, their_kinds.get(key))
        if len(mine) != 1:
            holders[key] = WeightHolder("ambiguous" if mine else "none")
            continue
        rivals = narrowed([other for other in unheld if same(mine[0], other)], their_kinds, own_kinds.get(mine[0]))
        holders[key] = WeightHolder("by value", mine[0]) if rivals == [key] else WeightHolder("ambiguous")
    return holders


def _state_kinds(module) -> dict[str, str]:
    kinds = {name: "buffer" for name, _ in module.named_buffers()}
    return {**kinds, **{name: "parameter" for name, _ in module.named_parameters()}}


def _import_solution(path: Path):
    """The solution module; a failed load_inline build is a compile_error with the compiler's error lines."""
    from kernel_opt.solution.contract import load_module

    try:
        return load_module(path, "solution")
    except SolutionError as error:
        cause = error.__cause__
        text = str(cause) if cause is not None else ""
        if "Error building extension" not in text and type(cause).__name__ != "CalledProcessError":
            raise
        lines = [line.strip() for line in text.splitlines() if _COMPILER_ERROR_LINE.search(line)]
        message = "; ".join(lines[1:MAX_ERROR_LINES + 1] or lines[:1])
        raise SolutionError(f"the ModelNew's CUDA extension failed to build: {message}", kind="compile_error",
                            hint=text[-1500:]) from cause
