"""The versioned workspace: init's layout and run record, the budget and overwrite rules, `next`
starting from the best version, `status` values, and the state an evaluation concludes in.

Synthetic runs (run_fixtures.py) are built from the real record classes and real ncu_summary.json
files, so the workspace reads exactly what the tools write."""

import json

import pytest
from run_fixtures import SOFTMAX, add_timing_samples, make_run, synthetic_run, write_version

from kernel_opt.commands import hypothesis_check
from kernel_opt.commands import workspace as workspace_command
from kernel_opt.loop import final_report_sections
from kernel_opt.loop.records import RunRecord, StepResult
from kernel_opt.loop.workspace import conclude_evaluation, read_run, run_status

# --- init ----------------------------------------------------------------------------------------


def test_init_creates_the_layout_and_the_run_record(tmp_path, capsys):
    out = tmp_path / "run"
    code = workspace_command.main(["init", str(out), "--kernel", str(SOFTMAX / "good" / "softmax.py"),
                                   "--ref", str(SOFTMAX / "ref.py"), "--iterations", "3", "--name", "softmax",
                                   "--target-percent", "85", "--N=64", "--D=1000", "--scale=2.5"])
    assert code == 0
    assert (f"v0 is {out / 'v0' / 'v0.py'}, a copy of {SOFTMAX / 'good' / 'softmax.py'}: from now on the run reads "
            "only the copy, so make any fix to v0 there") in capsys.readouterr().out
    assert (out / "ref.py").read_text() == (SOFTMAX / "ref.py").read_text()
    assert (out / "v0" / "v0.py").read_text() == (SOFTMAX / "good" / "softmax.py").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["ref.py", "run.json", "v0"]
    record = json.loads((out / "run.json").read_text())
    assert record["kernel_name"] == "softmax" and record["backend"] == "triton"
    assert record["solution_pattern"] == "v{n}/v{n}.py" and record["reference_file"] == "ref.py"
    assert record["dims"] == {"N": 64, "D": 1000, "scale": 2.5}
    assert record["iterations_budget"] == 3 and record["target_percent"] == 85.0
    assert record["created_at"].endswith("+00:00") and record["schema"] == "kernel_opt.run/1"
    assert json.loads((out / "v0" / "version.json").read_text())["parent"] is None
    run = RunRecord.from_dict(record)
    assert run.dim_arguments() == ["--N=64", "--D=1000", "--scale=2.5"]
    assert "kernelbench_tolerances" not in record and run.tolerance_arguments() == []


def test_a_run_judged_at_kernelbench_s_tolerance_carries_the_rule_to_every_check_and_the_finish(tmp_path, capsys):
    from kernel_opt.loop.check_steps import check_options, sanitizer_request
    from kernel_opt.loop.evaluation import Evaluation
    from kernel_opt.loop.measure_steps import benchmark_request
    from kernel_opt.loop.versions import list_versions

    out = tmp_path / "run"
    code = workspace_command.main(["init", str(out), "--kernel", str(SOFTMAX / "good" / "softmax.cu"), "--ref",
                                   str(SOFTMAX / "ref.py"), "--iterations", "2", "--kernelbench-tolerances",
                                   "--N=4096", "--D=4096"])
    assert code == 0 and "outputs judged at KernelBench's atol = rtol = 1e-2" in capsys.readouterr().out
    run = read_run(out)
    assert json.loads((out / "run.json").read_text())["kernelbench_tolerances"] is True
    evaluation = Evaluation(out, run, list_versions(out, run)[0], None)
    assert check_options(evaluation).kernelbench_tolerances is True
    assert sanitizer_request(evaluation, "memcheck").check.kernelbench_tolerances is True
    assert benchmark_request(evaluation, ["eager"], ["default"]).kernelbench_tolerances is True
    write_version(out, 0, median_us=100.0, ncu_fixture="naive_gemm_l1")
    for number in (1, 2):
        write_version(out, number, median_us=90.0, ncu_fixture="memory_streaming", parent=f"v{number - 1}")
    capsys.readouterr()
    assert workspace_command.main(["status", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "outputs judged at KernelBench's atol = rtol = 1e-2" in printed
    finish = printed.split("finish (budget spent):\n")[1].splitlines()
    assert finish[0].endswith("--N=4096 --D=4096 --kernelbench-tolerances")
    assert "--kernelbench-tolerances   # size sweep" in finish[1]
    from kernel_opt.commands import final_report

    assert final_report.main([str(out)]) == 0
    assert "| correctness rule | KernelBench's atol = rtol = 1e-2, the user's choice at init" in (
        out / "final_report.md").read_text()


def test_a_run_record_with_a_rule_that_is_not_true_or_false_is_a_usage_error(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out, iterations=1)
    record = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**record, "kernelbench_tolerances": "yes"}))
    assert workspace_command.main(["status", str(out)]) == 2
    assert "kernelbench_tolerances is 'yes', not true or false" in capsys.readouterr().err


