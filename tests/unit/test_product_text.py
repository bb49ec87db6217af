"""The product speaks of the product: no issue numbers in what a user reads (the skill, the READMEs, docs/).

The history lives in commit messages. The pattern is the noun with a number ("issue 15", "Issue #17",
"issues #3"); "each thread issues 8 cp.async" is the verb, which recorded hypotheses use.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO_ROOT

ISSUE_NUMBER = re.compile(r"\bissues? ?#[0-9]+|\bissue [0-9]+", re.IGNORECASE)
PRODUCT_TEXT = ["skills", "README.md", "README_zh.md", "docs"]
TEXT_SUFFIXES = {".md", ".py", ".j2", ".txt", ".yaml", ".json", ".jsonl", ".toml", ".sh"}


def issue_numbers(path: Path) -> list[str]:
    """Each line of `path` that names an issue by its number, as 'file:line: text'."""
    found = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        if ISSUE_NUMBER.search(line):
            found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()[:120]}")
    return found


def product_files() -> list[Path]:
    files = []
    for entry in PRODUCT_TEXT:
        root = REPO_ROOT / entry
        candidates = [root] if root.is_file() else sorted(root.rglob("*"))
        files += [path for path in candidates if path.is_file() and path.suffix in TEXT_SUFFIXES
                  and "__pycache__" not in path.parts]
    return files


@pytest.mark.parametrize("text, named", [
    ("see issue 15 for why", True), ("Issue #17 moved it", True), ("issues #3 and #4", True),
    ("each thread still issues 8 cp.async per K step", False), ("one thread issues 5 bulk tensor copies", False),
    ("the issue is the stride", False),
])
def test_the_pattern_tells_an_issue_number_from_the_verb(text, named):
    assert bool(ISSUE_NUMBER.search(text)) is named


def test_the_product_names_no_issue_numbers():
    files = product_files()
    assert len(files) > 50 and any(path.name == "SKILL.md" for path in files)
    assert [line for path in files for line in issue_numbers(path)] == []
