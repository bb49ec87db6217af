"""The exit-code contract where it used to slip.

0 ok, 1 check failed, 2 usage / refusal / bad input, 3 the solution is at fault, 4 environment.
A corrupt record is bad input, never "nothing there"; a refusal is 2; nothing is written into
the current directory or the skill folder unless asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO_ROOT
from run_fixtures import make_run

from kernel_opt.commands import final_report as final_report_command
from kernel_opt.commands import workspace as workspace_command

SCRIPTS = REPO_ROOT / "skills" / "kernel-opt-skill" / "scripts"


@pytest.mark.parametrize("content, problem", [
    ("{not json", "is not valid JSON (line 1"),
    ("[1, 2]", "must hold a JSON object, found list"),
    ('{"schema": "kernel_opt.benchmark/1"}', "kernel_opt.benchmark/1"),
])
def test_final_report_on_a_corrupt_run_json_is_bad_input_naming_the_file(tmp_path, capsys, content, problem):
    out = tmp_path / "run"
    make_run(out)
    (out / "run.json").write_text(content)
    assert final_report_command.main([str(out)]) == 2
    error = capsys.readouterr().err
    assert str(out / "run.json") in error and problem in error
    assert "no run.json" not in error
    assert not (out / "final_report.md").exists()


@pytest.mark.parametrize("field, value, wanted", [
    ("iterations_budget", "two", "iterations_budget is 'two', not a whole number >= 0"),
    ("iterations_budget", True, "iterations_budget is True, not a whole number >= 0"),
    ("dims", "oops", "dims is 'oops', not an object of sizes"),
    ("dims", {"N": [1, 2]}, "dims is {'N': [1, 2]}, not an object of sizes"),
    ("target_percent", None, "target_percent is None, not a number of percent above 0"),
    ("backend", 7, "backend is 7, not text"),
])
@pytest.mark.parametrize("command", ["status", "next"])
def test_a_run_json_with_a_wrong_type_is_bad_input_naming_the_field(tmp_path, capsys, command, field, value, wanted):
    out = tmp_path / "run"
    make_run(out)
    record = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**record, field: value}))
    capsys.readouterr()
    assert workspace_command.main([command, str(out)]) == 2
    error = capsys.readouterr().err
    assert f"{out / 'run.json'}: {wanted}" in error
    assert "Traceback" not in error


def test_final_report_without_run_json_still_reports_and_says_so(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out)
    (out / "run.json").unlink()
    assert final_report_command.main([str(out), "--no-charts"]) == 0
    assert "no run.json" in (out / "final_report.md").read_text()


def test_next_before_v0_is_evaluated_is_a_refusal_exit_2(tmp_path, capsys):
    out = tmp_path / "run"
    make_run(out)
    capsys.readouterr()
    assert workspace_command.main(["next", str(out), "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["kind"], error["exit_code"]) == ("refused", 2)
    assert "v0 has not been evaluated yet" in error["message"]


@pytest.mark.slow
def test_env_check_writes_nothing_into_the_current_directory_unless_asked(tmp_path):
    completed = subprocess.run([sys.executable, str(SCRIPTS / "env_check.py")], cwd=tmp_path, capture_output=True,
                               text=True, timeout=120, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert completed.returncode in (0, 4), completed.stderr
    assert "report: not written (pass --output-dir DIR" in completed.stdout
    assert list(tmp_path.iterdir()) == []
    completed = subprocess.run([sys.executable, str(SCRIPTS / "env_check.py"), "--json"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
    assert json.loads(completed.stdout)["report"] is None
    assert list(tmp_path.iterdir()) == []
