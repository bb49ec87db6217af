"""final_report.py writes the report from the records alone: its numbers equal the records, what
is missing says "not measured", both charts are drawn, and the same records give the same
report (apart from the date line).

The run is synthetic but built from the tools' own record classes and real ncu summaries
(see run_fixtures.write_version): v0 and v1 timed and profiled, v1 a success against v0;
v2 incorrect, never timed."""

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR
from run_fixtures import VALID_HYPOTHESIS, add_timing_samples, make_run, write_version

from kernel_opt.commands import env_check
from kernel_opt.commands import final_report as final_report_command
from kernel_opt.loop.final_report import build_report
from kernel_opt.measure.baseline_standing import baseline_standing
from kernel_opt.measure.records import read_benchmark

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BASELINES = {"eager": 95.0, "torch.compile (default)": 88.0}


@pytest.fixture
def run(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out, iterations=2)
    assert env_check.main(["--output-dir", str(out)]) in (0, 4)  # 4: no GPU here, still a record
    write_version(out, 0, median_us=100.0, ncu_fixture="naive_gemm_l1", registers=40, baselines=BASELINES)
    write_version(out, 1, median_us=80.0, ncu_fixture="memory_streaming", against="v0", speedup=1.25, ci=(1.22, 1.28),
                  verdict="success", parent="v0", hypothesis=VALID_HYPOTHESIS, registers=32, baselines=BASELINES)
    write_version(out, 2, correct=False, state="failed", parent="v1",
                  hypothesis=VALID_HYPOTHESIS.replace("float4", "shared-memory staging of"))
    capsys.readouterr()
    return out


def table_row(markdown: str, version: str) -> list[str]:
    line = next(line for line in markdown.splitlines() if re.match(rf"^\| {version}\b", line))
    return [cell.strip() for cell in line.strip("|").split("|")]


def records(out, version):
    folder = out / version
    return (json.loads((folder / "benchmark.json").read_text()), json.loads((folder / "ncu_summary.json").read_text()))


def generate(out, capsys) -> str:
    assert final_report_command.main([str(out)]) == 0
    capsys.readouterr()
    return (out / "final_report.md").read_text()


def test_the_version_table_repeats_the_records(run, capsys):
    text = generate(run, capsys)
    for version, registers in (("v0", "40"), ("v1", "32")):
        benchmark, profile = records(run, version)
        solution = benchmark["solution"]
        row = table_row(text, version)
        assert row[1] == f"{solution['median_us']:.2f} ({solution['p20_us']:.2f}–{solution['p80_us']:.2f})"
        assert row[2] == f"{100.0 / solution['median_us']:.2f}x"
        assert row[4] == f"{benchmark['percent_of_ceiling']:.1f}% (measured)"
        assert row[5] == f"{profile['bottleneck']} ({profile['memory_limiter']})"
        assert row[6] == f"{profile['metrics']['achieved_occupancy_pct']:.1f}%"
        assert row[7] == registers
        share = profile["kernels"][0]["top_stalls"][0]["share_pct"]
        assert row[8] == f"{profile['top_stall']} ({share:.0f}%)"
    assert table_row(text, "v1")[0] == "v1 (best)"
    assert table_row(text, "v1")[3] == "1.250x vs v0 [1.220, 1.280] success"
    assert table_row(text, "v0")[3] == "n/a: v0 is the starting point"
    assert "| correctness rule |" not in text  # the default rule, as every report before the option


def test_a_version_without_a_benchmark_is_not_measured(run, capsys):
    text = generate(run, capsys)
    row = table_row(text, "v2")
    assert row[1] == "not measured: no benchmark.json (evaluation stopped: failed)"
    assert row[2].startswith("not measured:") and row[4].startswith("not measured:")
    assert row[5] == "not measured: no ncu_summary.json"
    assert row[7] == "30"  # the build record of its correctness check still says so
    section = text.split("### v2")[1].split("###")[0]
    assert "shared-memory staging" in section and "did not hold: the version is not correct" in section
    assert "v2: not timed" in text


def test_a_version_whose_evaluate_never_finished_says_what_it_left(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out, iterations=3)
    write_version(out, 0, median_us=100.0, baselines=BASELINES)
    write_version(out, 1, parent="v0", hypothesis=VALID_HYPOTHESIS, correct=True, state=None)  # killed after its check
    stopped = generate(out, capsys).split("| why the run stopped |")[1].split("\n")[0]
    assert stopped.endswith("; v1 is not evaluated (its evaluate did not finish: correctness passed and is recorded, "
                            "nothing was timed) |")
    (out / "v1" / "correctness.json").unlink()
    assert "v1 is not evaluated (never run)" in generate(out, capsys)


