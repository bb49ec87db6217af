"""Parse the `extern "C" void solve(...)` entry point of a CUDA solution.

The parameter list decides how tensors and sizes bind to the call, so it must read the
signatures people really write: qualifiers (`const`, `__restrict__`), either pointer
spacing, multi-line lists, comments, CUDA's half/bfloat16 spellings, vector types, and an
optional trailing `cudaStream_t`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from kernel_opt.core.errors import SolutionError

# C type spelling -> (torch dtype name, elements per value). Vector types such as float4
# bind to a tensor of their element type; the tensor's length counts scalar elements.
POINTER_TYPES: dict[str, tuple[str, int]] = {
    "float": ("float32", 1),
    "float2": ("float32", 2),
    "float4": ("float32", 4),
    "double": ("float64", 1),
    "double2": ("float64", 2),
    "half": ("float16", 1),
    "__half": ("float16", 1),
    "half2": ("float16", 2),
    "__half2": ("float16", 2),
    "__nv_bfloat16": ("bfloat16", 1),
    "nv_bfloat16": ("bfloat16", 1),
    "__nv_bfloat162": ("bfloat16", 2),
    "nv_bfloat162": ("bfloat16", 2),
    "int8_t": ("int8", 1),
    "signed char": ("int8", 1),
    "char": ("int8", 1),
    "uint8_t": ("uint8", 1),
    "unsigned char": ("uint8", 1),
    "bool": ("bool", 1),
    "int16_t": ("int16", 1),
    "short": ("int16", 1),
    "int": ("int32", 1),
    "int32_t": ("int32", 1),
    "int4": ("int32", 4),
    "unsigned": ("uint32", 1),
    "unsigned int": ("uint32", 1),
    "uint32_t": ("uint32", 1),
    "int64_t": ("int64", 1),
    "long": ("int64", 1),
    "long long": ("int64", 1),
    "long int": ("int64", 1),
    "long long int": ("int64", 1),
    "uint64_t": ("uint64", 1),
    "unsigned long": ("uint64", 1),
    "unsigned long long": ("uint64", 1),
    "size_t": ("uint64", 1),
    "void": ("void", 1),
}

# Scalar C type -> (ctypes name, python kind). Only by-value scalars people pass as sizes,
# flags and coefficients.
SCALAR_TYPES: dict[str, tuple[str, str]] = {
    "int": ("c_int32", "int"),
    "int32_t": ("c_int32", "int"),
    "unsigned": ("c_uint32", "int"),
    "unsigned int": ("c_uint32", "int"),
    "uint32_t": ("c_uint32", "int"),
    "int64_t": ("c_int64", "int"),
    "long": ("c_int64", "int"),
    "long int": ("c_int64", "int"),
    "long long": ("c_int64", "int"),
    "long long int": ("c_int64", "int"),
    "uint64_t": ("c_uint64", "int"),
    "unsigned long": ("c_uint64", "int"),
    "unsigned long long": ("c_uint64", "int"),
    "size_t": ("c_size_t", "int"),
    "short": ("c_int16", "int"),
    "int16_t": ("c_int16", "int"),
    "int8_t": ("c_int8", "int"),
    "char": ("c_char", "int"),
    "bool": ("c_bool", "bool"),
    "float": ("c_float", "float"),
    "double": ("c_double", "float"),
}

_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"}
_STREAM_TYPES = {"cudaStream_t", "CUstream"}


@dataclass(frozen=True)
class Parameter:
    """One parameter of `solve`."""

    name: str
    c_type: str  # base type with qualifiers removed, e.g. "__nv_bfloat16"
    is_pointer: bool
    is_const: bool  # pointee is const: the solution promises not to write it
    dtype: str | None  # pointers: torch dtype name; scalars: "int", "float" or "bool"; stream: None
    vector_width: int = 1
    is_stream: bool = False

    def describe(self) -> str:
        const = "const " if self.is_const else ""
        star = "*" if self.is_pointer else ""
        return f"{const}{self.c_type}{star} {self.name}"


@dataclass(frozen=True)
class SolveSignature:
    parameters: tuple[Parameter, ...]

    @property
    def takes_stream(self) -> bool:
        return any(parameter.is_stream for parameter in self.parameters)

    @property
    def pointers(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if p.is_pointer)

    @property
    def scalars(self) -> tuple[Parameter, ...]:
        return tuple(p for p in self.parameters if not p.is_pointer and not p.is_stream)

    def to_dict(self) -> dict:
        return {"parameters": [asdict(p) for p in self.parameters]}


def strip_comments(source: str) -> str:
    """Remove // and /* */ comments, keeping string literals such as extern "C" intact."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"', re.DOTALL)

    def keep_strings(match: re.Match) -> str:
        text = match.group(0)
        if text.startswith('"'):
            return text
        return " " + "\n" * text.count("\n")  # keep line structure for messages

    return pattern.sub(keep_strings, source)


