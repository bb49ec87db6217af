"""ncu_profile.py on a CPU: exit codes, the orchestration with ncu mocked, and reports from a fake ncu_report."""

import json
import shutil
import sys
from pathlib import Path

import pytest

from kernel_opt.commands.ncu_profile import main
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.env import probes as environment
from kernel_opt.env.probe_records import ToolProbe
from kernel_opt.profile import profiler
from kernel_opt.profile.ncu import collection as ncu_collection
from kernel_opt.profile.ncu import reading
from kernel_opt.profile.ncu.collection import NcuCommandOptions, NcuRun, build_ncu_command

# --- a stand-in for Nsight Compute's ncu_report module ---------------------------------------------


class FakeMetric:
    def __init__(self, value, unit=""):
        self._value, self._unit = value, unit

    def value(self):
        return self._value

    def unit(self):
        return self._unit

    def description(self):
        return "a description | with a pipe"


class FakeDomain:
    def __init__(self, ranges):
        self._ranges = ranges

    def push_pop_ranges(self):
        return list(self._ranges)


class FakeState:
    def __init__(self, ranges):
        self._ranges = ranges

    def domains(self):
        return [0]

    def domain_by_id(self, index):
        return FakeDomain(self._ranges)


class FakeAction:
    NameBase_DEMANGLED = 1

    def __init__(self, name, metrics, rules=(), ranges=("kernel_opt_solution",)):
        self._name, self._metrics, self._rules, self._ranges = name, metrics, list(rules), ranges

    def name(self, base=None):
        return f"{self._name}(float const*, float*, int)" if base == 1 else self._name

    def metric_names(self):
        return list(self._metrics)

    def metric_by_name(self, name):
        return self._metrics.get(name)

    def rule_results_as_dicts(self):
        return self._rules

    def nvtx_state(self):
        return FakeState(self._ranges)


class FakeRange:
    def __init__(self, actions):
        self._actions = actions

    def num_actions(self):
        return len(self._actions)

    def action_by_idx(self, index):
        return self._actions[index]


class FakeContext:
    def __init__(self, actions):
        self._ranges = [FakeRange(actions)] if actions else []

    def num_ranges(self):
        return len(self._ranges)

    def range_by_idx(self, index):
        return self._ranges[index]


def streaming_action(dram_pct=88.0, duration_ns=250_000.0):
    values = {
        "gpu__time_duration.sum": (duration_ns, "nsecond"),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": (20.0, "%"),
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": (dram_pct, "%"),
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": (dram_pct, "%"),
        "lts__throughput.avg.pct_of_peak_sustained_elapsed": (40.0, "%"),
        "l1tex__throughput.avg.pct_of_peak_sustained_active": (30.0, "%"),
        "sm__warps_active.avg.pct_of_peak_sustained_active": (85.0, "%"),
        "sm__maximum_warps_per_active_cycle_pct": (100.0, "%"),
        "launch__grid_size": (65536, ""), "launch__block_size": (256, ""),
        "launch__waves_per_multiprocessor": (62.06, ""), "device__attribute_multiprocessor_count": (132, ""),
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": (18.0, "inst"),
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": (1.0, "inst"),
        "smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio": (6.0, "inst"),
        "smsp__thread_inst_executed_per_inst_executed.ratio": (32.0, ""),
        "dram__bytes_read.sum": (2.0e8, "byte"), "dram__bytes_write.sum": (1.0e8, "byte"),
        "device__attribute_display_name": ("NVIDIA H100 80GB HBM3", ""),
        "device__attribute_compute_capability_major": (9, ""), "device__attribute_compute_capability_minor": (0, ""),
    }
    rule = {"rule_identifier": "SOLBottleneck", "name": "Bottleneck", "section_identifier": "SpeedOfLight",
            "rule_message": {"title": "", "type": 2, "message": "Memory is more heavily utilized than Compute: Look at "
                             "the @section:MemoryWorkloadAnalysis:Memory Workload Analysis@ section."}}
    return FakeAction("stream_add_kernel", {name: FakeMetric(*pair) for name, pair in values.items()}, [rule])