def test_stop_reason_best_version_and_pytorch_comparison(run, capsys):
    text = generate(run, capsys)
    benchmark, profile = records(run, "v1")
    assert "budget spent: 2 of 2 iteration(s) used; target 90% not reached (v1 at " \
           f"{benchmark['percent_of_ceiling']:.1f}%)" in text
    assert "| best version | v1: 80.00 µs, 1.25x faster than v0, " \
           f"{benchmark['percent_of_ceiling']:.1f}% of the ceiling (measured) |" in text
    assert "interleaved comparison, with its confidence interval and verdict. Each % of ceiling names its basis: " \
           "the stricter of the roofs measured on this GPU" in text
    assert "From v1/benchmark.json" in text
    assert "| eager                   | 95.00       | —           | 1.19x" in text
    assert "| torch.compile (default) | 88.00       | 12.5        | 1.10x" in text
    assert "Against eager PyTorch: 1.19x." in text
    assert "Against the fastest PyTorch baseline (torch.compile (default)): 1.10x." in text
    remaining = text.split("## Remaining opportunities")[1].split("## Against PyTorch")[0]
    assert "From v1's profile" in remaining
    assert all(finding["text"] in remaining for finding in profile["findings"])
    assert f"`{profile['read_next'][0]['link']}`" in remaining
    assert ('held: 1.250x against v0 where Expected said about 1.3x ("time drops ~1.3x") '
            "(its metrics: set Expected against what moved, below)" in text.split("### v1")[1])
    environment = json.loads((run / "env_check.json").read_text())
    assert f"| environment check       | {environment['verdict']}: " in text
    assert "NVIDIA H200 (compute capability 9.0), from v1/benchmark.json" in text