def test_init_names_the_run_after_the_kernel_and_accepts_an_empty_folder(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    run = make_run(out, iterations=2)
    assert (run.kernel_name, run.backend, run.solution_pattern) == ("softmax", "cuda", "v{n}/v{n}.cu")


def test_init_refuses_a_folder_that_holds_anything(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("an earlier run")
    code = workspace_command.main(["init", str(out), "--kernel", str(SOFTMAX / "good" / "softmax.cu"),
                                   "--ref", str(SOFTMAX / "ref.py"), "--iterations", "3"])
    assert code == 2
    assert "not empty" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_dims_after_init_are_refused(tmp_path, capsys):
    make_run(tmp_path / "run")
    assert workspace_command.main(["status", str(tmp_path / "run"), "--N=8"]) == 2
    assert "fixed by init" in capsys.readouterr().err


# --- next: budget, best version, refusals ------------------------------------------------------------


def test_next_refuses_until_v0_is_evaluated(tmp_path, capsys):
    make_run(tmp_path / "run")
    assert workspace_command.main(["next", str(tmp_path / "run")]) == 2
    assert "v0 has not been evaluated yet" in capsys.readouterr().err
    assert not (tmp_path / "run" / "v1").exists()


def test_next_starts_from_the_best_version_not_the_newest(tmp_path):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    assert workspace_command.main(["next", str(out)]) == 0
    assert (out / "v3" / "v3.cu").read_text() == (out / "v1" / "v1.cu").read_text()
    assert json.loads((out / "v3" / "version.json").read_text())["parent"] == "v1"
    template = (out / "v3" / "hypothesis.txt").read_text()
    assert "copy of v1" in template and "80.00 us" in template and "memory_bound (DRAM)" in template
    # The untouched template is not a hypothesis: every slot is reported.
    assert hypothesis_check.main([str(out / "v3"), "--json"]) == 1


def test_a_neutral_version_does_not_replace_the_best_whatever_its_median(tmp_path):
    # The H100 softmax case: v3 read 42.27 us in its own run against v2's 42.82 us, but timed
    # interleaved against v2 it was 0.981x [0.980, 0.983], neutral. v2 stays the best.
    out = tmp_path / "run"
    make_run(out, iterations=3)
    write_version(out, 0, median_us=50.0, ncu_fixture="memory_streaming")
    write_version(out, 1, median_us=42.82, ncu_fixture="memory_streaming", against="v0", speedup=1.17,
                  ci=(1.16, 1.18), verdict="success", parent="v0")
    write_version(out, 2, median_us=42.27, ncu_fixture="memory_streaming", against="v1", speedup=0.981,
                  ci=(0.980, 0.983), verdict="neutral", parent="v1")
    assert run_status(out).best.name == "v1"
    assert workspace_command.main(["next", str(out)]) == 0
    assert json.loads((out / "v3" / "version.json").read_text())["parent"] == "v1"


@pytest.mark.parametrize("speedup, ci, best", [
    (1.040, (1.039, 1.041), "v1"),  # H100 smooth-L1, one kernel for three: past the 2% bias, kept
    (1.040, (0.990, 1.090), "v0"),  # the same estimate with an interval reaching 1: no evidence
    (1.015, (1.014, 1.016), "v0"),  # inside the comparison's own 2% bias
])
def test_a_neutral_gain_past_the_comparison_s_bias_becomes_the_best(tmp_path, speedup, ci, best):
    out = tmp_path / "run"
    make_run(out, iterations=3)
    write_version(out, 0, median_us=183.1, ncu_fixture="memory_streaming")
    write_version(out, 1, median_us=176.6, ncu_fixture="memory_streaming", against="v0", speedup=speedup,
                  ci=ci, verdict="neutral", parent="v0")
    assert run_status(out).best.name == best


def test_unfilled_template_names_each_slot(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    workspace_command.main(["next", str(out)])
    capsys.readouterr()
    hypothesis_check.main([str(out / "v3"), "--json"])
    problems = json.loads(capsys.readouterr().out)["problems"]
    slots = [p.split(":")[0] for p in problems if "still holds a template slot" in p]
    assert slots == ["Hypothesis", "Rationale", "Expected"]


def test_next_refuses_while_the_newest_version_is_not_evaluated(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=4)
    write_version(out, 3, state=None, parent="v1")
    assert workspace_command.main(["next", str(out)]) == 2
    assert "v3 has not been evaluated yet" in capsys.readouterr().err
    assert not (out / "v4").exists()


def test_next_refuses_beyond_the_budget(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=2)
    assert workspace_command.main(["next", str(out)]) == 2
    assert "budget spent: all 2 iteration(s)" in capsys.readouterr().err
    assert not (out / "v3").exists()
    assert run_status(out).stop_reason == "budget_spent"


def test_status_at_finish_names_the_final_benchmark_the_size_sweep_and_the_report(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=2)
    capsys.readouterr()
    assert workspace_command.main(["status", str(out)]) == 0
    lines = capsys.readouterr().out.split("finish (budget spent):\n")[1].splitlines()
    assert "benchmark.py" in lines[0] and f"--against {out / 'v0' / 'v0.cu'}" in lines[0]
    assert lines[1].split("ncu_profile.py ")[1] == (
        f"{out / 'v1' / 'v1.cu'} --ref {out / 'ref.py'} --output-dir {out / 'sweep'} --sweep N=512,1024,2048,4096 "
        "--D=4096   # size sweep (nsight-python 0.9.6)")
    assert lines[2].endswith(f"final_report.py {out}")


def test_a_kernelbench_run_s_status_sweeps_the_problem_s_own_input_size(tmp_path, capsys):
    """A KernelBench run has no --NAME sizes of its own (the file sets them): the sweep halves its first input size."""
    out = tmp_path / "run"
    synthetic_run(out, iterations=2)
    record = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**record, "dims": {}}))
    (out / "ref.py").write_text(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.relu(x)\n\nbatch_size = 1024\ndim = 4096\n\ndef get_inputs():\n"
        "    return [torch.rand(batch_size, dim)]\n\ndef get_init_inputs():\n    return []\n")
    capsys.readouterr()
    assert workspace_command.main(["status", str(out)]) == 0
    sweep = next(line for line in capsys.readouterr().out.splitlines() if "ncu_profile.py" in line)
    assert sweep.endswith("--sweep batch_size=128,256,512,1024 --dim=4096   # size sweep (nsight-python 0.9.6)")


