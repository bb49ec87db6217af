"""tools/trial_judge.py: a comparison's kernel judged by this project's checks, summed up from their records."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import load_tool


@pytest.fixture(scope="module")
def tool():
    return load_tool("trial_judge")


def _write(folder, name, record):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(record))


def _bench(median, eager, default, autotune):
    return {"gpu": {"name": "NVIDIA H200"}, "verdict": "measured", "solution": {"median_us": median},
            "baselines": [{"name": "eager", "median_us": eager},
                          {"name": "torch.compile (default)", "median_us": default},
                          {"name": "torch.compile (max-autotune-no-cudagraphs)", "median_us": autotune}]}


def test_a_passing_kernel_is_timed_against_eager_and_the_faster_compile_mode(tool, tmp_path):
    _write(tmp_path / "correctness", "correctness.json", {"passed": True, "verdict": "pass"})
    _write(tmp_path / "kernelbench_rule", "correctness.json", {"passed": True, "verdict": "pass"})
    _write(tmp_path / "memcheck", "correctness_memcheck.json", {"passed": True, "verdict": "pass"})
    _write(tmp_path / "benchmark", "benchmark.json", _bench(100.0, 400.0, 150.0, 120.0))
    result = tool.judgement(tmp_path, {"correctness": 0, "kernelbench_rule": 0, "memcheck": 0, "benchmark": 0})
    assert result["correct"] is True
    assert result["timing"]["best_compile"] == "torch.compile (max-autotune-no-cudagraphs)"
    assert result["timing"]["speedup_vs_eager"] == pytest.approx(4.0)
    assert result["timing"]["speedup_vs_best_compile"] == pytest.approx(1.2)
    text = tool.markdown("out/v2/model_new.py", "88_x.py", result)
    assert "Correct under this project's checks: yes" in text
    assert "under the strict rule: 100.00 µs; eager 400.00 µs (4.00x); best torch.compile (torch.compile " \
           "(max-autotune-no-cudagraphs)) 120.00 µs (1.20x)" in text


def test_an_invalid_time_gives_no_speedup_and_says_why_from_the_log(tool, tmp_path):
    for name, record in (("correctness", "correctness.json"), ("kernelbench_rule", "correctness.json"),
                         ("memcheck", "correctness_memcheck.json")):
        _write(tmp_path / name, record, {"passed": True, "verdict": "pass"})
    _write(tmp_path / "benchmark", "benchmark.json", {**_bench(13.26, 2758.2, 2693.9, 2694.0), "verdict": "invalid"})
    floor = "INVALID: 13.26 us is faster than the memory floor of 62.92 us (3.02e+08 bytes ...)"
    (tmp_path / "benchmark.log").write_text(f"$ benchmark.py ...\n{floor}\nreport: benchmark.md\n")
    result = tool.judgement(tmp_path, {"correctness": 0, "kernelbench_rule": 0, "memcheck": 0, "benchmark": 1})
    assert result["timing"]["speedup_vs_eager"] is None and result["timing"]["speedup_vs_best_compile"] is None
    text = tool.markdown("out/v3.py", "18_x.py", {**result, "claimed": "53.7x"})
    assert f"Timed on NVIDIA H200 under the strict rule, and **invalid**: {floor}" in text
    assert "207" not in text and text.endswith("The agent's own claim: 53.7x\n")


def test_a_check_that_left_no_record_makes_correctness_not_known_not_no(tool, tmp_path):
    _write(tmp_path / "correctness", "correctness.json", {"passed": True, "verdict": "pass"})
    _write(tmp_path / "kernelbench_rule", "correctness.json", {"passed": True, "verdict": "pass"})
    _write(tmp_path / "benchmark", "benchmark.json", _bench(100.0, 400.0, 150.0, 120.0))
    result = tool.judgement(tmp_path, {"correctness": 0, "kernelbench_rule": 0, "benchmark": 0})
    assert result["correct"] is None
    assert "Correct under this project's checks: not known (memcheck left no record)." in tool.markdown(
        "v1.py", "30_x.py", result)
    _write(tmp_path / "memcheck", "correctness_memcheck.json", {"passed": False, "verdict": "fail"})
    assert tool.judgement(tmp_path, {"memcheck": 1})["correct"] is False


def test_a_kernel_that_passes_only_kernelbench_s_rule_is_not_correct_and_says_why_from_the_log(tool, tmp_path):
    _write(tmp_path / "correctness", "correctness.json", {"passed": False, "verdict": "fail"})
    (tmp_path / "correctness.log").write_text("FAIL: 3 of 12 cases do not match the reference.\n"
                                              "  - output 'output': error 2.1e-03 | allowed 1e-05\n  - another\n")
    _write(tmp_path / "kernelbench_rule", "correctness.json", {"passed": True, "verdict": "pass"})
    result = tool.judgement(tmp_path, {"correctness": 1, "kernelbench_rule": 0, "memcheck": None})
    assert result["correct"] is False and result["timing"] is None
    assert result["checks"]["correctness"]["why"] == ("FAIL: 3 of 12 cases do not match the reference. "
                                                      "- output 'output': error 2.1e-03 | allowed 1e-05")
    assert result["checks"]["kernelbench_rule"] == {"verdict": "pass", "exit_code": 0, "why": ""}
    assert result["checks"]["memcheck"]["verdict"] == "no record"
    text = tool.markdown("s.py", "p.py", result)
    assert "| correctness | fail | 1 | FAIL: 3 of 12 cases do not match the reference. - output 'output': error " \
           "2.1e-03 / allowed 1e-05 |" in text
    assert "Not timed (benchmark exit None)" in text


def test_a_kernel_that_passes_only_kernelbench_s_rule_is_timed_under_it_and_said_so(tool, tmp_path):
    _write(tmp_path / "correctness", "correctness.json", {"passed": False, "verdict": "fail"})
    _write(tmp_path / "kernelbench_rule", "correctness.json", {"passed": True, "verdict": "pass"})
    _write(tmp_path / "memcheck", "correctness_memcheck.json", {"passed": True, "verdict": "pass"})
    _write(tmp_path / "benchmark", "benchmark.json", _bench(100.0, 400.0, 150.0, 120.0))
    result = tool.judgement(tmp_path, {"correctness": 1, "kernelbench_rule": 0, "memcheck": 0, "benchmark": 0})
    assert result["correct"] is False and result["timing"]["rule"] == "KernelBench's rule (atol = rtol = 1e-2)"
    assert "under KernelBench's rule (atol = rtol = 1e-2): 100.00 µs" in tool.markdown("s.py", "p.py", result)
    command = tool.kernelbench_benchmark(tmp_path / "s.py", tmp_path / "p.py", tmp_path)
    assert "--kernelbench-tolerances" in command
    assert command[-1] == str(tmp_path / "kernelbench_rule" / "correctness.json")


def test_the_benchmark_is_skipped_when_the_check_fails_and_every_step_leaves_a_log(tool, tmp_path, monkeypatch):
    def fake_commands(solution, problem, dest):
        write = ("import json, pathlib, sys; d = pathlib.Path(sys.argv[1]); d.mkdir(parents=True, exist_ok=True); "
                 "(d / sys.argv[2]).write_text(json.dumps({'passed': False, 'verdict': 'fail'})); print('FAIL: wrong');"
                 " sys.exit(1)")
        return {name: [sys.executable, "-c", write, str(dest / name), record] for name, record in
                (("correctness", "correctness.json"), ("kernelbench_rule", "correctness.json"),
                 ("memcheck", "correctness_memcheck.json"), ("benchmark", "benchmark.json"))}

    monkeypatch.setattr(tool, "commands", fake_commands)
    solution, problem = tmp_path / "s.py", tmp_path / "p.py"
    solution.write_text(""), problem.write_text("")
    assert tool.main([str(solution), str(problem), str(tmp_path / "judge"), "--claimed", "3.1x eager"]) == 0
    result = json.loads((tmp_path / "judge" / "JUDGEMENT.json").read_text())
    assert result["benchmark_exit_code"] is None and not (tmp_path / "judge" / "benchmark").exists()
    assert result["checks"]["correctness"] == {"verdict": "fail", "exit_code": 1, "why": "FAIL: wrong"}
    assert "The agent's own claim: 3.1x eager" in (tmp_path / "judge" / "JUDGEMENT.md").read_text()


def test_a_missing_file_exits_2(tool, tmp_path, capsys):
    assert tool.main([str(tmp_path / "none.py"), str(tmp_path / "p.py"), str(tmp_path / "d")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_a_step_run_again_keeps_the_others_records_and_the_environment_reaches_every_step(tool, tmp_path, monkeypatch):
    def fake_commands(solution, problem, dest):
        write = ("import json, os, pathlib, sys; d = pathlib.Path(sys.argv[1]); d.mkdir(parents=True, exist_ok=True); "
                 "ok = os.environ.get('MODE') == 'cached'; "
                 "(d / sys.argv[2]).write_text(json.dumps({'passed': ok, 'verdict': 'pass' if ok else 'fail'})); "
                 "sys.exit(0 if ok else 1)")
        return {name: [sys.executable, "-c", write, str(dest / name), record] for name, record in
                (("correctness", "correctness.json"), ("kernelbench_rule", "correctness.json"),
                 ("benchmark", "benchmark.json"), ("memcheck", "correctness_memcheck.json"))}

    monkeypatch.setattr(tool, "commands", fake_commands)
    solution, problem, judge = tmp_path / "s.py", tmp_path / "p.py", tmp_path / "judge"
    solution.write_text(""), problem.write_text("")
    assert tool.main([str(solution), str(problem), str(judge), "--env", "MODE=cached"]) == 0
    result = json.loads((judge / "JUDGEMENT.json").read_text())
    assert result["correct"] is True and result["environment"] == {"MODE": "cached"}
    assert "Run with `MODE=cached` set for every step." in (judge / "JUDGEMENT.md").read_text()
    (judge / "memcheck" / "correctness_memcheck.json").unlink()
    assert tool.main([str(solution), str(problem), str(judge), "--only", "memcheck"]) == 0  # MODE unset: it fails
    again = json.loads((judge / "JUDGEMENT.json").read_text())
    assert again["checks"]["memcheck"]["verdict"] == "fail" and again["checks"]["correctness"]["exit_code"] == 0
    assert again["benchmark_exit_code"] == 0
    assert tool.main([str(solution), str(problem), str(judge), "--only", "sanitize"]) == 2
    assert tool.main([str(solution), str(problem), str(judge), "--env", "MODE"]) == 2