def fake_module(actions):
    return type("FakeNcuReport", (), {"MsgType_OPTIMIZATION": 2, "MsgType_WARNING": 3,
                                      "load_report": staticmethod(lambda path: FakeContext(actions))})


def use_fake_reader(monkeypatch, actions):
    """Read reports through the stand-in module, in-process (the real one reads in a child process)."""
    monkeypatch.setattr(reading, "locate_report_reader",
                        lambda ncu_path=None: reading.ReaderLocation("ncu_report (test double)", None))
    monkeypatch.setattr(reading, "read_report_launches", lambda path, ncu_path=None: (
        reading.collect_launches(fake_module(actions), path), "ncu_report (test double)"))


@pytest.fixture
def fake_report(tmp_path, monkeypatch):
    """An .ncu-rep path whose reading goes through the stand-in reader."""
    path = tmp_path / "profile.ncu-rep"
    path.write_bytes(b"not really a report")
    use_fake_reader(monkeypatch, [streaming_action()])
    return path


def summary(folder: Path) -> dict:
    return json.loads((folder / "ncu_summary.json").read_text())


# --- exit codes ----------------------------------------------------------------------------------


def vector_add_args(reference_dir, output_dir):
    problem = reference_dir / "vector_add"
    return [str(problem / "good" / "vector_add.py"), "--ref", str(problem / "ref.py"), "--output-dir", str(output_dir)]


def test_this_cpu_machine_cannot_profile(reference_dir, tmp_path, capsys):
    if profiler._gpu_problem() is None and environment.probe_ncu().found:
        pytest.skip("this machine has a GPU and ncu: the exit-4 path is covered by the forced tests below")
    code = main(vector_add_args(reference_dir, tmp_path) + ["--json", "--n=4096"])
    assert code == 4
    printed = json.loads(capsys.readouterr().out)
    assert printed["ok"] is False and printed["error"]["exit_code"] == 4
    assert printed["error"]["message"].startswith("this machine cannot profile")


@pytest.mark.parametrize("gpu, ncu_found, words", [
    (False, True, "torch sees no NVIDIA GPU"),
    (True, False, "Nsight Compute (ncu) is not installed"),
    (False, False, "torch sees no NVIDIA GPU on this machine; Nsight Compute (ncu) is not installed"),
])
def test_no_gpu_or_no_ncu_is_exit_4_with_a_plain_sentence(reference_dir, tmp_path, monkeypatch, capsys, gpu, ncu_found,
                                                          words):
    monkeypatch.setattr(profiler, "_gpu_problem", lambda: None if gpu else "torch sees no NVIDIA GPU on this machine")
    monkeypatch.setattr(environment, "probe_ncu", lambda: ToolProbe(
        "ncu", ncu_found, "/opt/ncu/ncu" if ncu_found else None, "2025.3.1.0" if ncu_found else None))
    assert main(vector_add_args(reference_dir, tmp_path)) == 4
    error = capsys.readouterr().err
    assert words in error and "--from-report" in error
    assert not (tmp_path / "ncu_summary.json").exists()


