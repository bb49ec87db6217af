"""benchmark.py without a GPU: the report assembled from worker events, and its exit codes.

The worker's events are the JSON lines a GPU run emits (see measure/benchmark_child.py); here they
are written by hand and parsed as the parent parses them, so every derived number (speedups, the
comparison verdict, roofline percentages, the suspicious-floor flag) is checked against arithmetic
done in the test.
"""

import json
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from kernel_opt.backends.cuda.backend import source_synchronizes
from kernel_opt.check.integrity.launch_rules import LaunchCheck, LaunchedWork
from kernel_opt.check.records import DeviceInfo
from kernel_opt.commands.benchmark import main
from kernel_opt.loop.step_summaries import benchmark_line
from kernel_opt.measure.benchmark_assembly import assemble_report, exit_code_for
from kernel_opt.measure.benchmark_report import benchmark_markdown, benchmark_summary
from kernel_opt.measure.ceilings import CopyCeiling
from kernel_opt.measure.placement import CEILING_BASIS_RULE, PHYSICAL_FLOOR_MARGIN
from kernel_opt.measure.records import BenchmarkReport, CorrectnessGate, TimedEntry, TimedSolution
from kernel_opt.run.events import DoneEvent, EnvironmentEvent, PhaseEvent, TimedEvent, parse_event
from kernel_opt.run.release import WAITING_PHASE
from kernel_opt.run.request import BenchmarkPart, ChildRequest, SolutionSpec
from kernel_opt.run.runner import ChildOutcome

N = 1 << 28
TORCH_ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int)"
BYTES = 3 * N * 4  # vector add, fp32


