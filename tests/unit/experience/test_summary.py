"""sync (experiences.md) is deterministic and says what worked; stats counts correctly."""

import random

import pytest
from experience_fixtures import record

from kernel_opt.experience.records import validate
from kernel_opt.experience.store import Entry
from kernel_opt.experience.summary import compute_stats, render_stats, render_summary, stats_to_dict

H100 = dict(chip="sm_90", chip_name="H100")
A100 = dict(chip="sm_80", chip_name="A100")


def table_rows(text: str) -> list[list[str]]:
    """Cells of every Markdown table row in the text, stripped of tabulate's padding."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("|") and not line.startswith("|--")
    ]


def _log():
    records = [
        record(kernel="softmax", strategy="vector_loads", speedup=1.40, **H100),
        record(kernel="layernorm", strategy="vector_loads", speedup=1.20, **H100),
        record(kernel="softmax", strategy="smem_staging", outcome="failure", speedup=0.90, notes="bank conflicts",
               **H100),
        record(kernel="softmax", strategy="more_warps", outcome="neutral", speedup=1.01, notes="no change", **H100),
        record(kernel="gemm", backend="triton", bottleneck="compute_bound", strategy="group_m", speedup=1.10,
               **A100),
        record(kernel="gemm", backend="triton", bottleneck="compute_bound", strategy="group_m", speedup=1.10,
               **A100),  # copy
    ]
    entries = [Entry("local", validate(r)) for r in records]
    for number, entry in enumerate(entries, start=1):
        entry.record.id = number
    return entries


def test_sync_output_is_deterministic_and_independent_of_log_order():
    entries = _log()
    first = render_summary(entries)
    assert render_summary(entries) == first
    shuffled = entries[:]
    random.Random(7).shuffle(shuffled)
    assert render_summary(shuffled) == first


def test_sync_groups_by_family_and_chip_with_figures():
    text = render_summary(_log())
    assert "from 5 distinct records" in text
    assert text.index("## matmul_like") < text.index("## row_reduction")  # family table order
    assert "### row_reduction on H100 (sm_90)" in text and "### matmul_like on A100 (sm_80)" in text
    h100 = text.split("### row_reduction on H100 (sm_90)")[1]
    worked = table_rows(h100.split("What worked:")[1].split("No measurable effect:")[0])
    assert worked == [
        ["strategy", "kernels", "bottleneck before", "speedup", "records", "example change"],
        ["vector_loads", "layernorm, softmax", "memory_bound", "1.30x (median of 2, 1.20–1.40x)", "1, 2",
         "float4 loads"],
    ]
    no_effect = table_rows(h100.split("No measurable effect:")[1].split("What failed:")[0])
    assert no_effect[1] == ["more_warps", "softmax", "memory_bound", "1.01x", "4", "no change"]
    failed = table_rows(h100.split("What failed:")[1])
    assert failed[1] == ["smem_staging", "softmax", "memory_bound", "0.90x", "3", "bank conflicts"]
    gemm = table_rows(text.split("### matmul_like on A100 (sm_80)")[1].split("## row_reduction")[0])
    assert gemm[1][:5] == ["group_m", "gemm", "compute_bound", "1.10x", "5"]  # the copy (#6) counted once


def test_sync_of_an_empty_log_says_how_to_start():
    text = render_summary([])
    assert "from 0 distinct records" in text and "No records yet" in text


def test_stats_counts_rates_and_medians():
    stats = stats_to_dict(compute_stats(_log()))
    assert stats["total"] == {
        "key": "all", "records": 5, "successes": 3, "neutral": 1, "failures": 1,
        "success_rate_pct": 60.0, "median_speedup": 1.1, "measured_speedups": 5,
    }
    assert stats["duplicates_ignored"] == 1
    by_backend = {g["key"]: g for g in stats["by"]["backend"]}
    assert by_backend["cuda"]["records"] == 4 and by_backend["cuda"]["success_rate_pct"] == 50.0
    assert by_backend["triton"]["median_speedup"] == pytest.approx(1.1)
    by_strategy = {g["key"]: g for g in stats["by"]["strategy"]}
    assert by_strategy["vector_loads"]["median_speedup"] == pytest.approx(1.3)
    assert [g["key"] for g in stats["by"]["chip"]] == ["H100 (sm_90)", "A100 (sm_80)"]
    assert [g["key"] for g in stats["by"]["bottleneck"]] == ["memory_bound", "compute_bound"]


def test_stats_render():
    text = render_stats(compute_stats(_log()))
    assert "5 distinct records: 3 success, 1 neutral, 1 failure (60% success); 1 duplicate counted once." in text
    strategy_rows = table_rows(text.split("## By strategy")[1])
    assert strategy_rows[0] == [
        "strategy", "records", "success", "neutral", "failure", "success rate", "median speedup"
    ]
    assert strategy_rows[1] == ["vector_loads", "2", "2", "0", "0", "100%", "1.30x (n=2)"]
    assert strategy_rows[-1] == ["smem_staging", "1", "0", "0", "1", "0%", "0.90x (n=1)"]
