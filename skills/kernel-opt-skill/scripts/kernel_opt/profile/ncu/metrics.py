"""`KernelMetrics`: the canonical metrics of one kernel, read from one launch's raw metrics or averaged over launches.

`metrics_from_raw` resolves every entry of `METRIC_ALIASES` (metric_aliases.py) with its unit converted
(raw_metrics.py), and the stall breakdown from the first stall naming scheme present (stalls.py);
`mean_metrics` averages launches of one kernel. All pure functions: no ncu, no ncu_report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from kernel_opt.profile.ncu.metric_aliases import (
    CANONICAL_FIELDS,
    GLOBAL_ACCESS_OPCODES,
    METRIC_ALIASES,
    OPCODE_MIX_METRIC,
    OPCODE_MODIFIER_MIX_METRIC,
)
from kernel_opt.profile.ncu.raw_metrics import RawMetric, resolve_alias
from kernel_opt.profile.ncu.stalls import NOT_A_STALL, StallShare, stalls_from_raw


@dataclass
class KernelMetrics:
    """Canonical metrics of one kernel (one launch, or the mean over launches of one kernel).

    Every field is optional: a report collected with other sections, or on another chip, simply
    leaves some unset, and the classifier says which evidence was missing.
    """

    duration_us: float | None = None
    sm_throughput_pct: float | None = None
    memory_throughput_pct: float | None = None
    dram_throughput_pct: float | None = None
    l2_throughput_pct: float | None = None
    l1_throughput_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    achieved_warps_per_sm: float | None = None
    theoretical_warps_per_sm: float | None = None
    block_limit_registers_blocks: float | None = None
    block_limit_shared_memory_blocks: float | None = None
    block_limit_warps_blocks: float | None = None
    block_limit_sm_blocks: float | None = None
    grid_size_blocks: float | None = None
    block_size_threads: float | None = None
    registers_per_thread: float | None = None
    static_shared_memory_per_block_bytes: float | None = None
    dynamic_shared_memory_per_block_bytes: float | None = None
    driver_shared_memory_per_block_bytes: float | None = None
    waves_per_sm: float | None = None
    sm_count: float | None = None
    issue_slots_busy_pct: float | None = None
    eligible_warps_per_scheduler: float | None = None
    active_warps_per_scheduler: float | None = None
    warp_cycles_per_issued_instruction: float | None = None
    tensor_pipe_pct: float | None = None
    fma_pipe_pct: float | None = None
    alu_pipe_pct: float | None = None
    fp64_pipe_pct: float | None = None
    xu_pipe_pct: float | None = None
    lsu_pipe_pct: float | None = None
    gmma_instructions_pct: float | None = None
    tma_pipe_pct: float | None = None
    l1_hit_rate_pct: float | None = None
    l2_hit_rate_pct: float | None = None
    global_load_sectors_per_request: float | None = None
    global_store_sectors_per_request: float | None = None
    global_load_sectors: float | None = None
    global_load_requests: float | None = None
    global_store_sectors: float | None = None
    global_store_requests: float | None = None
    shared_load_bank_conflicts: float | None = None
    shared_store_bank_conflicts: float | None = None
    shared_load_wavefronts: float | None = None
    shared_store_wavefronts: float | None = None
    shared_load_instructions: float | None = None
    shared_store_instructions: float | None = None
    shared_matrix_load_instructions: float | None = None
    local_load_sectors: float | None = None
    local_store_sectors: float | None = None
    branch_uniformity_pct: float | None = None
    threads_per_warp_instruction: float | None = None
    dram_read_bytes: float | None = None
    dram_write_bytes: float | None = None
    stalls: dict[str, float] = field(default_factory=dict)  # reason -> value in stall_unit
    # SASS opcode -> warp instructions executed (ncu's sass__inst_executed_per_opcode); {} when not collected
    executed_opcodes: dict[str, float] = field(default_factory=dict)
    # global load/store opcode with its modifiers ("LDG.E.128") -> warp instructions executed; {} when not collected
    executed_global_accesses: dict[str, float] = field(default_factory=dict)
    stall_unit: str | None = None
    sources: dict[str, str] = field(default_factory=dict)  # canonical -> the ncu metric it came from

    def stall_shares(self) -> list[StallShare]:
        """Every state as a share of the total, largest first."""
        total = sum(value for value in self.stalls.values() if value > 0)
        if total <= 0:
            return []
        shares = [StallShare(reason, value, 100.0 * value / total)
                  for reason, value in self.stalls.items() if value > 0]
        return sorted(shares, key=lambda share: (-share.value, share.reason))

    def top_stalls(self, count: int = 3) -> list[StallShare]:
        return [share for share in self.stall_shares() if share.reason not in NOT_A_STALL][:count]

    @property
    def shared_bank_conflict_pct(self) -> float | None:
        """Bank conflicts as a share of shared-memory wavefronts (each conflict costs one extra wavefront)."""
        conflicts = sum_known(self.shared_load_bank_conflicts, self.shared_store_bank_conflicts)
        wavefronts = sum_known(self.shared_load_wavefronts, self.shared_store_wavefronts)
        if conflicts is None or not wavefronts:
            return None
        return 100.0 * conflicts / wavefronts

    @property
    def shared_load_wavefronts_per_request(self) -> float | None:
        """Wavefronts per shared load request (LDS + LDSM), as ncu's SharedMemoryConflicts rule counts them."""
        requests = sum_known(self.shared_load_instructions, self.shared_matrix_load_instructions)
        if self.shared_load_wavefronts is None or not requests:
            return None
        return self.shared_load_wavefronts / requests

    @property
    def shared_store_wavefronts_per_request(self) -> float | None:
        if self.shared_store_wavefronts is None or not self.shared_store_instructions:
            return None
        return self.shared_store_wavefronts / self.shared_store_instructions

    @property
    def local_memory_sectors(self) -> float | None:
        return sum_known(self.local_load_sectors, self.local_store_sectors)

    @property
    def shared_memory_per_block_bytes(self) -> float | None:
        return sum_known(self.static_shared_memory_per_block_bytes, self.dynamic_shared_memory_per_block_bytes)

    def to_dict(self) -> dict[str, Any]:
        kept = [f.name for f in fields(self)
                if f.name not in ("stalls", "sources", "stall_unit", "executed_opcodes", "executed_global_accesses")]
        data = {name: getattr(self, name) for name in kept}
        data["shared_bank_conflict_pct"] = self.shared_bank_conflict_pct
        data["shared_load_wavefronts_per_request"] = self.shared_load_wavefronts_per_request
        data["shared_store_wavefronts_per_request"] = self.shared_store_wavefronts_per_request
        data["executed_opcodes"] = dict(self.executed_opcodes)
        data["executed_global_accesses"] = dict(self.executed_global_accesses)
        data["local_memory_sectors"] = self.local_memory_sectors
        data["stall_unit"] = self.stall_unit
        data["stalls"] = [asdict(share) for share in self.stall_shares()]
        return data


