"""SKILL.md is what an agent reads first: its frontmatter must be valid, and every script and
document it names must exist (scripts must answer --help)."""

import re
import subprocess
import sys

import pytest
import yaml
from conftest import SKILL_ROOT

ALLOWED_KEYS = {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}
TEXT = (SKILL_ROOT / "SKILL.md").read_text()


def frontmatter() -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", TEXT, re.DOTALL)
    assert match, "SKILL.md must start with a --- frontmatter block"
    return yaml.safe_load(match.group(1))


def test_frontmatter_follows_the_agent_skills_rules():
    meta = frontmatter()
    assert set(meta) <= ALLOWED_KEYS and {"name", "description"} <= set(meta)
    assert meta["name"] == SKILL_ROOT.name
    assert len(meta["description"]) <= 1024
    assert "Use when" in meta["description"] and "Not for" in meta["description"]
    assert len(TEXT.splitlines()) < 500


SCRIPTS = sorted(
    set(re.findall(r"\$SKILL_ROOT/scripts/(\w+)\.py", TEXT))
    | set(re.findall(r"`(\w+)\.py`", TEXT)) - {"v0", "vN", "vK", "vBEST", "ref"}
)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_named_script_exists_and_answers_help(script):
    path = SKILL_ROOT / "scripts" / f"{script}.py"
    assert path.exists(), f"SKILL.md names {script}.py, which does not exist"
    completed = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "usage" in completed.stdout.lower()


@pytest.mark.parametrize(
    "document",
    sorted(set(re.findall(r"`((?:env|profiling|experience|reference|report|benchmark)/[\w/]+\.md)`", TEXT))),
)
def test_every_named_document_exists(document):
    assert (SKILL_ROOT / document).exists(), f"SKILL.md names {document}, which does not exist"
