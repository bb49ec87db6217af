"""Every CLI answers --help and bad arguments on a machine without torch or triton (issue 18, item 1).

The commands run in subprocesses whose PYTHONPATH starts with a shim folder holding `torch` and
`triton` packages that raise ModuleNotFoundError on import, as on a machine where neither is
installed. What really needs them ends with exit 4 and the install line, never a traceback.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT as REPO

from kernel_opt.main import COMMANDS

SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
BLOCKED = ("torch", "triton")
# Subcommands whose own --help must work too.
SUBCOMMANDS = {"experience_log": ["add", "recommend", "merge", "sync"], "workspace": ["init", "next", "evaluate"]}


@pytest.fixture(scope="module")
def no_torch_env(tmp_path_factory) -> dict[str, str]:
    shim = tmp_path_factory.mktemp("no_torch")
    for name in BLOCKED:
        (shim / name).mkdir()
        (shim / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}'\", name='{name}')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim), str(SCRIPTS)]),
           "KERNEL_OPT_EXPERIENCE_LOG": str(shim / "experience.jsonl")}
    env.pop("TRITON_INTERPRET", None)
    return env


def _run(arguments: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, env=env, timeout=300,
                          cwd=cwd or REPO)


def test_the_shim_really_blocks_torch_and_triton(no_torch_env):
    for name in BLOCKED:
        completed = _run(["-c", f"import {name}"], no_torch_env)
        assert completed.returncode == 1
        assert f"No module named '{name}'" in completed.stderr


LEGACY_WRAPPER = SCRIPTS.parent / "experience" / "learned" / "scripts" / "experience_log.py"


def test_every_wrapper_script_is_a_kernel_opt_command():
    assert {path.stem for path in SCRIPTS.glob("*.py")} == set(COMMANDS)


def test_the_original_skills_experience_log_path_answers_help_without_torch(no_torch_env):
    completed = _run([str(LEGACY_WRAPPER), "add", "--help"], no_torch_env)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "--latency-unit" in completed.stdout


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_script_and_kernel_opt_command_answers_help_without_torch(command, no_torch_env):
    for arguments in ([str(SCRIPTS / f"{command}.py"), "--help"],
                      ["-m", "kernel_opt.main", command.replace("_", "-"), "--help"]):
        completed = _run(arguments, no_torch_env)
        assert completed.returncode == 0, completed.stderr[-2000:]
        assert completed.stdout.startswith("usage:"), completed.stdout[:300]
        assert "Traceback" not in completed.stderr
    for subcommand in SUBCOMMANDS.get(command, []):
        completed = _run([str(SCRIPTS / f"{command}.py"), subcommand, "--help"], no_torch_env)
        assert completed.returncode == 0, completed.stderr[-2000:]
        assert completed.stdout.startswith(f"usage: {command}.py {subcommand}")


def test_kernel_opt_help_lists_every_command_without_torch(no_torch_env):
    completed = _run(["-m", "kernel_opt.main", "--help"], no_torch_env)
    assert completed.returncode == 0, completed.stderr[-2000:]
    for command in COMMANDS:
        assert f"  {command.replace('_', '-')} " in completed.stdout


def test_kernel_opt_help_into_a_closed_pipe_ends_quietly(no_torch_env):
    """`kernel-opt --help | head -1` printed a BrokenPipeError traceback: it ends as SIGPIPE would (141), silently."""
    child = subprocess.Popen([sys.executable, "-m", "kernel_opt.main", "--help"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=no_torch_env, cwd=REPO)
    child.stdout.close()  # the reader is gone before the command writes anything
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141 and stderr == ""


@pytest.mark.parametrize("arguments", [
    ["correctness_check.py"],
    ["benchmark.py", "k.cu", "--output-dir", "o"],
    ["ncu_profile.py", "k.cu", "--ref", "ref.py", "--output-dir", "o", "stray"],
    ["workspace.py", "init", "out"],
    ["experience_log.py", "add", "--no-such-flag"],
    ["final_report.py"],
])
def test_bad_arguments_are_usage_errors_without_torch(arguments, no_torch_env, tmp_path):
    completed = _run([str(SCRIPTS / arguments[0]), *arguments[1:]], no_torch_env, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert completed.stderr.startswith("error: ")
    assert "Traceback" not in completed.stderr


def test_a_step_that_needs_torch_says_what_to_install(no_torch_env, tmp_path):
    completed = _run([str(SCRIPTS / "correctness_check.py"), str(REPO / "reference/vector_add/good/vector_add.py"),
                      "--ref", str(REPO / "reference/vector_add/ref.py"), "--output-dir", str(tmp_path / "v0"),
                      "--n=1000"], no_torch_env)
    assert completed.returncode == 4, completed.stdout[-2000:] + completed.stderr[-2000:]
    assert "needs torch" in completed.stdout and "pip install torch" in completed.stdout
    assert "Traceback" not in completed.stdout + completed.stderr
    completed = _run([str(SCRIPTS / "measure_ceilings.py")], no_torch_env)
    assert completed.returncode == 4 and "pip install torch" in completed.stderr


def _runnable(step: str) -> list[str] | None:
    """env_check's `next:` command with its placeholders filled in, or None when it is an install hint."""
    words = shlex.split(step.split("#")[0])
    if not words or words[0] != "python":
        return None
    files = {"SOLUTION.cu": "reference/vector_add/good/vector_add.cu",
             "SOLUTION.py": "reference/vector_add/good/vector_add.py",
             "SOLUTION": "reference/vector_add/good/vector_add.py", "REF.py": "reference/vector_add/ref.py",
             "--NAME=VALUE": "--n=1000"}
    return [str(REPO / files[word]) if word in files and word.startswith(("SOLUTION", "REF")) else files.get(word, word)
            for word in words[1:]]


def test_env_check_next_step_runs_without_torch(no_torch_env, tmp_path):
    completed = _run([str(SCRIPTS / "env_check.py"), "--output-dir", str(tmp_path)], no_torch_env)
    assert completed.returncode == 4, completed.stdout
    assert "torch missing" in completed.stdout
    steps = [line.removeprefix("next: ") for line in completed.stdout.splitlines() if line.startswith("next: ")]
    assert steps
    for step in steps:
        arguments = _runnable(step)
        if arguments is None:
            assert "install" in step
            continue
        following = _run(arguments, no_torch_env)
        assert following.returncode in (0, 4), following.stdout[-2000:] + following.stderr[-2000:]
        assert "Traceback" not in following.stdout + following.stderr
