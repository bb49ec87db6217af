"""Problem sizes on the command line (`--NAME=VALUE`), checked against ref.py before any child runs.

A misspelt size would otherwise be dropped silently (`--N=77` against `setup(n=...)` checks
the default size and passes), and a value that is not a number would reach setup() and be
blamed on the solution. correctness_check, benchmark, ncu_profile, static_analysis and
`workspace init` all call `check_dims`, in the parent, from ref.py's syntax tree
(solution/outline.py): no user code runs and torch is not needed.

Names a size may have: the parameters of ref.py's setup() (else the solution's), the keys of
SHAPES, the parameters of flops() and bytes(), keyword parameters of reference(), and what the
solution's entry point takes by name (Triton run_kernel's keyword defaults; CUDA solve's
scalars, matched ignoring case when no setup() exists, as the binding does). A setup() with
**kwargs accepts any name. A KernelBench problem file takes its scalar module constants
(solution/kernelbench.py), as if they were the parameters of a setup().
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import KernelOptError, UsageError
from kernel_opt.solution import kernelbench, registry
from kernel_opt.solution.outline import (
    DimParameter,
    FunctionOutline,
    ModuleOutline,
    SolutionDims,
    kind_of,
    outline_module,
)

# Passed by the checker itself, never problem sizes (solution/inputs.py's build_instance).
CHECKER_ARGUMENTS = frozenset({"seed", "device"})
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}
_KIND_WORDS = {"int": "an integer", "float": "a number", "bool": "true or false", "text": "text"}


def outline_reference(reference: Path) -> ModuleOutline:
    """ref.py's outline; a usage error when it is missing, not valid Python, or defines no reference()
    (a KernelBench problem file, with Model, get_inputs and get_init_inputs, needs none)."""
    outline = outline_module(reference, "reference")
    if not outline.defines("reference") and not kernelbench.is_problem(outline):
        raise UsageError(
            f"{reference} has no reference(**kwargs) function",
            hint="ref.py must define reference(**kwargs) that writes the expected outputs into the tensors it is "
            "given, or be a KernelBench problem (class Model, get_inputs(), get_init_inputs())",
        )
    return outline


def solution_dims(solution: Path | None, backend: str = "auto") -> SolutionDims:
    """What the solution's backend reads from the file; nothing when it cannot tell (the run reports that)."""
    if solution is None or not solution.is_file():
        return SolutionDims()
    try:
        return registry.get(registry.detect(solution, backend)).dim_parameters(solution)
    except KernelOptError:
        return SolutionDims()


class _Names:
    """Every name a size may have, first source first (setup's kind and default win)."""

    def __init__(self) -> None:
        self.parameters: dict[str, DimParameter] = {}

    def add(self, parameter: DimParameter) -> None:
        if parameter.name not in CHECKER_ARGUMENTS:
            self.parameters.setdefault(parameter.name, parameter)


def _shape_parameters(shapes: list[dict[str, Any]] | None) -> list[DimParameter]:
    values: dict[str, list[Any]] = {}
    for shape in shapes or []:
        for key, value in shape.items():
            values.setdefault(str(key), []).append(value)
    parameters = []
    for name, seen in values.items():
        kinds = {kind_of(value) for value in seen}
        kind = kinds.pop() if len(kinds) == 1 else ("float" if kinds <= {"int", "float"} else None)
        parameters.append(DimParameter(name, kind))
    return parameters


def _known_names(outline: ModuleOutline, setup: FunctionOutline | None, solution: SolutionDims) -> _Names:
    names = _Names()
    for parameter in setup.parameters if setup else ():
        names.add(parameter)
    for parameter in _shape_parameters(outline.shapes):
        names.add(parameter)
    for function in ("flops", "bytes"):
        for parameter in outline.functions[function].parameters if function in outline.functions else ():
            names.add(parameter)
    for parameter in outline.functions["reference"].parameters if "reference" in outline.functions else ():
        if parameter.has_default:
            names.add(parameter)
    for parameter in solution.names:
        names.add(parameter)
    return names


def _suggestions(name: str, candidates: list[str]) -> list[str]:
    same_letters = [candidate for candidate in candidates if candidate.lower() == name.lower()]
    folded = {candidate.lower(): candidate for candidate in candidates}
    close = [folded[match] for match in difflib.get_close_matches(name.lower(), list(folded), n=3, cutoff=0.6)]
    return list(dict.fromkeys(same_letters + close))


def _unknown(name: str, value: Any, where: str, primary: list[str], known: list[str]) -> UsageError:
    suggestions = _suggestions(name, primary) or _suggestions(name, known)
    did_you_mean = f"did you mean {' or '.join('--' + s for s in suggestions)}? " if suggestions else ""
    takes = f"the sizes it takes: {', '.join(primary)}" if primary else f"the names it knows: {', '.join(known)}"
    return UsageError(f"unknown problem size --{name}={value}: {where} takes no {name!r}",
                      hint=f"{did_you_mean}{takes}")


