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


def test_a_run_over_two_gpu_models_names_each_rows_gpu_and_gives_each_models_figures(tmp_path):
    from kernel_opt.suite import report as report_module
    from kernel_opt.suite.records import EvalExecution, summarize_by_gpu_model
    from kernel_opt.suite.report import eval_summary, write_eval_reports

    h100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-a", "host": "node1"}
    h200 = {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-b", "host": "node1"}
    entries = [entry("19_ReLU", eager=2.0, compile_=1.5, solution_us=100.0, gpu=h100),
               entry("23_Softmax", eager=4.0, compile_=3.0, solution_us=50.0, gpu=h200)]
    execution = EvalExecution("local workers", 2, [{**h100, "pairs": 1, "pair_s": 30.0},
                                                   {**h200, "pairs": 1, "pair_s": 34.0}],
                              wall_s=35.0, pairs_run=2, pair_s=64.0)
    report = EvalReport("problems", "solutions", "eval.py problems solutions --gpus all", "now",
                        {"type": "cuda", "gpu": "NVIDIA H100 80GB HBM3 + NVIDIA H200", "driver": "580.159.04"},
                        {"baselines": ["eager"], "compile_modes": ["default"]}, entries, summarize(entries),
                        by_gpu_model=summarize_by_gpu_model(entries), execution=execution)
    write_eval_reports(report, tmp_path)
    markdown = (tmp_path / "eval.md").read_text()
    assert ("| spread | 2 worker processes, 2 GPUs (GPU 0: NVIDIA H100 80GB HBM3, 1 pair, GPU 1: NVIDIA H200, "
            "1 pair): 2 pairs run, wall 35 s for 64 s of pair time (1.83x) |") in markdown
    assert "## By GPU model" in markdown and "### NVIDIA H200" in markdown
    per_model = markdown.split("### NVIDIA H200")[1].split("## Problems")[0]
    assert "4.00x over 1" in per_model and "3.00x over 1" in per_model and "2.00x" not in per_model
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in markdown.splitlines() if line.startswith(("| 19_ReLU", "| 23_Softmax"))}
    assert rows["19_ReLU"][-1] == "GPU 0" and rows["23_Softmax"][-1] == "GPU 1"
    printed = eval_summary(report, tmp_path, 0)
    assert "on NVIDIA H100 80GB HBM3 alone:" in printed and "spread: 2 worker processes" in printed
    assert [line.split("|")[-2].strip() for line in printed.splitlines() if line.startswith("| 23_Softmax")] == [
        "GPU 1"]
    report.execution = EvalExecution("ray", 2, [{**h200, "pairs": 1, "pair_s": 7.0}], wall_s=9.0, pairs_run=1,
                                     pair_s=7.0)
    assert report_module.describe_execution(report) == (
        "Ray, up to 2 tasks at once, 1 GPU (GPU 1: NVIDIA H200, 1 pair): 1 pair run, wall 9 s for 7 s of pair time "
        "(0.78x)")


def test_one_gpu_keeps_the_tables_as_they_were():
    from kernel_opt.suite.report import problem_rows

    gpu = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-a", "host": "node1"}
    entries = [entry("a", eager=2.0, gpu=gpu), entry("b", eager=1.0, gpu=gpu), entry("c", "missing")]
    report = EvalReport("p", "s", "eval.py", "now", {"type": "cuda"}, {}, entries, summarize(entries))
    assert [len(row) for row in problem_rows(report)] == [12, 12, 12]


def test_a_run_timed_against_eager_alone_gives_no_torch_compile_figures(tmp_path):
    from kernel_opt.suite.report import write_eval_reports

    entries = [entry("19_ReLU", eager=1.01, solution_us=160.0, eager_us=161.6),
               entry("20_LeakyReLU", eager=0.99, solution_us=160.0, eager_us=158.4)]
    report = EvalReport("problems", "solutions", "eval.py problems solutions --baseline eager", "now",
                        {"type": "cuda", "gpu": "NVIDIA H200", "driver": "580.159.04"},
                        {"baselines": ["eager"], "compile_modes": ["default", "max-autotune-no-cudagraphs"]},
                        entries, summarize(entries))
    write_eval_reports(report, tmp_path)
    markdown = (tmp_path / "eval.md").read_text()
    assert "| baselines | eager |" in markdown
    fast_1 = next(line for line in markdown.splitlines() if line.startswith("| fast_1 "))
    assert [cell.strip() for cell in fast_1.split("|")[2:-1]] == ["50%", "—"]
    geomean = next(line for line in markdown.splitlines() if line.startswith("| geometric-mean speedup"))
    assert [cell.strip() for cell in geomean.split("|")[2:-1]] == ["1.00x over 2", "— over 0"]
