"""The canonical ncu metrics: one table from each canonical name (which carries its unit) to the ncu names
that may carry it, preferred first.

Metric names differ between ncu versions and chips, so every name the classifier uses is resolved
here, in `METRIC_ALIASES`; `KernelMetrics` (metrics.py) has one field per entry, in this order. Adding
a metric is one `MetricAlias` line here (and, if no section collects it, `EXTRA_METRICS` in
collection.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Combine = Literal["first", "max"]


@dataclass(frozen=True)
class MetricAlias:
    """One canonical metric: the ncu names that may carry it, preferred first, and how to read it.

    `unit` is the unit of the canonical value (after conversion), `label` says what it is for a
    person. `combine="max"` takes the largest present candidate instead of the first one (the
    tensor pipe is reported per instruction kind, HMMA and GMMA, and either may be the busy one).
    """

    canonical: str
    candidates: tuple[str, ...]
    label: str
    unit: str
    combine: Combine = "first"
    pattern: str | None = None  # regex over every metric name, tried only when no candidate is present


# Canonical names carry their unit; KernelMetrics has one field per entry, in this order.
METRIC_ALIASES: tuple[MetricAlias, ...] = (
    MetricAlias("duration_us", ("gpu__time_duration.sum", "gpu__time_duration.avg"), "kernel duration", "us"),
    MetricAlias("sm_throughput_pct", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
                "compute (SM) throughput, % of peak", "%"),
    MetricAlias("memory_throughput_pct", ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
                "memory throughput (busiest of DRAM, L2, L1/shared), % of peak", "%"),
    MetricAlias("dram_throughput_pct", ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                        "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
                "DRAM throughput, % of peak", "%"),
    MetricAlias("l2_throughput_pct", ("lts__throughput.avg.pct_of_peak_sustained_elapsed",),
                "L2 cache throughput, % of peak", "%"),
    MetricAlias("l1_throughput_pct", ("l1tex__throughput.avg.pct_of_peak_sustained_active",
                                      "l1tex__throughput.avg.pct_of_peak_sustained_elapsed"),
                "L1/TEX + shared memory throughput, % of peak", "%"),
    MetricAlias("achieved_occupancy_pct", ("sm__warps_active.avg.pct_of_peak_sustained_active",),
                "achieved occupancy, % of the SM's warp slots", "%"),
    MetricAlias("theoretical_occupancy_pct", ("sm__maximum_warps_per_active_cycle_pct",),
                "theoretical occupancy, % of the SM's warp slots", "%"),
    MetricAlias("achieved_warps_per_sm", ("sm__warps_active.avg.per_cycle_active",),
                "achieved active warps per SM", "warps"),
    MetricAlias("theoretical_warps_per_sm", ("sm__maximum_warps_avg_per_active_cycle",),
                "theoretical active warps per SM", "warps"),
    MetricAlias("block_limit_registers_blocks", ("launch__occupancy_limit_registers",),
                "blocks per SM allowed by registers", "blocks"),
    MetricAlias("block_limit_shared_memory_blocks", ("launch__occupancy_limit_shared_mem",),
                "blocks per SM allowed by shared memory", "blocks"),
    MetricAlias("block_limit_warps_blocks", ("launch__occupancy_limit_warps",),
                "blocks per SM allowed by warp slots (block size)", "blocks"),
    MetricAlias("block_limit_sm_blocks", ("launch__occupancy_limit_blocks",),
                "blocks per SM allowed by the resident-block limit", "blocks"),
    MetricAlias("grid_size_blocks", ("launch__grid_size",), "grid size", "blocks"),
    MetricAlias("block_size_threads", ("launch__block_size",), "block size", "threads"),
    MetricAlias("registers_per_thread", ("launch__registers_per_thread",), "registers per thread", "registers"),
    MetricAlias("static_shared_memory_per_block_bytes", ("launch__shared_mem_per_block_static",),
                "static shared memory per block", "bytes"),
    MetricAlias("dynamic_shared_memory_per_block_bytes", ("launch__shared_mem_per_block_dynamic",),
                "dynamic shared memory per block", "bytes"),
    MetricAlias("driver_shared_memory_per_block_bytes", ("launch__shared_mem_per_block_driver",),
                "shared memory the driver reserves per block", "bytes"),
    MetricAlias("waves_per_sm", ("launch__waves_per_multiprocessor",),
                "waves per SM (grid / (SMs x resident blocks per SM))", "waves"),
    MetricAlias("sm_count", ("device__attribute_multiprocessor_count", "launch__sm_count"), "SMs on the device", "SMs"),
    MetricAlias("issue_slots_busy_pct", ("sm__inst_issued.avg.pct_of_peak_sustained_active",
                                         "smsp__issue_active.avg.pct_of_peak_sustained_active"),
                "issue slots busy, % of active cycles", "%"),
    MetricAlias("eligible_warps_per_scheduler", ("smsp__warps_eligible.avg.per_cycle_active",),
                "eligible warps per scheduler per cycle", "warps"),
    MetricAlias("active_warps_per_scheduler", ("smsp__warps_active.avg.per_cycle_active",),
                "active warps per scheduler per cycle", "warps"),
    MetricAlias("warp_cycles_per_issued_instruction", ("smsp__average_warp_latency_per_inst_issued.ratio",
                                                       "smsp__average_warps_active_per_issue_active.ratio"),
                "cycles a warp waits between two issued instructions", "cycles"),
    MetricAlias("tensor_pipe_pct", ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                                    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
                                    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                                    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active",
                                    "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_active"),
                "tensor pipe busy, % of active cycles (busiest of HMMA/GMMA)", "%", combine="max",
                # the per-instruction-kind tensor pipes are named differently on each chip
                pattern=r"^sm__(pipe_tensor\w*_cycles_active|inst_executed_pipe_tensor\w*)"
                        r"\.avg\.pct_of_peak_sustained_active$"),
    MetricAlias("fma_pipe_pct", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active"),
                "FMA pipe busy, % of active cycles", "%", combine="max",
                pattern=r"^sm__(pipe_fma\w*_cycles_active|inst_executed_pipe_fma\w*)"
                        r"\.avg\.pct_of_peak_sustained_active$"),
    # The other pipes of ncu's HighPipeUtilization rule (ComputeWorkloadAnalysis): cycle-based
    # utilisation where ncu has it, else the instruction rate (XU and LSU only have that).
    MetricAlias("alu_pipe_pct", ("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"),
                "ALU pipe busy (integer and logic), % of active cycles", "%"),
    MetricAlias("fp64_pipe_pct", ("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active",
                                  "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active"),
                "FP64 pipe busy, % of active cycles", "%"),
    MetricAlias("xu_pipe_pct", ("sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",),
                "XU pipe (transcendentals, conversions: MUFU) instruction rate, % of peak", "%"),
    MetricAlias("lsu_pipe_pct", ("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",),
                "LSU pipe (load/store instructions) instruction rate, % of peak", "%"),
    MetricAlias("gmma_instructions_pct", ("sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",),
                "warpgroup MMA (HGMMA/QGMMA/IGMMA) instruction rate, % of peak: above 0 the kernel runs wgmma", "%"),
    MetricAlias("tma_pipe_pct", ("sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active",
                                 "sm__inst_executed_pipe_tma.avg.pct_of_peak_sustained_active"),
                "TMA (bulk tensor copy) pipe busy, % of active cycles: above 0 the kernel copies with TMA", "%",
                combine="max"),
    MetricAlias("l1_hit_rate_pct", ("l1tex__t_sector_hit_rate.pct",), "L1/TEX hit rate (sectors)", "%"),
    MetricAlias("l2_hit_rate_pct", ("lts__t_sector_hit_rate.pct",), "L2 hit rate (sectors)", "%"),
    MetricAlias("global_load_sectors_per_request",
                ("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio",),
                "32-byte sectors per global load request (4 = coalesced 4-byte loads, 16 = coalesced 16-byte)",
                "sectors/request"),
    MetricAlias("global_store_sectors_per_request",
                ("l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_st.ratio",),
                "32-byte sectors per global store request", "sectors/request"),
    MetricAlias("global_load_sectors", ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",), "global load sectors",
                "sectors"),
    MetricAlias("global_load_requests", ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",), "global load requests",
                "requests"),
    MetricAlias("global_store_sectors", ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",), "global store sectors",
                "sectors"),
    MetricAlias("global_store_requests", ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",), "global store requests",
                "requests"),
    MetricAlias("shared_load_bank_conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",),
                "shared-memory load bank conflicts", "conflicts"),
    MetricAlias("shared_store_bank_conflicts", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
                "shared-memory store bank conflicts", "conflicts"),
    MetricAlias("shared_load_wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",),
                "shared-memory load wavefronts", "wavefronts"),
    MetricAlias("shared_store_wavefronts", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",),
                "shared-memory store wavefronts", "wavefronts"),
    # The requests of ncu's SharedMemoryConflicts rule: shared-memory load (LDS) and store (STS)
    # instructions; ldmatrix (LDSM, sm_75+) counts as a load request.
    MetricAlias("shared_load_instructions", ("smsp__sass_inst_executed_op_shared_ld.sum",),
                "shared-memory load instructions executed (LDS)", "instructions"),
    MetricAlias("shared_store_instructions", ("smsp__sass_inst_executed_op_shared_st.sum",),
                "shared-memory store instructions executed (STS)", "instructions"),
    MetricAlias("shared_matrix_load_instructions", ("smsp__inst_executed_op_ldsm.sum",),
                "ldmatrix instructions executed (LDSM)", "instructions"),
    MetricAlias("local_load_sectors", ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",),
                "local-memory load sectors (spills, local arrays)", "sectors"),
    MetricAlias("local_store_sectors", ("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",),
                "local-memory store sectors (spills, local arrays)", "sectors"),
    MetricAlias("branch_uniformity_pct", ("smsp__sass_average_branch_targets_threads_uniform.pct",),
                "branch uniformity: branches every active thread of the warp took the same way", "%"),
    MetricAlias("threads_per_warp_instruction", ("smsp__thread_inst_executed_per_inst_executed.ratio",),
                "active threads per executed warp instruction (a ratio out of 32, not a percentage)", "threads of 32"),
    MetricAlias("dram_read_bytes", ("dram__bytes_read.sum",), "bytes read from DRAM", "bytes"),
    MetricAlias("dram_write_bytes", ("dram__bytes_write.sum",), "bytes written to DRAM", "bytes"),
)

ALIASES_BY_CANONICAL: dict[str, MetricAlias] = {alias.canonical: alias for alias in METRIC_ALIASES}

# Warp instructions executed per SASS opcode (an instanced metric: one instance per opcode, the
# value is the total). It is the executed instruction mix, the profile's own SASS evidence
# (HGMMA, LDGSTS, UTMALDG, USETMAXREG, LDL/STL, ...), recorded in the targeted sections' reports.
OPCODE_MIX_METRIC = "sass__inst_executed_per_opcode"
# The same mix with each opcode's modifiers (LDG.E.128, STG.E.U16, LDGSTS.E.BYPASS.128), which ncu
# records beside it. The reader keeps its global loads and stores: their widths say how many sectors
# a coalesced warp request needs (assessments.assess_global_access).
OPCODE_MODIFIER_MIX_METRIC = "sass__inst_executed_per_opcode_with_modifier_all"
GLOBAL_ACCESS_OPCODES: tuple[str, ...] = ("LDG", "LDGSTS", "STG")  # through the LSU and L1 (TMA's are not)
# Metrics whose per-instance values the reader keeps (every other metric keeps only its value).
INSTANCED_METRICS: tuple[str, ...] = (OPCODE_MIX_METRIC, OPCODE_MODIFIER_MIX_METRIC)


CANONICAL_FIELDS: tuple[str, ...] = tuple(alias.canonical for alias in METRIC_ALIASES)