def test_from_report_on_a_missing_file_is_a_usage_error(tmp_path, capsys):
    assert main(["--from-report", str(tmp_path / "nothing.ncu-rep"), "--output-dir", str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("extra, words", [
    (["--ref", "ref.py"], "pass no solution and no --ref"),
    (["--N=4096"], "takes no problem sizes"),
])
def test_from_report_refuses_profiling_arguments(tmp_path, capsys, extra, words):
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"x")
    assert main(["--from-report", str(report), "--output-dir", str(tmp_path), *extra]) == 2
    assert words in capsys.readouterr().err


def test_profiling_needs_a_solution_and_a_reference(reference_dir, tmp_path):
    assert main(["--output-dir", str(tmp_path)]) == 2
    assert main([str(reference_dir / "vector_add" / "good" / "vector_add.py"), "--output-dir", str(tmp_path)]) == 2
    assert main(vector_add_args(reference_dir, tmp_path)[:1] + ["--ref", str(tmp_path / "no_ref.py"),
                                                                  "--output-dir", str(tmp_path)]) == 2
    assert main(vector_add_args(reference_dir, tmp_path) + ["--calls", "0"]) == 2


def test_an_unreadable_report_is_a_usage_error_or_needs_the_reader(tmp_path, capsys):
    """The real reading path: a child process imports ncu_report and finds no kernel in the file."""
    report = tmp_path / "garbage.ncu-rep"
    report.write_text("garbage")
    try:
        reading.locate_report_reader()
        expected, words = 2, "holds no profiled kernel"  # ncu_report opens it and finds nothing
    except EnvironmentFault:
        expected, words = 4, "ncu_report"  # no reader on this machine: no report can be read
    assert main(["--from-report", str(report), "--output-dir", str(tmp_path / "out")]) == expected
    assert words in capsys.readouterr().err


def test_a_reader_that_crashes_is_reported_not_inherited(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setattr(reading, "locate_report_reader",
                        lambda ncu_path=None: reading.ReaderLocation("ncu_report X", None))
    monkeypatch.setattr(subprocess, "run", lambda command, **kwargs: subprocess.CompletedProcess(
        command, -11, stdout="", stderr="Segmentation fault"))
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"x")
    with pytest.raises(EnvironmentFault,
                       match=r"ncu_report crashed while reading .*\(exit status -11\): Segmentation fault"):
        reading.read_profile(report)


def test_the_reading_child_sends_launches_and_errors_as_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reading, "locate_report_reader",
                        lambda ncu_path=None: reading.ReaderLocation("fake reader", None))
    monkeypatch.setattr(reading, "import_report_reader", lambda location: fake_module([streaming_action()]))
    assert reading.main([str(tmp_path / "r.ncu-rep"), "--ncu", "/opt/ncu/ncu"]) == 0
    payload = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert payload["ok"] and payload["reader"] == "fake reader"
    (launch,) = [reading.launch_from_dict(item) for item in payload["launches"]]
    assert launch.name == "stream_add_kernel" and launch.metrics.dram_throughput_pct == 88.0
    assert launch.rules[0].rule == "SOLBottleneck" and launch.nvtx_ranges == ["kernel_opt_solution"]

    def broken(module_location):
        raise EnvironmentFault("`import ncu_report` failed", kind="no_ncu_report")

    monkeypatch.setattr(reading, "import_report_reader", broken)
    assert reading.main([str(tmp_path / "r.ncu-rep")]) == 4
    payload = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert payload == {"ok": False, "error": {"kind": "no_ncu_report", "message": "`import ncu_report` failed",
                                              "hint": None, "exit_code": 4}}


# --- reports from a report ------------------------------------------------------------------------


def pipelined_action():
    """A cp.async + mma.sync attention kernel at 12% occupancy, its report without an executed opcode mix."""
    values = {
        "gpu__time_duration.sum": (500_000.0, "nsecond"),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": (45.0, "%"),
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": (42.0, "%"),
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": (7.0, "%"),
        "lts__throughput.avg.pct_of_peak_sustained_elapsed": (42.0, "%"),
        "l1tex__throughput.avg.pct_of_peak_sustained_active": (41.0, "%"),
        "sm__warps_active.avg.pct_of_peak_sustained_active": (12.0, "%"),
        "sm__maximum_warps_per_active_cycle_pct": (12.5, "%"),
        "launch__occupancy_limit_registers": (2, ""), "launch__grid_size": (2048, ""), "launch__block_size": (128, ""),
        "launch__waves_per_multiprocessor": (7.76, ""), "device__attribute_multiprocessor_count": (132, ""),
        "smsp__warps_eligible.avg.per_cycle_active": (0.65, "warp"),
        "smsp__issue_active.avg.pct_of_peak_sustained_active": (47.0, "%"),
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active": (42.0, "%"),
        "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": (16.0, "%"),
        "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active": (0.0, "%"),
        "sm__pipe_tma_cycles_active.avg.pct_of_peak_sustained_active": (0.0, "%"),
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": (3.0, "inst"),
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": (1.0, "inst"),
    }
    return FakeAction("attention_kernel", {name: FakeMetric(*pair) for name, pair in values.items()})


