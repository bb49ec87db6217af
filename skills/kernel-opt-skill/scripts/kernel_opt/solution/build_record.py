"""The build record of a backend with a build step (Prepared.build), as the correctness and benchmark records keep it.

CUDA's (backends/cuda/build.py): the library, the nvcc command, the arch, whether it came from
the build cache, what ptxas reported per kernel, the compiler's warnings and solve's signature.
The benchmark keeps the arch, the kernels and the signature. A key another backend adds is kept
as it is (a Section keeps what it does not know).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_opt.core.records import UNSET, Section, list_of


@dataclass
class BuiltKernel(Section):
    """What ptxas reported for one kernel (bytes per thread for stack and spills, per block for shared memory)."""

    name: str | None = UNSET
    mangled_name: str | None = UNSET
    arch: str | None = UNSET
    registers: int | None = UNSET
    barriers: int | None = UNSET
    shared_memory_bytes: int | None = UNSET
    constant_memory_bytes: int | None = UNSET
    stack_frame_bytes: int | None = UNSET
    spill_stores_bytes: int | None = UNSET
    spill_loads_bytes: int | None = UNSET


@dataclass
class BuildRecord(Section):
    """How the solution was built, and what the compiler said about each kernel."""

    library: str | None = UNSET
    command: str | None = UNSET
    arch: str | None = UNSET  # "sm_90a"
    cached: bool | None = UNSET
    kernels: list[BuiltKernel] | None = UNSET
    warnings: list[str] | None = UNSET
    signature: list[Any] | None = UNSET  # CUDA: solve()'s parameters

    readers = {"kernels": list_of(BuiltKernel)}

    def for_benchmark(self) -> BuildRecord:
        """What the benchmark keeps of it: the arch, the kernels and the signature, those it has."""
        payload = self.to_dict()
        return BuildRecord.from_dict({name: payload[name] for name in ("arch", "kernels", "signature")
                                      if name in payload})
