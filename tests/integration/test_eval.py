"""`kernel-opt eval` on the CPU: whole runs, resuming, and the suite surviving broken solutions.

The four problems of tests/fixtures/kernelbench with their ModelNews (honest, library-only,
a precision downgrade, wrong), and the adversarial ModelNews (freed memory, a cached output, a
returned input, a crash, a hang) each paired with a copy of the problem it cheats on. Timing needs a
GPU (tests/gpu/test_kernelbench_gpu.py); the figures are checked on synthetic entries in
tests/unit/suite/test_records.py, the pairing in tests/unit/suite/test_pairs.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.commands.eval import main
from kernel_opt.suite.pairs import find_pairs
from kernel_opt.suite.records import EvalReport

FIXTURES = FIXTURES_DIR / "kernelbench"
PROBLEMS, SOLUTIONS, ADVERSARIAL = FIXTURES / "problems", FIXTURES / "solutions", FIXTURES / "adversarial"


def run(*argv: str) -> int:
    return main([str(arg) for arg in argv])


def read(output_dir: Path) -> EvalReport:
    return EvalReport.from_dict(json.loads((output_dir / "eval.json").read_text()))


# --- whole runs on the CPU -------------------------------------------------------------------------------


@pytest.mark.slow
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


@pytest.mark.slow
def test_one_worker_per_gpu_gives_the_one_process_verdicts_names_each_gpu_and_resumes(tmp_path, monkeypatch, capsys):
    """--gpus all on a fake two-GPU host (its nvidia-smi on PATH), checking on the CPU: the fixture set's verdicts
    as in the one-process run above, each entry naming the GPU its worker held."""
    from unit.suite.pool_jobs import FAKE_GPUS, fake_gpus

    fake_gpus(tmp_path / "bin", monkeypatch)
    out = tmp_path / "eval"
    assert run(PROBLEMS, SOLUTIONS, "--output-dir", out, "--seeds", "2", "--device", "cpu", "--gpus", "all") == 1
    report = read(out)
    assert {e.name: (e.verdict, e.precision_downgrade, e.library_only) for e in report.entries} == {
        "1_Square_matmul": ("incorrect", True, True), "2_Gemm_Multiply_ReLU": ("correct", False, False),
        "3_Sum_reduction": ("correct", False, True), "4_Conv2d_ReLU_BiasAdd": ("incorrect", False, True)}
    assert {(e.gpu["index"], e.gpu["name"], e.gpu["uuid"]) for e in report.entries} == {
        (0, *FAKE_GPUS[0]), (1, *FAKE_GPUS[1])}
    assert (report.execution.mode, report.execution.workers, report.execution.pairs_run) == ("local workers", 2, 4)
    markdown = (out / "eval.md").read_text()
    assert "| spread | 2 worker processes, 2 GPUs (GPU 0: Fake H100 80GB HBM3" in markdown
    assert "## By GPU model" in markdown and "the pairs ran on 2 GPU models" in markdown
    err = capsys.readouterr().err
    assert "4/4" in err and ", GPU 0)" in err and ", GPU 1)" in err

    assert run(PROBLEMS, SOLUTIONS, "--output-dir", out, "--seeds", "2", "--device", "cpu", "--gpus", "all") == 1
    assert capsys.readouterr().err.count("(earlier run)") == 4
    assert read(out).execution.pairs_reused == 4


@pytest.mark.slow
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