def timed(name, samples, **extra):
    timing = {"samples_us": samples}
    ordered = sorted(samples)
    median = ordered[len(ordered) // 2]
    return {"event": "timed", "entry": asdict(TimedEntry(name, median_us=median, p20_us=ordered[1], p80_us=ordered[-2],
                                                         min_us=ordered[0], reps=len(samples), timing=timing, **extra))}


def measured_ceilings(bandwidth_gbps=3000.0):
    return {
        "schema_version": 1,
        "measured_at": "2026-11-22T03:00:00+00:00",
        "device": {"name": "NVIDIA H100 80GB HBM3", "driver_version": "580", "torch_version": "2.11",
                   "cuda_version": "13.0", "compute_capability": "9.0", "sm_count": 132, "l2_cache_bytes": 52428800,
                   "total_memory_bytes": 85e9},
        "copy": {"buffer_bytes": 1 << 30, "bytes_moved": 1 << 31, "bandwidth_gbps": bandwidth_gbps, "median_us": 700.0,
                 "p20_us": 699.0, "p80_us": 701.0, "method": "copy"},
        "copy_error": None,
        "matmul": {"float32": {"dtype": "float32", "size": 4096, "tflops": 50.0, "median_us": 1.0, "p20_us": 1.0,
                               "p80_us": 1.0, "precision": "strict", "error": None}},
    }


def events(solution_us=1200.0, post_timing_passed=True, interleaved=None, bandwidth_gbps=3000.0):
    sequence = [
        {"event": "environment", "info": {"torch": "2.11", "python": "3.12", "triton": "3.6", "cuda": "13.0",
                                          "gpu": {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                                                  "multiprocessors": 132}}},
        {"event": "precision", "allow_tf32": False, "note": "strict"},
        {"event": "problem", "dims": {"n": N}, "dtypes": {"x": "float32", "y": "float32", "out": "float32"}, "seed": 0},
        {"event": "work", "flops": float(N), "flops_source": "ref.py flops()", "bytes": float(BYTES),
         "bytes_source": "ref.py bytes()", "dtype": "float32"},
        {"event": "ceilings", "measured": measured_ceilings(bandwidth_gbps)},
        timed("solution", [solution_us - 2, solution_us - 1, solution_us, solution_us + 1, solution_us + 2]),
        {"event": "post_timing_check", "name": "solution", "passed": post_timing_passed, "outputs": []},
        timed("eager", [1500.0, 1501.0, 1502.0, 1503.0, 1504.0]),
        {"event": "timed", "entry": asdict(TimedEntry("torch.compile (default)", error="BackendCompilerFailed: boom"))},
    ]
    if interleaved:
        this, other = interleaved
        sequence += [
            {"event": "post_timing_check", "name": "solution (interleaved)", "passed": True, "outputs": []},
            {"event": "post_timing_check", "name": "against", "passed": True, "outputs": []},
            {"event": "interleaved", "this": {"samples_us": this}, "other": {"samples_us": other}},
        ]
    return sequence + [{"event": "done"}]


def assemble(event_list, **kwargs):
    report = BenchmarkReport(solution=TimedSolution(path="v1.cu", backend="cuda"), reference="ref.py", backend="cuda",
                             command="benchmark.py v1.cu")
    outcome = ChildOutcome(events=[parse_event(event) for event in event_list], returncode=0)
    return assemble_report(report, outcome, kwargs.get("label"), kwargs.get("against_dir"))


def test_an_eager_baseline_timed_in_pairs_with_the_solution_is_read_against_the_solution_in_those_pairs(tmp_path):
    """The solution's headline median stays its own timing; the speedup over a paired eager compares like with like."""
    sequence = events()
    eager = next(event for event in sequence if event.get("entry", {}).get("name") == "eager")
    eager["entry"]["paired_solution_us"] = 1300.0  # the solution read slower in the pairs (a hotter GPU, say)
    report = assemble(sequence)
    assert report.solution.median_us == 1200.0
    assert report.speedup_vs_eager == pytest.approx(1502.0 / 1300.0)
    assert report.speedup_vs_best_baseline == pytest.approx(1502.0 / 1300.0)
    assert report.baselines[0].to_dict()["paired_solution_us"] == 1300.0
    assert "paired_solution_us" not in report.baselines[1].to_dict()  # absent where it does not hold
    summary = benchmark_summary(report, tmp_path).splitlines()
    assert "  eager: 1502.00 us (in alternation with the solution, which read 1300.00 us in those pairs)" in summary
    table_row = next(line for line in benchmark_markdown(report, 0).splitlines() if line.startswith("| eager"))
    assert "in alternation with the solution, 1300.00 µs there" in table_row and " 1.16x " in table_row


def test_measured_report_derives_speedups_and_roofline():
    report = assemble(events())
    assert report.verdict == "measured"
    assert report.solution.median_us == 1200.0 and report.solution.reps == 5
    assert report.best_baseline == "eager" and report.speedup_vs_eager == pytest.approx(1502.0 / 1200.0)
    assert report.baselines[1].error.startswith("BackendCompilerFailed")  # reported, the others still count
    measured = report.roofline.points["measured"]
    assert measured.achieved_bandwidth_gbps == pytest.approx(BYTES / 1200e-6 / 1e9)
    assert measured.floor_time_us == pytest.approx(BYTES / 3000e9 * 1e6)
    assert report.percent_of_ceiling == pytest.approx(100 * measured.floor_time_us / 1200.0)
    assert report.target_reached is (report.percent_of_ceiling >= 90)
    assert "datasheet" in report.roofline.points  # H100 SXM peaks shown beside the measured ones
    assert not report.roofline.physical_floor.beaten
    json.dumps(report.to_dict())  # the whole record is JSON


def render_markdown(report):
    return benchmark_markdown(report, exit_code_for(report))


def with_same_size_copy(event_list, copy_us):
    """Insert the worker's same-size copy event (it follows the solution's timing)."""
    copy = CopyCeiling(buffer_bytes=BYTES // 2, bytes_moved=BYTES, bandwidth_gbps=BYTES / (copy_us * 1e-6) / 1e9,
                       median_us=copy_us, p20_us=copy_us - 1, p80_us=copy_us + 1)
    event = {"event": "copy_same_bytes", "copy": asdict(copy)}
    return event_list[:6] + [event] + event_list[6:]


def test_a_faster_same_size_copy_sets_the_ceiling():
    # The 2 GiB copy reads 3000 GB/s (floor 1073.7 us); a copy of these very bytes took 1000 us,
    # 3221 GB/s: the stricter roof, so the % of ceiling comes from it.
    report = assemble(with_same_size_copy(events(solution_us=1100.0), copy_us=1000.0))
    points = report.roofline.points
    assert list(points) == ["measured", "same-size copy", "datasheet"]
    assert points["same-size copy"].ceilings.memory_bandwidth_gbps == pytest.approx(BYTES / 1000e-6 / 1e9)
    assert points["same-size copy"].floor_time_us == pytest.approx(1000.0)
    assert report.roofline.primary == "same-size copy"
    assert report.percent_of_ceiling == pytest.approx(100 * 1000.0 / 1100.0)
    assert points["measured"].percent_of_ceiling == pytest.approx(100 * BYTES / 3000e9 * 1e6 / 1100.0)
    # every place that shows the % says which basis it used, and why bases differ
    assert "Ceiling basis: **same-size copy**" in render_markdown(report)
    assert CEILING_BASIS_RULE in render_markdown(report)
    assert CEILING_BASIS_RULE.startswith("Each % of ceiling names its basis: the stricter of the roofs measured")
    assert benchmark_line(report).endswith(f"{report.percent_of_ceiling:.1f}% of ceiling (same-size copy basis)")


def test_a_slower_same_size_copy_leaves_the_cached_ceiling_in_charge():
    report = assemble(with_same_size_copy(events(solution_us=1200.0), copy_us=1150.0))
    assert report.roofline.primary == "measured"
    assert report.percent_of_ceiling == pytest.approx(100 * BYTES / 3000e9 * 1e6 / 1200.0)


def test_phase_durations_follow_the_event_timestamps():
    stamped = [
        EnvironmentEvent({}, t=102.0),
        PhaseEvent("load_solution", t=103.0),
        PhaseEvent("solution", t=104.5),
        TimedEvent({"name": "solution"}, t=106.0),
        PhaseEvent("baseline eager", t=107.0),
        DoneEvent(t=109.0),
    ]
    assert ChildOutcome(stamped, spawned=100.0, ended=109.5).phase_durations() == {
        "worker start": 2.0, "load_solution": 1.5, "solution": 2.5, "baseline eager": 2.5}
    assert ChildOutcome([DoneEvent()], spawned=0.0, ended=1.0).phase_durations() == {}  # records before timestamps
    repeated = [PhaseEvent("setup", t=1.0), PhaseEvent("solution", t=2.0), PhaseEvent("setup", t=2.5)]
    assert ChildOutcome(repeated, spawned=0.5, ended=4.0).phase_durations() == {  # a phase named again adds up
        "worker start": 0.5, "setup": 2.5, "solution": 0.5}


DATASHEET_FLOOR_US = BYTES / 3350e9 * 1e6  # H100 SXM: 3.35 TB/s, above the 3000 GB/s measured here


def test_a_time_under_the_physical_floor_is_invalid_and_says_why():
    report = assemble(events(solution_us=DATASHEET_FLOOR_US * 0.5, interleaved=([100.0] * 40, [130.0] * 40)),
                      label="v1/v1.cu")
    assert report.verdict == "invalid" and exit_code_for(report) == 1
    floor = report.roofline.physical_floor
    assert floor.beaten and floor.bound == "memory" and floor.margin == PHYSICAL_FLOOR_MARGIN
    assert floor.floor_us == pytest.approx(DATASHEET_FLOOR_US)
    assert floor.bandwidth_basis == "3350 GB/s (NVIDIA H100 SXM5 80GB datasheet)"
    message = report.failure_reason()
    assert message.startswith(f"INVALID: {DATASHEET_FLOOR_US * 0.5:.2f} us is faster than the memory floor of "
                              f"{DATASHEET_FLOOR_US:.2f} us")
    assert "the work was skipped" in message and "bytes() must count each input read once" in message
    assert message in report.warnings
    # It counts for nothing: no % of ceiling, no target, no speedup, and the comparison is no win.
    assert report.percent_of_ceiling is None and report.target_reached is None
    assert report.best_baseline is None and report.speedup_vs_eager is None
    assert report.comparison.verdict == "failure"
    summary = benchmark_summary(report, Path("out"))
    assert summary.startswith("INVALID: ") and "fix ref.py's flops()/bytes()" in summary
    assert "INVALID: FASTER THAN THE PHYSICAL FLOOR" in render_markdown(report)


def test_within_the_noise_margin_of_the_floor_is_still_measured():
    report = assemble(events(solution_us=DATASHEET_FLOOR_US * (1 - PHYSICAL_FLOOR_MARGIN) * 1.001))
    assert report.verdict == "measured" and exit_code_for(report) == 0
    assert not report.roofline.physical_floor.beaten


def test_the_floor_uses_the_best_measured_bandwidth_where_it_beats_the_datasheet():
    # A same-size copy at 3500 GB/s (above the datasheet's 3350): a time that the datasheet floor
    # would allow (0.97 of it) is under the floor the copy proves possible.
    copy_us = BYTES / 3500e9 * 1e6
    report = assemble(with_same_size_copy(events(solution_us=DATASHEET_FLOOR_US * 0.9), copy_us=copy_us))
    floor = report.roofline.physical_floor
    assert floor.bandwidth_gbps == pytest.approx(3500.0)
    assert floor.bandwidth_basis == "3500 GB/s (same-size copy, above the datasheet's)"
    assert report.verdict == "invalid"


def gemm_events(dtype, flops, solution_us):
    """A GEMM-sized problem: the compute floor binds."""
    sequence = events(solution_us=solution_us)
    sequence[3] = {"event": "work", "flops": float(flops), "flops_source": "ref.py flops()", "bytes": 1e6,
                   "bytes_source": "ref.py bytes()", "dtype": dtype}
    return sequence


@pytest.mark.parametrize("dtype, peak_tflops", [("bfloat16", 989.5), ("float32", 494.5)])
def test_the_compute_floor_is_the_datasheet_peak_of_the_dtype(dtype, peak_tflops):
    """float32 is bounded by the TF32 tensor rate: fp32-accurate split products may use tensor cores."""
    flops = 2.0 * 4096**3
    floor_us = flops / (peak_tflops * 1e12) * 1e6
    fast = assemble(gemm_events(dtype, flops, floor_us * 0.9))
    assert fast.verdict == "invalid" and fast.roofline.physical_floor.bound == "compute"
    assert fast.roofline.physical_floor.compute_tflops == peak_tflops
    assert "the compute floor of" in fast.failure_reason() and "flops() only the arithmetic" in fast.failure_reason()
    honest = assemble(gemm_events(dtype, flops, floor_us * 1.3))
    assert honest.verdict == "measured"


def test_a_strict_fp32_gemm_on_tensor_cores_is_placed_against_a_third_of_the_tf32_roof():
    """KernelBench level2 88 (1024 x 8192 x 8192 float32 Linear, strict FP32): a fresh agent's 3xTF32 Triton GEMM ran
    at 64.6 TFLOP/s on an H200, past the measured strict-FP32 matmul (51.2) and at 96% of the datasheet's FP32 peak,
    and the loop stopped at "target reached". Its method's roof is a third of the TF32 rate: 380 / 3 here."""
    flops = 2.0 * 1024 * 8192 * 8192
    sequence = gemm_events("float32", flops, flops / 64.6e12 * 1e6)
    sequence[4]["measured"]["matmul"]["tf32"] = {"dtype": "tf32", "size": 4096, "tflops": 380.0, "median_us": 1.0,
                                                "p20_us": 1.0, "p80_us": 1.0, "precision": "tf32", "error": None}
    report = assemble(sequence)
    assert report.verdict == "measured" and report.roofline.primary == "measured"
    roof = report.roofline.points["measured"].ceilings
    assert roof.compute_tflops == pytest.approx(380.0 / 3) and roof.dtype == "float32"
    assert roof.source == "measured 2026-11-22; fp32 products as 3xTF32 on tensor cores: a third of the TF32 rate"
    assert report.percent_of_ceiling == pytest.approx(100 * 64.6 / (380.0 / 3), rel=1e-3)
    assert report.target_reached is False
    sheet = report.roofline.points["datasheet"].ceilings  # H100 SXM: TF32 494.5 / 3 is above FP32's 66.9
    assert sheet.compute_tflops == pytest.approx(494.5 / 3) and "3xTF32" in sheet.source
    assert report.roofline.physical_floor.compute_tflops == 494.5  # the true limit stays the whole TF32 rate


def test_a_tf32_kernel_accepted_under_kernelbench_s_tolerance_is_placed_on_the_tf32_roof():
    """The comparison agent's TF32 GEMM for KernelBench level2 88 (H200, 426 us, 322 TFLOP/s): under the strict-FP32
    roofs it beat the counted FLOPs' roof and read 19.2% of the memory roof alone."""
    flops = 2.0 * 1024 * 8192 * 8192
    sequence = gemm_events("float32", flops, flops / 322e12 * 1e6)
    sequence[4]["measured"]["matmul"]["tf32"] = {"dtype": "tf32", "size": 4096, "tflops": 380.0, "median_us": 1.0,
                                                "p20_us": 1.0, "p80_us": 1.0, "precision": "tf32", "error": None}
    report = BenchmarkReport(solution=TimedSolution(path="v1.py", backend="modelnew"), reference="ref.py",
                             backend="modelnew", command="benchmark.py v1.py --kernelbench-tolerances")
    report.correctness = CorrectnessGate(passed=True, verdict="pass", kernelbench_tolerances=True,
                                         precision_downgrades=["output"])
    outcome = ChildOutcome(events=[parse_event(event) for event in sequence], returncode=0)
    report = assemble_report(report, outcome, None, None)
    assert report.roofline.points["measured"].ceilings.compute_tflops == 380.0
    assert report.roofline.points["measured"].ceilings.dtype == "tf32"
    assert report.percent_of_ceiling == pytest.approx(100 * 322 / 380, rel=1e-3)
    assert "placed on the TF32 roofs: under KernelBench's tolerance the check accepted 'output'" in report.notes[0]
    strict = assemble(sequence)  # no downgrade accepted: the strict-FP32 roof, which this time beats
    assert strict.roofline.points["measured"].flops is None and not any("TF32 roofs" in n for n in strict.notes)


def test_without_a_measured_tf32_rate_the_strict_fp32_roof_is_the_fp32_one():
    flops = 2.0 * 4096**3
    report = assemble(gemm_events("float32", flops, flops / 40e12 * 1e6))
    roof = report.roofline.points["measured"].ceilings
    assert roof.compute_tflops == 50.0 and roof.source == "measured 2026-11-22"


def test_a_partial_flop_count_places_the_kernel_but_never_makes_it_invalid():
    """FlopCounterMode's matmul count of a matmul + epilogue is a lower bound of the reference's work; a causal
    kernel needs half of a masked full product, so no INVALID verdict may rest on it (Work.floor_flops)."""
    flops = 2.0 * 4096**3
    sequence = gemm_events("bfloat16", flops, flops / 989.5e12 * 1e6 * 0.9)
    sequence[3] = {**sequence[3], "flops_source": "at least: counted by torch FlopCounterMode",
                   "flops_lower_bound": True}
    report = assemble(sequence)
    assert report.verdict == "measured" and report.roofline.physical_floor.bound == "memory"
    # 10% under the count's floor at the datasheet's peak: those FLOPs were not all performed, the memory roof places it
    assert report.roofline.points["datasheet"].bound == "memory" and "FLOPs" in report.notes[-1]
    assert "at least: counted by torch FlopCounterMode" in render_markdown(report)
    slower = gemm_events("bfloat16", flops, flops / 989.5e12 * 1e6 * 1.1)
    slower[3] = sequence[3]
    assert assemble(slower).roofline.points["datasheet"].bound == "compute"  # where the count allows it, it places it


def test_a_gpu_without_a_datasheet_entry_gets_no_floor_check():
    sequence = events(solution_us=1.0)
    sequence[0]["info"]["gpu"]["name"] = "NVIDIA Imaginary 1"
    sequence[4]["measured"]["device"]["name"] = "NVIDIA Imaginary 1"
    report = assemble(sequence)
    assert report.verdict == "measured" and "physical_floor" not in report.to_dict()["roofline"]
    assert any("whether this time is physically possible was not checked" in note for note in report.notes)


def test_the_ceiling_basis_is_recorded_with_its_values():
    report = assemble(events(solution_us=1200.0))
    basis = report.ceiling_basis()
    assert basis.name == "measured" and basis.reason == "the best roofs measured on this GPU"
    assert (basis.memory_bandwidth_gbps, basis.compute_tflops, basis.dtype) == (3000.0, 50.0, "float32")
    assert basis.measured_at == "2026-11-22T03:00:00+00:00"
    assert "Ceiling basis: **measured**" in render_markdown(report)


def test_a_solution_beating_every_measured_roof_is_placed_against_the_datasheet():
    """Honest, but faster than the measured copy: the % must not read above 100."""
    solution_us = DATASHEET_FLOOR_US * 1.04  # 3221 GB/s: over the measured 3000, under the datasheet's 3350
    report = assemble(events(solution_us=solution_us))
    assert report.verdict == "measured"
    assert report.roofline.points["measured"].percent_of_ceiling > 100.0
    assert report.roofline.primary == "datasheet"
    assert report.percent_of_ceiling == pytest.approx(100 / 1.04)
    basis = report.ceiling_basis()
    assert basis.name == "datasheet" and basis.measured_at is None
    over = 100 * 3350 / 3000 / 1.04
    assert basis.reason.startswith(f"the solution ran at {over:.1f}% of the best measured roof (measured)")


def test_a_solution_beating_the_counted_flops_roof_is_placed_on_the_memory_roof_and_does_not_reach_the_target():
    """KernelBench level2 18: a 1024 x 8192 x 8192 matmul whose output is summed over its columns. The FLOP counter
    counts the matmul (137.4 GFLOP, a lower bound); a kernel that sums the weights first does 0.1% of it and reads
    302 MB. At 338 us it is 247% of the datasheet's strict-fp32 roof (3xTF32) for the counted FLOPs, and 29.8% of the
    measured copy."""
    sequence = events(solution_us=338.0)
    work = next(event for event in sequence if event["event"] == "work")
    work.update(flops=137.4e9, flops_source="at least: counted by torch FlopCounterMode", flops_lower_bound=True,
                bytes=302e6, bytes_source="inputs read once + outputs written once")
    report = assemble(sequence)
    assert report.verdict == "measured" and report.roofline.primary == "measured"
    assert report.percent_of_ceiling == pytest.approx(100 * (302e6 / 3000e9 * 1e6) / 338.0)
    assert report.target_reached is False
    assert report.roofline.points["measured"].flops is None  # placed without the counted FLOPs
    [note] = [note for note in report.notes if "of the compute roof for the counted 1.37e+11 FLOPs" in note]
    assert note.startswith("the solution ran at 247% of the compute roof") and "memory roof alone" in note
    assert report.ceiling_basis().reason.endswith("the memory roof alone (the solution beat the counted FLOPs' roof)")


def test_a_solution_under_the_counted_flops_roof_keeps_them():
    report = assemble(events(solution_us=1200.0))
    assert report.roofline.points["measured"].flops == float(N)
    assert not any("counted" in note and "FLOPs" in note for note in report.notes)


def test_a_solution_faster_than_every_measured_roof_reaches_the_target_though_its_datasheet_percent_is_under_it():
    """At 1.115x the datasheet's floor it beats the measured 3000 GB/s copy (1.117x) and reads 89.7% of the datasheet:
    a slower version at 98% of the measured copy would reach 90%, so this one must too (a fresh agent's v1 of
    KernelBench level1 30_Softsign read 90.0% on an H200 and "target not reached")."""
    report = assemble(events(solution_us=DATASHEET_FLOOR_US * 1.115))
    assert report.roofline.primary == "datasheet" and report.percent_of_ceiling == pytest.approx(100 / 1.115)
    assert report.target_percent == 90 and report.target_reached is True
    assert "target 90%: reached: faster than every roof measured on this GPU" in benchmark_summary(report, Path("o"))
    slower = assemble(events(solution_us=DATASHEET_FLOOR_US * 1.12))  # under the measured copy's rate: 99.7% of it
    assert slower.roofline.primary == "measured" and slower.target_reached is True
    far = assemble(events(solution_us=DATASHEET_FLOOR_US * 1.3))
    assert far.roofline.primary == "measured" and far.target_reached is False


def test_wrong_outputs_after_timing_invalidate_the_timing():
    report = assemble(events(post_timing_passed=False))
    assert report.verdict == "incorrect"
    assert report.percent_of_ceiling is None and report.best_baseline is None
    assert any("outputs of the timed calls are wrong" in w for w in report.warnings)


def test_the_correctness_gate_s_listing_reaches_benchmark_md_and_a_library_only_call_says_so(tmp_path):
    report = assemble(events())
    report.correctness = CorrectnessGate(
        passed=True, verdict="pass", cases=18, failures=[], error=None,
        launches=LaunchCheck(profiled=True, dims={"n": N}, seed=3, caller="a fresh stream", fence_us=1516.0,
                             call_host_us=30.0, own_kernels=0, library_kernels=1, values_passed=True,
                             work=[LaunchedWork(TORCH_ADD, "kernel", 17, True, 1, 300.0, "torch")]).to_dict())
    markdown = benchmark_markdown(report, 0)
    assert "## What ran on the GPU (the correctness check's profiled call)" in markdown
    assert "| library (torch)" in markdown and "No kernel of the solution's own ran" in markdown
    assert "NOTE: no kernel of the solution's own ran" in benchmark_summary(report, tmp_path)
    assert "What ran on the GPU" not in render_markdown(assemble(events()))  # older records: no section


def test_wrong_timed_outputs_name_the_cause_the_checks_point_at():
    sequence = events(post_timing_passed=False)
    sequence.insert(-1, {"event": "post_timing_check", "name": "solution (kernel time)", "passed": True,
                         "outputs": []})
    report = assemble(sequence)
    [message] = [w for w in report.warnings if w.startswith("the outputs of the timed calls are wrong (solution)")]
    assert "reuses results from earlier calls" in message
    assert report.failure_reason() == message  # what evaluate's step line and every summary print


def test_interleaved_comparison_gets_a_verdict():
    this = [100.0 + (i % 3) * 0.1 for i in range(60)]
    other = [130.0 + (i % 3) * 0.1 for i in range(60)]
    report = assemble(events(interleaved=(this, other)), label="v1/v1.cu", against_dir="out/v1")
    comparison = report.comparison
    assert comparison.speedup == pytest.approx(130.1 / 100.1, rel=1e-3)
    assert comparison.ci_low > 1.25 and comparison.verdict == "success"
    assert (comparison.against, comparison.against_dir, comparison.pairs) == ("v1/v1.cu", "out/v1", 60)


def test_worker_error_becomes_the_report_verdict():
    failing = events()[:5] + [{"event": "phase", "phase": "solution", "dims": {"n": N}, "seed": 0},
                              {"event": "error", "kind": "illegal_memory_access", "message": "boom", "hint": None,
                               "exit_code": 3}]
    report = assemble(failing)
    assert report.verdict == "solution_error" and report.error.kind == "illegal_memory_access"
    assert "in the solution's call" in report.error.message


def test_source_synchronizes_ignores_comments():
    assert source_synchronizes("void f() { cudaDeviceSynchronize(); }")
    assert source_synchronizes("cudaStreamSynchronize (s);")
    assert not source_synchronizes("// cudaDeviceSynchronize();\n/* cudaStreamSynchronize(s); */ int x;")


def _has_gpu():
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(_has_gpu(), reason="checks the no-GPU path")
def test_without_a_gpu_exit_4_with_a_sentence(reference_dir, tmp_path, capsys):
    code = main([str(reference_dir / "softmax/good/softmax.py"), "--ref", str(reference_dir / "softmax/ref.py"),
                 "--output-dir", str(tmp_path)])
    assert code == 4
    assert "needs" not in capsys.readouterr().out
    assert not (tmp_path / "benchmark.json").exists()


def test_the_baseline_option_takes_the_words_its_help_names():
    from kernel_opt.measure.benchmark_request import baselines_option

    assert baselines_option("both") == baselines_option("eager,compile") == ["eager", "compile"]
    assert baselines_option("none") == [] and baselines_option("eager") == ["eager"]


@pytest.mark.parametrize(
    "arguments, fragment",
    [(["--baseline", "numpy"], "unknown --baseline"), (["--target-percent", "0"], "--target-percent"),
     (["--against", "missing.cu"], "--against file not found")],
)
def test_bad_arguments_exit_2(reference_dir, tmp_path, capsys, arguments, fragment):
    code = main([str(reference_dir / "softmax/good/softmax.py"), "--ref", str(reference_dir / "softmax/ref.py"),
                 "--output-dir", str(tmp_path), *arguments])
    assert code == 2 and fragment in capsys.readouterr().err


# --- evaluate's shortcuts: the correctness record relied on, the run's baselines reused -------------


class _FakeWorker:
    """Stands in for the timing child: records the request, answers with the events of a measured run."""

    def __init__(self):
        self.requests = []

    def __call__(self, request, timeout_s, env=None):
        self.requests.append(request)
        sequence = [event for event in events() if event["event"] != "timed" or event["entry"]["name"] == "solution"]
        part = request.benchmark
        if part.work:  # the worker emits the work it was given instead of counting
            sequence = [{"event": "work", **part.work} if event["event"] == "work" else event
                        for event in sequence]
        sequence[-1:-1] = [timed(name, [90.0, 91.0, 92.0, 93.0, 94.0]) for name in
                           (["eager"] if "eager" in part.baselines else [])
                           + [f"torch.compile ({mode})" for mode in part.compile_modes]]
        return ChildOutcome(events=[parse_event(event) for event in sequence], returncode=0)


@pytest.fixture
def gpu_run(tmp_path, monkeypatch):
    """A Triton solution and ref.py on a pretend GPU machine: the worker and nvidia-smi are fakes."""
    from types import SimpleNamespace

    import kernel_opt.check.correctness as correctness
    import kernel_opt.env.probes as probes
    import kernel_opt.measure.benchmark as benchmark
    import kernel_opt.measure.held_worker as held_worker
    import kernel_opt.measure.worker_plan as worker_plan
    import kernel_opt.run.runner as runner
    from kernel_opt.env.probe_records import NvidiaSmiProbe, SmiGpu

    solution, reference = tmp_path / "v1.py", tmp_path / "ref.py"
    solution.write_text("import triton\n\ndef run_kernel(x, out, n): ...\n")
    reference.write_text("def reference(x, out, n): ...\n")
    worker = _FakeWorker()
    gpu = SmiGpu(0, "NVIDIA H100 80GB HBM3", "580.159.04", 1980, 1980, 2619, 2619, 700.0, "Enabled", "Default")
    for module in (benchmark, held_worker):
        monkeypatch.setattr(module, "resolve_device", lambda device: "cuda")
    monkeypatch.setattr(worker_plan, "solution_spec", lambda *args: (SolutionSpec("triton", str(args[0])), None))
    monkeypatch.setattr(probes, "probe_nvidia_smi", lambda: NvidiaSmiProbe(found=True, gpus=[gpu]))
    monkeypatch.setattr(runner, "run_worker", worker)
    checks = []

    def check_correctness(solution, reference, backend, device, dims, options, build, build_dir, command):
        checks.append(options.seeds)
        return correctness.CorrectnessReport(verdict="pass", solution=str(solution), reference=str(reference),
                                             backend=backend, device=DeviceInfo("cuda"), interpreter=False,
                                             command=command, dims=dims, seeds=[0], planned_cases=0)

    monkeypatch.setattr(benchmark, "check_correctness", check_correctness)
    return SimpleNamespace(solution=solution, reference=reference, worker=worker, checks=checks, dir=tmp_path)


def _request(run, version, **extra):
    from kernel_opt.measure.benchmark_request import BenchmarkRequest

    return BenchmarkRequest(run.solution, run.reference, run.dir / version, dims={"n": N}, check_seeds=1,
                            **{"compile_modes": ["default"], **extra})


def test_a_later_version_reuses_the_baselines_the_first_one_timed(gpu_run):
    from kernel_opt.measure.benchmark import benchmark_solution

    cache = gpu_run.dir / "reference_cache.json"
    first = benchmark_solution(_request(gpu_run, "v0", reference_cache=cache))
    assert gpu_run.worker.requests[0].benchmark.baselines == ["eager", "compile"]
    assert [b.name for b in first.baselines] == ["eager", "torch.compile (default)"]
    assert all(b.cached_from is None for b in first.baselines)
    second = benchmark_solution(_request(gpu_run, "v1", reference_cache=cache))
    told = gpu_run.worker.requests[1].benchmark
    assert (told.baselines, told.compile_modes) == ([], [])
    assert [(b.name, b.median_us) for b in second.baselines] == [("eager", 92.0), ("torch.compile (default)", 92.0)]
    assert all(b.cached_from.startswith("timed by v0 (benchmark.py) at ") for b in second.baselines)
    assert gpu_run.worker.requests[0].benchmark.work is None  # v0 counted the work ...
    reused_work = gpu_run.worker.requests[1].benchmark.work  # ... v1 was given it
    assert (reused_work["flops"], reused_work["bytes"]) == (float(N), float(BYTES))
    assert reused_work["cached_from"].startswith("counted by v0 (benchmark.py) at ")
    assert second.work.cached_from == reused_work["cached_from"]
    assert "Reused: counted by v0 (benchmark.py)" in (gpu_run.dir / "v1" / "benchmark.md").read_text()
    assert second.speedup_vs_eager == pytest.approx(92.0 / 1200.0)
    written = (gpu_run.dir / "v1" / "benchmark.md").read_text()
    assert "eager (reused: see below)" in written and "timed by v0 (benchmark.py)" in written
    gpu_run.reference.write_text("def reference(x, out, n): return None  # another reference\n")
    benchmark_solution(_request(gpu_run, "v2", reference_cache=cache))
    assert gpu_run.worker.requests[2].benchmark.baselines == ["eager", "compile"]  # another ref.py: timed again
    assert gpu_run.worker.requests[2].benchmark.work is None


def test_the_gate_relies_on_this_versions_passing_record_and_reruns_on_anything_else(gpu_run):
    from kernel_opt.check.records import CorrectnessReport
    from kernel_opt.check.reuse import check_subject
    from kernel_opt.measure.benchmark import benchmark_solution
    from kernel_opt.solution.backend import BuildOptions

    record = gpu_run.dir / "correctness.json"
    subject = check_subject(gpu_run.solution, gpu_run.reference, BuildOptions())
    record.write_text(json.dumps(CorrectnessReport(
        verdict="pass", solution="v1.py", reference="ref.py", backend="triton",
        device=DeviceInfo("cuda", "NVIDIA H100 80GB HBM3"), interpreter=False, command="c", dims={"n": N},
        seeds=[0, 1, 2], subject=subject).to_dict()))
    report = benchmark_solution(_request(gpu_run, "v1", checked_by=record))
    assert gpu_run.checks == [] and report.verdict == "measured"
    assert any(note.startswith(f"correctness check: relied on {record}") for note in report.notes)
    gpu_run.solution.write_text("import triton\n\ndef run_kernel(x, out, n): pass  # edited\n")
    report = benchmark_solution(_request(gpu_run, "v1", checked_by=record))
    assert gpu_run.checks == [1]  # the gate ran, at the request's seeds
    assert any("run again" in note and "solution_sha256 differ" in note for note in report.notes)


# --- the worker held beside evaluate's checks, released after the gate ------------------------------


class _FakeHeldProcess:
    """Stands in for run.runner.WorkerProcess: once released, it answers as _FakeWorker does for the request and
    the release's fields together, after three stamped phases (started 5 s before, waited from 4 s on)."""

    started: list["_FakeHeldProcess"] = []

    def __init__(self, request, env=None, prefix=(), program=None, held=False):
        self.request, self.held, self.released, self.stopped = request, held, None, False
        self.ended_while_held = False
        self.spawned = time.time() - 5.0
        _FakeHeldProcess.started.append(self)

    def release(self, fields):
        self.released, self.released_at = fields, time.time()

    def watch(self, timeout_s, startup_allowance_s=60.0):
        assert self.released is not None and not self.stopped
        outcome = _FakeWorker()(self.request.released(self.released), timeout_s)
        outcome.events[:0] = [PhaseEvent("load_solution", t=self.spawned + 3.0),
                              PhaseEvent(WAITING_PHASE, t=self.spawned + 4.0),
                              PhaseEvent("solution", t=self.released_at)]
        outcome.spawned, outcome.ended = self.spawned, time.time()  # as WorkerProcess.watch stamps them
        return outcome

    def alive(self):
        return not self.ended_while_held

    def stop(self):
        self.stopped = True


@pytest.fixture
def held_run(gpu_run, monkeypatch):
    import kernel_opt.run.runner as runner

    _FakeHeldProcess.started = []
    monkeypatch.setattr(runner, "WorkerProcess", _FakeHeldProcess)
    return gpu_run


def _without_phases(report) -> dict:
    payload = report.to_dict()
    payload.pop("phases_s")
    return payload


def test_a_held_worker_gives_the_record_a_worker_started_after_the_gate_gives(held_run):
    from kernel_opt.measure.benchmark import benchmark_solution
    from kernel_opt.measure.held_worker import hold_benchmark_worker

    request = _request(held_run, "v1")
    started_after = benchmark_solution(request)
    [unheld] = held_run.worker.requests
    held = hold_benchmark_worker(request)
    worker = held.worker
    assert worker.held and worker.request.benchmark.wait_for_release is True
    part = worker.request.benchmark
    assert part.baselines is None and part.compile_modes is None  # told at release
    assert worker.released is None  # nothing is timed before benchmark_solution's gate has passed
    report = benchmark_solution(request, held=held)
    assert len(held_run.worker.requests) == 1  # no second worker: the held one timed
    assert worker.request.released(worker.released) == unheld
    assert _without_phases(report) == _without_phases(started_after)
    assert report.verdict == "measured" and worker.stopped
    # Its phases run from its own start, beside the checks: the wait for them is a phase of its own.
    assert report.phases_s["worker start"] == 3.0 and report.phases_s["load_solution"] == 1.0
    assert report.phases_s[WAITING_PHASE] == pytest.approx(1.0, abs=0.5)


def test_the_release_tells_the_worker_which_baselines_the_run_cache_still_lacks(held_run):
    from kernel_opt.measure.benchmark import benchmark_solution
    from kernel_opt.measure.held_worker import hold_benchmark_worker

    cache = held_run.dir / "reference_cache.json"
    first = hold_benchmark_worker(_request(held_run, "v0", reference_cache=cache))
    assert first.worker.request.benchmark.work is None  # nothing cached yet: the held worker counts it
    assert first.worker.request.benchmark.warm_compiler is True  # and warms up torch.compile while it waits
    benchmark_solution(_request(held_run, "v0", reference_cache=cache), held=first)
    assert first.worker.released == {"baselines": ["eager", "compile"], "compile_modes": ["default"]}
    second = hold_benchmark_worker(_request(held_run, "v1", reference_cache=cache))
    assert second.worker.request.benchmark.work["cached_from"].startswith("counted by v0 (benchmark.py) at ")
    report = benchmark_solution(_request(held_run, "v1", reference_cache=cache), held=second)
    assert second.worker.released == {"baselines": [], "compile_modes": []}
    assert second.worker.request.benchmark.warm_compiler is False  # every baseline is cached: nothing to compile
    assert [b.name for b in report.baselines] == ["eager", "torch.compile (default)"]
    assert all(b.cached_from.startswith("timed by v0 (benchmark.py) at ") for b in report.baselines)


@pytest.mark.parametrize("baselines, compile_modes, warms", [
    (["eager", "compile"], ["default"], True), (["eager"], ["default"], False), (["compile"], [], False),
    (["eager", "compile"], ["default", "max-autotune"], True)])
def test_a_held_worker_warms_up_the_compiler_only_when_a_compile_baseline_is_to_be_timed(
        held_run, baselines, compile_modes, warms):
    from kernel_opt.measure.held_worker import hold_benchmark_worker

    held = hold_benchmark_worker(_request(held_run, "v0", baselines=baselines, compile_modes=compile_modes))
    assert held.worker.request.benchmark.warm_compiler is warms


def test_a_failing_gate_stops_the_held_worker_before_it_times_anything(held_run, monkeypatch):
    import kernel_opt.measure.benchmark as benchmark
    from kernel_opt.check.records import CorrectnessReport
    from kernel_opt.measure.benchmark import benchmark_solution
    from kernel_opt.measure.held_worker import hold_benchmark_worker

    def failing_check(solution, reference, backend, device, dims, options, build, build_dir, command):
        return CorrectnessReport(verdict="fail", solution=str(solution), reference=str(reference), backend=backend,
                                 device=DeviceInfo("cuda"), interpreter=False, command=command, dims=dims, seeds=[0])

    monkeypatch.setattr(benchmark, "check_correctness", failing_check)
    request = _request(held_run, "v1")
    held = hold_benchmark_worker(request)
    report = benchmark_solution(request, held=held)
    assert (report.verdict, report.exit_code) == ("incorrect", 1)
    assert held.worker.released is None and held.worker.stopped
    assert held_run.worker.requests == [] and report.phases_s.keys() == {"correctness check"}


def test_a_solution_edited_after_its_worker_started_is_timed_by_a_fresh_worker(held_run):
    from kernel_opt.measure.benchmark import benchmark_solution
    from kernel_opt.measure.held_worker import hold_benchmark_worker

    request = _request(held_run, "v1")
    held = hold_benchmark_worker(request)
    held_run.solution.write_text("import triton\n\ndef run_kernel(x, out, n): pass  # edited\n")
    report = benchmark_solution(request, held=held)
    assert held.worker.released is None and held.worker.stopped
    assert len(held_run.worker.requests) == 1 and report.verdict == "measured"
    assert held_run.worker.requests[0].benchmark.wait_for_release is False


def test_a_worker_that_ended_while_held_is_replaced_by_a_fresh_one(held_run):
    from kernel_opt.measure.benchmark import benchmark_solution
    from kernel_opt.measure.held_worker import hold_benchmark_worker

    request = _request(held_run, "v1")
    held = hold_benchmark_worker(request)
    held.worker.ended_while_held = True  # e.g. out of memory beside the checks: not this solution's record
    report = benchmark_solution(request, held=held)
    assert held.worker.released is None and held.worker.stopped
    assert len(held_run.worker.requests) == 1 and report.verdict == "measured"


def test_no_worker_is_held_where_the_benchmark_could_not_run(held_run, monkeypatch):
    import kernel_opt.measure.held_worker as held_worker
    from kernel_opt.measure.held_worker import hold_benchmark_worker

    assert hold_benchmark_worker(_request(held_run, "v1", baselines=["numpy"])) is None  # its usage error comes later
    monkeypatch.setattr(held_worker, "resolve_device", lambda device: "cpu")
    assert hold_benchmark_worker(_request(held_run, "v1")) is None
    assert _FakeHeldProcess.started == []


def test_the_standalone_cli_starts_its_own_worker_after_the_gate(held_run, capsys):
    code = main([str(held_run.solution), "--ref", str(held_run.reference), "--output-dir", str(held_run.dir / "cli"),
                 "--compile-modes", "default", "--seeds", "2", f"--n={N}"])
    assert code == 0 and held_run.checks == [2] and _FakeHeldProcess.started == []
    [request] = held_run.worker.requests
    assert request.benchmark.wait_for_release is False
    assert (request.benchmark.baselines, request.benchmark.compile_modes) == (["eager", "compile"], ["default"])
    assert json.loads((held_run.dir / "cli" / "benchmark.json").read_text())["verdict"] == "measured"


def test_a_held_benchmark_child_prepares_waits_and_times_only_with_its_release(monkeypatch):
    import io
    import sys

    from kernel_opt.measure import benchmark_child

    happened = []

    class Log:
        def emit(self, event):
            happened.append(event.phase if isinstance(event, PhaseEvent) else type(event).__name__)

    monkeypatch.setattr(benchmark_child, "_prepare", lambda request, events: happened.append("prepare") or "ready")
    monkeypatch.setattr(benchmark_child, "_time_prepared",
                        lambda prepared, request, events: happened.append((prepared, request.benchmark.baselines)))
    request = ChildRequest(SolutionSpec("triton", "v1.py"), "ref.py", "cuda", {}, BenchmarkPart(wait_for_release=True))
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"baselines": ["eager"], "compile_modes": []}\n'))
    benchmark_child.run_benchmark(request, Log())
    assert happened == ["prepare", WAITING_PHASE, ("ready", ["eager"])]
    happened.clear()
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # the pipe closed without a release: stopped
    benchmark_child.run_benchmark(request, Log())
    assert happened == ["prepare", WAITING_PHASE]
    happened.clear()
    monkeypatch.setattr(sys, "stdin", None)  # a worker started by benchmark.py itself never reads stdin
    benchmark_child.run_benchmark(request.with_part(wait_for_release=False, baselines=["compile"]), Log())
    assert happened == ["prepare", ("ready", ["compile"])]