def test_a_static_analysis_in_the_output_folder_informs_the_verdict(tmp_path, monkeypatch):
    report = tmp_path / "profile.ncu-rep"
    report.write_bytes(b"not really a report")
    use_fake_reader(monkeypatch, [pipelined_action()])
    without = tmp_path / "without"
    assert main(["--from-report", str(report), "--output-dir", str(without), "--backend", "cuda"]) == 0
    data = summary(without)
    assert data["bottleneck"] == "occupancy_bound" and data["busiest_pipe"] == "tensor"
    assert data["unverified"] and "cp.async (LDGSTS)" in data["unverified"][0]
    with_static = tmp_path / "with"
    with_static.mkdir()
    (with_static / "static_analysis.json").write_text(json.dumps({"kernels": [{
        "name": "attention_kernel(__nv_bfloat16 const*, float)", "mangled_name": "_Z16attention_kernelPKvf",
        "mix": {"opcode_counts": {"HMMA": 128, "LDGSTS": 4, "LDSM": 32}}}]}))
    assert main(["--from-report", str(report), "--output-dir", str(with_static), "--backend", "cuda"]) == 0
    data = summary(with_static)
    assert data["bottleneck"] == "overlap_bound" and data["unverified"] == []
    (kernel,) = data["kernels"]
    assert kernel["design"]["source"] == "static analysis (compiled SASS)"
    assert kernel["design"]["async_features"] == ["cp.async (LDGSTS x4)"]
    rows = {cells[1].strip(): cells[2].strip() for line in (with_static / "ncu_summary.md").read_text().splitlines()
            if line.startswith("| ") and len(cells := line.split("|")) == 4}
    assert rows["SASS (static analysis (compiled SASS))"] == ("HMMA 128, LDSM 32, LDGSTS 4; asynchronous: cp.async "
                                                              "(LDGSTS x4)")
    assert rows["busiest math pipe, % of its own peak (others)"] == "tensor 42.0% (roof 80%); FMA 16.0%"


def test_from_report_writes_summary_details_and_json(fake_report, tmp_path, capsys):
    out = tmp_path / "v1"
    assert main(["--from-report", str(fake_report), "--output-dir", str(out)]) == 0
    data = summary(out)
    # memory_bound always; the limiter depends on access width: on an H200 (2026-11-22) the Triton
    # kernel read DRAM-limited, the CUDA one (4-byte accesses: 4x the L2 requests per byte of 16-byte
    # ones) read DRAM 66.6% beside L2 79.9%, so L2.
    assert (data["bottleneck"] == "memory_bound" and data["memory_limiter"] in ("DRAM", "L2")
            and data["small_grid"] is False)
    assert data["top_stall"] == "long_scoreboard"
    metrics = data["metrics"]
    assert (metrics["memory_sol_pct"], metrics["sm_sol_pct"], metrics["achieved_occupancy_pct"]) == (88.0, 20.0, 85.0)
    assert metrics["duration_us"] == 250.0 and metrics["dram_bytes"] == 3.0e8
    assert data["device"] == {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
    assert data["collection"]["mode"] == "from_report" and data["collection"]["reader"] == "ncu_report (test double)"
    kernel = data["kernels"][0]
    assert kernel["demangled_name"] == "stream_add_kernel(float const*, float*, int)" and kernel["inside_nvtx_range"]
    assert kernel["metrics"]["threads_per_warp_instruction"] == 32.0
    assert kernel["metric_sources"]["dram_throughput_pct"] == "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    assert kernel["rules"][0]["message"].startswith("Memory is more heavily utilized than Compute: Look at the Memory "
                                                    "Workload Analysis section")
    assert {item["guide"] for item in data["read_next"]} == {"cuda", "triton"}  # no backend given: both guides
    assert data["read_next"][0]["link"].startswith("experience/cuda/CUDA.md#single_pass")
    text = (out / "ncu_summary.md").read_text()
    assert "# ncu profile: memory_bound" in text and "88.0% (DRAM)" in text and "--clock-control none" in text
    assert "long_scoreboard 72%" in text and "never compared with benchmark timings" in text
    assert len(text.splitlines()) < 80, "the summary must stay about a screen long"
    details = (out / "ncu_details.md").read_text()
    assert "threads of 32" in details and "`ncu --query-metrics`" in details
    assert "a description" not in details, "metric descriptions are ncu's own text, the same in every report"
    assert "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed" in details
    console = capsys.readouterr().out
    assert console.startswith("MEMORY_BOUND: memory SOL 88.0% (DRAM), SM SOL 20.0%") and "next: read" in console


