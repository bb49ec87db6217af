"""How much memory this machine has free: on a GPU (what torch could still allocate) and on the host.

Read by the memory plan of the correctness check and the benchmark (check/memory_plan.py) before
they allocate, and by the blame of an allocation that failed (run/memory.py). No reading here
initialises CUDA or allocates.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True)
class DeviceMemory:
    """One GPU's memory as this process sees it, in bytes.

    `free` is what the driver reports free (cudaMemGetInfo); `cached` is memory torch's caching
    allocator holds but no tensor uses: torch hands it out again before it asks the driver, so
    both count as available to this process.
    """

    free: int
    total: int
    allocated: int  # held by this process's tensors
    cached: int  # reserved by torch's allocator, not in use

    @property
    def available(self) -> int:
        return self.free + self.cached


def device_memory(device) -> DeviceMemory | None:
    """The memory of a CUDA `device` (a torch.device or its name); None for another device or before CUDA is in use."""
    torch = sys.modules.get("torch")
    if torch is None or torch.device(device).type != "cuda" or not torch.cuda.is_initialized():
        return None
    free, total = torch.cuda.mem_get_info(device)
    allocated, reserved = torch.cuda.memory_allocated(device), torch.cuda.memory_reserved(device)
    return DeviceMemory(int(free), int(total), int(allocated), max(0, int(reserved) - int(allocated)))


def host_available_bytes(meminfo: Path = MEMINFO) -> int | None:
    """Memory the host can still give this process without swapping (MemAvailable), in bytes; None where unknown."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def gib(count: float | int | None) -> str:
    """Bytes as GiB for people: '6.00 GiB' (torch's own unit in its out-of-memory messages)."""
    return "unknown" if count is None else f"{count / 2**30:.2f} GiB"
