"""A KernelBench problem file run as a reference: its Model, inputs and weights in the ref.py contract.

The tools pass every tensor by name and let the reference write preallocated outputs
(solution/contract.py). A problem file (solution/kernelbench.py) becomes that contract here:

- sizes: its module constants; other values execute the file again with those values assigned
  right after the constants' own assignments, so constants computed from them follow.
- weights: Model is built once per set of sizes and device the way KernelBench's eval builds it:
  torch.manual_seed(42) before get_init_inputs() and again before Model(*init_inputs), then
  moved to the device. Its state_dict (parameters and persistent buffers) is passed by name
  (kernelbench.weight_argument_name: `conv.weight` -> `conv_weight`), the same for every seed.
- inputs: torch.manual_seed(seed) (which seeds every device's generator), get_inputs() with the
  device as torch's default (so stock-size inputs are drawn on the GPU; on the host where get_inputs()
  cannot run that way), then moved to the device; named after Model.forward's parameters (`input0`,
  `input1`, ... where it takes *args).
- outputs: what forward returns, `output` (or `output0`, `output1`, ... for a tuple); their shapes
  and dtypes come from one forward per size, on cloned weights.
- the reference runs forward on the weights it is given (torch.func.functional_call), so the
  float64 truth of check/tolerance.py is this Model on float64 copies of inputs and weights.
- the eager and torch.compile baselines time a Model of its own, `model(*inputs)`, as KernelBench
  times it, not the call by name.

Model stays in training mode, as in KernelBench's eval (BatchNorm uses the batch's statistics).
Every tensor the reference's forward creates is overwritten with 0xFF bytes (NaN in every
floating-point format) before it is released: a solution that returns torch.empty() and counts
on the allocator handing it the reference's freed result (a known KernelBench exploit) gets NaN.
"""

from __future__ import annotations

import ast
import inspect
import math
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.dependencies import dependency_fault
from kernel_opt.core.errors import KernelOptError, UsageError
from kernel_opt.run.events import one_line
from kernel_opt.run.memory import is_out_of_memory
from kernel_opt.solution.kernelbench import outline_problem, scaled_shapes, weight_argument_name
from kernel_opt.solution.outline import bound_names

WEIGHT_SEED = 42  # KernelBench's eval: set_seed(42) before get_init_inputs() and again before Model(...)
OUTPUT_NAME = "output"
# Sizes whose product is at most this are tried by a real run on the CPU, not on the meta device (meta_failure).
REAL_RUN_ELEMENTS = 1 << 16
_CHECKER_ARGUMENTS = ("seed", "device")  # setup()'s own parameters, never sizes


@dataclass(frozen=True)
class Arguments:
    """The names one size's calls use: forward's inputs, the weights (argument -> state_dict key), the outputs."""

    inputs: tuple[str, ...]
    weights: dict[str, str]
    outputs: tuple[str, ...]
    output_specs: tuple[tuple[tuple[int, ...], Any], ...]  # (shape, torch dtype) per output


_problems: dict[Path, KernelBenchProblem] = {}


def problem_for(path: Path) -> KernelBenchProblem:
    """The problem at `path`, loaded once per process (the reference and a ModelNew share its modules and models)."""
    resolved = Path(path).resolve()
    if resolved not in _problems:
        _problems[resolved] = KernelBenchProblem(resolved)
    return _problems[resolved]


