"""Advice that fits the problem: an elementwise kernel at the memory roof, read from a recorded H200 report.

tests/fixtures/ncu/memory_streaming.ncu-rep is `out = x + y` over 2^26 floats (its ref.py beside the kernel):
DRAM at 90.0% of its peak, 787.5 MB moved against the 805.3 MB the problem needs, occupancy 80.5% of 100%.
"""

import pytest
from conftest import FIXTURES_DIR, REFERENCE_DIR

from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.measure.records import BenchmarkReport, TimedSolution
from kernel_opt.measure.roofline_records import Work
from kernel_opt.profile.ncu.reading import locate_report_reader, read_profile
from kernel_opt.profile.ncu_summary import profile_summary, summarize_profile, write_profile_reports
from kernel_opt.profile.problem_traits import ProblemTraits, problem_traits
from kernel_opt.profile.records import Collection

STREAMING = FIXTURES_DIR / "ncu" / "memory_streaming.ncu-rep"
ADD_REFERENCE = FIXTURES_DIR / "ncu" / "kernels" / "memory_streaming" / "ref.py"
DIMS = {"n": 1 << 26}
MINIMUM_BYTES = 3 * 4 * (1 << 26)  # ref.py bytes(): x and y read, out written, float32
DRAM_BYTES = 536882688.0 + 250656512.0  # the report's dram__bytes_read.sum + dram__bytes_write.sum


@pytest.fixture(scope="module")
def streaming():
    try:
        locate_report_reader()
    except EnvironmentFault as error:
        pytest.skip(f"ncu_report is not available here ({error.message}); pip install ncu-report==2025.3.1")
    return read_profile(STREAMING)


def benchmark(percent_of_ceiling: float, minimum_bytes: float = MINIMUM_BYTES) -> BenchmarkReport:
    return BenchmarkReport(solution=TimedSolution(median_us=180.0), reference=str(ADD_REFERENCE), backend="triton",
                           command="benchmark.py", dims=dict(DIMS), verdict="measured",
                           work=Work(bytes=minimum_bytes, bytes_source="ref.py bytes()"),
                           percent_of_ceiling=percent_of_ceiling, target_percent=90.0)


def summarize(profile, guide, reference=ADD_REFERENCE, record=None, output_dir=None):
    collection = Collection(mode="profiled", report=str(STREAMING), reader="test", profiled_calls=1, dims=dict(DIMS))
    summary, verdict = summarize_profile(profile, collection, (guide,), None, None, None, reference, record)
    if output_dir is not None:
        write_profile_reports(summary, profile, verdict, output_dir)
    return summary


def test_an_elementwise_kernel_at_the_memory_roof_is_sent_nowhere(streaming, tmp_path):
    summary = summarize(streaming, "triton", record=benchmark(98.7), output_dir=tmp_path)
    traits = summary.traits
    assert (traits.family, traits.family_source) == ("elementwise", "the reference calls add")
    assert traits.traffic_ratio == pytest.approx(DRAM_BYTES / MINIMUM_BYTES) and traits.reads_once
    assert traits.at_memory_roof
    assert summary.bottleneck == "memory_bound" and summary.read_next == []  # no tile_shape, no single_pass
    assert [finding.key for finding in summary.findings] == ["memory_at_peak", "top_stall", "divergence",
                                                            "minimum_traffic"]  # no occupancy_gap at the roof
    assert summary.findings[-1].text == (
        "DRAM moved 787.5 MB per call against the problem's minimum of 805.3 MB (ref.py bytes()): 0.98x, each byte "
        "read once: no single pass, fusion or reuse moves fewer bytes; past the bandwidth's peak only a smaller data "
        "type (where the reference allows) is left")
    assert summarize(streaming, "cuda", record=benchmark(98.7)).read_next == []
    at_the_roof = ("no guide strategy applies: the solution reads each byte once (0.98x the problem's minimum bytes) "
                   "at 98.7% of its ceiling; it is at its memory roof")
    assert profile_summary(summary, tmp_path).splitlines()[-1] == f"next: {at_the_roof}"
    markdown = (tmp_path / "ncu_summary.md").read_text()
    assert ("**Problem:** elementwise (the reference calls add); DRAM moved 0.98x the problem's minimum bytes per "
            "call.") in markdown
    assert f"## What to try\n\n- {at_the_roof}\n" in markdown
    assert "- **minimum_traffic**: DRAM moved 787.5 MB per call" in markdown and "occupancy_gap" not in markdown


