"""What the compiler produced: per-kernel resources and the SASS instructions that matter.

A profile says where time goes; the disassembly says why a change did or did not take: were
the loads 16 bytes wide (`LDG.E.128`) or 4 (`LDG.E`), do tensor instructions run through the
Hopper path (`HGMMA`) or the older one (`HMMA`), did an array land in local memory
(`LDL`/`STL`), are copies asynchronous (`LDGSTS`, TMA's `UTMALDG`)? None of this needs a GPU.

This module reads what any backend's compiler produced: `cuobjdump -sass` and `-res-usage`
output (the CUDA toolkit's cuobjdump or the copy the triton wheel ships), the instruction mix,
the findings, and the report record. How a backend gets its binary (nvcc for CUDA, a
compile-only Triton launch) lives with the backend: `Backend.analyze`, e.g.
backends/cuda/static_analysis.py and backends/triton/static_analysis.py.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import EnvironmentFault

CUOBJDUMP_TIMEOUT_S = 120

# --- parsing cuobjdump output ----------------------------------------------------------------

_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_ARCH = re.compile(r"^\s*arch\s*=\s*(sm_\w+)")
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(?:(@!?U?P(?:T|\d+))\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_RESOURCE_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):\s*$")
_RESOURCE_FIELD = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")


@dataclass
class SassFunction:
    """One kernel's disassembly: its opcodes with modifiers, in program order."""

    mangled_name: str
    arch: str | None
    opcodes: list[str] = field(default_factory=list)  # "LDG.E.128.CONSTANT", "FFMA", ...


def parse_sass(text: str) -> list[SassFunction]:
    """Functions and their instructions from `cuobjdump -sass` output.

    A library can carry the same function twice (one entry per embedded cubin); the first copy
    per (function, arch) is kept.
    """
    functions: list[SassFunction] = []
    seen: set[tuple[str, str | None]] = set()
    current: SassFunction | None = None
    arch: str | None = None
    for line in text.splitlines():
        arch_match = _ARCH.match(line)
        if arch_match:
            arch = arch_match.group(1)
            current = None
            continue
        function = _FUNCTION.match(line)
        if function:
            key = (function.group(1), arch)
            current = None if key in seen else SassFunction(function.group(1), arch)
            if current is not None:
                seen.add(key)
                functions.append(current)
            continue
        if current is None:
            continue
        instruction = _INSTRUCTION.match(line)
        if instruction:
            current.opcodes.append(instruction.group(3))
    return functions


@dataclass
class ResourceUsage:
    """`cuobjdump -res-usage` for one function (per thread, except SHARED which is per block)."""

    registers: int | None = None
    stack_bytes: int | None = None
    shared_bytes: int | None = None
    local_bytes: int | None = None
    constant_bytes: int | None = None


def parse_resource_usage(text: str) -> dict[str, ResourceUsage]:
    usage: dict[str, ResourceUsage] = {}
    current: str | None = None
    for line in text.splitlines():
        function = _RESOURCE_FUNCTION.match(line)
        if function:
            current = function.group(1)
            continue
        if current is None or "REG:" not in line:
            continue
        values = dict(_RESOURCE_FIELD.findall(line))
        usage.setdefault(current, ResourceUsage(
            registers=_int(values.get("REG")),
            stack_bytes=_int(values.get("STACK")),
            shared_bytes=_int(values.get("SHARED")),
            local_bytes=_int(values.get("LOCAL")),
            constant_bytes=_int(values.get("CONSTANT[0]")),
        ))
        current = None
    return usage


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


# --- the instruction mix ---------------------------------------------------------------------


def access_width_bits(opcode: str) -> int:
    """Bits per thread of a load/store: LDG.E.128 -> 128, LDG.E.64 -> 64, LDG.E.U8 -> 8, LDG.E -> 32."""
    modifiers = opcode.split(".")[1:]
    for token, bits in (("128", 128), ("64", 64), ("U16", 16), ("S16", 16), ("U8", 8), ("S8", 8)):
        if token in modifiers:
            return bits
    return 32


TENSOR_SUFFIX = "MMA"  # HMMA, IMMA, DMMA, HGMMA, QGMMA, IGMMA, UTCHMMA, ... (MMA = matrix multiply-accumulate)
BARRIER_OPCODES = ("BAR", "SYNCS", "MEMBAR", "DEPBAR", "WARPGROUP")
ATOMIC_OPCODES = ("ATOMG", "ATOM", "ATOMS", "RED", "REDG")


