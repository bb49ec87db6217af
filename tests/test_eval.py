"""`kernel-opt eval`: pairing, the summary's figures, resuming, and the suite surviving broken solutions.

CPU runs: the four problems of tests/fixtures/kernelbench with their ModelNews (honest, library-only,
a precision downgrade, wrong), and the adversarial ModelNews (freed memory, a cached output, a
returned input, a crash, a hang) each paired with a copy of the problem it cheats on. Timing needs a
GPU (tests/gpu/test_kernelbench_gpu.py); the figures are checked here on synthetic entries.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernel_opt.commands.eval import exit_code_of, main
from kernel_opt.core.errors import UsageError
from kernel_opt.suite.pairs import find_pairs
from kernel_opt.suite.records import EvalEntry, EvalReport, summarize

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "kernelbench"
PROBLEMS, SOLUTIONS, ADVERSARIAL = FIXTURES / "problems", FIXTURES / "solutions", FIXTURES / "adversarial"


def run(*argv: str) -> int:
    return main([str(arg) for arg in argv])


def read(output_dir: Path) -> EvalReport:
    return EvalReport.from_dict(json.loads((output_dir / "eval.json").read_text()))


# --- the figures, on synthetic entries ----------------------------------------------------------------


def entry(name, verdict="correct", eager=None, compile_=None, **extra):
    return EvalEntry(name=name, problem=f"{name}.py", verdict=verdict, speedup_vs_eager=eager,
                     speedup_vs_compile=compile_, timed=eager is not None, **extra)


def test_fast_p_counts_every_problem_and_needs_more_than_p():
    entries = [entry("a", eager=2.5, compile_=1.2), entry("b", eager=1.5, compile_=0.9),
               entry("c", eager=1.0, compile_=0.5), entry("d", "incorrect"), entry("e", "missing"),
               entry("f", eager=4.0, compile_=3.0, precision_downgrade=True),
               entry("g", eager=1.6, compile_=1.1, library_only=True), entry("h", "solution_error")]
    summary = summarize(entries)
    assert (summary.problems, summary.correct, summary.timed) == (8, 5, 5)
    assert summary.correct_rate == 5 / 8
    # strictly more than p: 1.0x is not fast_1, 1.5x is not fast_1.5 (KernelBench's speed_up > p)
    assert summary.fast_p["eager"] == {"1": 4 / 8, "1.5": 3 / 8, "2": 2 / 8}
    assert summary.fast_p["compile"] == {"1": 3 / 8, "1.5": 1 / 8, "2": 1 / 8}
    assert summary.fast_p_own_kernels["eager"] == {"1": 2 / 8, "1.5": 1 / 8, "2": 1 / 8}  # without f and g
    assert summary.geomean_speedup["eager"] == pytest.approx((2.5 * 1.5 * 1.0 * 4.0 * 1.6) ** (1 / 5))
    assert summary.geomean_count == {"eager": 5, "compile": 5}
    assert (summary.precision_downgrades, summary.library_only) == (1, 1)


def test_without_timings_there_is_no_fast_p():
    summary = summarize([entry("a"), entry("b", "incorrect")])
    assert summary.fast_p == {"eager": None, "compile": None} and summary.geomean_speedup["eager"] is None
    assert summary.correct_rate == 0.5


@pytest.mark.parametrize("verdicts, code", [
    (["correct", "correct"], 0), (["correct", "incorrect"], 1), (["correct", "missing"], 1),
    (["correct", "environment_error"], 4), (["environment_error", "solution_error"], 1), (["internal_error"], 1),
])
def test_the_exit_code_says_whether_every_problem_is_correct(verdicts, code):
    entries = [entry(f"p{index}", verdict) for index, verdict in enumerate(verdicts)]
    report = EvalReport("p", "s", "eval.py", "now", {"type": "cpu"}, {}, entries, summarize(entries))
    assert exit_code_of(report) == code


# --- pairing ------------------------------------------------------------------------------------------


def test_pairs_are_made_by_file_name_and_the_rest_is_said(tmp_path):
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    shutil.copy(SOLUTIONS / "3_Sum_reduction.py", solutions)
    shutil.copy(SOLUTIONS / "2_Gemm_Multiply_ReLU.py", solutions)
    shutil.copy(FIXTURES / "contract" / "2_Gemm_Multiply_ReLU.py", solutions / "1_Square_matmul.py")
    (solutions / "1_Square_matmul.cu").write_text("// a second answer to the same problem\n")
    (solutions / "9_Other.py").write_text("class ModelNew: pass\n")
    (solutions / "README.md").write_text("not a solution\n")
    pairs, notes = find_pairs(PROBLEMS, solutions)
    assert [pair.name for pair in pairs] == ["1_Square_matmul", "2_Gemm_Multiply_ReLU", "3_Sum_reduction",
                                             "4_Conv2d_ReLU_BiasAdd"]
    assert pairs[0].solution is None and pairs[0].note.startswith("two solutions answer it (1_Square_matmul.cu, "
                                                                  "1_Square_matmul.py)")
    assert pairs[1].solution == solutions / "2_Gemm_Multiply_ReLU.py" and pairs[1].source == "file"
    assert pairs[3].solution is None and pairs[3].note.startswith("no 4_Conv2d_ReLU_BiasAdd.cu/.py")
    assert notes == [f"9_Other.py in {solutions} answers no problem of {PROBLEMS}: not evaluated"]
    with pytest.raises(UsageError, match="holds no problem file"):
        find_pairs(solutions, solutions)
    with pytest.raises(UsageError, match="problems folder not found"):
        find_pairs(tmp_path / "none", solutions)


def test_a_run_folder_answers_with_its_best_measured_version(tmp_path):
    from kernel_opt.core.files import write_json_atomic
    from kernel_opt.loop.workspace import create_run

    run = tmp_path / "solutions" / "3_Sum_reduction"
    create_run(run, SOLUTIONS / "3_Sum_reduction.py", PROBLEMS / "3_Sum_reduction.py", 2, "sum", "modelnew",
               {"batch_size": 4}, 90.0)
    pairs, _ = find_pairs(PROBLEMS, tmp_path / "solutions")
    assert pairs[2].solution is None and "has no measured version yet" in pairs[2].note
    write_json_atomic(run / "v0" / "correctness.json", {"verdict": "pass", "backend": "modelnew"})
    write_json_atomic(run / "v0" / "benchmark.json", {"verdict": "measured", "solution": {"median_us": 12.0}})
    write_json_atomic(run / "v0" / "ncu_summary.json", {"bottleneck": "memory_bound"})
    pairs, _ = find_pairs(PROBLEMS, tmp_path / "solutions")
    assert pairs[2].solution == run / "v0" / "v0.py"
    assert (pairs[2].source, pairs[2].run_version, pairs[2].bottleneck) == ("run folder", "v0", "memory_bound")
    assert pairs[2].run_dims == (("batch_size", 4),)  # said in the entry: the eval runs the problem's own sizes


# --- whole runs on the CPU -------------------------------------------------------------------------------


def test_the_fixture_set_gets_its_verdicts_and_a_second_run_resumes(tmp_path, capsys):
    out = tmp_path / "eval"
    assert run(PROBLEMS, SOLUTIONS, "--output-dir", out, "--seeds", "2") == 1
    report = read(out)
    verdicts = {e.name: (e.verdict, e.precision_downgrade, e.library_only) for e in report.entries}
    assert verdicts == {"1_Square_matmul": ("incorrect", True, True), "2_Gemm_Multiply_ReLU": ("correct", False, False),
                        "3_Sum_reduction": ("correct", False, True),
                        "4_Conv2d_ReLU_BiasAdd": ("incorrect", False, True)}
    assert report.summary.correct == 2 and report.summary.fast_p["eager"] is None  # nothing timed on the CPU
    assert report.device["type"] == "cpu" and report.device["torch"] and report.schema == "kernel_opt.eval/1"
    assert "| device | cpu: nothing timed, torch " in (out / "eval.md").read_text()
    for name in verdicts:
        assert (out / "pairs" / name / "correctness.json").is_file() and (out / "pairs" / name / "entry.json").is_file()
    markdown = (out / "eval.md").read_text()
    assert markdown.startswith("# Evaluation: 2 of 4 correct") and "**Precision downgrades: 1.**" in markdown
    printed = capsys.readouterr()
    assert "[####################] 4/4 4_Conv2d_ReLU_BiasAdd: incorrect" in printed.err
    assert printed.out.startswith("EVAL: 2 of 4 correct, 0 timed (exit 1)")

    # a second run reuses every entry; a changed solution runs again, the others do not
    changed = tmp_path / "solutions"
    shutil.copytree(SOLUTIONS, changed)
    with (changed / "3_Sum_reduction.py").open("a") as stream:
        stream.write("\n# edited\n")
    assert run(PROBLEMS, changed, "--output-dir", out, "--seeds", "2") == 1
    err = capsys.readouterr().err
    assert err.count("(earlier run)") == 3 and "3/4 3_Sum_reduction: correct (" in err
    assert "3_Sum_reduction: correct (earlier run)" not in err

    # KernelBench's tolerance counts the downgrade as correct, flagged: other options, so every pair runs again
    assert run(PROBLEMS, changed, "--output-dir", out, "--seeds", "2", "--kernelbench-tolerances",
               "--only", "1_Square_matmul") == 0
    only = read(out)
    assert [(e.name, e.verdict, e.precision_downgrade) for e in only.entries] == [("1_Square_matmul", "correct", True)]
    assert only.summary.precision_downgrades == 1 and only.options["kernelbench_tolerances"] is True
    assert "(earlier run)" not in capsys.readouterr().err


def test_cheating_crashing_and_hanging_solutions_cost_their_own_row_only(tmp_path):
    problems, solutions = tmp_path / "problems", tmp_path / "solutions"
    problems.mkdir()
    solutions.mkdir()
    cheats_on = {"freed_result": "1_Square_matmul", "cached_output": "1_Square_matmul",
                 "returns_input": "3_Sum_reduction", "crash": "3_Sum_reduction", "hang": "3_Sum_reduction",
                 "honest": "3_Sum_reduction", "absent": "3_Sum_reduction"}
    for name, problem in cheats_on.items():
        shutil.copy(PROBLEMS / f"{problem}.py", problems / f"{name}.py")
        if name not in ("honest", "absent"):
            shutil.copy(ADVERSARIAL / f"{name}.py", solutions / f"{name}.py")
    shutil.copy(SOLUTIONS / "3_Sum_reduction.py", solutions / "honest.py")
    out = tmp_path / "eval"
    assert run(problems, solutions, "--output-dir", out, "--seeds", "2", "--timeout", "8") == 1
    entries = {e.name: e for e in read(out).entries}
    assert entries["honest"].verdict == "correct"
    assert (entries["freed_result"].verdict, entries["cached_output"].verdict) == ("incorrect", "incorrect")
    # Whatever the allocator hands back for torch.empty on the CPU (the reference's poisoned block, or
    # another), it is not the product: the message names the output and how far off it is.
    assert entries["freed_result"].message.startswith("output 'output': 9216 of 9216 elements off by more than")
    assert (entries["returns_input"].verdict, entries["returns_input"].error_kind) == ("solution_error",
                                                                                        "output_aliases_input")
    assert (entries["crash"].verdict, entries["crash"].error_kind) == ("solution_error", "crash")
    assert "SIGSEGV" in entries["crash"].message
    assert (entries["hang"].verdict, entries["hang"].error_kind) == ("solution_error", "timeout")
    assert entries["absent"].verdict == "missing" and entries["absent"].message.startswith("no absent")
    assert read(out).summary.correct == 1


def test_a_resumed_run_on_another_gpu_or_torch_runs_every_pair_again(tmp_path, monkeypatch):
    """An entry's figures belong to the machine that made them: the key holds the GPU model, its driver
    and the software, so a table never mixes an H100's timings with an H200's."""
    from kernel_opt.env.probe_records import NvidiaSmiProbe, SmiGpu
    from kernel_opt.suite import runner

    def smi(name, driver):
        return NvidiaSmiProbe(True, gpus=[SmiGpu(0, name, driver, *[None] * 7)])

    pair = find_pairs(PROBLEMS, SOLUTIONS)[0][0]
    request = runner.EvalRequest(PROBLEMS, SOLUTIONS, tmp_path)
    keys = {}
    for gpu, driver in (("NVIDIA H100 80GB HBM3", "580.159.04"), ("NVIDIA H200", "580.159.04"),
                        ("NVIDIA H100 80GB HBM3", "590.1")):
        monkeypatch.setattr(runner, "probe_nvidia_smi", lambda gpu=gpu, driver=driver: smi(gpu, driver))
        identity = runner.device_identity("cuda")
        assert (identity["gpu"], identity["driver"], identity["type"]) == (gpu, driver, "cuda")
        keys[gpu, driver] = runner.entry_key(pair, request, identity)
    assert len(set(keys.values())) == 3
    h100 = {"type": "cuda", "gpu": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "torch": "2.11.0",
            "triton": "3.6.0"}
    assert runner.entry_key(pair, request, h100) != runner.entry_key(pair, request, {**h100, "torch": "2.13.0"})
    assert runner.entry_key(pair, request, h100) == runner.entry_key(pair, request, dict(h100))


def test_bad_arguments_are_usage_errors(tmp_path, capsys):
    assert run(PROBLEMS, tmp_path / "none", "--output-dir", tmp_path / "out") == 2
    assert "solutions folder not found" in capsys.readouterr().err
    assert run(PROBLEMS, SOLUTIONS, "--output-dir", tmp_path / "out", "--only", "19_ReLU") == 2
    assert "--only names no problem" in capsys.readouterr().err
    assert run(PROBLEMS, SOLUTIONS, "--output-dir", tmp_path / "out", "--seeds", "0") == 2


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
