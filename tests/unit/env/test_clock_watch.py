"""nvidia-smi sampled while the benchmark runs: parsing its lines, the busy samples' summary, the warning, the watch."""

from __future__ import annotations

import os
import stat
import time

import pytest

from kernel_opt.env.clock_watch import (
    ClockSample,
    ClocksDuring,
    ClockWatch,
    GpuClocksDuring,
    parse_sample,
    summarize,
    throttle_warning,
    watched_gpus,
)

UUID = "GPU-e6b7e31e-c6f1-3b05-8420-637ce81fcf82"
# As an H200 answered the query with driver 580.159.04: idle before the run, then at its software power cap.
IDLE = f"0, {UUID}, 1980, 3201, 102.40, Active, Not Active, Not Active, Not Active, Not Active, Not Active"
CAPPED = f"0, {UUID}, 1590, 3201, 692.30, Not Active, Active, Not Active, Not Active, Not Active, Not Active"
FREE = f"0, {UUID}, 1980, 3201, 640.00, Not Active, Not Active, Not Active, Not Active, Not Active, Not Active"


def sample(sm, limits=(), idle=False, index=0, power=690.0):
    return ClockSample(index, UUID, sm, 3201.0, power, idle, tuple(limits))


def test_a_line_of_the_query_becomes_a_sample_and_anything_else_none():
    assert parse_sample(CAPPED) == ClockSample(0, UUID, 1590.0, 3201.0, 692.3, False, ("sw_power_cap",))
    assert parse_sample(IDLE).idle and parse_sample(IDLE).limits == ()
    assert parse_sample(CAPPED.replace("692.30", "[N/A]")).power_w is None
    for other in ("", "Failed to initialize NVML: Driver/library version mismatch",
                  "Field \"clocks_event_reasons.gpu_idle\" is not a valid field to query.", "0, GPU-x, 1980"):
        assert parse_sample(other) is None


def test_the_summary_counts_busy_samples_only_and_the_share_each_limit_held():
    samples = [sample(1980, idle=True, power=100.0), sample(1590, ["sw_power_cap"]), sample(1665, ["sw_power_cap"]),
               sample(1905, ["sw_power_cap"]), sample(1980), sample(1700, ["sw_power_cap", "sw_thermal_slowdown"]),
               sample(1410, index=1)]
    first, second = summarize(samples)
    assert (first.index, first.uuid, first.busy_samples) == (0, UUID, 5)
    assert (first.sm_clock_mhz_min, first.sm_clock_mhz_median, first.memory_clock_mhz_min) == (1590, 1700, 3201)
    assert first.power_w_max == 690.0 and first.limits == {"sw_power_cap": 0.8, "sw_thermal_slowdown": 0.2}
    assert (second.index, second.busy_samples, second.limits) == (1, 1, {})
    assert summarize([sample(1980, idle=True)])[0].limits == {}  # never busy: nothing to say


def test_a_limit_in_force_in_a_tenth_of_the_busy_samples_is_a_warning():
    capped = ClocksDuring(gpus=[GpuClocksDuring(index=0, busy_samples=150, sm_clock_mhz_min=1590.0,
                                                sm_clock_mhz_median=1725.0, limits={"sw_power_cap": 0.93,
                                                                                    "hw_slowdown": 0.05})])
    assert throttle_warning(capped) == (
        "the GPU's clock was held down while the benchmark ran (nvidia-smi every 100 ms): GPU 0: software power cap "
        "in 93% of 150 busy samples, SM clock 1590-1725 MHz (lowest-median). Times taken one after another in this "
        "state can differ for identical work; the baselines beside the solution met the same state, runs on other "
        "days may not")
    capped.gpus[0].limits = {"sw_power_cap": 0.09}
    assert throttle_warning(capped) is None
    assert throttle_warning(None) is None and throttle_warning(ClocksDuring(note="not sampled")) is None


@pytest.mark.parametrize("visible, watched", [("", None), ("1", {"1"}), ("3,2", {"3"}), (UUID, {UUID})])
def test_the_watched_gpu_is_the_benchmark_s_device_0(visible, watched):
    assert watched_gpus({"CUDA_VISIBLE_DEVICES": visible} if visible else {}) == watched


def fake_nvidia_smi(folder, lines):
    """An nvidia-smi that answers only the watch's query: its lines 50 ms apart, then it keeps running."""
    script = folder / "nvidia-smi"
    script.write_text("\n".join([
        "#!/bin/sh",
        'case "$*" in *--query-gpu=index,uuid,clocks.sm*"-lms 100"*) ;; *) echo "unexpected: $*"; exit 3 ;; esac',
        *(f"echo '{line}'; sleep 0.05" for line in lines),
        "sleep 30",
    ]) + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


def test_the_watch_reads_the_lines_of_its_gpu_until_the_block_ends(tmp_path, monkeypatch):
    other = CAPPED.replace(f"0, {UUID}", "1, GPU-other")
    fake_nvidia_smi(tmp_path, [IDLE, CAPPED, other, CAPPED, FREE])
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with ClockWatch({"0"}) as watch:
        for _ in range(100):
            if len(watch._samples) == 4:
                break
            time.sleep(0.05)
    during = watch.result()
    assert during.note is None and [gpu.index for gpu in during.gpus] == [0]
    assert during.gpus[0].busy_samples == 3 and during.gpus[0].limits == {"sw_power_cap": pytest.approx(0.667)}
    assert watch._process.poll() is not None  # stopped with the block: the sleeping script was ended
    assert ClocksDuring.from_dict(during.to_dict()) == during


def test_without_nvidia_smi_the_record_says_nothing_was_sampled(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with ClockWatch() as watch:
        pass
    assert watch.result() == ClocksDuring(note="not sampled: nvidia-smi is not on PATH")
    fake_nvidia_smi(tmp_path, [])
    with ClockWatch() as watch:
        pass
    assert watch.result().note.startswith("not sampled: nvidia-smi gave no line this query reads")
