"""Which device a run uses, and the GPU's architecture name."""

from __future__ import annotations

from kernel_opt.core.dependencies import require
from kernel_opt.core.errors import EnvironmentFault


def resolve_device(requested: str) -> str:
    """'auto' becomes 'cuda' when torch sees a GPU, else 'cpu' (also where torch is not installed).

    Without torch nothing can run, but a CUDA compile check still can: the step that runs a
    solution asks for torch itself (exit 4 with what to install).
    """
    if requested == "cpu":
        return "cpu"
    if requested == "auto":
        try:
            import torch
        except ImportError:
            return "cpu"
    else:
        torch = require("torch", f"--device {requested}")
    has_gpu = torch.cuda.is_available()
    if requested == "cuda" and not has_gpu:
        raise EnvironmentFault("--device cuda was requested but torch sees no CUDA GPU on this machine")
    if requested == "auto":
        return "cuda" if has_gpu else "cpu"
    return requested


def _capability() -> tuple[int, int]:
    import torch

    return torch.cuda.get_device_capability(0)


def gpu_arch() -> str:
    major, minor = _capability()
    return f"sm_{major}{minor}"


def gpu_arch_if_any() -> str | None:
    """This GPU's architecture ('sm_90'), or None where there is no torch, no driver or no GPU."""
    capability = _capability_if_any()
    return None if capability is None else f"sm_{capability[0]}{capability[1]}"


def gpu_capability_if_any() -> str | None:
    """This GPU's compute capability ("9.0"), or None where there is no torch, no driver or no GPU.

    It decides the chip-specific metrics ncu is asked for (profile/ncu/collection.extra_metrics_for).
    """
    capability = _capability_if_any()
    return None if capability is None else f"{capability[0]}.{capability[1]}"


def _capability_if_any() -> tuple[int, int] | None:
    try:
        import torch

        if torch.cuda.is_available():
            return _capability()
    except Exception:  # no torch or no driver: callers compile for a named target instead
        return None
    return None
