"""What a Python file (ref.py, a Triton solution) defines, read from its syntax tree without running it.

The parent process checks a command line against ref.py before any child starts: which
problem sizes setup() takes, which SHAPES exist, whether reference() is there at all.
Importing ref.py would run user code and import torch, seconds each time and impossible
on a machine without torch; its syntax tree says enough.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import UsageError

# Kinds of a problem size, from its default value (or the SHAPES values): what a typed value must parse as.
KINDS = ("int", "float", "bool", "text")


def kind_of(value: Any) -> str | None:
    """'int' for 4096, 'float' for 1.0, 'bool' for True, 'text' for 'float32', None for anything else."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "text"
    return None


@dataclass(frozen=True)
class DimParameter:
    """One name a problem size may have, with its kind and default where the source says."""

    name: str
    kind: str | None = None  # one of KINDS, or None where nothing says
    has_default: bool = False
    default: Any = None


@dataclass(frozen=True)
class FunctionOutline:
    """A top-level function's named parameters, and whether it takes **kwargs.

    `tensor_sizes` are the parameters a tensor factory in its body takes as a shape (`torch.randn(n, ...)`,
    through local variables too): a value there must be a positive integer, or torch refuses it
    while the inputs are built.
    """

    name: str
    parameters: tuple[DimParameter, ...] = ()
    takes_any: bool = False
    tensor_sizes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class SolutionDims:
    """What a solution file says about problem sizes (Backend.dim_parameters).

    `setup` is the solution's own setup(), used when ref.py has none; `names` are the sizes its
    entry point takes by name (Triton run_kernel's keyword defaults, CUDA solve's scalars).
    """

    setup: FunctionOutline | None = None
    names: tuple[DimParameter, ...] = ()
    case_insensitive: bool = False  # CUDA binds --n=... to solve(int N)


@dataclass
class ModuleOutline:
    path: Path
    functions: dict[str, FunctionOutline] = field(default_factory=dict)
    bound_names: set[str] = field(default_factory=set)  # every top-level name a def, assignment or import binds
    star_import: bool = False  # `from x import *`: any name may be bound
    shapes: list[dict[str, Any]] | None = None  # SHAPES when it is a literal list of dicts
    # Top-level names bound to a constant expression, with their values (a KernelBench problem's sizes).
    constants: dict[str, Any] = field(default_factory=dict)
    # Top-level names bound to a set of strings: a list, tuple or set of them, or a dict's keys
    # (`DTYPES = {"float32": torch.float32, ...}`): the values a text size may take.
    string_sets: dict[str, frozenset[str]] = field(default_factory=dict)

    def defines(self, name: str) -> bool:
        return self.star_import or name in self.bound_names


_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}


def constant_value(node: ast.AST, constants: dict[str, Any]) -> Any:
    """The value of a constant expression (4096, 1 << 20, 132 * 8 * BLOCK, -1.5, 'float32'); ValueError otherwise."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = constant_value(node.operand, constants)
        if isinstance(value, (int, float)):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = constant_value(node.left, constants), constant_value(node.right, constants)
        if isinstance(left, (int, float)) and isinstance(right, (int, float)) and not (
                isinstance(node.op, ast.Pow) and abs(right) > 64):
            try:
                return _OPERATORS[type(node.op)](left, right)
            except (ArithmeticError, ValueError, TypeError):
                pass
    if isinstance(node, (ast.List, ast.Tuple)):
        return [constant_value(item, constants) for item in node.elts]
    if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
        return {constant_value(key, constants): constant_value(value, constants)
                for key, value in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        if all(keyword.arg is not None for keyword in node.keywords):
            return {keyword.arg: constant_value(keyword.value, constants) for keyword in node.keywords}
    raise ValueError("not a constant expression")


_SHAPE_FACTORIES = frozenset({"rand", "randn", "zeros", "ones", "empty", "empty_strided", "randperm", "arange"})
_LAST_POSITIONAL_IS_SHAPE = frozenset({"randint"})  # randint(high, size) / randint(low, high, size)
_FIRST_POSITIONAL_IS_SHAPE = frozenset({"full"})  # full(size, fill_value)


def shape_arguments(call: ast.Call) -> list[ast.AST]:
    """The arguments of a tensor factory call that hold its shape ([] for any other call)."""
    function = call.func
    name = function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) \
        else None
    sized = [keyword.value for keyword in call.keywords if keyword.arg == "size"]
    if name in _SHAPE_FACTORIES:
        return list(call.args) + sized
    if name in _LAST_POSITIONAL_IS_SHAPE and len(call.args) >= 2:
        return call.args[-1:] + sized
    if name in _FIRST_POSITIONAL_IS_SHAPE:
        return call.args[:1] + sized
    return sized  # torch.normal(mean, std, size=...) and other factories that take size= only


def names_in(node: ast.AST) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _tensor_sizes(node: ast.FunctionDef | ast.AsyncFunctionDef, parameters: set[str]) -> frozenset[str]:
    """The parameters a tensor factory in the body takes as its shape, followed through local assignments."""
    local = {target.id: statement.value for statement in ast.walk(node) if isinstance(statement, ast.Assign)
             for target in statement.targets if isinstance(target, ast.Name)}
    pending = [name for call in ast.walk(node) if isinstance(call, ast.Call)
               for argument in shape_arguments(call) for name in names_in(argument)]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name not in seen:
            seen.add(name)
            if name in local:
                pending.extend(names_in(local[name]))
    return frozenset(seen & parameters)


def _string_set(node: ast.AST) -> frozenset[str] | None:
    """The strings of a literal list, tuple or set of strings, or of a dict's literal string keys."""
    items = node.keys if isinstance(node, ast.Dict) else node.elts if isinstance(
        node, (ast.List, ast.Tuple, ast.Set)) else None
    if not items or not all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in items):
        return None
    return frozenset(item.value for item in items)


