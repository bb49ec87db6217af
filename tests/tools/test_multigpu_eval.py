"""tools/multigpu_eval.py: the comparison it draws between a one-GPU run and a --gpus run, and the whole script
on a fake two-GPU host with --device cpu (the GPU run is the coordinator's: see the script's docstring)."""

from __future__ import annotations

import json

import pytest
from conftest import FIXTURES_DIR, load_tool

multigpu_eval = load_tool("multigpu_eval")


def record(verdicts, wall_s, gpus=0, **extra):
    return {"entries": [{"name": name, "verdict": verdict, "precision_downgrade": False, "wall_s": 10.0,
                         "speedup_vs_eager": 1.5, "gpu": {"index": index % 2} if gpus else None, **extra}
                        for index, (name, verdict) in enumerate(verdicts.items())],
            "execution": {"wall_s": wall_s, "pair_s": 10.0 * len(verdicts), "gpus": [{}] * gpus}}


def test_the_comparison_says_whether_every_verdict_agrees_and_how_the_wall_time_moved():
    one = record({"a": "correct", "b": "incorrect"}, 40.0)
    same = multigpu_eval.compare(one, record({"a": "correct", "b": "incorrect"}, 21.0, gpus=2))
    assert same["verdicts_identical"] is True and same["wall_ratio"] == pytest.approx(21.0 / 40.0)
    assert same["gpus_used"] == [0, 2] and [row["gpu_all_gpus"] for row in same["rows"]] == [0, 1]
    differs = multigpu_eval.compare(one, record({"a": "correct", "b": "correct"}, 21.0, gpus=2))
    assert differs["verdicts_identical"] is False and [row["same"] for row in differs["rows"]] == [True, False]
    lost = multigpu_eval.compare(one, record({"a": "correct"}, 21.0, gpus=2))  # a pair missing from one run
    assert lost["verdicts_identical"] is False
    markdown = multigpu_eval.comparison_markdown(same, [{"name": "one_gpu", "exit_code": 1, "wall_s": 41.0},
                                                        {"name": "all_gpus", "exit_code": 1, "wall_s": 22.0}])
    assert "wall time, all_gpus / one_gpu: 0.53" in markdown and "verdicts identical: yes" in markdown
    ray = multigpu_eval.compare(record({"a": "correct"}, 20.0, gpus=2), record({"a": "correct"}, 22.0, gpus=2),
                                names=("all_gpus", "ray"))
    assert ray["runs_compared"] == ["all_gpus", "ray"] and ray["rows"][0]["gpu_ray"] == 0
    assert "# all_gpus against ray" in multigpu_eval.comparison_markdown(ray, [{"name": "all_gpus", "exit_code": 0,
                                                                                 "wall_s": 20.0}] * 2)


@pytest.mark.parametrize("runs", ["one_gpu", "one_gpu,one_gpu", "one_gpu,two_gpus"])
def test_runs_names_two_different_known_runs(runs, capsys):
    with pytest.raises(SystemExit) as stopped:
        multigpu_eval.build_parser().parse_args(["out", "--runs", runs])
    assert stopped.value.code == 2 and "two different runs of one_gpu, all_gpus, ray" in capsys.readouterr().err


def test_fewer_than_two_gpus_is_a_machine_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(multigpu_eval, "gpu_count", lambda: 1)
    assert multigpu_eval.main([str(tmp_path / "out")]) == 4
    assert multigpu_eval.main([str(tmp_path / "out"), "--problems", str(tmp_path / "none")]) == 2


@pytest.mark.slow
def test_both_runs_on_a_fake_two_gpu_host_agree(tmp_path, monkeypatch):
    from unit.suite.pool_jobs import fake_gpus

    fake_gpus(tmp_path / "bin", monkeypatch)
    out = tmp_path / "out"
    code = multigpu_eval.main([str(out), "--problems", str(FIXTURES_DIR / "kernelbench" / "problems"),
                               "--solutions", str(FIXTURES_DIR / "kernelbench" / "solutions"), "--device", "cpu",
                               "--gpus", "2", "--only", "2_Gemm_Multiply_ReLU,3_Sum_reduction",
                               "--eval-args", "--seeds 1"])
    comparison = json.loads((out / "comparison.json").read_text())
    assert code == 0 and comparison["verdicts_identical"] is True
    assert [row["verdict_all_gpus"] for row in comparison["rows"]] == ["correct", "correct"]
    assert comparison["gpus_used"] == [0, 2] and [run["exit_code"] for run in comparison["runs"]] == [0, 0]
    for name in ("one_gpu", "all_gpus"):
        assert (out / name / "eval.md").is_file() and (out / name / "progress.log").read_text().count("2/2") == 1
    assert "--gpus 2" in " ".join(comparison["runs"][1]["command"])