def test_next_refuses_once_the_target_is_reached_unless_told(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out, iterations=3, target_percent=50.0)
    # 40 us at 4000 GB/s for 134 MB: the floor is 33.6 us, so 83.9% of the measured ceiling.
    write_version(out, 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0)
    status = run_status(out)
    assert status.target_reached is True and status.stop_reason == "target_reached"
    assert workspace_command.main(["next", str(out)]) == 2
    err = capsys.readouterr().err
    assert ("target reached: v0 runs at 83.9% of the roofline ceiling (target 50%), with 3 of 3 iteration(s) "
            "unused; finish with the final report, and tell the user the run stopped at the roof with 3 iteration(s) "
            "left") in err
    assert f"the user's call, not yours: with their say-so, `workspace.py next {out} --ignore-target`" in err
    assert workspace_command.main(["next", str(out), "--ignore-target"]) == 0
    assert (out / "v1" / "v1.cu").exists()
    assert json.loads((out / "v1" / "version.json").read_text())["continued_past_target"] is True
    assert run_status(out).versions[1].continued_past_target is True


def test_a_version_at_its_target_level_with_pytorch_inside_the_noise_ends_the_run(tmp_path):
    """A baseline median lower by less than the noise is a tie: the target ends the run, as the final report says."""
    for name, compile_us, behind in (("level", 39.8, None), ("behind", 38.0, "torch.compile (default)")):
        out = tmp_path / name
        make_run(out, iterations=3, target_percent=50.0)
        write_version(out, 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0,
                      baselines={"eager": 130.0, "torch.compile (default)": compile_us})
        add_timing_samples(out / "v0")  # 0.5% apart, 400 samples each spread 0.8%: inside the 2% margin
        status = run_status(out)
        assert status.behind_baseline == behind
        assert status.stop_reason == (None if behind else "target_reached")


