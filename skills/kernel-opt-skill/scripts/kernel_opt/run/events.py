"""The worker's side of the parent-child protocol: its event log and how it names errors."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

CUDA_ERROR_KINDS = (
    ("illegal memory access", "illegal_memory_access"),
    ("address space", "illegal_memory_access"),  # cudaErrorInvalidAddressSpace: a pointer outside global memory
    ("misaligned address", "misaligned_address"),
    ("illegal instruction", "illegal_instruction"),
    ("unspecified launch failure", "launch_failure"),
    ("device-side assert", "device_assert"),
    ("invalid configuration", "launch_error"),
    ("too many resources requested", "launch_error"),
    ("out of memory", "out_of_memory"),
)


def classify_exception_message(message: str) -> str:
    lowered = message.lower()
    for needle, kind in CUDA_ERROR_KINDS:
        if needle in lowered:
            return kind
    if "cuda error" in lowered:
        return "cuda_error"
    return "exception"


class EventLog:
    """Append one JSON object per line; each line is written whole and flushed at once."""

    def __init__(self, path: str):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, event: str, **fields: Any) -> None:
        # "t" (wall clock, s) lets the parent say where a step's time went (phase durations).
        line = json.dumps({"event": event, **fields, "t": round(time.time(), 3)}, default=str) + "\n"
        os.write(self._fd, line.encode())


def environment_info(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"torch": torch.__version__, "python": sys.version.split()[0]}
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception:  # triton is optional for CUDA solutions
        info["triton"] = None
    if device == "cuda":
        properties = torch.cuda.get_device_properties(0)
        info["gpu"] = {
            "name": properties.name,
            "compute_capability": f"{properties.major}.{properties.minor}",
            "multiprocessors": properties.multi_processor_count,
            "memory_gib": round(properties.total_memory / 2**30, 1),
        }
        info["cuda"] = torch.version.cuda
    return info


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}"
