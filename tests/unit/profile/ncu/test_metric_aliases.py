"""Metric names across ncu versions resolve in one table; units and labels stay right."""

import dataclasses

import pytest

from kernel_opt.profile.ncu import reading
from kernel_opt.profile.ncu.metric_aliases import ALIASES_BY_CANONICAL, METRIC_ALIASES
from kernel_opt.profile.ncu.metrics import KernelMetrics, mean_metrics, metrics_from_raw
from kernel_opt.profile.ncu.raw_metrics import RawMetric


def raw(values: dict, units: dict | None = None) -> dict:
    units = units or {}
    return {name: RawMetric(name, value, units.get(name, "")) for name, value in values.items()}


@pytest.mark.parametrize("name", ["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                                  "dram__throughput.avg.pct_of_peak_sustained_elapsed"])
def test_dram_throughput_resolves_under_either_name(name):
    metrics = metrics_from_raw(raw({name: 85.0}))
    assert metrics.dram_throughput_pct == 85.0 and metrics.sources["dram_throughput_pct"] == name


def test_the_preferred_name_wins_when_both_are_present():
    metrics = metrics_from_raw(raw({"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 70.0,
                                    "dram__throughput.avg.pct_of_peak_sustained_elapsed": 71.0}))
    assert metrics.dram_throughput_pct == 70.0


def test_issue_slots_fall_back_to_the_scheduler_metric():
    metrics = metrics_from_raw(raw({"smsp__issue_active.avg.pct_of_peak_sustained_active": 33.0}))
    assert metrics.issue_slots_busy_pct == 33.0
    assert metrics.sources["issue_slots_busy_pct"] == "smsp__issue_active.avg.pct_of_peak_sustained_active"


def test_tensor_pipe_takes_the_busiest_instruction_kind():
    metrics = metrics_from_raw(raw({
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": 3.0,
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": 91.0,
    }))
    assert metrics.tensor_pipe_pct == 91.0
    assert metrics.sources["tensor_pipe_pct"] == (
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"
    )


def test_an_unlisted_tensor_pipe_name_is_found_by_pattern():
    metrics = metrics_from_raw(raw({
        "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active": 12.0,
        "sm__inst_executed_pipe_tensor_op_dmma.avg.pct_of_peak_sustained_active": 64.0,
        "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_elapsed": 99.0,  # another base: ignored
    }))
    assert metrics.tensor_pipe_pct == 64.0
    assert metrics.sources["tensor_pipe_pct"] == (
        "sm__inst_executed_pipe_tensor_op_dmma.avg.pct_of_peak_sustained_active"
    )


@pytest.mark.parametrize("value, unit, expected_us", [(2500.0, "nsecond", 2.5), (2.5, "usecond", 2.5),
                                                       (1.5, "msecond", 1500.0), (0.001, "second", 1000.0)])
def test_duration_is_converted_to_microseconds(value, unit, expected_us):
    metrics = metrics_from_raw(raw({"gpu__time_duration.sum": value}, {"gpu__time_duration.sum": unit}))
    assert metrics.duration_us == pytest.approx(expected_us)


def test_bytes_are_converted_whatever_the_prefix_and_denominator():
    metrics = metrics_from_raw(raw(
        {"launch__shared_mem_per_block_dynamic": 48.0, "launch__shared_mem_per_block_static": 1024,
         "dram__bytes_read.sum": 2.0},
        {"launch__shared_mem_per_block_dynamic": "Kbyte/block", "launch__shared_mem_per_block_static": "byte/block",
         "dram__bytes_read.sum": "Mbyte"}))
    assert metrics.dynamic_shared_memory_per_block_bytes == 48_000.0
    assert metrics.static_shared_memory_per_block_bytes == 1024.0
    assert metrics.shared_memory_per_block_bytes == 49_024.0
    assert metrics.dram_read_bytes == 2_000_000.0


def test_sectors_per_request_prefers_the_ratio_and_derives_it_from_sums_otherwise():
    sums = {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 3200,
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 100}
    derived = metrics_from_raw(raw(sums))
    assert derived.global_load_sectors_per_request == 32.0
    assert derived.sources["global_load_sectors_per_request"] == (
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
    ratio = metrics_from_raw(raw({**sums, "l1tex__average_t_sectors_per_request_pipe_lsu_mem_global_op_ld.ratio": 4.0}))
    assert ratio.global_load_sectors_per_request == 4.0
    assert metrics_from_raw(raw({
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 5,
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 0,
    })).global_load_sectors_per_request is None


def test_missing_string_and_non_finite_values_count_as_absent():
    metrics = metrics_from_raw(raw({"sm__throughput.avg.pct_of_peak_sustained_elapsed": "n/a",
                                    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": None,
                                    "lts__throughput.avg.pct_of_peak_sustained_elapsed": float("nan"),
                                    "launch__grid_size": True}))
    assert metrics.sm_throughput_pct is None and metrics.memory_throughput_pct is None
    assert metrics.l2_throughput_pct is None and metrics.grid_size_blocks is None
    assert metrics.sources == {}


def test_stalls_come_from_one_scheme_and_share_the_total():
    values = {
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 6.0,
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 2.0,
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 1.0,
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": 1.0,
        "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio": 0.0,
        "smsp__pcsamp_warps_issue_stalled_barrier": 999,  # another scheme: must not mix in
        "smsp__average_warp_latency_per_inst_issued.ratio": 10.0,  # the total, not a reason
    }
    metrics = metrics_from_raw(raw(values))
    assert metrics.stall_unit == "cycles per issued instruction"
    assert metrics.stalls == {"long_scoreboard": 6.0, "barrier": 2.0, "selected": 1.0, "wait": 1.0, "mio_throttle": 0.0}
    shares = {share.reason: share.share_pct for share in metrics.stall_shares()}
    assert shares == {"long_scoreboard": 60.0, "barrier": 20.0, "selected": 10.0, "wait": 10.0}
    assert [share.reason for share in metrics.top_stalls(3)] == [
        "long_scoreboard", "barrier", "wait"
    ]  # never "selected"
    assert metrics.warp_cycles_per_issued_instruction == 10.0


def test_pc_sampling_stalls_are_used_when_nothing_else_is_there():
    metrics = metrics_from_raw(raw({"smsp__pcsamp_warps_issue_stalled_long_scoreboard": 300,
                                    "smsp__pcsamp_warps_issue_stalled_long_scoreboard_not_issued": 290,
                                    "smsp__pcsamp_warps_issue_stalled_barrier": 100}))
    assert metrics.stalls == {"long_scoreboard": 300.0, "barrier": 100.0} and metrics.stall_unit == "samples"
    assert metrics.sources["stalls"] == "smsp__pcsamp_warps_issue_stalled_<reason>"


def test_the_alias_table_and_the_record_agree():
    names = [alias.canonical for alias in METRIC_ALIASES]
    assert len(names) == len(set(names))
    not_aliased = ("stalls", "stall_unit", "sources", "executed_opcodes", "executed_global_accesses")
    record_fields = [f.name for f in dataclasses.fields(KernelMetrics) if f.name not in not_aliased]
    assert names == record_fields
    every_candidate = [name for alias in METRIC_ALIASES for name in alias.candidates]
    assert len(every_candidate) == len(set(every_candidate)), "an ncu metric feeds two canonical names"


def test_units_and_labels_say_what_the_number_is():
    by_name = ALIASES_BY_CANONICAL
    for alias in METRIC_ALIASES:
        assert alias.canonical.endswith("_pct") == (alias.unit == "%"), alias.canonical
    threads = by_name["threads_per_warp_instruction"]
    assert threads.unit == "threads of 32" and "not a percentage" in threads.label
    assert by_name["eligible_warps_per_scheduler"].unit == "warps"
    assert by_name["duration_us"].unit == "us" and by_name["waves_per_sm"].unit == "waves"


def test_derived_values_and_the_json_form():
    metrics = KernelMetrics(shared_load_bank_conflicts=30, shared_store_bank_conflicts=10, shared_load_wavefronts=150,
                            shared_store_wavefronts=50, local_load_sectors=4, stalls={"wait": 1.0, "barrier": 3.0},
                            stall_unit="cycles per issued instruction")
    assert metrics.shared_bank_conflict_pct == 20.0 and metrics.local_memory_sectors == 4
    data = metrics.to_dict()
    assert data["shared_bank_conflict_pct"] == 20.0 and data["local_memory_sectors"] == 4
    assert data["stalls"] == [{"reason": "barrier", "value": 3.0, "share_pct": 75.0},
                              {"reason": "wait", "value": 1.0, "share_pct": 25.0}]
    assert KernelMetrics(shared_load_bank_conflicts=3).shared_bank_conflict_pct is None  # no wavefronts: no ratio


def test_mean_over_launches_keeps_absent_fields_absent():
    first = KernelMetrics(duration_us=10.0, sm_throughput_pct=40.0, stalls={"wait": 2.0})
    second = KernelMetrics(duration_us=30.0, sm_throughput_pct=None, stalls={"barrier": 4.0})
    mean = mean_metrics([first, second])
    assert mean.duration_us == 20.0 and mean.sm_throughput_pct == 40.0 and mean.dram_throughput_pct is None
    assert mean.stalls == {"barrier": 2.0, "wait": 1.0}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("See the @url:CUDA Best Practices Guide:https://docs.nvidia.com/cuda/x.html#y@ for details.",
         "See the CUDA Best Practices Guide for details."),
        ("Look at @section:MemoryWorkloadAnalysis:Memory Workload Analysis@ and @sass:0x1a0:this load@.",
         "Look at Memory Workload Analysis and this load."),
        ("Line @source:/src/k.cu:42:k.cu:42@ is hot.", "Line k.cu:42 is hot."),
        ("<b>Low</b>   occupancy<br/>here", "Low occupancy here"),
    ],
)
def test_rule_markup_is_reduced_to_its_text(text, expected):
    assert reading.strip_rule_markup(text) == expected


def test_rule_results_keep_kind_speedup_and_short_text():
    entry = {"rule_identifier": "SOLBottleneck", "name": "Bottleneck", "section_identifier": "SpeedOfLight",
             "rule_message": {"title": "High Memory", "message": "x" * 2000, "type": 2},
             "speedup_estimation": {"type": 1, "speedup": 37.5}}
    rule = reading.rule_from_dict(entry, {2: "optimization"})
    assert (rule.rule, rule.section, rule.kind, rule.estimated_speedup_pct) == ("SOLBottleneck", "SpeedOfLight",
                                                                                "optimization", 37.5)
    assert len(rule.message) == reading.RULE_MESSAGE_MAX_CHARS and rule.message.endswith("…")


def launch(name, grid, duration_ns, ranges=("kernel_opt_solution",)):
    values = {"launch__grid_size": grid, "launch__block_size": 256, "gpu__time_duration.sum": duration_ns,
              "sm__throughput.avg.pct_of_peak_sustained_elapsed": 50.0}
    return reading.LaunchRecord(name, name + "(float*)", raw(values, {"gpu__time_duration.sum": "nsecond"}), [],
                                list(ranges))


def test_launches_group_by_kernel_and_configuration_longest_first():
    launches = [launch("a", 10, 1000), launch("b", 5, 9000), launch("a", 10, 3000), launch("a", 20, 500, ranges=())]
    kernels = reading.group_launches(launches)
    assert [(k.name, k.launches, k.total_duration_us) for k in kernels] == [("b", 1, 9.0), ("a", 2, 4.0), ("a", 1, 0.5)]
    assert kernels[1].metrics.duration_us == 2.0 and kernels[1].launch_configuration == "10 blocks x 256 threads"
    assert kernels[2].inside_range is False and kernels[0].inside_range is True
    report = reading.profile_from_launches(launches, "r.ncu-rep", "fake reader")
    assert report.launches == 4 and report.total_duration_us == pytest.approx(13.5)
    assert report.launches_outside_range == 0  # a launch with no NVTX data is not counted as outside


def test_ncu_md_lists_every_alias_with_its_candidates():
    from kernel_opt.profile.guides import SKILL_ROOT

    text = (SKILL_ROOT / "profiling" / "NCU.md").read_text()
    for alias in METRIC_ALIASES:
        row = next((line for line in text.splitlines() if line.startswith(f"| `{alias.canonical}` |")), None)
        assert row is not None, f"NCU.md has no row for {alias.canonical}"
        assert all(f"`{name}`" in row for name in alias.candidates), alias.canonical
        assert f"| {alias.unit} |" in row


# --- the per-pipe roof, shared-memory requests and the executed opcode mix ------------------------


def test_every_pipe_of_the_roof_resolves_from_the_names_a_hopper_report_uses():
    metrics = metrics_from_raw(raw({
        "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active": 19.5,
        "sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active": 0.0,
        "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active": 43.0,
        "sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active": 81.5,
        "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active": 5.9,
        "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active": 1.1,
        "sm__inst_executed_pipe_tma.avg.pct_of_peak_sustained_active": 0.6,
    }))
    assert (metrics.alu_pipe_pct, metrics.fp64_pipe_pct, metrics.xu_pipe_pct, metrics.lsu_pipe_pct) == (19.5, 0.0, 43.0,
                                                                                                        81.5)
    assert metrics.gmma_instructions_pct == 5.9 and metrics.tma_pipe_pct == 1.1  # TMA: the busier of its two readings
    assert metrics.tensor_pipe_pct == 5.9  # the wgmma instruction rate is found by pattern when no cycle metric exists


def test_the_alu_pipe_falls_back_to_its_instruction_rate():
    metrics = metrics_from_raw(raw({"sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active": 37.0}))
    assert metrics.alu_pipe_pct == 37.0
    assert metrics.sources["alu_pipe_pct"] == "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active"


def test_wavefronts_per_request_count_ldmatrix_as_a_load_request_like_ncu():
    metrics = metrics_from_raw(raw({
        "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": 1200, "smsp__sass_inst_executed_op_shared_ld.sum": 100,
        "smsp__inst_executed_op_ldsm.sum": 200, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": 640,
        "smsp__sass_inst_executed_op_shared_st.sum": 80,
    }))
    assert metrics.shared_load_wavefronts_per_request == 4.0 and metrics.shared_store_wavefronts_per_request == 8.0
    assert KernelMetrics(shared_load_wavefronts=10.0).shared_load_wavefronts_per_request is None  # no requests
    assert metrics.to_dict()["shared_store_wavefronts_per_request"] == 8.0


def test_the_executed_opcode_mix_comes_from_the_instances_of_its_metric():
    mix = RawMetric("sass__inst_executed_per_opcode", 30.0, "", "", instances={"HGMMA": 20.0, "UTMALDG": 10.0})
    metrics = metrics_from_raw({mix.name: mix})
    assert metrics.executed_opcodes == {"HGMMA": 20.0, "UTMALDG": 10.0}
    assert metrics.sources["executed_opcodes"] == "sass__inst_executed_per_opcode"
    assert metrics_from_raw(raw({"sass__inst_executed_per_opcode": 30.0})).executed_opcodes == {}  # total only
    mean = mean_metrics([metrics, KernelMetrics(executed_opcodes={"HGMMA": 40.0, "LDGSTS": 4.0})])
    assert mean.executed_opcodes == {"HGMMA": 30.0, "LDGSTS": 2.0, "UTMALDG": 5.0}


def test_the_global_accesses_come_from_the_mix_with_modifiers():
    """Only the global loads and stores through L1 (LDG, LDGSTS, STG), as CUDA attention v6 ran them (H100)."""
    mix = RawMetric("sass__inst_executed_per_opcode_with_modifier_all", 0.0, "", "", instances={
        "LDGSTS.E.BYPASS.128": 2097152.0, "LDG.E.U16.CONSTANT": 524288.0, "STG.E.U16": 524288.0,
        "LDGDEPBAR": 262144.0, "UTMALDG.2D": 8.0, "LDS.U.128": 64.0, "HMMA.16816.F32.BF16": 9.0, "STG.E.128": 0.0})
    metrics = metrics_from_raw({mix.name: mix})
    assert metrics.executed_global_accesses == {"LDGSTS.E.BYPASS.128": 2097152.0, "LDG.E.U16.CONSTANT": 524288.0,
                                                "STG.E.U16": 524288.0}
    assert metrics.sources["executed_global_accesses"] == "sass__inst_executed_per_opcode_with_modifier_all"
    assert metrics.to_dict()["executed_global_accesses"] == metrics.executed_global_accesses
    mean = mean_metrics([metrics, KernelMetrics(executed_global_accesses={"STG.E.U16": 4.0})])
    assert mean.executed_global_accesses == {"LDG.E.U16.CONSTANT": 262144.0, "LDGSTS.E.BYPASS.128": 1048576.0,
                                             "STG.E.U16": 262146.0}
    assert metrics_from_raw({}).executed_global_accesses == {}


class InstancedMetric:
    """ncu_report's view of an instanced metric: a total, and one value per correlation id."""

    def __init__(self, values):
        self._values = values

    def value(self, index=None):
        return sum(self._values.values()) if index is None else list(self._values.values())[index]

    def num_instances(self):
        return len(self._values)

    def correlation_ids(self):
        names = list(self._values)
        return type("Ids", (), {"as_string": lambda self, index: names[index]})()

    def unit(self):
        return "inst"

    def description(self):
        return "warp instructions per opcode"


class PlainAction:
    def __init__(self, metrics):
        self._metrics = metrics

    def metric_names(self):
        return list(self._metrics)

    def metric_by_name(self, name):
        return self._metrics[name]

    def name(self, base=None):
        return "k"


def test_the_reader_keeps_the_instances_of_the_opcode_mix_only_and_they_survive_the_child_json():
    mix = InstancedMetric({"HGMMA": 8.0, "SYNCS": 2.0})
    other = InstancedMetric({"a": 1.0})  # instanced, but not one the classifier reads per instance
    record = reading.read_action(PlainAction({"sass__inst_executed_per_opcode": mix, "other": other}))
    assert record.raw["sass__inst_executed_per_opcode"].instances == {"HGMMA": 8.0, "SYNCS": 2.0}
    assert record.raw["sass__inst_executed_per_opcode"].value == 10.0 and record.raw["other"].instances is None
    again = reading.launch_from_dict(reading.launch_to_dict(record))
    assert again.raw == record.raw and again.metrics.executed_opcodes == {"HGMMA": 8.0, "SYNCS": 2.0}
