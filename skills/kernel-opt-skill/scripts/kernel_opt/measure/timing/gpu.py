"""The torch module and the CUDA device the timers work on; EnvironmentFault (exit 4) without a GPU."""

from __future__ import annotations

from typing import Any

from kernel_opt.core.errors import EnvironmentFault, UsageError


def torch_module():
    """torch, imported when a timer first needs it (a command that only parses arguments must not)."""
    try:
        import torch
    except ImportError as error:  # pragma: no cover - torch is a dependency
        raise EnvironmentFault(
            "torch is not installed, so nothing can be timed", hint="pip install torch (a CUDA build)"
        ) from error
    return torch


def cuda_device(device: Any = None, purpose: str = "kernels cannot be timed"):
    """The torch.device to work on; EnvironmentFault (exit 4) when torch sees no CUDA GPU.

    `purpose` ends the message: "no CUDA GPU is visible to torch on this machine, so <purpose>".
    """
    torch = torch_module()
    if not torch.cuda.is_available():
        raise EnvironmentFault(
            f"no CUDA GPU is visible to torch on this machine, so {purpose}",
            hint="run this on the GPU machine; `nvidia-smi` should list a GPU and "
            "`python -c 'import torch; print(torch.version.cuda)'` should not print None",
        )
    if device is None:
        return torch.device("cuda", torch.cuda.current_device())
    resolved = torch.device(device)
    if resolved.type != "cuda":
        raise UsageError(f"timers need a CUDA device, got {resolved}")
    if resolved.index is None:
        resolved = torch.device("cuda", torch.cuda.current_device())
    return resolved
