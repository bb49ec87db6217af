"""KernelBench problem files read from their syntax tree: what makes one, its sizes, and how they scale down.

A KernelBench problem (ScalingIntelligence/KernelBench) is a .py with `class Model(nn.Module)`,
`get_inputs()` (the tensors its forward takes) and `get_init_inputs()` (its constructor's
arguments), with the sizes as module constants (`batch_size = 16`, `dim = 16384`). The tools take
such a file wherever they take a ref.py: solution/kernelbench_problem.py runs it as the same
Reference. This module is the parent's side: it reads the file without running it (no torch).

Sizes: every scalar module constant (int, float, bool or text) is a problem size that
`--NAME=VALUE` overrides; constants computed from it (`bias_shape = (out_channels, 1, 1)`)
follow, because the file is executed again with the new value in place. The names that mean
something in the ref.py contract (atol, rtol, allow_tf32, SHAPES) are not sizes.

Extra correctness shapes, for a file without SHAPES, scale the *input sizes* down: the int
constants > 1 that the shapes of get_inputs()'s tensors depend on. A name counts when it appears
in a shape argument of a tensor factory (torch.rand, randn, zeros, ones, empty, full's size,
randint's size, ...), followed through get_inputs' local variables and through constants computed
from other constants, down to the constants written as numbers. Constants that shape no input (a
reduction dim, eps, a kernel size, out_channels, a class count used only as randint's bound) are
left alone. Three shapes: every input size divided by 2, by 4 (integer division, at least 1), and
the /4 sizes made odd (+1 where even), so a kernel's tail handling runs too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.solution.outline import (
    DimParameter,
    FunctionOutline,
    ModuleOutline,
    kind_of,
    names_in,
    outline_module,
    shape_arguments,
    unpacked,
)

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
# Module attributes that carry the ref.py contract's meaning in a problem file too: never sizes.
CONTRACT_NAMES = frozenset({"atol", "rtol", "allow_tf32", "SHAPES"})
SCALE_DIVISORS = (2, 4)
# Tensor factories whose positional arguments (or `size=`) are a shape; the others name where the shape is.


def is_problem(outline: ModuleOutline) -> bool:
    """Model, get_inputs and get_init_inputs defined at top level, and no reference(): a KernelBench problem."""
    functions = outline.functions
    return ("Model" in outline.bound_names and "get_inputs" in functions and "get_init_inputs" in functions
            and "reference" not in outline.bound_names)


def is_problem_file(path: Path) -> bool:
    """Whether the file at `path` is a KernelBench problem (False when it cannot be read or parsed)."""
    try:
        return is_problem(outline_module(path))
    except UsageError:
        return False


def size_constants(outline: ModuleOutline) -> dict[str, Any]:
    """The scalar module constants a `--NAME=VALUE` may override, in file order."""
    return {name: value for name, value in outline.constants.items()
            if name not in CONTRACT_NAMES and kind_of(value) is not None}


def setup_outline(outline: ModuleOutline) -> FunctionOutline:
    """The problem's sizes as the parameters of a setup() would be: what solution/dims.py checks the CLI against."""
    parameters = tuple(DimParameter(name, kind_of(value), has_default=True, default=value)
                       for name, value in size_constants(outline).items())
    tree = ast.parse(outline.path.read_text(encoding="utf-8", errors="replace"), filename=str(outline.path))
    return FunctionOutline("setup", parameters, takes_any=False,
                           tensor_sizes=frozenset(_input_sizes(tree, outline.constants)))


@dataclass(frozen=True)
class ProblemOutline:
    """What a problem file says about its sizes and its forward, read from the syntax tree."""

    path: Path
    constants: dict[str, Any]  # size_constants(): name -> value from the file
    input_sizes: tuple[str, ...]  # the constants the extra shapes scale (module docstring)
    shape_sizes: tuple[str, ...]  # those and the ones get_init_inputs() passes: every size a tensor's shape uses
    forward_parameters: tuple[str, ...] | None  # Model.forward's parameters after self; None with *args
    # Sizes written as a tuple of ints that get_inputs() unpacks into a shape (`input_shape = (32768,)`): not
    # --NAME=VALUE sizes, but the CPU interpreter's check may shrink them (solution/interpreter_sizes.py).
    tuple_sizes: dict[str, tuple[int, ...]] = field(default_factory=dict)