def test_both_charts_are_drawn_and_linked(run, capsys):
    pytest.importorskip("matplotlib")
    text = generate(run, capsys)
    for name in ("time_per_version.png", "roofline.png"):
        data = (run / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5000
        assert f"]({name})" in text


def test_the_report_depends_on_the_records_only(run, capsys):
    def without_date(markdown: str) -> str:
        return re.sub(r"^Generated .* by", "Generated <date> by", markdown, flags=re.MULTILINE)

    pytest.importorskip("matplotlib")
    first = generate(run, capsys)
    charts = {name: (run / name).read_bytes() for name in ("time_per_version.png", "roofline.png")}
    second = generate(run, capsys)
    assert without_date(first) == without_date(second)
    assert {name: (run / name).read_bytes() for name in charts} == charts
    assert str(run) not in first  # relative paths only: the folder can be moved or committed


def test_the_final_benchmark_is_preferred_when_it_timed_the_best(run, capsys):
    # SKILL.md's Finish step: benchmark.py OUT/v1/v1.cu --output-dir OUT --against OUT/v0/v0.cu
    final = json.loads((run / "v1" / "benchmark.json").read_text())
    final["comparison"] = {**final["comparison"], "speedup": 1.262, "ci_low": 1.25, "ci_high": 1.27}
    final["baselines"][0]["median_us"] = 96.0
    (run / "benchmark.json").write_text(json.dumps(final))
    (run / "benchmark.md").write_text("# Benchmark\n")
    text = generate(run, capsys)
    assert "From benchmark.json (one run" in text and "| eager                   | 96.00" in text
    assert "Against v0, timed interleaved in the final benchmark: 1.262x [1.250, 1.270], success." in text
    assert "| final benchmark | [benchmark.md](benchmark.md) |" in text


def test_a_run_with_nothing_timed_says_so(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out, iterations=1)
    text = generate(out, capsys)
    assert "| best version | not measured: no version was timed correct |" in text
    assert "Time chart: not measured: no version was timed." in text
    assert "not measured: no version was profiled" in text
    assert not (out / "time_per_version.png").exists()


def write_sweep(folder: Path, solution: str, failing=(2048,)) -> None:
    """A sweep record (test_sweep's synthetic H100 frame) and its chart, as ncu_profile.py --sweep writes them."""
    from kernel_opt.profile.sweep.chart import draw_sweep_chart
    from unit.profile.sweep import test_sweep

    record = test_sweep.make_record(test_sweep.points_for(check=test_sweep.passing_check(failing=failing)),
                                    solution=solution, files={"json": "sweep.json", "png": "sweep.png"})
    folder.mkdir(parents=True, exist_ok=True)
    draw_sweep_chart(record, folder / "sweep.png")
    (folder / "sweep.json").write_text(json.dumps(record.to_dict()))


def test_the_runs_size_sweep_is_embedded_with_its_table_and_chart(run, capsys):
    pytest.importorskip("matplotlib")
    write_sweep(run / "sweep", solution=str(run / "v1" / "v1.cu"))
    text = generate(run, capsys)
    section = text.split("## Across sizes")[1].split("\n## ")[0]
    assert "From sweep/sweep.json (`ncu_profile.py --sweep N=1024,2048,4096,8192`, NVIDIA H100 80GB HBM3): partial." \
        in section
    assert re.search(r"^\| 1024 +\| 14\.20 +\| 16\.90 \(unstable\) +\| 1\.19x", section, flags=re.MULTILINE)
    assert re.search(r"^\| 2048 +\| WRONG: not profiled", section, flags=re.MULTILINE)
    assert "- N=2048: WRONG: not profiled: wrong results" in section
    assert "![time, achieved rate and % of ceiling against N](sweep/sweep.png)" in section
    assert "[sweep/sweep.md](sweep/sweep.md)" in section and "It profiled" not in section
    assert str(run) not in text  # the record's absolute solution path is not printed


def test_a_sweep_of_another_file_in_the_best_versions_folder_says_so(run, capsys):
    pytest.importorskip("matplotlib")
    write_sweep(run / "v1" / "sweep", solution="elsewhere/softmax.py", failing=())
    section = generate(run, capsys).split("## Across sizes")[1]
    assert "From v1/sweep/sweep.json" in section and ": profiled." in section
    assert "It profiled softmax.py, not the best version's file." in section
    assert "](v1/sweep/sweep.png)" in section


def test_without_a_sweep_the_report_says_how_to_make_one(run, capsys):
    section = generate(run, capsys).split("## Across sizes")[1]
    assert section.strip().startswith("not measured: no sweep/sweep.json: SKILL.md's Finish step makes one with "
                                      "ncu_profile.py --sweep NAME=V1,V2,... --output-dir OUT/sweep")


# --- a real run: tests/fixtures/runs/softmax_cuda_h100 (H100, see its README) --------------------

REAL_RUN = FIXTURES_DIR / "runs" / "softmax_cuda_h100"


@pytest.fixture
def real_run(tmp_path):
    out = tmp_path / "softmax_cuda_h100"
    shutil.copytree(REAL_RUN, out)
    return out


def test_the_report_of_a_real_h100_run_repeats_its_records(real_run, capsys):
    assert final_report_command.main([str(real_run)]) == 0
    text = (real_run / "final_report.md").read_text()
    rows = {}
    for line in text.splitlines():  # the versions table comes first; the PyTorch table repeats "v1 (best)"
        if re.match(r"\| v\d", line):
            rows.setdefault(line.split("|")[1].strip(), line)
    assert "50.72 (49.92–51.49)" in rows["v0"] and "85.8% (same-size copy)" in rows["v0"]
    assert "47.33 (46.46–48.22)" in rows["v1 (best)"] and "1.07x" in rows["v1 (best)"]
    assert "1.085x vs v0 [1.083, 1.087] success" in rows["v1 (best)"]
    assert "long_scoreboard (55%)" in rows["v1 (best)"] and "| 31 " in rows["v1 (best)"]
    assert "target reached: v1 at 92.1% of the roofline ceiling (target 90%)" in text
    # The PyTorch table comes from the final benchmark, the best version's median from that same run.
    assert re.search(r"\| v1 \(best\)\s+\| 47\.10 ", text)
    assert re.search(r"\| torch\.compile \(max-autotune-no-cudagraphs\) \| 46\.69 ", text)
    assert "Against the fastest PyTorch baseline (torch.compile (max-autotune-no-cudagraphs)): 0.99x." in text
    assert "Against v0, timed interleaved in the final benchmark: 1.065x [1.064, 1.068], success." in text
    assert "1980 MHz after (max 1980 MHz)" in text
    for chart in ("time_per_version.png", "roofline.png"):
        assert (real_run / chart).read_bytes().startswith(PNG_MAGIC)


def test_the_real_runs_evaluations_fit_the_loops_time_budget():
    # workspace.py evaluate is run every iteration: at most 60 s, the profile at most 15 s (issue 6).
    for version in ("v0", "v1"):
        record = json.loads((REAL_RUN / version / "evaluation.json").read_text())
        steps = {step["name"]: step["wall_s"] for step in record["steps"]}
        assert record["state"] == "measured" and record["wall_s"] <= 60.0
        assert steps["profile"] <= 15.0


def trailing_pytorch(run, copy_gbps, compile_us=72.0):
    """v1's benchmark as if torch.compile had run at 72 µs (v1 at 80) on a problem moving 240 MB."""
    record = json.loads((run / "v1" / "benchmark.json").read_text())
    for baseline in record["baselines"]:
        if baseline["name"] == "torch.compile (default)":
            baseline["median_us"] = compile_us
    record.update(best_baseline="torch.compile (default)", speedup_vs_best_baseline=compile_us / 80.0,
                  work={"bytes": 2.4e8, "bytes_source": "inputs read once + outputs written once", "flops": None},
                  copy_same_bytes={"bandwidth_gbps": copy_gbps, "median_us": 2.4e8 / copy_gbps / 1e3})
    (run / "v1" / "benchmark.json").write_text(json.dumps(record))


def test_a_best_version_pytorch_still_beats_is_explained_from_the_records(run, capsys):
    trailing_pytorch(run, copy_gbps=3000.0)
    text = generate(run, capsys)
    section = text.split("### Why it stops short of torch.compile (default)")[1].split("## Across sizes")[0]
    lines = [line[2:] for line in section.splitlines() if line.startswith("- ")]
    assert lines[0] == "torch.compile (default) ran 1.111x faster than v1 in the same benchmark run " \
                       "(72.00 µs against 80.00 µs): v1 runs at 0.900x its speed, beyond the 5% that medians alone " \
                       "must clear (no timing samples recorded)."
    assert lines[1] == "Both move at least 240.0 MB (inputs read once + outputs written once): v1 at an effective " \
                       "3000 GB/s, torch.compile (default) at 3333 GB/s; a copy of the same bytes ran at 3000 GB/s " \
                       "(80.00 µs)."
    assert lines[2] == ("v1 is at 100.0% of that roof and torch.compile (default) at 111.1%: torch.compile (default) "
                        "moves the same bytes faster than the copy does, so the copy is not this problem's limit. A "
                        "copy writes as many bytes as it reads; traffic with another mix (mostly reads, as in a "
                        "matrix-vector product or a reduction) can run past it.")
    assert lines[3] == "Tried: v1 success (1.250x against v0); v2 incorrect."
    _, profile = records(run, "v1")
    assert lines[4] == f"What v1's profile says is left: {profile['findings'][0]['text']}."



def test_a_baseline_under_the_copy_roof_beside_a_best_version_at_it_is_read_as_both_at_the_roof(run, capsys):
    trailing_pytorch(run, copy_gbps=3080.0, compile_us=78.0)
    add_timing_samples(run / "v1")  # 400 samples each: 2.5% apart is beyond their noise
    text = generate(run, capsys)
    section = text.split("### Why it stops short of torch.compile (default)")[1].split("## Across sizes")[0]
    lines = [line[2:] for line in section.splitlines() if line.startswith("- ")]
    assert lines[2] == ("v1 is at 97.4% of that roof and torch.compile (default) at 99.9%: both are at the memory roof "
                        "with the same bytes, and the gap is in how close each gets to DRAM's peak, not in the bytes "
                        "moved.")

def pytorch_at(run, compile_us: float) -> None:
    """v1 (80 µs) against torch.compile at `compile_us`, each with 400 timed samples spread 0.8% around its median."""
    record = json.loads((run / "v1" / "benchmark.json").read_text())
    for baseline in record["baselines"]:
        if baseline["name"] == "torch.compile (default)":
            baseline["median_us"] = compile_us
    record.update(best_baseline="torch.compile (default)", speedup_vs_best_baseline=compile_us / 80.0)
    (run / "v1" / "benchmark.json").write_text(json.dumps(record))
    add_timing_samples(run / "v1")


def test_a_baseline_faster_inside_the_noise_is_a_tie_not_a_reason_to_stop_short(run, capsys):
    # the agent trial's numbers scaled to this run: 127.58 against 127.62 µs
    pytorch_at(run, 80.0 * 127.58 / 127.62)
    text = generate(run, capsys)
    standing = baseline_standing(read_benchmark(run / "v1"))
    assert standing.standing == "level" and standing.ci_low < 1.0 < standing.ci_high
    assert "stops short" not in text
    assert (f"- Level with torch.compile (default): its median is lower, but v1 runs at {standing.interval_text()} its "
            "speed (95% bootstrap interval of 400 and 400 timed calls): within the noise, since slower counts only "
            "beyond 2% with the whole interval below 1 (the version comparison's rule). A tie, not a gap.") in text
    assert build_report(run).behind_pytorch == []


def test_a_baseline_faster_by_a_resolved_gap_under_two_percent_is_level_and_says_the_gap_is_real(run, capsys):
    pytorch_at(run, 79.0)  # 1.25% faster: the interval lies below 1, the gap under the 2% that counts as slower
    text = generate(run, capsys)
    standing = baseline_standing(read_benchmark(run / "v1"))
    assert standing.standing == "level" and standing.resolved and standing.ci_high < 1.0
    assert "stops short" not in text and "within the noise" not in text
    assert (f"- Level with torch.compile (default): its median is lower, but v1 runs at {standing.interval_text()} its "
            "speed (95% bootstrap interval of 400 and 400 timed calls): a real difference, but under the 2% that "
            "counts as slower (the version comparison's rule). Level, not a gap worth chasing.") in text


def test_a_baseline_faster_beyond_the_noise_is_explained_with_its_interval(run, capsys):
    pytorch_at(run, 76.0)  # 5% faster: the whole interval below 1, past the 2% margin
    text = generate(run, capsys)
    standing = baseline_standing(read_benchmark(run / "v1"))
    assert standing.behind and standing.ci_high < 1.0
    assert "Level with" not in text
    assert (f"- torch.compile (default) ran 1.053x faster than v1 in the same benchmark run (76.00 µs against "
            f"80.00 µs): v1 runs at {standing.interval_text()} its speed (95% bootstrap interval of 400 and 400 timed "
            "calls), beyond the noise.") in text.split("### Why it stops short of torch.compile (default)")[1]


def test_below_the_roof_the_gap_is_put_on_how_the_bytes_move(run, capsys):
    trailing_pytorch(run, copy_gbps=4000.0)
    text = generate(run, capsys)
    assert "- v1 reaches 75.0% of that roof and torch.compile (default) 83.3%: the bytes are the same, so the gap " \
           "is in how v1 moves them." in text


def test_no_explanation_where_the_best_version_wins(run, capsys):
    assert "### Why it stops short" not in generate(run, capsys)


def test_a_compute_bound_best_version_is_set_against_the_compute_roof(run, capsys):
    trailing_pytorch(run, copy_gbps=3000.0)
    record = json.loads((run / "v1" / "benchmark.json").read_text())
    record["work"] = {"flops": 8.0e9, "flops_source": "at least: counted by torch FlopCounterMode",
                      "flops_lower_bound": True, "bytes": 5.0e7}
    roofs = {"compute_tflops": 120.0, "memory_bandwidth_gbps": 3000.0, "source": "measured 2026-11-25",
             "dtype": "float32"}
    record["roofline"] = {"primary": "measured",  # as records made before "basis" existed name it
                          "points": {"measured": {"bound": "compute", "ceilings": roofs},
                                     "datasheet": {"bound": "compute", "ceilings": {**roofs, "compute_tflops": 67.0}}}}
    (run / "v1" / "benchmark.json").write_text(json.dumps(record))
    text = generate(run, capsys)
    assert "- It is compute bound (≥ 8.00 GFLOP, at least: counted by torch FlopCounterMode): v1 runs at " \
           "≥ 100.0 TFLOP/s and torch.compile (default) at ≥ 111.1 TFLOP/s, against a 120.0 TFLOP/s " \
           "roof (measured 2026-11-25, float32)." in text
    assert "- v1 is at 83.3% of that roof and torch.compile (default) at 92.6%: the FLOPs are the same" in text


def test_a_best_version_at_its_target_that_pytorch_beats_is_not_said_to_miss_the_target(run, capsys):
    trailing_pytorch(run, copy_gbps=3000.0)
    record = json.loads((run / "v1" / "benchmark.json").read_text())
    record["target_reached"] = True
    (run / "v1" / "benchmark.json").write_text(json.dumps(record))
    text = generate(run, capsys)
    assert (f"| why the run stopped | budget spent: 2 of 2 iteration(s) used; target 90% reached (v1 at "
            f"{record['percent_of_ceiling']:.1f}%), but torch.compile (default) is still faster, so the target did "
            "not end the run |") in text


def test_a_tensor_core_run_shows_the_tensor_pipe_version_by_version(run, capsys):
    """Issue 17: a Hopper MMA kernel is read against its tensor pipe, so the table follows that pipe's busy share;
    a run whose kernels leave it idle keeps the table as it was."""
    assert "tensor pipe busy" not in generate(run, capsys)
    summary_path = run / "v1" / "ncu_summary.json"
    summary = json.loads(summary_path.read_text())
    summary["metrics"]["tensor_pipe_pct"] = 47.06
    summary_path.write_text(json.dumps(summary))
    text = generate(run, capsys)
    header = table_row(text, "version")
    assert header[6] == "tensor pipe busy" and header[7] == "achieved occupancy"
    v0_tensor = records(run, "v0")[1]["metrics"].get("tensor_pipe_pct")
    assert table_row(text, "v1")[6] == "47.1%"
    assert table_row(text, "v0")[6] == (f"{v0_tensor:.1f}%" if v0_tensor is not None
                                        else "not measured: no tensor pipe metric in the profile")


def test_a_best_version_at_a_pipe_roof_is_told_how_much_any_schedule_could_gain(run, capsys):
    """Issue 17: a GEMM at 94% tensor-pipe busy can run at most 1/0.94 faster with the same work; whether that
    reaches the baseline decides the sentence."""
    trailing_pytorch(run, copy_gbps=3000.0)  # torch.compile 72 us against v1's 80 us: 1.111x needed
    summary_path = run / "v1" / "ncu_summary.json"
    summary = json.loads(summary_path.read_text())
    at_roof = {"key": "pipe_at_roof", "text": "the tensor pipe runs at 94.4% of its peak", "evidence": {
        "pipe": "tensor", "pipe_pct": 94.4}}
    summary["findings"] = [at_roof, *summary["findings"]]
    summary_path.write_text(json.dumps(summary))
    text = generate(run, capsys)
    assert ("- v1's profile has the tensor pipe busy 94.4% of the time: the same work with no gap on that pipe would "
            "run at most 1.059x faster (about 75.52 µs), short of the 1.111x that matching the baseline takes: only "
            "less work or a lower precision closes the gap.") in text
    at_roof["evidence"]["pipe_pct"] = 85.0
    summary_path.write_text(json.dumps(summary))
    text = generate(run, capsys)
    assert ("- v1's profile has the tensor pipe busy 85.0% of the time: the same work with no gap on that pipe would "
            "run at most 1.176x faster (about 68.00 µs); matching the baseline needs 1.111x, within that bound, so the "
            "gap is in the schedule (fill, drain, waits between the pipe's instructions), not in the work.") in text


def test_an_overlap_bound_best_version_whose_pipes_take_turns_is_told_what_overlapping_them_would_give(run, capsys):
    """Issue 17: Triton attention's tensor pipe (48%) and XU (51%) add up to 99%: the time is in their overlap."""
    trailing_pytorch(run, copy_gbps=3000.0)
    summary_path = run / "v1" / "ncu_summary.json"
    summary = json.loads(summary_path.read_text())
    summary["bottleneck"] = "overlap_bound"
    summary["kernels"][0]["share_pct"] = 100.0
    summary["kernels"][0]["pipes"] = {"utilisation_pct": {"tensor": 48.2, "XU": 51.2, "FMA": 21.8, "FP64": 0.0},
                                      "busiest": "XU", "busiest_pct": 51.2, "at_roof": False}
    summary_path.write_text(json.dumps(summary))
    text = generate(run, capsys)
    assert ("- v1's profile has the XU pipe busy 51.2% and the tensor pipe 48.2% of the time, 99.4% together with "
            "neither at its roof, as if the two took turns. Fully overlapped, the same work would take about "
            "41.21 µs at best (the busier pipe's share alone), so the time is in overlapping them, not in either "
            "pipe.") in text
    summary["kernels"][0]["pipes"]["utilisation_pct"]["tensor"] = 30.0  # 81.2% together: not taking turns
    summary_path.write_text(json.dumps(summary))
    assert "took turns" not in generate(run, capsys)