def test_baseline_shows_what_moved(fake_report, tmp_path, monkeypatch):
    assert main(["--from-report", str(fake_report), "--output-dir", str(tmp_path / "v1")]) == 0
    use_fake_reader(monkeypatch, [streaming_action(dram_pct=70.0, duration_ns=200_000.0)])
    assert main(["--from-report", str(fake_report), "--output-dir", str(tmp_path / "v2"), "--baseline",
                 str(tmp_path / "v1"), "--backend", "cuda"]) == 0
    changes = {change["name"]: change for change in summary(tmp_path / "v2")["baseline"]["changes"]}
    assert changes["duration_us"]["before"] == 250.0 and changes["duration_us"]["after"] == 200.0
    assert changes["duration_us"]["moved"] and changes["memory_sol_pct"]["change"] == -18.0
    assert not changes["bottleneck"]["moved"]
    assert "## What moved since" in (tmp_path / "v2" / "ncu_summary.md").read_text()
    assert main(["--from-report", str(fake_report), "--output-dir", str(tmp_path / "v3"), "--baseline",
                 str(tmp_path / "nowhere")]) == 2


def test_a_report_without_kernels_is_a_usage_error(tmp_path, monkeypatch, capsys):
    report = tmp_path / "empty.ncu-rep"
    report.write_bytes(b"x")
    use_fake_reader(monkeypatch, [])
    assert main(["--from-report", str(report), "--output-dir", str(tmp_path / "out")]) == 2
    assert "holds no profiled kernel" in capsys.readouterr().err


# --- profiling, with ncu mocked --------------------------------------------------------------------


@pytest.fixture
def profiling_machine(monkeypatch):
    """A machine with a GPU and ncu 2025.3.1, where ncu itself is replaced by `behaviour`."""
    monkeypatch.setattr(profiler, "_gpu_problem", lambda: None)
    monkeypatch.setattr(profiler, "gpu_capability_if_any", lambda: "9.0")
    monkeypatch.setattr(environment, "probe_ncu",
                        lambda: ToolProbe("ncu", True, "/opt/ncu/ncu", "2025.3.1.0"))
    use_fake_reader(monkeypatch, [streaming_action()])
    calls = []

    def install(behaviour):
        def fake_run_ncu(command, env=None, timeout_s=None):
            calls.append({"command": command, "env": env, "timeout_s": timeout_s})
            request = json.loads(Path(command[-1]).read_text())
            return behaviour(request, command)

        monkeypatch.setattr(ncu_collection, "run_ncu", fake_run_ncu)
        return calls

    return install


def write_events(request, *events):
    with open(request["events"], "a") as stream:
        for event in events:
            stream.write(json.dumps(event) + "\n")


def succeed(request, command):
    write_events(request, {"event": "phase", "phase": "profile"},
                 {"event": "done", "dims": {"n": 4096, "dtype": "float32"}})
    Path(command[command.index("--export") + 1] + ".ncu-rep").write_bytes(b"report")
    return NcuRun(command, 0, "==PROF== Disconnected")


