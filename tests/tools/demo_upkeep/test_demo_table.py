"""tools/demo_upkeep/demo_table.py on the real H100 run fixture: figures, case goals, and the tables it keeps
in sync."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "runs" / "softmax_cuda_h100"

demo_table = load_tool("demo_table", DEMO_UPKEEP)


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "demo" / "cuda" / "softmax")
    return tmp_path / "demo"


def cells(table: str) -> list[str]:
    return [cell.strip() for cell in table.splitlines()[2].strip("|").split("|")]


def test_figures_come_from_the_final_benchmark(demo: Path):
    figures = demo_table.read_case(demo / "cuda" / "softmax")
    # the fixture README: v0 50.72 us; final run v1 47.10, eager 59.01, max-autotune 46.69 us
    assert (figures.best, round(figures.v0_us, 2), round(figures.best_us, 2)) == ("v1", 50.72, 47.10)
    assert round(figures.eager_us, 2) == 59.01 and round(figures.best_compile_us, 2) == 46.69
    assert round(figures.vs_best_compile, 3) == 0.991
    assert round(figures.percent_of_ceiling, 1) == 92.1


@pytest.mark.parametrize("goal, status", [
    ({"percent_of_ceiling": 90}, "met: 92.1% of ceiling >= 90%"),
    ({"percent_of_ceiling": 95}, "not met: 92.1% of ceiling < 95%"),
    ({"vs_eager": 1.2}, "met: 1.253x eager >= 1.20x"),
    ({"vs_eager": 1.2, "percent_of_ceiling": 90}, "met: 92.1% of ceiling >= 90%; 1.253x eager >= 1.20x"),
    ({"vs_eager": 1.3}, "not met: 1.253x eager < 1.30x"),
    ({"vs_eager": 1.5}, "not met: 1.253x eager < 1.50x (eager already moves the problem's bytes at 73.5% of the "
                        "measured memory roof: no kernel can be much more than 1.36x faster than it)"),
    ({"percent_of_ceiling": 90, "faster_than_best_compile": True},
     "not met: 0.991x the best torch.compile, not faster"),
    (None, "—"),
])
def test_case_goal_is_computed_from_the_figures(demo: Path, goal, status):
    assert demo_table.goal_status(demo_table.read_case(demo / "cuda" / "softmax"), goal) == status


def test_the_table_shows_the_goal_from_targets_yaml(demo: Path):
    (demo / "targets.yaml").write_text("cuda/softmax: {percent_of_ceiling: 90}\n")
    row = cells(demo_table.render(demo))
    assert row[4:] == ["50.72", "v1: 47.10", "1.08x", "1.25x", "0.99x", "92.1%", "1/1", "met: 92.1% of ceiling >= 90%"]


def test_a_second_run_says_where_it_started_and_has_its_own_goal(demo: Path):
    """demo/cuda/attention_r2 began from demo/cuda/attention/v8: both rows are 'attention (cuda)' without it."""
    second = demo / "cuda" / "softmax_r2"
    shutil.copytree(demo / "cuda" / "softmax", second)
    run = json.loads((second / "run.json").read_text())
    (second / "run.json").write_text(json.dumps(run | {"source_kernel": "demo/cuda/softmax/v1/v1.cu"}))
    (demo / "targets.yaml").write_text("cuda/softmax: {percent_of_ceiling: 90}\ncuda/softmax_r2: {vs_eager: 1.3}\n")
    first_row, second_row = demo_table.render(demo).splitlines()[2:4]
    first, second_cells = cells(f"h\nh\n{first_row}"), cells(f"h\nh\n{second_row}")
    assert first[0] == "[softmax (cuda)](" + str(demo / "cuda" / "softmax") + "/)"
    assert second_cells[0] == "[softmax (cuda)](" + str(second) + "/) from softmax/v1"
    assert (first[-1], second_cells[-1]) == ("met: 92.1% of ceiling >= 90%", "not met: 1.253x eager < 1.30x")
    assert demo_table.started_from(second, "plans/loop_cuda/../../reference/softmax/good/softmax.cu") is None
    assert demo_table.started_from(second, "demo/cuda/softmax_r2/v1/v1.cu") is None  # its own version
    assert demo_table.started_from(second, "demo/cuda/gemm/v1/v1.cu") is None  # no such run beside it
    assert demo_table.started_from(second, "/elsewhere/demo/triton/softmax/v0/v0.py") is None
    shutil.copytree(demo / "cuda" / "softmax", demo / "triton" / "softmax")
    assert demo_table.started_from(second, "demo/triton/softmax/v0/v0.py") == "triton/softmax/v0"


def test_links_are_relative_to_the_file_the_table_goes_in(demo: Path, tmp_path: Path):
    """DEMO.md sits inside demo/: its links are cuda/softmax/, a README's beside demo/ are demo/cuda/softmax/."""
    assert cells(demo_table.render(demo, demo))[0] == "[softmax (cuda)](cuda/softmax/)"
    assert cells(demo_table.render(demo, tmp_path))[0] == "[softmax (cuda)](demo/cuda/softmax/)"
    page = demo / "DEMO.md"
    page.write_text(f"{demo_table.START}\n{demo_table.END}\n")
    assert demo_table.main(["--demo", str(demo), "--update", str(page)]) == 0
    assert "[softmax (cuda)](cuda/softmax/)" in page.read_text()


def test_a_malformed_goal_is_refused(demo: Path):
    (demo / "targets.yaml").write_text("cuda/softmax: {fast: true}\n")
    with pytest.raises(demo_table.TableError, match="a goal is a mapping of"):
        demo_table.render(demo)


def test_update_rewrites_only_between_the_markers_and_check_then_passes(demo: Path, tmp_path: Path, capsys):
    page = tmp_path / "DEMO.md"
    page.write_text(f"# Cases\n\nintro\n\n{demo_table.START}\n| old |\n{demo_table.END}\n\nafter\n")
    assert demo_table.main(["--demo", str(demo), "--check", str(page)]) == 1
    assert "out of date" in capsys.readouterr().out

    assert demo_table.main(["--demo", str(demo), "--update", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Cases\n\nintro\n\n") and text.endswith("\n\nafter\n")
    assert "| old |" not in text and "v1: 47.10" in text
    assert demo_table.main(["--demo", str(demo), "--check", str(page)]) == 0


def test_a_file_without_markers_is_a_usage_error(demo: Path, tmp_path: Path, capsys):
    page = tmp_path / "README.md"
    page.write_text("no markers\n")
    assert demo_table.main(["--demo", str(demo), "--update", str(page)]) == 2
    assert "needs one" in capsys.readouterr().err
    assert page.read_text() == "no markers\n"


def test_the_repository_tables_match_the_recorded_runs():
    """README.md, README_zh.md and demo/DEMO.md carry the table the demo records give."""
    files = [REPO_ROOT / "demo" / "DEMO.md", REPO_ROOT / "README.md", REPO_ROOT / "README_zh.md"]
    assert demo_table.main(["--check", *map(str, files)]) == 0