def test_a_version_at_its_target_that_pytorch_still_beats_does_not_end_the_run(tmp_path, capsys):
    """torch.compile moving the same bytes faster shows the ceiling is beatable: the target is no reason to stop."""
    out = tmp_path / "run"
    make_run(out, iterations=3, target_percent=50.0)
    write_version(out, 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0,
                  baselines={"eager": 130.0, "torch.compile (default)": 38.0})
    status = run_status(out)
    assert status.target_reached is True and status.stop_reason is None
    assert status.behind_baseline == "torch.compile (default)"
    assert workspace_command.main(["status", str(out)]) == 0
    assert ("target 50% of the roofline ceiling: reached, but torch.compile (default) is still faster: the run "
            "goes on") in capsys.readouterr().out
    assert workspace_command.main(["next", str(out)]) == 0  # no --ignore-target needed
    assert json.loads((out / "v1" / "version.json").read_text())["continued_past_target"] is False
    # ahead of every baseline (or level with none timed), the target ends the run as before
    make_run(tmp_path / "ahead", iterations=3, target_percent=50.0)
    write_version(tmp_path / "ahead", 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0,
                  baselines={"eager": 130.0, "torch.compile (default)": 40.5})
    assert run_status(tmp_path / "ahead").stop_reason == "target_reached"
    # behind, with the budget spent: it says so, and that the run ends
    make_run(tmp_path / "spent", iterations=0, target_percent=50.0)
    write_version(tmp_path / "spent", 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0,
                  baselines={"torch.compile (default)": 38.0})
    capsys.readouterr()
    assert workspace_command.main(["status", str(tmp_path / "spent")]) == 0
    printed = capsys.readouterr().out
    assert "reached, but torch.compile (default) is still faster\n" in printed and "finish (budget spent)" in printed


def test_going_past_the_target_is_named_in_the_final_reports_stop_reason(tmp_path):
    out = tmp_path / "run"
    make_run(out, iterations=1, target_percent=50.0)
    write_version(out, 0, median_us=40.0, ncu_fixture="memory_streaming", target_percent=50.0)
    assert workspace_command.main(["next", str(out), "--ignore-target"]) == 0
    write_version(out, 1, median_us=38.0, ncu_fixture="memory_streaming", against="v0", speedup=40 / 38,
                  ci=(1.04, 1.06), verdict="success", target_percent=50.0)
    reason = final_report_sections.stop_reason(out, read_run(out), run_status(out).best)
    assert reason.startswith("budget spent: 1 of 1 iteration(s) used; the target 50% was reached earlier")
    assert "(--ignore-target from v1)" in reason and "best: v1 at" in reason


