"""The commands a tool prints as next steps name the interpreter they must run under."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

from kernel_opt.core import cli
from kernel_opt.core.cli import SCRIPTS_DIR, python_command, script_command, script_path


def _interpreter(monkeypatch, *, prefix: str, base_prefix: str, executable: str, on_path: str | None) -> None:
    monkeypatch.setattr(sys, "prefix", prefix)
    monkeypatch.setattr(sys, "base_prefix", base_prefix)
    monkeypatch.setattr(sys, "executable", executable)
    monkeypatch.setattr(cli.shutil, "which", lambda name: on_path if name == "python" else None)


def test_the_system_interpreter_is_plain_python(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # a folder the skill does not lie under: its scripts by their full path
    _interpreter(monkeypatch, prefix="/usr", base_prefix="/usr", executable="/usr/bin/python3.11",
                 on_path="/usr/bin/python")
    assert python_command() == "python"
    assert script_command("workspace") == f"python {SCRIPTS_DIR / 'workspace.py'}"


def test_a_virtual_environment_not_on_path_is_named_relative_to_the_working_folder(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    _interpreter(monkeypatch, prefix=str(tmp_path / ".venv"), base_prefix="/usr",
                 executable=str(tmp_path / ".venv" / "bin" / "python"), on_path="/usr/bin/python")
    assert python_command() == ".venv/bin/python"
    assert script_command("env_check") == f".venv/bin/python {SCRIPTS_DIR / 'env_check.py'}"


def test_a_virtual_environment_elsewhere_is_named_by_its_full_path(monkeypatch, tmp_path):
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    _interpreter(monkeypatch, prefix="/opt/env", base_prefix="/usr", executable="/opt/env/bin/python",
                 on_path=None)
    assert python_command() == "/opt/env/bin/python"


def test_an_activated_virtual_environment_is_plain_python(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    _interpreter(monkeypatch, prefix=str(tmp_path / ".venv"), base_prefix="/usr",
                 executable=str(tmp_path / ".venv" / "bin" / "python"),
                 on_path=str(tmp_path / ".venv" / "bin" / "python"))
    assert python_command() == "python"


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX virtual environment layout")
def test_init_run_from_a_virtual_environment_prints_its_next_step_there(tmp_path):
    venv.create(tmp_path / ".venv", system_site_packages=True, with_pip=False)
    (tmp_path / "kernel.py").write_text("def run_kernel(x):\n    return x\n")
    (tmp_path / "ref.py").write_text("import torch\n\ndef reference(x):\n    return x\n\n"
                                     "def get_inputs():\n    return [torch.ones(4)]\n")
    completed = subprocess.run(
        [str(Path(".venv") / "bin" / "python"), str(SCRIPTS_DIR / "workspace.py"), "init", "out",
         "--kernel", "kernel.py", "--ref", "ref.py", "--iterations", "1"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert f"then: .venv/bin/python {SCRIPTS_DIR / 'workspace.py'} evaluate out v0" in completed.stdout


def test_a_skill_under_the_working_folder_is_named_relative_to_it(monkeypatch):
    """A project's installed skill (.claude/skills/...) prints lines that run in that folder's copy elsewhere."""
    skill_root = SCRIPTS_DIR.parent
    monkeypatch.chdir(skill_root.parent)
    assert script_path("benchmark.py") == f"{skill_root.name}/scripts/benchmark.py"
    monkeypatch.setattr(sys, "prefix", sys.base_prefix)
    assert script_command("benchmark") == f"python {skill_root.name}/scripts/benchmark.py"


def test_an_installed_project_skill_prints_its_next_commands_relative_to_the_project(tmp_path):
    """`workspace.py init` in a project with the skill installed under .claude/: no path of this machine."""
    project = tmp_path / "project"
    project.mkdir()
    installed = subprocess.run([sys.executable, str(SCRIPTS_DIR / "install.py"), "--project", str(project)],
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0, installed.stderr
    scripts = Path(".claude") / "skills" / "kernel-opt-skill" / "scripts"
    (project / "kernel.py").write_text("def run_kernel(x):\n    return x\n")
    (project / "ref.py").write_text("import torch\n\ndef reference(x):\n    return x\n\n"
                                    "def get_inputs():\n    return [torch.ones(4)]\n")
    completed = subprocess.run([sys.executable, str(scripts / "workspace.py"), "init", "out", "--kernel", "kernel.py",
                                "--ref", "ref.py", "--iterations", "1"],
                               cwd=project, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert f"then: python {scripts / 'workspace.py'} evaluate out v0" in completed.stdout
    assert str(tmp_path) not in completed.stdout


def test_a_line_for_a_gpu_machine_names_plain_python_where_this_machine_has_no_gpu(monkeypatch):
    """A CPU machine's environment (NumPy < 2.4 for the interpreter) does not exist on the GPU host."""
    from kernel_opt.commands import workspace

    monkeypatch.chdir(SCRIPTS_DIR.parents[3])  # the repository: a virtual environment under it, named relative to it
    _interpreter(monkeypatch, prefix=".venv", base_prefix="/usr", executable=str(Path.cwd() / ".venv/bin/python"),
                 on_path=None)
    path = script_path("workspace.py")
    assert workspace._script("workspace.py") == f".venv/bin/python {path}"  # a line for this machine
    assert workspace._script("workspace.py", gpu=True) == f"python {path}"
    monkeypatch.setattr(cli.shutil, "which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)
    assert workspace._script("workspace.py", gpu=True) == f".venv/bin/python {path}"  # the GPU is here