def _check_tensor_size(name: str, value: Any, parameter: DimParameter, where: str) -> None:
    """A size that shapes a tensor is a positive integer: anything else would fail in setup(), blamed on no one."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return
    example = parameter.default if parameter.kind == "int" and parameter.default >= 1 else 4096
    raise UsageError(f"--{name}={value}: {name} is a tensor size in {where} and takes a positive integer",
                     hint=f"write it as --{name}=N with N >= 1, e.g. --{name}={example}")


def _check_choice(name: str, value: Any, parameter: DimParameter, outline: ModuleOutline, where: str) -> None:
    """A text size whose default is one of a named set of strings in ref.py (`DTYPES`'s keys) takes one of them."""
    if parameter.kind != "text" or not parameter.has_default:
        return
    sets = {set_name: strings for set_name, strings in outline.string_sets.items() if parameter.default in strings}
    if not sets:
        return
    allowed = frozenset().union(*sets.values(), (shape[name] for shape in outline.shapes or [] if name in shape))
    if value not in allowed:
        raise UsageError(f"--{name}={value}: {where} takes {name} as one of {', '.join(sorted(allowed))} "
                         f"(the values of {' and '.join(sorted(sets))} in {outline.path.name})",
                         hint=f"pass one of them, e.g. --{name}={parameter.default}")


def coerce(name: str, value: Any, parameter: DimParameter, where: str) -> Any:
    """The value as its kind wants it ('1e6' for an integer size is 1000000); a usage error naming the flag."""
    kind = parameter.kind
    if kind in ("int", "float"):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value) if kind == "int" and isinstance(value, float) and value.is_integer() else value
    elif kind == "bool":
        text = str(value).strip().lower()
        if text in _TRUE | _FALSE:
            return text in _TRUE
    else:
        return value  # text, or nothing says: setup() receives it as typed
    default = f" (default {parameter.default!r})" if parameter.has_default else ""
    example = f", e.g. --{name}={parameter.default!r}" if parameter.has_default else ""
    raise UsageError(f"--{name}={value}: {name} takes {_KIND_WORDS[kind]}{default} in {where}",
                     hint=f"write it as --{name}=VALUE{example}")


def check_dims(reference: Path, dims: dict[str, Any], solution: Path | None = None,
               backend: str = "auto") -> dict[str, Any]:
    """The command line's sizes, checked and typed against ref.py (and the solution); a usage error otherwise.

    Also refuses a ref.py that is missing, not valid Python or without reference() (exit 2), so a
    command fails on it before starting anything.
    """
    outline = outline_reference(reference)
    from_solution = solution_dims(solution, backend)
    problem = kernelbench.setup_outline(outline) if kernelbench.is_problem(outline) else None
    setup = problem or outline.functions.get("setup") or from_solution.setup
    where = f"{reference.name}'s setup()" if "setup" in outline.functions else (
        f"{solution.name}'s setup()" if setup is not None and solution is not None else f"{reference.name}")
    if problem is not None:
        where = f"the KernelBench problem {reference.name}"
    names = _known_names(outline, setup, from_solution)
    known = sorted(names.parameters)
    primary = [p.name for p in setup.parameters if p.name not in CHECKER_ARGUMENTS] if setup else (
        [p.name for p in _shape_parameters(outline.shapes)] + [p.name for p in from_solution.names])
    # Without any setup() and nothing the solution names, nothing says which names exist: the run will tell.
    validate_names = (setup is not None and not setup.takes_any) or (setup is None and bool(from_solution.names))
    folded = {key.lower(): key for key in names.parameters} if setup is None and from_solution.case_insensitive else {}
    checked: dict[str, Any] = {}
    for name, value in dims.items():
        parameter = names.parameters.get(name) or names.parameters.get(folded.get(name.lower(), ""))
        if parameter is None:
            if validate_names:
                raise _unknown(name, value, where, primary, known)
            checked[name] = value
            continue
        checked[name] = coerce(name, value, parameter, where)
        if setup is not None and parameter.name in setup.tensor_sizes:
            _check_tensor_size(name, checked[name], parameter, where)
        _check_choice(name, checked[name], parameter, outline, where)
    missing = [p.name for p in (setup.parameters if setup else ())
               if not p.has_default and p.name not in CHECKER_ARGUMENTS and p.name not in dims]
    if missing:
        raise UsageError(f"{where} has no default for {', '.join(missing)}",
                         hint="pass " + " ".join(f"--{name}=VALUE" for name in missing))
    return checked