class KernelBenchProblem:
    """One problem file: its executions per set of sizes, its Models, and the ref.py contract's functions."""

    def __init__(self, path: Path):
        self.path = path
        self.outline = outline_problem(path)
        self.source = path.read_text(encoding="utf-8", errors="replace")
        self._modules: dict[tuple, types.ModuleType] = {}
        self._models: dict[tuple, Any] = {}
        self._arguments: dict[tuple, Arguments] = {}  # per set of sizes

    # --- sizes and executions of the file ----------------------------------------------------------

    def sizes(self, dims: dict[str, Any]) -> dict[str, Any]:
        """The file's constants with those of `dims` that name one (other names, e.g. a kernel's BLOCK, dropped).

        A tensor is never a size: under a constant's name it is the weight of that name (a file may call
        both `scaling_factor`, as KernelBench's level 2 48_Conv3d_Scaling_Tanh_Multiply_Sigmoid does).
        """
        return {**self.outline.constants, **_size_values(dims, self._settable())}

    def overrides(self, dims: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
        """The constants `dims` changes, as a key: () for the file as written."""
        settable = self._settable()
        return tuple(sorted((name, value) for name, value in _size_values(dims, settable).items()
                            if value != settable[name]))

    def _settable(self) -> dict[str, Any]:
        """The constants a set of sizes may change: the file's sizes, and its tuple sizes (the interpreter's check)."""
        return {**self.outline.tuple_sizes, **self.outline.constants}

    def module(self, dims: dict[str, Any]) -> types.ModuleType:
        """The file executed with `dims` in place of its constants (once per distinct set)."""
        key = self.overrides(dims)
        if key not in self._modules:
            self._modules[key] = self._execute(dict(key), len(self._modules))
        return self._modules[key]

    def _execute(self, overrides: dict[str, Any], index: int) -> types.ModuleType:
        tree = ast.parse(self.source, filename=str(self.path))
        tree.body = _with_overrides(tree.body, overrides)
        ast.fix_missing_locations(tree)
        name = f"kernel_opt_problem_{abs(hash(str(self.path)))}_{index}"
        module = types.ModuleType(name)
        module.__file__ = str(self.path)
        sys.modules[name] = module  # dataclasses and pickling look a module up by name
        folder = str(self.path.parent)
        sys.path.insert(0, folder)
        try:
            exec(compile(tree, str(self.path), "exec"), module.__dict__)  # noqa: S102 - the user's problem file
        except Exception as error:
            missing = dependency_fault(error, f"problem file {self.path}")
            if missing is not None:
                raise missing from error
            sizes = f" with {overrides}" if overrides else ""
            raise UsageError(f"problem file {self.path} failed to run{sizes}: {one_line(error)}",
                             kind="import_error") from error
        finally:
            sys.path.remove(folder)
        return module

    # --- Model, inputs, argument names -------------------------------------------------------------

    def seeded_init_inputs(self, dims: dict[str, Any], device: str) -> list[Any]:
        """get_init_inputs() after torch.manual_seed(WEIGHT_SEED), tensors moved to `device` (KernelBench's order)."""
        import torch

        torch.manual_seed(WEIGHT_SEED)
        return [_to_device(value, device) for value in self._call(dims, "get_init_inputs")]

    def build_model(self, dims: dict[str, Any], device: str):
        """A new Model for these sizes, with KernelBench's weights: seeded init inputs, seeded construction."""
        import torch

        init_inputs = self.seeded_init_inputs(dims, device)
        torch.manual_seed(WEIGHT_SEED)
        try:
            model = self.module(dims).Model(*init_inputs).to(device)
        except KernelOptError:
            raise
        except Exception as error:
            _reraise_out_of_memory(error)
            raise UsageError(f"{self.path.name}: Model(*get_init_inputs()) raised {one_line(error)}",
                             kind="reference_error") from error
        for parameter in model.parameters():
            parameter.requires_grad_(False)  # no autograd graph on any call
        return model

    def model(self, dims: dict[str, Any], device: str):
        """The Model for these sizes on `device`, built once; its weights are never changed afterwards."""
        key = (self.overrides(dims), device_key(device))
        if key not in self._models:
            self._models[key] = self.build_model(dims, device)
        return self._models[key]

    def inputs(self, dims: dict[str, Any], seed: int, device: str) -> list[Any]:
        """get_inputs() after torch.manual_seed(seed), drawn on `device` (where it has no host-only step).

        Drawn on the host, a stock-size input (KernelBench's 47_Sum: 8.6 GB) took about 15 s per set on an
        H200 machine, and a check draws a dozen sets; on the GPU each takes milliseconds.
        """
        import torch

        target = torch.device(device)
        if target.type != "cpu":
            self.module(dims)  # the file itself runs outside the device context: its module-level tensors stay put
            torch.manual_seed(seed)
            try:
                with target:
                    return [_to_device(value, device) for value in self._call(dims, "get_inputs")]
            except UsageError as error:
                if error.kind != "reference_error":
                    raise
                # a step tied to the host (a CPU generator, numpy): draw there, as KernelBench does
        torch.manual_seed(seed)
        return [_to_device(value, device) for value in self._call(dims, "get_inputs")]

    def _call(self, dims: dict[str, Any], function: str) -> list[Any]:
        try:
            returned = getattr(self.module(dims), function)()
        except KernelOptError:
            raise
        except Exception as error:
            _reraise_out_of_memory(error)
            raise UsageError(f"{self.path.name}: {function}() raised {one_line(error)}",
                             kind="reference_error") from error
        if not isinstance(returned, (list, tuple)):
            raise UsageError(f"{self.path.name}: {function}() must return a list, got {type(returned).__name__}")
        return list(returned)

    def arguments(self, dims: dict[str, Any], device: str, inputs: list[Any] | None = None) -> Arguments:
        """The argument names at these sizes (outputs found by one forward on `inputs`, seed 0's by default).

        The same on every device: a float64 truth run on the host (check/truth.py) reuses the GPU's.
        """
        key = self.overrides(dims)
        if key not in self._arguments:
            model = self.model(dims, device)
            inputs = self.inputs(dims, 0, device) if inputs is None else inputs
            names = self._input_names(len(inputs))
            state_keys = list(model.state_dict())
            specs = self._output_specs(model, inputs)
            outputs = (OUTPUT_NAME,) if len(specs) == 1 else tuple(f"{OUTPUT_NAME}{i}" for i in range(len(specs)))
            self._check_names(names, state_keys, outputs)
            weights = {weight_argument_name(state_key): state_key for state_key in state_keys}
            self._arguments[key] = Arguments(names, weights, outputs, specs)
        return self._arguments[key]

    def row_arguments(self, dims: dict[str, Any]) -> tuple[str, ...]:
        """The forward's inputs at these sizes, whose rows the float64 truth may compute apart (after its probe):
        the weights never are. () before the sizes' arguments are known."""
        known = self._arguments.get(self.overrides(self.sizes(dims)))
        return () if known is None else known.inputs

    def _input_names(self, count: int) -> tuple[str, ...]:
        parameters = self.outline.forward_parameters
        if parameters is not None and len(parameters) >= count:
            return parameters[:count]
        return tuple(f"input{index}" for index in range(count))

    def _check_names(self, inputs: tuple[str, ...], state_keys: list[str], outputs: tuple[str, ...]) -> None:
        """Every name passed to a solution must mean one thing: a forward argument, a weight, an output or a size.

        A size named like a weight is the value that weight starts from (`self.scale = nn.Parameter(...scale)`):
        the solution gets the weight under that name, as tensors win over sizes everywhere.
        """
        meanings: dict[str, list[str]] = {}
        weights = {weight_argument_name(key) for key in state_keys}
        named = [("forward argument", name) for name in inputs] + [
            (f"weight ({key})", weight_argument_name(key)) for key in state_keys] + [
            ("output", name) for name in outputs] + [
            ("size", name) for name in self.outline.constants if name not in weights]
        for meaning, name in named:
            meanings.setdefault(name, []).append(meaning)
        clashes = {name: found for name, found in meanings.items() if len(found) > 1}
        if clashes:
            listed = "; ".join(f"{name!r} is a {' and a '.join(found)}" for name, found in clashes.items())
            raise UsageError(f"{self.path.name}: two things would be passed to the solution under one name ({listed})",
                             hint="rename the module constant or the forward argument; weights are passed as their "
                             "state_dict key with dots made underscores")

    def _output_specs(self, model, inputs: list[Any]) -> tuple[tuple[tuple[int, ...], Any], ...]:
        import torch

        state = {key: value.clone() for key, value in model.state_dict().items()}  # the Model's own stay untouched
        with torch.no_grad(), released_poisoned([*inputs, *state.values()]):
            try:
                returned = torch.func.functional_call(model, state, tuple(inputs))
            except Exception as error:
                _reraise_out_of_memory(error)
                raise UsageError(f"{self.path.name}: Model.forward raised {one_line(error)}",
                                 kind="reference_error") from error
            return tuple((tuple(item.shape), item.dtype) for item in _as_outputs(returned, self.path.name))

    # --- the ref.py contract -------------------------------------------------------------------------

    def setup(self, seed: int, device: str, dims: dict[str, Any]) -> dict[str, Any]:
        """The contract's setup(): inputs for this seed, the Model's weights, empty outputs."""
        import torch

        sizes = self.sizes(dims)
        model = self.model(sizes, device)
        inputs = self.inputs(sizes, seed, device)
        arguments = self.arguments(sizes, device, inputs)
        if len(inputs) != len(arguments.inputs):
            raise UsageError(f"{self.path.name}: get_inputs() returned {len(inputs)} values for seed {seed}, "
                             f"{len(arguments.inputs)} for seed 0")
        values: dict[str, Any] = dict(zip(arguments.inputs, inputs, strict=True))
        state = model.state_dict()
        values.update({argument: state[key].detach().clone() for argument, key in arguments.weights.items()})
        for name, (shape, dtype) in zip(arguments.outputs, arguments.output_specs, strict=True):
            values[name] = torch.empty(shape, dtype=dtype, device=device)
        return {"inputs": values, "outputs": list(arguments.outputs)}

    def setup_function(self) -> Callable[..., dict[str, Any]]:
        """setup(seed=0, device="cuda", **sizes) with every size as a named keyword (what default_dims reads)."""
        def setup(seed: int = 0, device: str = "cuda", **dims: Any) -> dict[str, Any]:
            return self.setup(seed, device, dims)

        keyword = inspect.Parameter.KEYWORD_ONLY
        # Tuple sizes are no --NAME=VALUE size (no default here, so no record names them), but the interpreter's
        # check may set them: a file that has one takes them as further keywords.
        more = [inspect.Parameter("tuple_sizes", inspect.Parameter.VAR_KEYWORD)] if self.outline.tuple_sizes else []
        setup.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("seed", keyword, default=0), inspect.Parameter("device", keyword, default="cuda")]
            + [inspect.Parameter(name, keyword, default=value) for name, value in self.outline.constants.items()
               if name not in _CHECKER_ARGUMENTS] + more)
        return setup

    def reference(self, **kwargs: Any) -> None:
        """The contract's reference(): forward on the weights and inputs it is given, written into its outputs."""
        import torch

        sizes = self.sizes(kwargs)
        device = _device_of(kwargs)
        arguments = self.arguments(sizes, device)
        model = self.model(sizes, device)
        state = {key: kwargs[argument] for argument, key in arguments.weights.items()}
        protected = [value for value in kwargs.values() if isinstance(value, torch.Tensor)]
        with torch.no_grad(), released_poisoned(protected):
            returned = torch.func.functional_call(model, state, tuple(kwargs[name] for name in arguments.inputs))
            for name, item in zip(arguments.outputs, _as_outputs(returned, self.path.name), strict=True):
                kwargs[name].copy_(item)

    def baseline(self, kwargs: dict[str, Any]) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        """What the benchmark times as eager and compiles: a Model of its own, called on the inputs."""
        sizes = self.sizes(kwargs)
        device = _device_of(kwargs)
        arguments = self.arguments(sizes, device)
        return self.build_model(sizes, device), tuple(kwargs[name] for name in arguments.inputs), {}

    def derived_shapes(self, base: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
        """The extra correctness shapes scaled from `base` (kernelbench.scaled_shapes), and what was done.

        A shape the Model rejects (checked on PyTorch's meta device: shapes only, no arithmetic)
        is dropped, with the reason in the notes.
        """
        sizes = {name: base.get(name, self.outline.constants[name]) for name in self.outline.input_sizes}
        sizes = {name: value for name, value in sizes.items() if isinstance(value, int) and value > 1}
        if not sizes:
            return [], [f"{self.path.name} has no SHAPES and no int constant > 1 shapes get_inputs()' tensors: "
                        "only its own sizes are checked"]
        shapes, notes = [], []
        for shape in scaled_shapes(sizes):
            failure = self.meta_failure({**self.sizes(base), **shape})
            if failure is None:
                shapes.append(shape)
            else:
                notes.append(f"derived shape {_text(shape)} dropped: the Model rejects it ({failure})")
        notes.insert(0, f"{self.path.name} has no SHAPES: extra shapes scale its input sizes {_text(sizes)} "
                        f"down (/2, /4, /4 made odd): {'; '.join(_text(shape) for shape in shapes) or 'none left'}")
        return shapes, notes

    def meta_failure(self, dims: dict[str, Any]) -> str | None:
        """Why the Model cannot run at these sizes, or None when it can or that cannot be told.

        On PyTorch's meta device (shapes only), except where the sizes multiply to at most
        REAL_RUN_ELEMENTS: there a real run on the CPU costs microseconds, while the meta device's
        decompositions import torch._dynamo on first use (2 s of a checking process's start).
        """
        import torch

        spread = (value for item in dims.values() for value in (item if isinstance(item, (tuple, list)) else [item]))
        sizes = [value for value in spread if isinstance(value, int) and not isinstance(value, bool)]  # a tuple too
        device = "cpu" if all(value > 0 for value in sizes) and math.prod(sizes) <= REAL_RUN_ELEMENTS else "meta"
        try:
            module = self.module(dims)
            with torch.device(device), torch.no_grad():
                model = module.Model(*module.get_init_inputs())
                model(*module.get_inputs())
        except NotImplementedError:  # an operation without a meta kernel: cannot tell
            return None
        except Exception as error:
            text = error.message if isinstance(error, KernelOptError) else one_line(error)
            if "meta" in text.lower() or "cuda" in text.lower():  # data-dependent, or device-bound: cannot tell
                return None
            return text[:300]
        return None


def _with_overrides(body: list[ast.stmt], overrides: dict[str, Any]) -> list[ast.stmt]:
    """`body` with `NAME = value` inserted after every statement that binds an overridden NAME."""
    result: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, (ast.If, ast.Try, ast.With)):
            for block in ("body", "orelse", "finalbody"):
                if hasattr(statement, block):
                    setattr(statement, block, _with_overrides(getattr(statement, block), overrides))
        result.append(statement)
        for name in sorted(bound_names(statement) & set(overrides)):
            assignment = ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Constant(overrides[name]))
            result.append(ast.copy_location(assignment, statement))
    return result


