"""What the child process ran with, as records keep it: its versions and the GPU it saw (events.environment_info).

The correctness record keeps the whole environment, the benchmark record the GPU and the versions.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernel_opt.core.records import UNSET, Section, section_of

VERSION_KEYS = ("python", "torch", "triton", "cuda")  # in the order the reports list them


@dataclass
class GpuInfo(Section):
    """The GPU torch saw in the child: {} where it saw none."""

    name: str | None = UNSET
    compute_capability: str | None = UNSET  # "9.0"
    multiprocessors: int | None = UNSET
    memory_gib: float | None = UNSET
    uuid: str | None = UNSET  # "GPU-5f1c..." (nvidia-smi's spelling): which board, where several share a host


@dataclass
class RunEnvironment(Section):
    """The child's versions, and on a GPU run its GPU and CUDA version (the benchmark keeps the versions only)."""

    torch: str | None = UNSET
    python: str | None = UNSET
    triton: str | None = UNSET  # None where triton is not installed
    gpu: GpuInfo | None = UNSET
    cuda: str | None = UNSET

    readers = {"gpu": section_of(GpuInfo)}

    def described_versions(self) -> list[tuple[str, str]]:
        """(name, version) of python, torch, triton and cuda, those known, in that order."""
        return [(name, getattr(self, name)) for name in VERSION_KEYS if getattr(self, name)]

    @classmethod
    def versions_of(cls, info: dict) -> RunEnvironment:
        """The versions alone, from environment_info's JSON: what the benchmark records."""
        return cls.from_dict({name: info.get(name) for name in VERSION_KEYS})
