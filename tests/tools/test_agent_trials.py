"""tools/agent_trials.py: the drawn problem list, a trial's folder and prompt, and what is kept of it."""

from __future__ import annotations

import json

import pytest
from conftest import load_tool


@pytest.fixture(scope="module")
def tool():
    return load_tool("agent_trials")


@pytest.fixture
def kernelbench(tmp_path):
    for level in (1, 2):
        folder = tmp_path / "kb" / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True)
        for number in range(1, 11):
            (folder / f"{number}_Op{level}x{number}.py").write_text(f"# level {level} problem {number}\n")
    return tmp_path / "kb"


def test_the_draw_is_fixed_by_its_seed_and_splits_backends_and_comparisons(tool, kernelbench):
    plan = tool.draw(kernelbench, seed=7, count=8, cuda=2, comparisons=3, commit="abc")
    assert plan == tool.draw(kernelbench, seed=7, count=8, cuda=2, comparisons=3, commit="abc")
    assert [t["trial"] for t in plan["trials"]] != [t["trial"] for t in tool.draw(kernelbench, 8, 8, 2, 3)["trials"]]
    names = [t["trial"] for t in plan["trials"]] + plan["reserves"]
    assert len(names) == len(set(names)) == 8 + tool.RESERVES
    assert [t["backend"] for t in plan["trials"]] == ["cuda"] * 2 + ["triton"] * 6
    assert [t["comparison_without_skill"] for t in plan["trials"]] == [True] * 3 + [False] * 5
    assert plan["drawn_from"] == "20 problems of KernelBench levels 1 and 2" and plan["kernelbench_commit"] == "abc"
    first = plan["trials"][0]
    assert first["trial"] == f"L{first['level']}_{first['file'][:-3]}"


def test_a_trial_folder_holds_the_problem_the_installed_skill_and_a_prompt_in_the_command_s_words(tool, kernelbench,
                                                                                                 tmp_path):
    plan = tool.draw(kernelbench, seed=7, count=4, cuda=1, comparisons=1)
    entry = plan["trials"][0]
    folder = tool.prepare(entry, kernelbench, tmp_path / "trials", with_skill=True)
    assert (folder / entry["file"]).read_text().startswith(f"# level {entry['level']} problem")
    assert (folder / ".claude" / "skills" / "kernel-opt-skill" / "SKILL.md").is_file()
    assert (folder / ".claude" / "commands" / "kernel-opt-skill.md").is_file()
    request = (folder / "REQUEST.md").read_text()
    assert request.startswith(f"/kernel-opt-skill optimize the KernelBench problem {entry['file']} ")
    assert "with a CUDA kernel of your own as its ModelNew, run 3 iterations, output to out/" in request
    prompt = (folder / "PROMPT.md").read_text()
    assert f"`.trials/{folder.name}`" in prompt and "TRIAL_LOG.md" in prompt and str(folder) in prompt
    without = tool.prepare(entry, kernelbench, tmp_path / "trials", with_skill=False)
    assert without.name == f"{entry['trial']}-without-skill" and not (without / ".claude").exists()
    assert "no optimization skill" in (without / "PROMPT.md").read_text()
    assert folder.is_absolute() and "`run` tool" in prompt
    room = tool.machines("T", gpu=True, repository_mib=57.6)
    assert "already takes 58 MiB of it: your folder and the wheels have about 6 MiB" in room
    assert f"already takes {tool.tracked_mib():.0f} MiB" in prompt
    cpu_only = tool.prepare(plan["trials"][1], kernelbench, tmp_path / "cpu", with_skill=True, gpu=False)
    cpu_prompt = (cpu_only / "PROMPT.md").read_text()
    assert "GPU host is down today" in cpu_prompt and "`run` tool" not in cpu_prompt
    assert tool.main(["prepare", entry["trial"], str(kernelbench), str(tmp_path / "trials"),
                      "--plan", str(_written(tmp_path, plan))]) == 2  # the folder exists: never overwritten
    assert tool.main(["prepare", "L9_nothing", str(kernelbench), str(tmp_path / "other"),
                      "--plan", str(_written(tmp_path, plan))]) == 2


def _written(tmp_path, plan):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def test_collect_keeps_the_records_and_reports_and_leaves_builds_and_large_binaries(tool, tmp_path):
    trial = tmp_path / "trial"
    for relative, size in [("TRIAL_LOG.md", 10), ("out/final_report.md", 10), ("out/v0/v0.py", 10),
                           ("out/v0/build/kernel.so", 10), ("out/v0/profile.ncu-rep", 10),
                           ("out/sweep/huge.csv", tool.LARGEST_KEPT_BYTES + 1), (".claude/skills/x/SKILL.md", 10),
                           (".venv-kernel-opt/pyvenv.cfg", 10), (".venv-kernel-opt/lib/numpy/__init__.pyi", 10),
                           (".trial/cache/pycache/kernel_opt/cli.cpython-311.pyc", 10)]:
        path = trial / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * size)
    left = tool.collect(trial, tmp_path / "kept")
    kept = sorted(str(path.relative_to(tmp_path / "kept")) for path in (tmp_path / "kept").rglob("*") if path.is_file())
    assert kept == ["TRIAL_LOG.md", "out/final_report.md", "out/v0/v0.py"]
    assert sorted(left) == [".claude/skills/x/SKILL.md", ".trial/cache/pycache/kernel_opt/cli.cpython-311.pyc",
                            ".venv-kernel-opt/lib/numpy/__init__.pyi",
                            ".venv-kernel-opt/pyvenv.cfg", "out/sweep/huge.csv", "out/v0/build/kernel.so",
                            "out/v0/profile.ncu-rep"]  # a virtual environment by any name stays behind


def test_bad_draw_arguments_exit_2(tool, kernelbench, tmp_path):
    assert tool.main(["draw", str(kernelbench), "--seed", "1", "--count", "3", "--cuda", "4",
                      "--plan", str(tmp_path / "p.json")]) == 2
    assert tool.main(["draw", str(tmp_path / "nowhere"), "--seed", "1", "--plan", str(tmp_path / "p.json")]) == 2


def test_pre_trials_take_the_problems_outside_the_plan_in_one_seeded_order(tool, kernelbench, tmp_path):
    plan = tool.draw(kernelbench, seed=7, count=4, cuda=1, comparisons=1)
    order = tool.pretrial_order(kernelbench, plan, seed=20261129)
    planned = {entry["trial"] for entry in plan["trials"]} | set(plan["reserves"])
    assert len(order) == 20 - len(planned) and not planned & set(order)
    assert order == tool.pretrial_order(kernelbench, plan, seed=20261129)  # fixed by the seed
    assert order != tool.pretrial_order(kernelbench, plan, seed=1)
    done = tmp_path / "agent_trials"
    (done / f"cpu_only_{order[0]}").mkdir(parents=True)
    (done / f"cpu_only_{order[2]}").mkdir()
    assert tool.next_pretrial(order, done) == (2, order[1])
    for name in order:
        (done / f"cpu_only_{name}").mkdir(exist_ok=True)
    with pytest.raises(ValueError, match="every problem in the order has had a pre-trial"):
        tool.next_pretrial(order, done)
