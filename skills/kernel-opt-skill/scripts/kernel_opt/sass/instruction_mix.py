"""The SASS instructions that matter, counted: load and store widths, tensor, copy, barrier and math opcodes.

A profile says where time goes; the disassembly says why a change did or did not take: were
the loads 16 bytes wide (`LDG.E.128`) or 4 (`LDG.E`), do tensor instructions run through the
Hopper path (`HGMMA`) or the older one (`HMMA`), did an array land in local memory
(`LDL`/`STL`), are copies asynchronous (`LDGSTS`, TMA's `UTMALDG`)? Static counts, not executed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field


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