def test_profiling_runs_the_exact_ncu_command_on_the_profile_target(reference_dir, tmp_path, profiling_machine):
    calls = profiling_machine(succeed)
    out = tmp_path / "v1"
    assert main(vector_add_args(reference_dir, out) + ["--n=4096", "--timeout", "90"]) == 0
    (call,) = calls
    request_path = out / "profile_request.json"
    expected = build_ncu_command("/opt/ncu/ncu", [sys.executable, "-m", "kernel_opt.profile.target", str(request_path)],
                                     NcuCommandOptions(export_base=out / "profile",
                                                       extra_metrics=ncu_collection.extra_metrics_for("9.0")))
    assert call["command"] == expected and call["timeout_s"] == 90
    assert Path(call["env"]["PYTHONPATH"].split(":")[0], "kernel_opt", "profile", "target.py").is_file()
    request = json.loads(request_path.read_text())
    assert (request["backend"], request["cli_dims"], request["warmup_calls"], request["profiled_calls"]) == (
        "triton", {"n": 4096}, 3, 1)
    assert request["nvtx_range"] == "kernel_opt_solution" and request["device"] == "cuda"
    data = summary(out)
    assert data["bottleneck"] == "memory_bound" and {item["guide"] for item in data["read_next"]} == {"triton"}
    # vector_add's ref.py adds two tensors: an elementwise problem, so no single_pass among its advice
    assert data["traits"]["family"] == "elementwise" and data["traits"]["family_source"] == "the reference calls add"
    assert "single_pass" not in [item["strategy"] for item in data["read_next"]]
    collection = data["collection"]
    assert collection["mode"] == "profiled" and collection["clock_control"] == "none"
    assert collection["ncu_version"] == "2025.3.1.0" and collection["dims"] == {"n": 4096, "dtype": "float32"}
    assert (out / "ncu.log").read_text().startswith("$ /opt/ncu/ncu --target-processes all --clock-control none")
    text = (out / "ncu_summary.md").read_text()
    assert "only launches inside the NVTX range `kernel_opt_solution` (1 solution call(s), after 3 warm-up" in text


def test_set_full_and_launch_cap_reach_the_command(reference_dir, tmp_path, profiling_machine):
    calls = profiling_machine(succeed)
    assert main(vector_add_args(reference_dir, tmp_path)
                + ["--set", "full", "--max-launches", "5", "--calls", "2"]) == 0
    command = calls[0]["command"]
    assert command[command.index("--set") + 1] == "full" and command[command.index("--launch-count") + 1] == "5"
    assert json.loads((tmp_path / "profile_request.json").read_text())["profiled_calls"] == 2


def test_a_failing_solution_in_the_profiled_program_is_exit_3(reference_dir, tmp_path, profiling_machine, capsys):
    def crash(request, command):
        write_events(request, {"event": "phase", "phase": "warmup"},
                     {"event": "error", "kind": "illegal_memory_access",
                      "message": "CUDA error: an illegal memory access", "hint": None, "exit_code": 3})
        return NcuRun(command, 3, "==ERROR== The application returned an error code (3).")

    profiling_machine(crash)
    assert main(vector_add_args(reference_dir, tmp_path)) == 3
    assert "illegal memory access" in capsys.readouterr().err


def test_a_profiled_program_that_dies_silently_is_exit_3(reference_dir, tmp_path, profiling_machine, capsys):
    def die(request, command):
        write_events(request, {"event": "phase", "phase": "profile"})
        return NcuRun(command, 139, "==ERROR== The application returned an error code (139).")

    profiling_machine(die)
    assert main(vector_add_args(reference_dir, tmp_path)) == 3
    assert "died during profile" in capsys.readouterr().err


@pytest.mark.parametrize("output, events, code, words", [
    ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", "done", 4, "performance counters"),
    ("==WARNING== No kernels were profiled.", "done", 3, "launched no GPU kernel"),
    ("==ERROR== Failed to find metric sm__nope", "done", 4, "Failed to find metric sm__nope"),
    # ncu stopped the program at its first launch: ncu's error, not the solution's
    ("==ERROR== Failed to find metric sm__nope\n==ERROR== The application returned an error code (1).", "warmup", 4,
     "Failed to find metric sm__nope"),
])
def test_an_ncu_that_fails_gets_a_clear_message(reference_dir, tmp_path, profiling_machine, capsys, output, events,
                                                code, words):
    def fail(request, command):
        write_events(request,
                     {"event": "done", "dims": {}} if events == "done" else {"event": "phase", "phase": events})
        return NcuRun(command, 1, output)

    profiling_machine(fail)
    assert main(vector_add_args(reference_dir, tmp_path)) == code
    assert words in capsys.readouterr().err