def test_warming_up_the_compiler_compiles_a_trivial_function_then_resets_dynamo(monkeypatch):
    import torch

    from kernel_opt.measure import benchmark_child

    happened = []

    class Log:
        def emit(self, event):
            happened.append(event.phase)

    def fake_compile(function, dynamic):
        def compiled(x):
            happened.append(("ran", function(x).tolist()))
        happened.append(("compile", dynamic))
        return compiled

    monkeypatch.setattr(torch, "compile", fake_compile)
    monkeypatch.setattr(torch._dynamo, "reset", lambda: happened.append("reset"))
    seconds = benchmark_child._warm_up_compiler(torch.device("cpu"), Log())
    assert happened == ["warming torch.compile", ("compile", False), ("ran", [1.0] * 8), "reset"]
    assert 0 <= seconds < 5


def test_the_clocks_while_the_child_ran_are_kept_and_shown():
    from kernel_opt.env.clock_watch import ClocksDuring, GpuClocksDuring
    from kernel_opt.measure.benchmark_report import benchmark_markdown

    report = assemble(events())
    assert "clocks_during" not in report.to_dict()  # records written before it read back as they were
    report.clocks_during = ClocksDuring(gpus=[GpuClocksDuring(index=0, uuid="GPU-1", busy_samples=150,
                                                              sm_clock_mhz_min=1590.0, sm_clock_mhz_median=1725.0,
                                                              memory_clock_mhz_min=3201.0, power_w_max=698.7,
                                                              limits={"sw_power_cap": 0.93})])
    assert BenchmarkReport.from_dict(report.to_dict()).clocks_during == report.clocks_during
    markdown = benchmark_markdown(report, 0)
    assert "| 0 | 150 | 1590 | 1725 | 3201 | 698.7 | software power cap 93% |" in " ".join(markdown.split())


