"""Inputs for a CUDA solve() when neither ref.py nor the solution defines setup(): sizes guessed from its signature.

The launcher hands this to the checks through `Launcher.input_maker`; solution/inputs.py knows
nothing of CUDA signatures.
"""

from __future__ import annotations

from typing import Any

import torch

from kernel_opt.backends.cuda.signature import SolveSignature
from kernel_opt.core.errors import UsageError
from kernel_opt.solution.contract import ProblemInstance
from kernel_opt.solution.inputs import DTYPES, lookup_by_name


def infer_instance(signature: SolveSignature, dims: dict[str, Any], seed: int, device: str) -> ProblemInstance:
    """Inputs for a CUDA solve() when no setup() exists anywhere: sizes guessed from its scalars.

    Every pointer gets as many elements as the product of the integer dims named by solve's
    scalar parameters; const pointers are inputs, the others outputs. The notes say so, because
    a guess is all this is: a setup() in ref.py is the reliable way.
    """
    sizes = {}
    for parameter in signature.scalars:
        found, value = lookup_by_name(dims, parameter.name)
        if not found:
            raise UsageError(
                f"solve parameter {parameter.name!r} has no value: pass it as --{parameter.name}=VALUE "
                "or define setup() in ref.py"
            )
        sizes[parameter.name] = value
    integer_sizes = [int(v) for k, v in sizes.items() if isinstance(v, int) and not isinstance(v, bool)]
    if not integer_sizes:
        raise UsageError(
            "cannot infer buffer sizes: solve has no integer size parameter",
            hint="define setup() in ref.py to create the inputs",
        )
    numel = 1
    for value in integer_sizes:
        numel *= value
    generator = torch.Generator(device=device).manual_seed(seed)
    values: dict[str, Any] = dict(sizes)
    outputs: list[str] = []
    for parameter in signature.pointers:
        dtype = DTYPES[parameter.dtype]
        if parameter.is_const or not _looks_like_output(parameter.name):
            if dtype.is_floating_point:
                tensor = torch.randn(numel, generator=generator, device=device, dtype=torch.float32).to(dtype)
            elif dtype == torch.bool:
                tensor = torch.randint(0, 2, (numel,), generator=generator, device=device).bool()
            else:
                tensor = torch.randint(0, 100, (numel,), generator=generator, device=device).to(dtype)
        else:
            tensor = torch.zeros(numel, device=device, dtype=dtype)
            outputs.append(parameter.name)
        values[parameter.name] = tensor
    if not outputs:
        raise UsageError(
            "cannot tell which solve parameters are outputs (all pointers look like inputs)",
            hint="define setup() in ref.py and list the outputs",
        )
    notes = [
        "no setup() in ref.py or the solution: inputs were inferred from solve's signature "
        f"(every buffer has {numel} elements = product of {sorted(sizes)}; outputs: {outputs}; "
        "inputs: standard normal floats, integers in [0, 100)). Define setup() in ref.py if this is wrong."
    ]
    return ProblemInstance(values=values, outputs=outputs, dims=dict(dims), notes=notes)


_OUTPUT_NAMES = ("out", "output", "dst", "result", "res", "y", "c", "o")


def _looks_like_output(name: str) -> bool:
    lowered = name.lower()
    return lowered in _OUTPUT_NAMES or lowered.startswith(("out", "dst", "result"))