def test_a_program_that_dies_after_ncu_wrote_a_partial_report_is_exit_3(reference_dir, tmp_path, profiling_machine,
                                                                        capsys):
    def die_late(request, command):
        write_events(request, {"event": "phase", "phase": "profile"})
        Path(command[command.index("--export") + 1] + ".ncu-rep").write_bytes(b"partial")
        return NcuRun(command, 134, "==ERROR== The application returned an error code (134).")

    profiling_machine(die_late)
    assert main(vector_add_args(reference_dir, tmp_path)) == 3
    assert "died during profile (the report is partial" in capsys.readouterr().err


def test_a_stale_report_is_never_read_as_this_runs(reference_dir, tmp_path, profiling_machine):
    (tmp_path / "profile.ncu-rep").write_bytes(b"old report")

    def no_report(request, command):
        write_events(request, {"event": "done", "dims": {}})
        return NcuRun(command, 1, "==ERROR== something broke")

    profiling_machine(no_report)
    assert main(vector_add_args(reference_dir, tmp_path)) == 4
    assert not (tmp_path / "profile.ncu-rep").exists()


@pytest.mark.nvcc
def test_cuda_solutions_are_built_before_profiling(reference_dir, tmp_path, profiling_machine):
    calls = profiling_machine(succeed)
    problem = reference_dir / "vector_add"
    assert main([str(problem / "good" / "vector_add.cu"), "--ref", str(problem / "ref.py"),
                 "--output-dir", str(tmp_path), "--arch", "sm_90"]) == 0
    request = json.loads((tmp_path / "profile_request.json").read_text())
    assert Path(request["library"]).is_file() and request["signature"]["parameters"][0]["name"] == "x"
    assert any("built for sm_90" in note for note in summary(tmp_path)["collection"]["notes"])
    assert len(calls) == 1


def test_the_script_wrapper_and_the_console_entry_know_the_command(scripts_dir):
    from kernel_opt.main import COMMANDS

    assert COMMANDS["ncu_profile"] == "ncu_profile" and COMMANDS["static_analysis"] == "static_analysis"
    for name in ("ncu_profile.py", "static_analysis.py"):
        text = (scripts_dir / name).read_text()
        assert f"from kernel_opt.commands.{name[:-3]} import main" in text and "sys.exit(main())" in text
    assert shutil.which(sys.executable)


# --- on the GPU machine: the real ncu, end to end ------------------------------------------------


@pytest.mark.gpu
@pytest.mark.timing  # asserts hardware counters: other GPU work running beside it distorts them
@pytest.mark.parametrize("solution", ["vector_add.cu", "vector_add.py"])
def test_only_the_solutions_kernel_is_profiled(reference_dir, tmp_path, solution):
    """Warm-up calls, setup's random kernels and the reference stay out: 2 calls, 2 launches of one kernel."""
    if not environment.probe_ncu().found:
        pytest.skip("needs Nsight Compute (ncu)")
    problem = reference_dir / "vector_add"
    code = main([str(problem / "good" / solution), "--ref", str(problem / "ref.py"), "--output-dir", str(tmp_path),
                 "--calls", "2", "--n=16777216"])
    assert code == 0, (tmp_path / "ncu.log").read_text()[-3000:]
    data = summary(tmp_path)
    assert [kernel["name"] for kernel in data["kernels"]] == ["vector_add_kernel"]
    assert data["launches_profiled"] == 2 and data["kernels"][0]["launches"] == 2
    assert data["kernels"][0]["inside_nvtx_range"]
    # memory_bound always; the limiter depends on access width: on an H200 (2026-11-22) the Triton
    # kernel read DRAM-limited, the CUDA one (4-byte accesses: 4x the L2 requests per byte of 16-byte
    # ones) read DRAM 66.6% beside L2 79.9%, so L2.
    assert data["bottleneck"] == "memory_bound" and data["memory_limiter"] in ("DRAM", "L2")
    assert data["collection"]["clock_control"] == "none" and (tmp_path / "profile.ncu-rep").is_file()