def test_a_version_made_within_the_target_is_not_marked(tmp_path):
    out = tmp_path / "run"
    make_run(out, iterations=2)
    write_version(out, 0, median_us=100.0, ncu_fixture="memory_streaming")
    assert workspace_command.main(["next", str(out), "--ignore-target"]) == 0
    assert json.loads((out / "v1" / "version.json").read_text())["continued_past_target"] is False


def test_next_refuses_when_v0_is_wrong(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out)
    write_version(out, 0, correct=False, state="failed")
    assert workspace_command.main(["next", str(out)]) == 2
    assert "v0 has not passed its correctness check" in capsys.readouterr().err


# --- status ---------------------------------------------------------------------------------------


def test_status_reports_versions_best_budget_and_target(tmp_path, capsys):
    out = tmp_path / "run"
    synthetic_run(out, iterations=3)
    capsys.readouterr()
    assert workspace_command.main(["status", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    versions = {v["name"]: v for v in payload["versions"]}
    assert [versions[name]["speedup_vs_v0"] for name in ("v0", "v1", "v2")] == [1.0, 100.0 / 80.0, 100.0 / 90.0]
    assert versions["v1"]["comparison_verdict"] == "success" and versions["v1"]["compared_with"] == "v0"
    assert versions["v2"]["comparison_verdict"] == "failure" and versions["v2"]["compared_with"] == "v1"
    assert versions["v1"]["bottleneck"] == "memory_bound" and versions["v0"]["bottleneck"] == "memory_bound"
    assert payload["best"] == "v1"
    assert payload["budget"] == {"iterations_total": 3, "iterations_used": 2, "iterations_left": 1, "spent": False}
    assert payload["target_reached"] is False and payload["stop_reason"] is None
    assert workspace_command.main(["status", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| v1 (best)" in text and "1.25x" in text and "1.250x vs v0: success" in text
    assert "2 of 3 iteration(s) used, 1 left" in text and "next:" in text and "workspace.py next" in text


def test_status_needs_a_run_folder(tmp_path, capsys):
    assert workspace_command.main(["status", str(tmp_path)]) == 2
    assert "no run.json" in capsys.readouterr().err


# --- the state an evaluation concludes in -----------------------------------------------------------


def test_conclusions_of_an_evaluation():
    ok = lambda name: StepResult(name, "ok", 1.0, 0)  # noqa: E731
    no_gpu = lambda name: StepResult(name, "cannot_run_here", 0.0, 4)  # noqa: E731
    assert conclude_evaluation([ok("correctness"), ok("benchmark"), ok("profile"), ok("recommend")]) == ("measured", 0)
    assert conclude_evaluation([ok("correctness"), ok("benchmark"), no_gpu("profile")]) == ("measured", 4)
    assert conclude_evaluation([StepResult("correctness", "failed", 1.0, 1)]) == ("failed", 1)
    assert conclude_evaluation([ok("correctness"), StepResult("benchmark", "solution_error", 1.0, 3)]) == ("failed", 3)
    assert conclude_evaluation([ok("correctness"), StepResult("hypothesis", "failed", 0.0, 1)]) == (
        "invalid_hypothesis", 1
    )
    assert conclude_evaluation([ok("correctness"), no_gpu("benchmark"), no_gpu("profile"), ok("static_analysis")]) == (
        "needs_gpu", 4
    )
    assert conclude_evaluation([StepResult("correctness", "usage_error", 0.1, 2)]) == ("error", 2)
    # Without a GPU a CUDA kernel is only compiled: a compile error is still the solution's fault.
    assert conclude_evaluation([no_gpu("correctness"), StepResult("compile_check", "solution_error", 2.0, 3)]) == (
        "failed", 3
    )
