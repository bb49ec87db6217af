"""The README's commands are the ones CI and users run: its first bash block is what .ci/run runs, shown the same
in both languages (tests/integration/test_run_example.py runs its main job)."""

import re

from conftest import REPO_ROOT as REPO


def readme_commands(name: str) -> list[str]:
    text = (REPO / name).read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_ci_runs_the_readme_test_command():
    setup_and_run, tests = readme_commands("README.md")
    ci = (REPO / ".ci" / "run").read_text()
    assert tests in ci
    assert "ruff check ." in ci and "[tool.ruff.lint]" in (REPO / "pyproject.toml").read_text()
    assert "tools/run_example.py" in setup_and_run


def test_chinese_readme_shows_the_same_commands():
    assert readme_commands("README_zh.md") == readme_commands("README.md")


FAST_TIER = 'python3 -m pytest -q -n 2 -m "not slow"'


def test_the_fast_tier_is_shown_the_same_everywhere_and_its_marker_is_declared():
    for name in ("README.md", "README_zh.md", "AGENTS.md", "tests/README.md"):
        assert FAST_TIER in (REPO / name).read_text(), name
    assert '"slow: ' in (REPO / "pyproject.toml").read_text()  # declared beside gpu, nvcc, ncu and timing
