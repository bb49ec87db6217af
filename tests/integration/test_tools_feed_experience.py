"""The loop's tools hand their numbers to the experience log through files: the log must read
what correctness_check, benchmark and ncu_profile really write (not hand-made JSON)."""

import json

from conftest import REPO_ROOT

from kernel_opt.check.records import CorrectnessReport, DeviceInfo
from kernel_opt.commands import experience_log, ncu_profile
from kernel_opt.measure.records import BenchmarkReport, Comparison, TimedSolution
from kernel_opt.run.environment import GpuInfo

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "ncu"


def write_version(folder, fixture, median_us, comparison=None):
    folder.mkdir(parents=True)
    correctness = CorrectnessReport(verdict="pass", solution=f"{folder.name}.cu", reference="ref.py", backend="cuda",
                                    device=DeviceInfo("cuda", "NVIDIA H200", "9.0"),
                                    interpreter=False, command="correctness_check.py", dims={"M": 1024},
                                    seeds=[0, 1, 2])
    (folder / "correctness.json").write_text(json.dumps(correctness.to_dict()))
    report = BenchmarkReport(solution=TimedSolution(path=f"{folder.name}.cu", backend="cuda", median_us=median_us),
                             reference="ref.py", backend="cuda", command="benchmark.py", verdict="measured",
                             gpu=GpuInfo(name="NVIDIA H200", compute_capability="9.0"), comparison=comparison)
    (folder / "benchmark.json").write_text(json.dumps(report.to_dict()))
    assert ncu_profile.main(["--from-report", str(FIXTURES / f"{fixture}.ncu-rep"), "--output-dir", str(folder)]) == 0


def test_add_from_reads_what_the_tools_wrote(tmp_path):
    write_version(tmp_path / "v0", "naive_gemm_l1", 2600.0)
    comparison = Comparison(against="v0/v0.cu", against_dir=str(tmp_path / "v0"), speedup=1.30, ci_low=1.27,
                            ci_high=1.33, confidence=0.95, pairs=60, this_median_us=2000.0, other_median_us=2600.0,
                            verdict="success", other_correct_after_timing=True)
    write_version(tmp_path / "v1", "memory_streaming", 2000.0, comparison)
    (tmp_path / "v1" / "hypothesis.txt").write_text(
        "Hypothesis: tile the K loop through shared memory so each loaded value is reused 32 times\n"
        "Rationale: L1/shared throughput is 81.5% while DRAM is 0.4%: the same data is fetched again and again\n"
        "Expected: L1/shared throughput drops below 50% and the time falls by about 25%\n"
    )
    log = tmp_path / "log.jsonl"
    code = experience_log.main(["--log", str(log), "--curated", "none", "add", "--from", str(tmp_path / "v1"),
                                "--kernel", "gemm", "--strategy", "smem_tiling"])
    assert code == 0
    record = json.loads(log.read_text().splitlines()[0])
    before = json.loads((tmp_path / "v0" / "ncu_summary.json").read_text())["metrics"]
    after = json.loads((tmp_path / "v1" / "ncu_summary.json").read_text())["metrics"]
    assert (record["outcome"], record["outcome_source"], record["correct"]) == ("success", "measured", True)
    assert (record["speedup"], record["speedup_ci_low"], record["speedup_ci_high"]) == (1.30, 1.27, 1.33)
    assert (record["latency_before_us"], record["latency_after_us"]) == (2600.0, 2000.0)
    assert (record["memory_sol_before_pct"] == before["memory_sol_pct"]
            and record["memory_sol_after_pct"] == after["memory_sol_pct"])
    assert record["occupancy_before_pct"] == before["achieved_occupancy_pct"]
    assert (record["chip"], record["chip_name"], record["bottleneck"], record["stall"]) == (
        "sm_90", "H200", "memory_bound", "lg_throttle"
    )
    assert record["dims"] == {"M": 1024} and record["expected"].startswith("L1/shared throughput drops")