def outline_problem(path: Path) -> ProblemOutline:
    """Read a KernelBench problem's outline; a usage error when the file is not one."""
    outline = outline_module(path, "reference")
    if not is_problem(outline):
        missing = [name for name in REQUIRED_NAMES if name not in outline.bound_names]
        raise UsageError(f"{path} is not a KernelBench problem (it lacks {', '.join(missing) or 'nothing'}"
                         f"{'' if 'reference' not in outline.bound_names else '; it defines reference()'})")
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    constants = size_constants(outline)
    sizes = _input_sizes(tree, outline.constants)
    shaping = sizes | _init_sizes(tree, outline.constants)
    return ProblemOutline(path, constants, tuple(name for name in constants if name in sizes),
                          tuple(name for name in constants if name in shaping), _forward_parameters(tree),
                          _tuple_sizes(tree, outline.constants))


def _forward_parameters(tree: ast.Module) -> tuple[str, ...] | None:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    if item.args.vararg is not None:
                        return None
                    return tuple(argument.arg for argument in [*item.args.posonlyargs, *item.args.args][1:])
    return None


def _module_assignments(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level `NAME = expression` (the last one wins, as at run time); chained targets share the value."""
    assigned: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = node.value
                assigned.update(unpacked(target, node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            assigned[node.target.id] = node.value
    return assigned


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name), None)


def _input_sizes(tree: ast.Module, constants: dict[str, Any]) -> set[str]:
    """The int constants > 1, written as numbers, that get_inputs()'s tensor shapes depend on."""
    get_inputs = _function(tree, "get_inputs")
    if get_inputs is None:
        return set()
    return _root_sizes(tree, constants, get_inputs, [name for node in ast.walk(get_inputs) if isinstance(node, ast.Call)
                                                     for argument in shape_arguments(node)
                                                     for name in names_in(argument)])


def _tuple_sizes(tree: ast.Module, constants: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The module constants written as a tuple of ints > 0 that get_inputs() reads (input_shape = (32768,))."""
    get_inputs = _function(tree, "get_inputs")
    if get_inputs is None:
        return {}
    read = names_in(get_inputs)
    return {name: tuple(value) for name, value in constants.items()
            if name in read and isinstance(value, (list, tuple)) and value
            and all(isinstance(item, int) and not isinstance(item, bool) and item > 0 for item in value)}


def _init_sizes(tree: ast.Module, constants: dict[str, Any]) -> set[str]:
    """The int constants > 1, written as numbers, that get_init_inputs() passes to the Model (out_features: a
    weight's and an output's size)."""
    get_init_inputs = _function(tree, "get_init_inputs")
    if get_init_inputs is None:
        return set()
    return _root_sizes(tree, constants, get_init_inputs, [name for node in ast.walk(get_init_inputs)
                                                          if isinstance(node, ast.Return) and node.value is not None
                                                          for name in names_in(node.value)])


def _root_sizes(tree: ast.Module, constants: dict[str, Any], function: ast.FunctionDef, pending: list[str]) -> set[str]:
    """The int constants > 1 written as numbers that the names in `pending`, read inside `function`, come from."""
    local = {target.id: node.value for node in ast.walk(function) if isinstance(node, ast.Assign)
             for target in node.targets if isinstance(target, ast.Name)}
    module = _module_assignments(tree)
    seen: set[str] = set()
    found: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        expression = local.get(name) or module.get(name)
        if expression is None:
            continue
        depends_on = names_in(expression)
        if not depends_on and name not in local:  # a constant written as a number: a root size
            value = constants.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 1:
                found.add(name)
        pending.extend(depends_on)
    return found


def scaled_shapes(sizes: dict[str, int]) -> list[dict[str, int]]:
    """The extra correctness shapes: `sizes` divided by 2, by 4, and the /4 sizes made odd (module docstring)."""
    if not sizes:
        return []
    shapes = [{name: max(1, value // divisor) for name, value in sizes.items()} for divisor in SCALE_DIVISORS]
    shapes.append({name: value | 1 for name, value in shapes[-1].items()})
    unique: list[dict[str, int]] = []
    for shape in shapes:
        if shape != sizes and shape not in unique:
            unique.append(shape)
    return unique


def weight_argument_name(state_name: str) -> str:
    """The name a Model weight or buffer is passed by: its state_dict key with dots made underscores.

    `conv.weight` -> `conv_weight`, `bn.running_mean` -> `bn_running_mean`, `layers.0.bias` ->
    `layers_0_bias`: a valid C and Python identifier, so solve(const float* conv_weight, ...) and
    run_kernel(conv_weight=...) bind it like any input.
    """
    return state_name.replace(".", "_")
