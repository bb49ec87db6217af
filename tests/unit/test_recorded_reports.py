"""The committed Markdown reports render again, to the letter, from the committed records beside them.

correctness.md (and correctness_<tool>.md), benchmark.md and final_report.md under demo/ and
tests/fixtures/ are rendered from their JSON records through the typed readers and compared with the
committed file: a reader or template that reads a section differently changes a report here.

Some reports were written by earlier templates (a sentence or a column added since); they are listed
below by folder, and the test checks that each listed folder still holds such a report, so the list
shrinks when they are rendered again.
"""

from __future__ import annotations

import json
import re
from fnmatch import fnmatch
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from kernel_opt.check.correctness import exit_code_of
from kernel_opt.check.records import CorrectnessReport
from kernel_opt.check.report import write_correctness_reports
from kernel_opt.commands.final_report import ROOFLINE_CHART, TIME_CHART, chart_blockers, render_report
from kernel_opt.loop.final_report import build_report
from kernel_opt.measure.benchmark_report import benchmark_markdown
from kernel_opt.measure.records import BenchmarkReport

RECORDED = (REPO_ROOT / "demo", REPO_ROOT / "tests" / "fixtures")
# Folders whose correctness.md and benchmark.md an earlier template wrote (the first case-study runs and the
# H100 fixture run, before the launch check's and the rounding probe's sections).
OLDER_REPORTS = (
    "demo/cuda/attention", "demo/cuda/attention/v*", "demo/cuda/gemm/v*", "demo/cuda/softmax/v*",
    "demo/triton/attention", "demo/triton/attention/v*", "demo/triton/gemm/v[012]", "demo/triton/rmsnorm/v*",
    "demo/triton/softmax/v*", "tests/fixtures/runs/softmax_cuda_h100", "tests/fixtures/runs/softmax_cuda_h100/v*",
)
# Runs whose final_report.md was written before the version table's tensor-pipe column.
OLDER_FINAL_REPORTS = ("demo/kernelbench/runs/L2_01_linear_gelu_scale",
                       "demo/kernelbench/runs/L2_03_causal_attention_fp16")


def _relative(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def _older(folder: Path) -> bool:
    return any(fnmatch(_relative(folder), pattern) for pattern in OLDER_REPORTS)


def _records(pattern: str) -> list[Path]:
    return sorted(path for root in RECORDED for path in root.rglob(pattern) if path.with_suffix(".md").is_file())


def rendered_correctness(path: Path, tmp_path: Path) -> str:
    """correctness.md as check/report.py writes it from the record at `path`."""
    report = CorrectnessReport.from_dict(json.loads(path.read_text()))
    write_correctness_reports(report, tmp_path, exit_code_of(report))
    return (tmp_path / f"{report.file_stem}.md").read_text()


def rendered_benchmark(path: Path, tmp_path: Path) -> str:
    report = BenchmarkReport.from_dict(json.loads(path.read_text()))
    return benchmark_markdown(report, report.exit_code)


def rendered_final_report(out: Path) -> str:
    """final_report.md as final_report.py writes it, at the time the committed one names, its charts drawn."""
    generated = re.search(r"Generated (.+?) by `final_report.py`", (out / "final_report.md").read_text()).group(1)
    report = build_report(out)
    blockers = chart_blockers(report)
    charts = {name: {"path": None if blockers[name] else file_name, "missing": blockers[name]}
              for name, file_name in (("time", TIME_CHART), ("roofline", ROOFLINE_CHART))}
    return render_report(report, charts, generated_at=generated)


CORRECTNESS = [path for path in _records("correctness*.json") if not _older(path.parent)]
BENCHMARKS = [path for path in _records("benchmark.json") if not _older(path.parent)]
# A fresh agent's trial keeps its final report as the agent left it: the agent may append notes of its own.
AGENT_TRIALS = "demo/agent_trials/*"
FINAL_REPORTS = sorted(path.parent for root in RECORDED for path in root.rglob("final_report.md")
                       if _relative(path.parent) not in OLDER_FINAL_REPORTS
                       and not fnmatch(_relative(path.parent), AGENT_TRIALS))


@pytest.mark.parametrize("path", CORRECTNESS, ids=_relative)
def test_a_committed_correctness_report_renders_again(path, tmp_path):
    assert rendered_correctness(path, tmp_path) == path.with_suffix(".md").read_text()


@pytest.mark.parametrize("path", BENCHMARKS, ids=_relative)
def test_a_committed_benchmark_report_renders_again(path, tmp_path):
    assert rendered_benchmark(path, tmp_path) == path.with_suffix(".md").read_text()


@pytest.mark.parametrize("out", FINAL_REPORTS, ids=_relative)
def test_a_committed_final_report_renders_again(out):
    assert rendered_final_report(out) == (out / "final_report.md").read_text()


def test_the_reports_compared_cover_every_kind_and_most_of_the_demo():
    assert (len(CORRECTNESS), len(BENCHMARKS), len(FINAL_REPORTS)) >= (150, 80, 20)
    assert {path.name for path in CORRECTNESS} == {
        "correctness.json", "correctness_memcheck.json", "correctness_racecheck.json"}


def test_each_folder_left_out_holds_a_report_an_earlier_template_wrote(tmp_path):
    """The lists above name only folders whose reports do differ: rendered again, a folder leaves the list."""
    older = [path for path in _records("correctness*.json") + _records("benchmark.json") if _older(path.parent)]
    differing = set()
    for path in older:
        render = rendered_benchmark if path.name == "benchmark.json" else rendered_correctness
        if render(path, tmp_path) != path.with_suffix(".md").read_text():
            differing.add(_relative(path.parent))
    assert all(any(fnmatch(folder, pattern) for folder in differing) for pattern in OLDER_REPORTS)
    assert all(rendered_final_report(REPO_ROOT / out) != (REPO_ROOT / out / "final_report.md").read_text()
               for out in OLDER_FINAL_REPORTS)
