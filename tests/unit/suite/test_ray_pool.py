"""suite/ray_pool.py on a local Ray instance with --device cpu: the same pairs, verdicts and records as one
process, a task that crashes or hangs costing its own row, a resumed run; and the flag without Ray.

Each run starts and stops a local Ray instance (about 10 s here), hence the slow marker. Without Ray
installed (it is the optional extra `ray`, not in `test`) the Ray runs are skipped; the exit 4 and
its install line are tested either way.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import sys
import time

import pytest
from conftest import FIXTURES_DIR

from kernel_opt.commands.eval import main
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.suite.driver import run_eval
from kernel_opt.suite.ray_pool import endpoint, require_reachable

from . import pool_jobs
from .test_gpu_pool import suite

FIXTURES = FIXTURES_DIR / "kernelbench"
NEEDS_RAY = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="Ray is not installed: pip install -e \".[ray]\" (the optional extra) runs these")


def test_without_ray_the_flag_is_a_machine_limit_with_the_install_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as where it is not installed
    code = main([str(FIXTURES / "problems"), str(FIXTURES / "solutions"), "--output-dir", str(tmp_path / "out"),
                 "--ray", "local", "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 4 and "--ray needs ray" in err and 'pip install "ray[default]>=2.30,<3"' in err
    assert not (tmp_path / "out" / "eval.json").exists()


def closed_port() -> int:
    with socket.socket() as probe:  # bound and closed again: nothing listens there
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(("address", "expected"), [
    ("auto", None), ("local", None), ("10.0.0.5:6379", ("10.0.0.5", 6379)),
    ("ray://head.example:10001", ("head.example", 10001)), ("[::1]:6379", ("::1", 6379)), ("head:port", None)])
def test_the_endpoint_of_an_address_is_its_host_and_port(address, expected):
    assert endpoint(address) == expected


def test_an_address_nothing_answers_is_refused_at_once_and_a_listening_one_passes():
    started = time.monotonic()
    with pytest.raises(EnvironmentFault, match=r"--ray 127\.0\.0\.1:\d+: nothing answers at 127\.0\.0\.1:\d+"):
        require_reachable(f"127.0.0.1:{closed_port()}")
    assert time.monotonic() - started < 5
    with socket.socket() as head:
        head.bind(("127.0.0.1", 0))
        head.listen()
        require_reachable(f"ray://127.0.0.1:{head.getsockname()[1]}")
    require_reachable("auto")  # Ray finds that one itself, and fails fast where there is none


@NEEDS_RAY
def test_eval_with_an_address_nothing_answers_exits_4_before_writing(tmp_path, capsys):
    code = main([str(FIXTURES / "problems"), str(FIXTURES / "solutions"), "--output-dir", str(tmp_path / "out"),
                 "--ray", f"127.0.0.1:{closed_port()}", "--device", "cpu", "--only", "3_Sum_reduction"])
    err = capsys.readouterr().err
    assert code == 4 and "nothing answers at 127.0.0.1" in err and "ray start --head" in err
    assert not (tmp_path / "out" / "eval.json").exists()


def test_gpus_and_ray_together_are_refused(tmp_path, capsys):
    code = main([str(FIXTURES / "problems"), str(FIXTURES / "solutions"), "--output-dir", str(tmp_path / "out"),
                 "--ray", "local", "--gpus", "all"])
    assert code == 2 and "--gpus and --ray" in capsys.readouterr().err


@NEEDS_RAY
@pytest.mark.slow
def test_local_ray_gives_the_one_process_verdicts_and_records_and_resumes(tmp_path, capsys):
    problems, solutions = tmp_path / "problems", tmp_path / "solutions"
    shutil.copytree(FIXTURES / "problems", problems)
    shutil.copytree(FIXTURES / "solutions", solutions)
    (solutions / "4_Conv2d_ReLU_BiasAdd.py").unlink()  # a missing solution: a row the driver writes itself
    out = tmp_path / "out"
    argv = [str(problems), str(solutions), "--output-dir", str(out), "--seeds", "1", "--device", "cpu"]
    assert main([*argv, "--ray", "local", "--only", "2_Gemm_Multiply_ReLU,3_Sum_reduction,4_Conv2d_ReLU_BiasAdd"]) == 1
    report = json.loads((out / "eval.json").read_text())
    assert {e["name"]: e["verdict"] for e in report["entries"]} == {
        "2_Gemm_Multiply_ReLU": "correct", "3_Sum_reduction": "correct", "4_Conv2d_ReLU_BiasAdd": "missing"}
    assert report["execution"]["mode"] == "ray" and report["execution"]["pairs_run"] == 3
    for name in ("2_Gemm_Multiply_ReLU", "3_Sum_reduction"):
        folder = out / "pairs" / name
        correctness = json.loads((folder / "correctness.json").read_text())
        assert correctness["verdict"] == "pass" and f"--output-dir {folder}" in correctness["command"]
        assert str(problems / f"{name}.py") in correctness["command"]
        assert "kernel-opt-eval-" not in (folder / "correctness.md").read_text()
        assert json.loads((folder / "entry.json").read_text())["problem"] == str(problems / f"{name}.py")
    capsys.readouterr()

    # resumed: the entries Ray's tasks made are reused, by a Ray run (which then starts no Ray) or one process
    assert main([*argv, "--ray", "local", "--only", "2_Gemm_Multiply_ReLU,3_Sum_reduction"]) == 0
    assert capsys.readouterr().err.count("(earlier run)") == 2
    assert main([*argv, "--only", "3_Sum_reduction"]) == 0
    assert capsys.readouterr().err.count("(earlier run)") == 1


@NEEDS_RAY
@pytest.mark.slow
def test_a_task_that_crashes_or_hangs_costs_its_own_row(tmp_path):
    import ray.cloudpickle

    from kernel_opt.suite.ray_pool import RayTasks

    ray.cloudpickle.register_pickle_by_value(pool_jobs)  # the stand-in travels with the task, by value
    request = suite(tmp_path, ["a", "crash", "hang", "d"])
    request.gpus, request.ray, request.pair_timeout_s = None, "local", 20  # a fresh Ray worker takes seconds
    report = run_eval(request, "eval.py", pool=RayTasks("local", request, "cpu", evaluate=pool_jobs.evaluate_by_name))
    entries = {entry.name: entry for entry in report.entries}
    assert {name: entry.verdict for name, entry in entries.items()} == {
        "a": "correct", "crash": "internal_error", "hang": "solution_error", "d": "correct"}
    assert entries["crash"].error_kind == "worker_died" and "the Ray task failed" in entries["crash"].message
    assert entries["hang"].error_kind == "timeout" and "past the pair timeout (20 s)" in entries["hang"].message
    assert entries["crash"].key == "" and entries["hang"].key  # the crash runs again next time, the hang does not
    assert report.execution.pairs_run == 4 and report.execution.workers >= 1  # as many CPUs as Ray found
