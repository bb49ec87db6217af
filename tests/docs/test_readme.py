"""The README's commands are the ones CI and users run: its first bash block is what .ci/run runs, shown the same
in both languages (tests/integration/test_run_example.py runs its main job)."""

import re

from conftest import REPO_ROOT as REPO


def readme_commands(name: str) -> list[str]:
    text = (REPO / name).read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1)
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_ci_runs_the_readme_test_command_and_its_cpu_install_line():
    cpu_install, setup_and_run, tests = readme_commands("README.md")
    ci = (REPO / ".ci" / "run").read_text()
    assert tests in ci
    assert cpu_install in ci.splitlines()  # the CPU build of torch, as CI installs it
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in cpu_install
    assert "triton==3.6.0" in cpu_install
    assert "ruff check ." in ci and "[tool.ruff.lint]" in (REPO / "pyproject.toml").read_text()
    assert "tools/run_example.py" in setup_and_run


def test_the_cpu_install_comes_before_anything_else_and_skips_show_their_reason():
    text = (REPO / "README.md").read_text()
    assert text.index("\n## ") == text.index("\n## First minute")  # the first section
    assert text.index("--index-url https://download.pytorch.org/whl/cpu") < text.index("tools/run_example.py")
    addopts = re.search(r'^addopts = "(.*)"$', (REPO / "pyproject.toml").read_text(), re.MULTILINE).group(1)
    assert "-rs" in addopts.split()  # pytest -q lists every skip with its reason, as the README says
    assert "SKIPPED [1] tests/gpu/" in text


def test_chinese_readme_shows_the_same_commands():
    assert readme_commands("README_zh.md") == readme_commands("README.md")


FAST_TIER = 'python3 -m pytest -q -n 2 -m "not slow"'


def test_the_fast_tier_is_shown_the_same_everywhere_and_its_marker_is_declared():
    for name in ("README.md", "README_zh.md", "AGENTS.md", "tests/README.md"):
        assert FAST_TIER in (REPO / name).read_text(), name
    assert '"slow: ' in (REPO / "pyproject.toml").read_text()  # declared beside gpu, nvcc, ncu and timing


def test_the_eval_example_says_it_exits_1_on_purpose_in_both_languages():
    """tests/integration/test_eval.py asserts the verdicts themselves (2 of 4 correct, exit 1)."""
    for name in ("README.md", "README_zh.md"):
        text = (REPO / name).read_text()
        after = text[text.index("--output-dir /tmp/ko/kb_eval"):]
        said = after[:after.index("\n- ")]
        assert "`correct | 2 / 4 (50%)`" in said and "tests/fixtures/kernelbench/README.md" in said, name
        assert "`1_Square_matmul`" in said and "`4_Conv2d_ReLU_BiasAdd`" in said, name