def _reraise_out_of_memory(error: Exception) -> None:
    """An allocation that failed is this machine's (run/memory.py, exit 4), not the problem file's (exit 2)."""
    if is_out_of_memory(error):
        raise error


def _to_device(value: Any, device: str) -> Any:
    import torch

    return value.to(device) if isinstance(value, torch.Tensor) else value


def device_key(device: Any) -> str:
    """One name per device: setup() is handed "cuda", reference() finds "cuda:0" on its tensors.

    Keyed apart, the Model was built a second time inside the first reference() call, that is
    inside the benchmark's FLOP count (its random initialisers and shape-finding forward counted).
    """
    import torch

    resolved = torch.device(device)
    if resolved.type == "cuda" and resolved.index is None:
        resolved = torch.device("cuda", torch.cuda.current_device())
    return str(resolved)


def _size_values(dims: dict[str, Any], constants: dict[str, Any]) -> dict[str, Any]:
    """The values in `dims` that set one of the file's constants (a tensor never does); a tuple size given as a list
    (a record read from JSON) is a tuple again."""
    import torch

    return {name: tuple(value) if isinstance(value, list) and isinstance(constants[name], tuple) else value
            for name, value in dims.items() if name in constants and not isinstance(value, torch.Tensor)}


def _device_of(kwargs: dict[str, Any]) -> str:
    import torch

    return next((str(value.device) for value in kwargs.values() if isinstance(value, torch.Tensor)), "cpu")