def test_the_arithmetic_s_dtype_is_the_largest_floating_input_s():
    """An FP8 GEMM's roof is FP8's: its bfloat16 output once put 8192^3 at bfloat16's peak, where every kernel
    at cuBLASLt's speed reads faster than the physical floor."""
    import torch

    from kernel_opt.measure.benchmark_child import arithmetic_dtype

    e4m3 = torch.float8_e4m3fn
    fp8_gemm = {"A": torch.zeros(64, 32, dtype=e4m3), "B": torch.zeros(32, 16, dtype=e4m3),
                "scale_a": torch.ones(()), "scale_b": torch.ones(()), "C": torch.zeros(64, 16, dtype=torch.bfloat16)}
    assert arithmetic_dtype(fp8_gemm, ["C"]) == "float8_e4m3fn"
    gather = {"index": torch.zeros(1000, dtype=torch.int64), "table": torch.zeros(10, 4), "out": torch.zeros(1000, 4)}
    assert arithmetic_dtype(gather, ["out"]) == "float32"  # the index tensor is larger, but not floating
    argmax = {"x": torch.zeros(8, 4, dtype=torch.float16), "out": torch.zeros(8, dtype=torch.int64)}
    assert arithmetic_dtype(argmax, ["out"]) == "float16"
    histogram = {"x": torch.zeros(100, dtype=torch.int32), "out": torch.zeros(10, dtype=torch.int64), "n": 100}
    assert arithmetic_dtype(histogram, ["out"]) == "int64"
