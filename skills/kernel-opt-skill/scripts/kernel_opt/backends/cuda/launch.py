"""Call a compiled CUDA solution's `solve` with torch tensors bound by parameter name.

Binding is strict: a pointer whose element type differs from its tensor's dtype is an error
(reinterpreting float32 bits as float64 would silently compute garbage), and so is a
non-contiguous or misaligned tensor for a vector type such as float4.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import torch

from kernel_opt.backends.cuda.signature import SCALAR_TYPES, Parameter, SolveSignature
from kernel_opt.core.errors import SolutionError
from kernel_opt.solution.inputs import DTYPES, lookup_by_name


class CudaSolution:
    """A loaded shared library with an extern "C" solve and its parsed signature."""

    def __init__(self, library: Path, signature: SolveSignature, name: str = "solve"):
        try:
            self.library = ctypes.CDLL(str(library))
        except OSError as error:
            raise SolutionError(f"cannot load the compiled solution {library}: {error}", kind="load_error") from error
        try:
            self.function = getattr(self.library, name)
        except AttributeError as error:
            raise SolutionError(
                f'the compiled solution exports no symbol {name!r}; declare it extern "C"',
                kind="missing_symbol",
            ) from error
        self.function.restype = None
        self.function.argtypes = [self._ctype(p) for p in signature.parameters]
        self.signature = signature
        self._last_error = getattr(self.library, "kernel_opt_last_error", None)
        self._error_string = getattr(self.library, "kernel_opt_error_string", None)
        if self._error_string is not None:
            self._error_string.restype = ctypes.c_char_p
            self._error_string.argtypes = [ctypes.c_int]

    @staticmethod
    def _ctype(parameter: Parameter):
        if parameter.is_pointer or parameter.is_stream:
            return ctypes.c_void_p
        return getattr(ctypes, SCALAR_TYPES[parameter.c_type][0])

    def bind(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> list[Any]:
        """Arguments for solve, in order; raises SolutionError naming the first bad parameter."""
        arguments = []
        bound_names = set()
        for parameter in self.signature.parameters:
            if parameter.is_stream:
                arguments.append(None)  # resolved at each call: the stream current then (graph capture uses its own)
                continue
            found, value = lookup_by_name({**dims, **values}, parameter.name)  # inputs win over dims
            if not found:
                available = sorted(set(values) | set(dims))
                raise SolutionError(
                    f"solve parameter {parameter.describe()!r} matches no input or dim by name "
                    f"(available: {', '.join(available)})",
                    kind="signature_mismatch",
                    hint="rename the parameter to the name setup() gives the tensor, or pass --NAME=VALUE",
                )
            bound_names.add(parameter.name.lower())
            arguments.append(_pointer(parameter, value) if parameter.is_pointer else _scalar(parameter, value))
        unbound = [name for name in outputs if name.lower() not in bound_names]
        if unbound:
            raise SolutionError(
                f"output(s) {unbound} are not parameters of solve, so it cannot write them",
                kind="signature_mismatch",
            )
        return arguments

    def __call__(self, arguments: list[Any]) -> None:
        if self.signature.takes_stream:
            arguments = arguments[:-1] + [ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)]
        self.function(*arguments)

    def last_launch_error(self) -> str | None:
        """The CUDA runtime's last error inside the solution's library (e.g. a bad launch)."""
        if self._last_error is None:
            return None
        code = int(self._last_error())
        if code == 0:
            return None
        text = self._error_string(code).decode() if self._error_string else ""
        return f"CUDA error {code}: {text}"


def _pointer(parameter: Parameter, value: Any) -> ctypes.c_void_p:
    if not isinstance(value, torch.Tensor):
        raise SolutionError(
            f"solve parameter {parameter.describe()!r} is a pointer but its value is {type(value).__name__} {value!r}",
            kind="signature_mismatch",
        )
    expected = DTYPES.get(parameter.dtype)
    if value.dtype != expected:
        raise SolutionError(
            f"dtype mismatch: solve parameter {parameter.describe()!r} expects {parameter.dtype} "
            f"but tensor {parameter.name!r} is {str(value.dtype).removeprefix('torch.')}",
            kind="signature_mismatch",
            hint="change the pointer type in solve, or the dtype setup() creates; kernel-opt never reinterprets memory",
        )
    if value.device.type != "cuda":
        raise SolutionError(
            f"tensor {parameter.name!r} is on {value.device}, not on the GPU", kind="signature_mismatch"
        )
    if not value.is_contiguous():
        raise SolutionError(
            f"tensor {parameter.name!r} is not contiguous; solve receives a raw pointer",
            kind="signature_mismatch",
            hint="make setup() return contiguous tensors (.contiguous())",
        )
    width = parameter.vector_width
    if width > 1:
        if value.numel() % width:
            raise SolutionError(
                f"{parameter.describe()!r} reads {width}-element vectors "
                f"but {parameter.name!r} has {value.numel()} elements",
                kind="signature_mismatch",
            )
        if value.data_ptr() % (width * value.element_size()):
            raise SolutionError(
                f"tensor {parameter.name!r} is not aligned for {parameter.c_type}", kind="signature_mismatch"
            )
    return ctypes.c_void_p(value.data_ptr())


def _scalar(parameter: Parameter, value: Any):
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise SolutionError(
                f"solve parameter {parameter.describe()!r} is a scalar "
                f"but {parameter.name!r} is a tensor of {value.numel()} elements",
                kind="signature_mismatch",
            )
        value = value.item()
    kind = SCALAR_TYPES[parameter.c_type][1]
    if kind in ("int", "bool"):
        if isinstance(value, float) and not value.is_integer():
            raise SolutionError(
                f"solve parameter {parameter.describe()!r} is an integer but got {value}", kind="signature_mismatch"
            )
        if not isinstance(value, (int, float, bool)):
            raise SolutionError(f"solve parameter {parameter.describe()!r} got {value!r}", kind="signature_mismatch")
        return int(value)
    if not isinstance(value, (int, float)):
        raise SolutionError(f"solve parameter {parameter.describe()!r} got {value!r}", kind="signature_mismatch")
    return float(value)
