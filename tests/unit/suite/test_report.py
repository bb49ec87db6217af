"""eval.md and eval.png from an eval's record (suite/report.py)."""

from __future__ import annotations

import json

from kernel_opt.suite.records import EvalReport, summarize

from .test_records import entry


def test_the_report_renders_timed_entries_and_draws_the_chart(tmp_path):
    from kernel_opt.suite.report import write_eval_reports

    entries = [entry("19_ReLU", eager=1.25, compile_=1.02, solution_us=160.0, eager_us=200.0, compile_us=163.2,
                     compile_mode="torch.compile (default)", percent_of_ceiling=91.5, backend="modelnew",
                     solution="19_ReLU.py", bottleneck="memory_bound"),
               entry("1_Square", "incorrect", precision_downgrade=True, library_only=True,
                     message="output 'output': a precision downgrade")]
    device = {"type": "cuda", "gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "torch": "2.11.0+cu130",
              "triton": "3.6.0"}
    report = EvalReport("problems", "solutions", "eval.py problems solutions", "now", device,
                        {"kernelbench_tolerances": False, "baselines": ["eager", "compile"],
                         "compile_modes": ["default"]}, entries, summarize(entries))
    written = write_eval_reports(report, tmp_path)
    assert [path.name for path in written] == ["eval.json", "eval.md", "eval.png"]
    assert (tmp_path / "eval.png").stat().st_size > 1000
    markdown = (tmp_path / "eval.md").read_text()
    assert "| fast_1                      | 50%" in markdown and "1.25x over 1" in markdown
    assert "| device | NVIDIA H100 80GB HBM3 (driver 580.159.04), torch 2.11.0+cu130, triton 3.6.0 |" in markdown
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in markdown.splitlines() if line.startswith(("| 19_ReLU", "| 1_Square"))}
    assert rows["19_ReLU"] == ["correct", "—", "160", "200", "163.2", "1.25x", "1.02x", "91.5%", "memory_bound",
                               "19_ReLU.py (modelnew)", "default"]
    assert rows["1_Square"][:2] == ["incorrect", "PRECISION DOWNGRADE, library only"]
    assert "- 1_Square: incorrect: output 'output': a precision downgrade" in markdown
    assert EvalReport.from_dict(json.loads((tmp_path / "eval.json").read_text())).summary == report.summary
