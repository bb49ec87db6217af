"""demo/DEMO.md's story agrees with the records it tells: every time in its case paragraphs is a recorded
median, and a case called met or not met in one table is called the same in the other."""

from __future__ import annotations

import json
import re

from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool

DEMO = REPO_ROOT / "demo"
# A time with two decimals: not a ratio (0.97x), a share (97.40%) or part of a dotted version (580.159.04, 2.11.0).
FIGURE = re.compile(r"(?<![\d.])(\d[\d,]*\.\d\d)(?![\d.]*\d)(?![x%])")


def recorded_medians() -> set[str]:
    """Every median (solution, baselines, both sides of a comparison) of every benchmark.json under demo/."""
    medians = set()
    for path in DEMO.glob("**/benchmark.json"):
        record = json.loads(path.read_text())
        comparison = record.get("comparison") or {}
        values = [record["solution"].get("median_us"), comparison.get("this_median_us"),
                  comparison.get("other_median_us"), *(entry.get("median_us") for entry in record.get("baselines", []))]
        medians |= {f"{value:.2f}" for value in values if isinstance(value, (int, float))}
    return medians


def case_paragraphs() -> str:
    """The cases and round two, up to the paragraph on reproductions (whose figures are re-runs, not records)."""
    text = (DEMO / "DEMO.md").read_text()
    return text[text.index("## The cases"):text.index("**Reproduced**")]


def test_every_time_in_the_case_paragraphs_is_a_recorded_median():
    medians = recorded_medians()
    figures = [match.group(1).replace(",", "") for match in FIGURE.finditer(case_paragraphs())]
    assert len(figures) > 40
    assert sorted(set(figures) - medians) == []


def test_a_planted_figure_that_no_record_holds_is_caught():
    assert "43.07" not in recorded_medians()  # the Triton softmax's final before Finish ran again
    text = "Final 43.07 µs, 1.03x, 98.86%, driver 580.159.04, torch 2.11.0"
    assert [match.group(1) for match in FIGURE.finditer(text)] == ["43.07"]


ROUND_TWO_CASES = {
    "attention, CUDA (run 2)": "cuda/attention_r2", "attention, Triton (run 2)": "triton/attention_r2",
    "GEMM 4096³, CUDA": "cuda/gemm", "GEMM 4096³, CUDA (run 2)": "cuda/gemm_r2",
    "GEMM 4096³, Triton": "triton/gemm", "RMSNorm 8192², Triton": "triton/rmsnorm",
}


def test_round_twos_table_calls_each_case_goal_what_the_generated_table_calls_it():
    demo_table = load_tool("demo_table", DEMO_UPKEEP)
    targets = demo_table.read_targets(DEMO / "targets.yaml")
    rows = [line for line in case_paragraphs().splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.split("|")[1].strip() for row in rows] == list(ROUND_TWO_CASES)
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        folder = ROUND_TWO_CASES[cells[0]]
        generated = demo_table.goal_status(demo_table.read_case(DEMO / folder), targets[folder])
        said = cells[-1].rsplit(": ", 1)[-1]
        assert said == generated.split(":")[0], (cells[0], said, generated)