def sum_known(*values: float | None) -> float | None:
    """The sum of the values that are known; None when none is."""
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def metrics_from_raw(raw: Mapping[str, RawMetric]) -> KernelMetrics:
    """Resolve every canonical metric (and the stall breakdown) from one launch's raw metrics."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for alias in METRIC_ALIASES:
        value, source = resolve_alias(alias, raw)
        values[alias.canonical] = value
        if source is not None:
            sources[alias.canonical] = source
    # Sectors per request: the ratio metric when present, else sectors / requests from the sums.
    for kind in ("load", "store"):
        ratio_key = f"global_{kind}_sectors_per_request"
        sectors, requests = values[f"global_{kind}_sectors"], values[f"global_{kind}_requests"]
        if values[ratio_key] is None and sectors is not None and requests:
            values[ratio_key] = sectors / requests
            sources[ratio_key] = f"{sources[f'global_{kind}_sectors']} / {sources[f'global_{kind}_requests']}"
    stalls, stall_unit, stall_source = stalls_from_raw(raw)
    if stall_source:
        sources["stalls"] = stall_source
    opcode_mix = raw.get(OPCODE_MIX_METRIC)
    opcodes = {name: float(count) for name, count in (opcode_mix.instances or {}).items()} if opcode_mix else {}
    if opcodes:
        sources["executed_opcodes"] = OPCODE_MIX_METRIC
    accesses = global_accesses(raw.get(OPCODE_MODIFIER_MIX_METRIC))
    if accesses:
        sources["executed_global_accesses"] = OPCODE_MODIFIER_MIX_METRIC
    return KernelMetrics(**values, stalls=stalls, stall_unit=stall_unit, executed_opcodes=opcodes,
                         executed_global_accesses=accesses, sources=sources)


def global_accesses(modifier_mix: RawMetric | None) -> dict[str, float]:
    """The global loads and stores of the executed opcode mix with modifiers ("STG.E.U16" -> warp instructions)."""
    instances = (modifier_mix.instances or {}) if modifier_mix is not None else {}
    return {name: float(count) for name, count in instances.items()
            if name.split(".", 1)[0] in GLOBAL_ACCESS_OPCODES and count}


def mean_metrics(records: Sequence[KernelMetrics]) -> KernelMetrics:
    """The mean of several launches of one kernel (fields absent from every launch stay None)."""
    if len(records) == 1:
        return records[0]
    values: dict[str, Any] = {}
    for name in CANONICAL_FIELDS:
        known = [getattr(record, name) for record in records if getattr(record, name) is not None]
        values[name] = sum(known) / len(known) if known else None
    reasons = sorted({reason for record in records for reason in record.stalls})
    stalls = {
        reason: sum(record.stalls.get(reason, 0.0) for record in records) / len(records) for reason in reasons
    }
    opcodes, accesses = (_mean_counts([getattr(record, name) for record in records])
                         for name in ("executed_opcodes", "executed_global_accesses"))
    sources: dict[str, str] = {}
    for record in records:
        for key, value in record.sources.items():
            sources.setdefault(key, value)
    return KernelMetrics(**values, stalls=stalls, stall_unit=records[0].stall_unit, executed_opcodes=opcodes,
                         executed_global_accesses=accesses, sources=sources)


def _mean_counts(counts: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Per-launch instruction counts averaged over the launches (a launch without one counts 0)."""
    names = sorted({name for record in counts for name in record})
    return {name: sum(record.get(name, 0.0) for record in counts) / len(counts) for name in names}