@dataclass
class InstructionMix:
    """Counts of the instructions that decide memory and math efficiency (static counts, not executed)."""

    total_instructions: int = 0
    global_loads_by_width_bits: dict[int, int] = field(default_factory=dict)
    global_stores_by_width_bits: dict[int, int] = field(default_factory=dict)
    local_loads: int = 0  # LDL: spills or a local array indexed at run time
    local_stores: int = 0  # STL
    shared_loads: int = 0  # LDS
    shared_stores: int = 0  # STS
    shared_matrix_loads: int = 0  # LDSM (ldmatrix)
    shared_matrix_stores: int = 0  # STSM (stmatrix, sm_90)
    async_copies: int = 0  # LDGSTS (cp.async, sm_80+)
    tma_loads: int = 0  # UTMALDG (cp.async.bulk.tensor global->shared, sm_90)
    tma_stores: int = 0  # UTMASTG
    bulk_copies: int = 0  # UBLKCP (cp.async.bulk)
    tensor_by_opcode: dict[str, int] = field(default_factory=dict)
    barriers_by_opcode: dict[str, int] = field(default_factory=dict)
    atomics: int = 0
    ffma: int = 0  # FP32 fused multiply-adds (the non-tensor math path)
    opcode_counts: dict[str, int] = field(default_factory=dict)  # base opcode -> count, most frequent first

    @property
    def global_loads(self) -> int:
        return sum(self.global_loads_by_width_bits.values())

    @property
    def global_stores(self) -> int:
        return sum(self.global_stores_by_width_bits.values())


# SASS opcode (before the first ".") -> the InstructionMix counter it increments.
COUNTED_OPCODES = {
    "LDL": "local_loads", "STL": "local_stores",  # local memory: spills or run-time-indexed arrays
    "LDS": "shared_loads", "STS": "shared_stores",
    "LDSM": "shared_matrix_loads", "STSM": "shared_matrix_stores",
    "LDGSTS": "async_copies",  # cp.async (sm_80+)
    "UTMALDG": "tma_loads", "UTMASTG": "tma_stores", "UBLKCP": "bulk_copies",  # Hopper copy engine
    "FFMA": "ffma",
}


def instruction_mix(opcodes: Sequence[str]) -> InstructionMix:
    mix = InstructionMix(total_instructions=len(opcodes))
    loads: Counter = Counter()
    stores: Counter = Counter()
    tensor: Counter = Counter()
    barriers: Counter = Counter()
    bases: Counter = Counter()
    for opcode in opcodes:
        base = opcode.split(".")[0]
        bases[base] += 1
        if base == "LDG":
            loads[access_width_bits(opcode)] += 1
        elif base == "STG":
            stores[access_width_bits(opcode)] += 1
        elif base in COUNTED_OPCODES:
            field_name = COUNTED_OPCODES[base]
            setattr(mix, field_name, getattr(mix, field_name) + 1)
        if base.endswith(TENSOR_SUFFIX):
            tensor[base] += 1
        if base in BARRIER_OPCODES:
            barriers[base] += 1
        if base in ATOMIC_OPCODES:
            mix.atomics += 1
    mix.global_loads_by_width_bits = dict(sorted(loads.items(), reverse=True))
    mix.global_stores_by_width_bits = dict(sorted(stores.items(), reverse=True))
    mix.tensor_by_opcode = dict(tensor.most_common())
    mix.barriers_by_opcode = dict(barriers.most_common())
    mix.opcode_counts = dict(bases.most_common())
    return mix


# --- per-kernel records and findings ---------------------------------------------------------


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


# --- running cuobjdump -----------------------------------------------------------------------


def find_cuobjdump() -> tuple[str, str]:
    """(path, where it was found): the CUDA toolkit's, else the copy inside the triton package."""
    from kernel_opt.env.probes import probe_cuobjdump

    probe = probe_cuobjdump()
    if not probe.found or not probe.path:
        raise EnvironmentFault(
            "cuobjdump (the SASS disassembler) is not available here",
            hint="install the CUDA toolkit (it ships cuobjdump) or `pip install triton`, whose wheel bundles it",
            kind="no_cuobjdump",
        )
    version = f" {probe.version}" if probe.version else ""
    return probe.path, f"cuobjdump{version} from {probe.source}"


def run_cuobjdump(cuobjdump: str, binary: Path, mode: str) -> str:
    """`cuobjdump -sass` or `-res-usage` on a cubin, object or shared library."""
    try:
        completed = subprocess.run([cuobjdump, mode, str(binary)], capture_output=True, text=True,
                                   timeout=CUOBJDUMP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentFault(f"cuobjdump {mode} {binary.name} failed to run: {error}") from error
    if completed.returncode != 0:
        raise EnvironmentFault(
            f"cuobjdump {mode} {binary.name} exited with code {completed.returncode}: {completed.stderr.strip()[:500]}",
            hint="an old cuobjdump cannot read code for a newer architecture; use the CUDA toolkit's",
        )
    return completed.stdout


def kernels_from_binary(cuobjdump: str, binary: Path) -> tuple[list[SassFunction], dict[str, ResourceUsage]]:
    functions = parse_sass(run_cuobjdump(cuobjdump, binary, "-sass"))
    return functions, parse_resource_usage(run_cuobjdump(cuobjdump, binary, "-res-usage"))


# --- the report ------------------------------------------------------------------------------


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