def _function_outline(node: ast.FunctionDef | ast.AsyncFunctionDef, constants: dict[str, Any]) -> FunctionOutline:
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.AST | None] = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    pairs = list(zip(positional, defaults, strict=True)) + list(
        zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True))
    parameters = []
    for argument, default in pairs:
        if default is None:
            parameters.append(DimParameter(argument.arg))
            continue
        try:
            value = constant_value(default, constants)
        except ValueError:  # a default computed at import time: present, of unknown kind
            parameters.append(DimParameter(argument.arg, has_default=True))
            continue
        parameters.append(DimParameter(argument.arg, kind_of(value), has_default=True, default=value))
    return FunctionOutline(node.name, tuple(parameters), takes_any=arguments.kwarg is not None,
                           tensor_sizes=_tensor_sizes(node, {parameter.name for parameter in parameters}))


def _bind_targets(target: ast.AST, names: set[str]) -> None:
    if isinstance(target, ast.Name):
        names.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for item in target.elts:
            _bind_targets(item, names)


def bound_names(statement: ast.stmt) -> set[str]:
    """The names an assignment statement binds, those of tuple targets included; none for other statements."""
    targets = statement.targets if isinstance(statement, ast.Assign) else (
        [statement.target] if isinstance(statement, ast.AnnAssign) else [])
    names: set[str] = set()
    for target in targets:
        _bind_targets(target, names)
    return names


def unpacked(target: ast.AST, value: ast.AST | None) -> list[tuple[str, ast.AST]]:
    """(name, value) of each name a tuple assignment binds element by element (`depth, height, width = 16, 32, 32`);
    [] for any other assignment."""
    if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
            and len(target.elts) == len(value.elts)):
        return []
    return [(name.id, element) for name, element in zip(target.elts, value.elts, strict=True)
            if isinstance(name, ast.Name)]


def _assignment(statement: ast.Assign | ast.AnnAssign, outline: ModuleOutline, constants: dict[str, Any]) -> None:
    """A top-level assignment: the names it binds, and the constants (and string sets) whose values it writes."""
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    for target in targets:
        _bind_targets(target, outline.bound_names)
        if isinstance(target, ast.Name) and statement.value is not None:
            strings = _string_set(statement.value)
            if strings is not None:
                outline.string_sets[target.id] = strings
        named = [(target.id, statement.value)] if isinstance(target, ast.Name) and statement.value is not None else []
        for name, value in named + unpacked(target, statement.value):  # depth, height, width = 16, 32, 32
            try:
                constants[name] = constant_value(value, constants)
            except ValueError:
                constants.pop(name, None)


def _walk_top_level(body: list[ast.stmt], outline: ModuleOutline, constants: dict[str, Any]) -> None:
    """Top-level statements, and those inside top-level if/try/with blocks (`try: import x` patterns)."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            outline.functions[statement.name] = _function_outline(statement, constants)
            outline.bound_names.add(statement.name)
        elif isinstance(statement, ast.ClassDef):
            outline.bound_names.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                if alias.name == "*":
                    outline.star_import = True
                else:
                    outline.bound_names.add(alias.asname or alias.name.partition(".")[0])
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            _assignment(statement, outline, constants)
        elif isinstance(statement, (ast.If, ast.Try, ast.With)):
            for block in (statement.body, getattr(statement, "orelse", []), getattr(statement, "finalbody", [])):
                _walk_top_level(block, outline, constants)
            for handler in getattr(statement, "handlers", []):
                _walk_top_level(handler.body, outline, constants)


def outline_module(path: Path, role: str = "reference") -> ModuleOutline:
    """Read a Python file's top-level definitions; a usage error when it is missing or not valid Python."""
    if not path.is_file():
        raise UsageError(f"{role} file not found: {path}")
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except SyntaxError as error:
        raise UsageError(f"{role} file {path} is not valid Python (line {error.lineno}: {error.msg})") from None
    outline = ModuleOutline(path)
    _walk_top_level(tree.body, outline, outline.constants)
    shapes = outline.constants.get("SHAPES")
    if isinstance(shapes, list) and all(isinstance(shape, dict) for shape in shapes):
        outline.shapes = shapes
    return outline
