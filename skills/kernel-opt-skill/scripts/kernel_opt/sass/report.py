"""The static analysis record: each compiled kernel's resources, instruction mix and findings, and the report.

The findings are computed from the numbers (never narrated); how a backend gets its binary and
fills these records lives with the backend (`Backend.analyze`, e.g. backends/cuda/static_analysis.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kernel_opt.sass.instruction_mix import InstructionMix


@dataclass
class StaticFinding:
    key: str
    text: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class KernelStaticAnalysis:
    """One compiled kernel: its resources (ptxas / cuobjdump) and its instruction mix."""

    name: str
    mangled_name: str
    arch: str | None
    registers_per_thread: int | None
    shared_memory_per_block_bytes: int | None  # static for CUDA; Triton's dynamic allocation for Triton
    stack_frame_bytes: int | None
    spill_stores_bytes: int | None  # None: not known without a GPU (Triton)
    spill_loads_bytes: int | None
    local_memory_bytes: int | None  # per thread, from cuobjdump -res-usage
    mix: InstructionMix
    variant: str = ""  # Triton: launch options (num_warps, num_stages, constexprs) of this compilation
    findings: list[StaticFinding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["mix"]["global_loads"] = self.mix.global_loads
        data["mix"]["global_stores"] = self.mix.global_stores
        return data


def static_findings(kernel: KernelStaticAnalysis) -> list[StaticFinding]:
    """What in the disassembly points at a strategy (computed, never narrated)."""
    mix = kernel.mix
    findings: list[StaticFinding] = []
    for kind, opcode, widths in (("load", "LDG", mix.global_loads_by_width_bits),
                                 ("store", "STG", mix.global_stores_by_width_bits)):
        if widths and max(widths) <= 32:
            findings.append(StaticFinding(
                f"scalar_global_{kind}s",
                f"every global {kind} is 32-bit or narrower ({sum(widths.values())} {opcode}): 16-byte accesses "
                f"({opcode}.E.128) move 4x the bytes per instruction (strategy vector_loads / vector_hints)",
                {f"global_{kind}s_by_width_bits": widths},
            ))
    spills = (kernel.spill_stores_bytes or 0) + (kernel.spill_loads_bytes or 0)
    if mix.local_loads or mix.local_stores or spills or (kernel.local_memory_bytes or 0) > 0:
        findings.append(StaticFinding(
            "local_memory",
            f"local memory in use: {mix.local_loads} LDL, {mix.local_stores} STL, spill stores "
            f"{_bytes(kernel.spill_stores_bytes)}, spill loads {_bytes(kernel.spill_loads_bytes)}, local "
            f"{_bytes(kernel.local_memory_bytes)}/thread: registers spilled or a local array is indexed at run time",
            {"local_loads": mix.local_loads, "local_stores": mix.local_stores,
             "spill_stores_bytes": kernel.spill_stores_bytes, "spill_loads_bytes": kernel.spill_loads_bytes,
             "local_memory_bytes": kernel.local_memory_bytes},
        ))
    hmma = mix.tensor_by_opcode.get("HMMA", 0)
    hopper_tensor = sum(count for opcode, count in mix.tensor_by_opcode.items() if "GMMA" in opcode)
    if hmma and not hopper_tensor and (kernel.arch or "").startswith("sm_90"):
        findings.append(StaticFinding(
            "hmma_on_hopper",
            f"{hmma} HMMA (mma.sync) and no HGMMA on {kernel.arch}: warpgroup MMA (wgmma, HGMMA in SASS, "
            "sm_90a) is Hopper's fast tensor path (strategy wgmma)",
            {"tensor_by_opcode": mix.tensor_by_opcode},
        ))
    if mix.tensor_by_opcode:
        listed = ", ".join(f"{opcode} x{count}" for opcode, count in mix.tensor_by_opcode.items())
        findings.append(StaticFinding("tensor_instructions", "tensor instructions: " + listed,
                                      {"tensor_by_opcode": mix.tensor_by_opcode}))
    if mix.async_copies or mix.tma_loads or mix.bulk_copies:
        findings.append(StaticFinding(
            "async_copies", f"asynchronous copies: {mix.async_copies} LDGSTS (cp.async), {mix.tma_loads} UTMALDG "
            f"(TMA), {mix.bulk_copies} UBLKCP (bulk copy)",
            {"async_copies": mix.async_copies, "tma_loads": mix.tma_loads, "bulk_copies": mix.bulk_copies}))
    return findings


def _bytes(value: int | None) -> str:
    return "n/a" if value is None else f"{value} B"


@dataclass
class StaticReport:
    solution: str
    backend: str
    arch: str
    disassembler: str
    compiler: str  # the nvcc command, or the Triton version and how the kernel was compiled
    kernels: list[KernelStaticAnalysis]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "solution": self.solution, "backend": self.backend, "arch": self.arch, "disassembler": self.disassembler,
            "compiler": self.compiler, "notes": self.notes, "kernels": [kernel.to_dict() for kernel in self.kernels],
        }