def _find_extern_c_solve(code: str, name: str) -> str:
    """Return the parameter list text of the extern "C" definition of `name`."""
    entry = re.compile(r"\b" + re.escape(name) + r"\s*\(")
    candidates = []
    for match in entry.finditer(code):
        before = code[max(0, match.start() - 400) : match.start()]
        # The return type must be void, written right before the name.
        if not re.search(r"\bvoid\s*$", before):
            continue
        start = match.end()
        depth, position = 1, start
        while position < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[position], 0)
            position += 1
        if depth:
            continue
        after = code[position:].lstrip()
        is_definition = after.startswith("{")
        in_extern_c = bool(re.search(r'extern\s+"C"[^;{}]*$', before)) or _inside_extern_c_block(
            code, match.start()
        )
        candidates.append((is_definition, in_extern_c, code[start : position - 1]))
    if not candidates:
        raise SolutionError(
            f'no `extern "C" void {name}(...)` found in the solution',
            kind="missing_symbol",
            hint=f'define the entry point as: extern "C" void {name}(float* x, float* y, int n) {{ ... }}',
        )
    for is_definition, in_extern_c, params in candidates:
        if in_extern_c and is_definition:
            return params
    for _is_definition, in_extern_c, params in candidates:
        if in_extern_c:
            return params
    raise SolutionError(
        f'`{name}` is defined but not as extern "C", so its symbol name is mangled',
        kind="missing_symbol",
        hint=f'write `extern "C" void {name}(...)` so the loader can find it',
    )


def _inside_extern_c_block(code: str, position: int) -> bool:
    for block in re.finditer(r'extern\s+"C"\s*\{', code[:position]):
        depth = 1
        for char in code[block.end() : position]:
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth == 0:
                break
        if depth > 0:
            return True
    return False


def _split_parameters(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in text:
        if char in "<([":
            depth += 1
        elif char in ">)]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def parse_parameter(text: str, position: int) -> Parameter:
    original = " ".join(text.split())
    if "=" in text:
        text = text.split("=", 1)[0]  # default arguments are legal C++; ignore the value
    text = re.sub(r"\[\s*\]", "*", text)  # `float x[]` is a pointer
    if "&" in text:
        raise SolutionError(
            f"solve parameter {position + 1} ({original!r}) is a reference; solve must be callable from C",
            kind="signature_mismatch",
        )
    stars = text.count("*")
    tokens = re.findall(r"[A-Za-z_][A-Za-z0-9_:]*", text)
    const_before_star = bool(re.search(r"\bconst\b", text.split("*")[0])) if stars else False
    tokens = [token for token in tokens if token not in _QUALIFIERS]
    if len(tokens) < 2:
        raise SolutionError(
            f"solve parameter {position + 1} ({original!r}) has no name; every parameter needs one "
            "so it can bind to an input by name",
            kind="signature_mismatch",
        )
    name, base = tokens[-1], " ".join(tokens[:-1])
    base = base.replace("std::", "")
    if stars > 1:
        raise SolutionError(
            f"solve parameter {name!r} is a pointer to pointer ({original!r}); pass flat device buffers",
            kind="signature_mismatch",
        )
    if base in _STREAM_TYPES and not stars:
        return Parameter(name=name, c_type=base, is_pointer=False, is_const=False, dtype=None, is_stream=True)
    if stars:
        if base not in POINTER_TYPES:
            raise SolutionError(
                f"solve parameter {name!r} has pointer type {base!r}, which kernel-opt cannot bind",
                kind="signature_mismatch",
                hint="supported element types: " + ", ".join(sorted(POINTER_TYPES)),
            )
        dtype, width = POINTER_TYPES[base]
        return Parameter(name, base, True, const_before_star, dtype, vector_width=width)
    if base not in SCALAR_TYPES:
        raise SolutionError(
            f"solve parameter {name!r} has by-value type {base!r}, which kernel-opt cannot bind",
            kind="signature_mismatch",
            hint="scalars may be int, int64_t, size_t, unsigned, float, double or bool",
        )
    return Parameter(name, base, False, False, SCALAR_TYPES[base][1])


def parse_solve_signature(source: str, name: str = "solve") -> SolveSignature:
    """Parse the parameters of `extern "C" void <name>(...)` in CUDA source text."""
    params_text = _find_extern_c_solve(strip_comments(source), name)
    if params_text.strip() in ("", "void"):
        return SolveSignature(())
    parameters = tuple(parse_parameter(part, i) for i, part in enumerate(_split_parameters(params_text)))
    streams = [i for i, p in enumerate(parameters) if p.is_stream]
    if streams and streams != [len(parameters) - 1]:
        raise SolutionError(
            "a cudaStream_t parameter of solve must be the last one",
            kind="signature_mismatch",
        )
    names = [p.name for p in parameters]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SolutionError(f"solve has duplicate parameter names: {duplicates}", kind="signature_mismatch")
    return SolveSignature(parameters)