def test_faster_than_every_measured_roof_is_at_the_roof_though_its_percent_reads_under_the_target(streaming, tmp_path):
    # The benchmark reached its target by beating every roof it measured; its % is on the datasheet basis, 88.0%.
    record = benchmark(88.0)
    record.target_reached = True
    summary = summarize(streaming, "triton", record=record, output_dir=tmp_path)
    assert summary.traits.target_reached is True and summary.traits.at_memory_roof
    assert summary.read_next == []
    assert profile_summary(summary, tmp_path).splitlines()[-1] == (
        "next: no guide strategy applies: the solution reads each byte once (0.98x the problem's minimum bytes) at "
        "88.0% of its ceiling and faster than every roof measured on this GPU; it is at its memory roof")


@pytest.mark.parametrize("percent, reached, at_roof", [
    (98.7, None, True),  # a record without the verdict: the % against the target
    (70.0, None, False),
    (88.0, True, True),  # the benchmark's verdict decides
    (95.0, False, False),
])
def test_the_benchmark_s_verdict_on_its_target_decides_the_memory_roof(percent, reached, at_roof):
    traits = ProblemTraits(minimum_bytes=MINIMUM_BYTES, dram_bytes_per_call=MINIMUM_BYTES, percent_of_ceiling=percent,
                           target_percent=90.0, target_reached=reached)
    assert traits.at_memory_roof is at_roof
    assert ProblemTraits(minimum_bytes=MINIMUM_BYTES, dram_bytes_per_call=2 * MINIMUM_BYTES, percent_of_ceiling=percent,
                         target_percent=90.0, target_reached=True).at_memory_roof is False  # reads bytes twice


def test_below_its_roof_it_gets_the_bandwidth_strategies_that_fit_it(streaming):
    below = benchmark(70.0)
    assert [item.strategy for item in summarize(streaming, "triton", record=below).read_next] == ["block_size",
                                                                                                   "vector_hints"]
    assert [item.strategy for item in summarize(streaming, "cuda", record=below).read_next] == ["coalesce_access",
                                                                                                 "vector_loads"]


def test_a_row_kernel_that_reads_its_rows_twice_is_sent_to_a_single_pass(streaming):
    # the same profile read as a softmax that moves 1.3x its minimum: a second pass over each row
    summary = summarize(streaming, "cuda", REFERENCE_DIR / "softmax" / "ref.py", benchmark(70.0, DRAM_BYTES / 1.3))
    assert summary.traits.family == "row_reduction" and summary.traits.reads_once is False
    assert [item.strategy for item in summary.read_next][:2] == ["single_pass", "fuse_kernels"]
    assert summary.findings[-1].key == "extra_traffic"
    assert summary.findings[-1].text.endswith(": 1.30x, above 1.1x: data read more than once (a row per pass) or "
                                              "intermediates through DRAM (one kernel per step)")


def test_a_kept_report_without_its_problem_is_advised_as_before(streaming):
    summary = summarize(streaming, "cuda", reference=None, record=None)
    assert summary.traits == ProblemTraits()
    assert [item.strategy for item in summary.read_next] == ["single_pass", "fuse_kernels", "coalesce_access",
                                                             "vector_loads"]


def test_a_benchmark_of_other_sizes_says_nothing_about_this_profile():
    other = benchmark(98.7)
    other.dims = {"n": 1 << 20}
    traits = problem_traits(ADD_REFERENCE, other, DRAM_BYTES, 1, False, dict(DIMS))
    assert traits.family == "elementwise" and traits.minimum_bytes is None and traits.reads_once is None
    assert problem_traits(None, None, None, None, True).family == "matmul_like"  # tensor instructions, no reference


def test_the_benchmark_s_verdict_is_written_only_where_a_benchmark_gave_it():
    assert "target_reached" not in ProblemTraits(family="elementwise").to_dict()  # summaries written before it
    written = ProblemTraits(family="elementwise", target_reached=True).to_dict()
    assert written["target_reached"] is True and ProblemTraits.from_dict(written).target_reached is True
