"""Problem inputs from a setup() function (ref.py's, or the solution's), and what the checks ask of them.

Without any setup(), a backend may make inputs from the solution itself (`Launcher.input_maker`).

Inputs are fresh random values for every seed. Zeros and aranges hide unwritten outputs and
wrong indexing, so degenerate inputs from a user's setup() are reported as warnings.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from kernel_opt.core.errors import UsageError
from kernel_opt.solution.contract import ProblemInstance, accepted_kwargs, default_dims

DTYPES: dict[str, torch.dtype] = {
    name: getattr(torch, name)
    for name in (
        "float64", "float32", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
    )
}
for _name in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _name):
        DTYPES[_name] = getattr(torch, _name)


@contextlib.contextmanager
def _watching_cuda_initialisation() -> Iterator[Callable[[], bool]]:
    """Tell whether code run inside tried to initialise CUDA.

    Every first CUDA use (a tensor created on or moved to "cuda", a CUDA seed) goes through
    torch.cuda._lazy_init, whatever error follows: "Torch not compiled with CUDA enabled" on a
    CPU build, "Found no NVIDIA driver" on a CUDA build without a driver. Watching the call is
    reliable where searching the error text for "cuda" is not.
    """
    original = torch.cuda._lazy_init
    calls: list[bool] = []

    def recording_lazy_init(*args, **kwargs):
        calls.append(True)
        return original(*args, **kwargs)

    torch.cuda._lazy_init = recording_lazy_init
    try:
        yield lambda: bool(calls)
    finally:
        torch.cuda._lazy_init = original


def build_instance(setup: Callable, dims: dict[str, Any], seed: int, device: str) -> ProblemInstance:
    """Call setup(seed=, device=, **dims) and check what it returns against the contract."""
    torch.manual_seed(seed)  # also randomises setups that ignore their seed argument
    kwargs = accepted_kwargs(setup, {**dims, "seed": seed, "device": device})
    with _watching_cuda_initialisation() as cuda_touched:
        try:
            returned = setup(**kwargs)
        except Exception as error:
            if device == "cpu" and cuda_touched():
                raise UsageError(
                    f"setup() tried to use CUDA on a machine without a GPU: {type(error).__name__}: {error}",
                    hint="create tensors on the `device` argument setup() receives (setup(..., device='cuda')), "
                    "so the Triton interpreter can run them on the CPU",
                ) from error
            raise
    if not isinstance(returned, dict) or "inputs" not in returned or "outputs" not in returned:
        raise UsageError('setup() must return {"inputs": {name: value, ...}, "outputs": [names]}')
    values, outputs = dict(returned["inputs"]), list(returned["outputs"])
    notes: list[str] = []
    for name in outputs:
        if name not in values or not isinstance(values[name], torch.Tensor):
            raise UsageError(f"setup() lists output {name!r}, which is not a tensor among its inputs")
    for name, value in list(values.items()):
        if isinstance(value, torch.Tensor) and value.device.type != torch.device(device).type:
            values[name] = value.to(device)
            notes.append(f"setup() created {name!r} on {value.device}; moved it to {device}")
    effective = {**default_dims(setup), **dims}
    return ProblemInstance(values=values, outputs=outputs, dims=effective, notes=notes)


def lookup_by_name(mapping: dict[str, Any], name: str) -> tuple[bool, Any]:
    """(found, value) for a parameter name: the exact key, else the one key equal ignoring case
    (solve(..., int N) binds to --n=...); an ambiguous or missing name is not found."""
    if name in mapping:
        return True, mapping[name]
    matches = [key for key in mapping if key.lower() == name.lower()]
    return (True, mapping[matches[0]]) if len(matches) == 1 else (False, None)


def degenerate_input_warnings(instance: ProblemInstance, covered: frozenset[str] = frozenset()) -> list[str]:
    """Inputs that would hide bugs: all zeros, all one value, or an arange. Not those in `covered`: values a
    later check draws again (a KernelBench Model's weights, check/integrity/redrawn_weights.py)."""
    warnings = []
    for name, value in instance.values.items():
        if name in instance.outputs or name in covered or not isinstance(value, torch.Tensor) or value.numel() < 2:
            continue
        kind = _degenerate_kind(value)
        if kind == "zeros":
            warnings.append(f"input {name!r} is all zeros: unwritten outputs, wrong indexing and a kernel that "
                            "ignores it can pass unnoticed")
        elif kind == "constant":
            warnings.append(f"input {name!r} holds one value everywhere: wrong indexing, and a kernel that ignores it, "
                            "can pass unnoticed")
        elif kind == "arange":
            warnings.append(f"input {name!r} is an arange: use random values so wrong indexing shows")
    return warnings


# Elements upcast to float64 at a time by the checks above: 256 MB, where the whole input of a large problem
# (a 6.4 GB float32 tensor) would take 12.9 GB twice over (its copy and its differences).
DEGENERATE_CHUNK_ELEMENTS = 1 << 25


def _degenerate_kind(value: torch.Tensor) -> str | None:
    """"zeros", "constant", "arange" or None, read in float64 chunks; None for an input with a NaN or Inf."""
    flat = value.detach().reshape(-1)
    first = float(flat[0])
    step = float(flat[1].to(torch.float64) - flat[0].to(torch.float64))
    zeros = constant = arange = True
    for start in range(0, flat.numel(), DEGENERATE_CHUNK_ELEMENTS):
        piece = flat[start:start + DEGENERATE_CHUNK_ELEMENTS + 1].to(torch.float64)  # one more: the next difference
        if not bool(torch.isfinite(piece).all()):
            return None
        zeros = zeros and bool((piece == 0).all())
        constant = constant and bool((piece == first).all())
        arange = arange and flat.numel() > 2 and bool((piece.diff() == step).all())
    return "zeros" if zeros else "constant" if constant else "arange" if arange else None


def fingerprint(instance: ProblemInstance) -> tuple:
    """A cheap summary of the non-output inputs, to notice a setup() that ignores its seed."""
    parts = []
    for name in sorted(instance.values):
        value = instance.values[name]
        if name in instance.outputs or not isinstance(value, torch.Tensor) or value.numel() == 0:
            continue
        flat = value.detach().reshape(-1)[:64].to(torch.float64)
        parts.append((name, round(float(flat.sum()), 12)))
    return tuple(parts)


def cloned_arguments(dims: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for one call of the reference: the dims, and a private copy of every tensor.

    The reference may write its outputs, or even its inputs; the instance's own buffers must
    come out of the call as they went in.
    """
    copies = {name: (value.clone() if isinstance(value, torch.Tensor) else value) for name, value in values.items()}
    return {**dims, **copies}