def test_without_a_reader_the_report_is_kept_and_the_exit_is_4(reference_dir, tmp_path, profiling_machine, monkeypatch,
                                                                capsys):
    profiling_machine(succeed)

    def no_reader(ncu_path=None):
        raise EnvironmentFault("no ncu_report", hint="pip install ncu-report==2025.3.1")

    monkeypatch.setattr(reading, "locate_report_reader", no_reader)
    assert main(vector_add_args(reference_dir, tmp_path)) == 4
    assert (tmp_path / "profile.ncu-rep").is_file()
    error = capsys.readouterr().err
    assert "ncu wrote" in error and "--from-report profile.ncu-rep" in error


def test_the_profiled_program_reports_a_missing_gpu_as_exit_4(reference_dir, tmp_path):
    from kernel_opt.profile import target as profile_target

    if profiler._gpu_problem() is None:
        pytest.skip("this machine has a GPU")
    problem = reference_dir / "vector_add"
    events = tmp_path / "events.jsonl"
    request = {"backend": "triton", "solution": str(problem / "good" / "vector_add.py"),
               "reference": str(problem / "ref.py"), "device": "cuda", "cli_dims": {}, "warmup_calls": 1,
               "profiled_calls": 1, "nvtx_range": "kernel_opt_solution", "events": str(events)}
    (tmp_path / "request.json").write_text(json.dumps(request))
    assert profile_target.main([str(tmp_path / "request.json")]) == 4
    (error,) = [json.loads(line) for line in events.read_text().splitlines()]
    assert error["event"] == "error" and error["exit_code"] == 4 and "no CUDA GPU" in error["message"]


@pytest.mark.parametrize("allow_tf32", [False, True])
def test_the_profiled_program_runs_under_the_checks_precision_policy(reference_dir, tmp_path, monkeypatch, allow_tf32):
    """cuDNN's own default (allow_tf32 = True) once profiled a float32 convolution as a TF32 kernel that neither the
    correctness check nor the benchmark ran; the profiled program now sets what ref.py allows, as they do."""
    import torch

    from kernel_opt.profile import target as profile_target
    from kernel_opt.run.events import EventLog, read_event_log
    from kernel_opt.run.request import ChildRequest, ProfileTargetPart, SolutionSpec
    from kernel_opt.solution import loaded

    class Stop(Exception):
        pass

    def stop(request):
        raise Stop  # the policy is set before the solution loads: nothing later is needed here

    ref = tmp_path / "ref.py"
    ref.write_text((reference_dir / "vector_add" / "ref.py").read_text() + f"\nallow_tf32 = {allow_tf32}\n")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(profile_target, "environment_info", lambda device: {})
    monkeypatch.setattr(profile_target, "solution_or_fault", stop)
    monkeypatch.setattr(loaded, "solution_or_fault", stop)
    previous = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = not allow_tf32
    try:
        with pytest.raises(Stop):
            request = ChildRequest(SolutionSpec("triton", "none.py"), str(ref), "cuda", {},
                                   ProfileTargetPart(1, 1, "kernel_opt_solution"))
            profile_target.run_profile_target(request, EventLog(tmp_path / "events.jsonl"))
        assert torch.backends.cudnn.allow_tf32 is allow_tf32 and torch.backends.cuda.matmul.allow_tf32 is allow_tf32
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = previous
        torch.set_float32_matmul_precision("highest")
    [precision] = [event for event in read_event_log(tmp_path / "events.jsonl") if event.tag == "precision"]
    assert precision.allow_tf32 is allow_tf32