def _as_outputs(returned: Any, where: str) -> list[Any]:
    import torch

    items = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    if not items or not all(isinstance(item, torch.Tensor) for item in items):
        raise UsageError(f"{where}: Model.forward must return a tensor or a tuple of tensors, "
                         f"got {type(returned).__name__}")
    return items


def _text(dims: dict[str, Any]) -> str:
    return ", ".join(f"{name}={value}" for name, value in dims.items())


@contextmanager
def released_poisoned(protected: list[Any]) -> Iterator[None]:
    """Remember every tensor the ops inside create; afterwards fill their memory with 0xFF bytes (NaN in every
    float format, -1 in integers), except memory shared with `protected` (inputs, weights, outputs).

    So nothing the reference computed is left readable in the allocator's free blocks.
    """
    import torch

    mode = _remembering_mode()()
    keep = {tensor.untyped_storage().data_ptr() for tensor in protected if isinstance(tensor, torch.Tensor)}
    try:
        with mode:
            yield
    finally:
        for tensor in mode.created:
            storage = tensor.untyped_storage()
            if tensor.is_meta or storage.nbytes() == 0 or storage.data_ptr() in keep:
                continue
            keep.add(storage.data_ptr())
            storage.fill_(0xFF)
        mode.created.clear()


_mode_class: type | None = None


def _remembering_mode() -> type:
    """A TorchDispatchMode that keeps every tensor an op returns (defined on first use: it needs torch)."""
    global _mode_class
    if _mode_class is None:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves

        class RememberCreated(TorchDispatchMode):
            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                # Left as torch defines it, the mode's dispatch is wrapped to keep dynamo out of it, and the wrapper
                # imports torch._dynamo on the first op: 2 s of every checking process's start, for a mode that
                # never runs under torch.compile.
                return False

            def __init__(self) -> None:
                super().__init__()
                self.created: list[torch.Tensor] = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                result = func(*args, **(kwargs or {}))
                self.created.extend(item for item in tree_leaves(result) if isinstance(item, torch.Tensor))
                return result

        _mode_class = RememberCreated
    return _mode_class
