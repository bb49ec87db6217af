"""Every relative link in the READMEs and under demo/ leads to a file or folder that exists.

Links are resolved from the folder of the file that holds them, as GitHub and an editor resolve
them. One kind is resolved from the skill root instead: the guide links a profile summary writes
(`experience/cuda/CUDA.md#coalesce_access` in vN/ncu_summary.md), which name a section of the
installed skill's guides wherever the run folder lives (profile/guides.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from conftest import REPO_ROOT, SKILL_ROOT

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"```.*?```", re.DOTALL)
GUIDE_LINK = re.compile(r"^experience/[a-z]+/[A-Z]+\.md$")  # what profile/guides.py writes


def documents() -> list[Path]:
    return sorted(REPO_ROOT.glob("README*.md")) + sorted(REPO_ROOT.glob("demo/**/*.md"))


def broken_links(document: Path) -> list[str]:
    """The relative links of one Markdown file that lead nowhere (code blocks and URLs aside)."""
    broken = []
    for match in LINK.finditer(FENCE.sub("", document.read_text(encoding="utf-8"))):
        target = match.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (https:, mailto:) or an anchor in the same file
        path = unquote(target.split("#", 1)[0])
        base = SKILL_ROOT if GUIDE_LINK.match(path) and document.name.startswith("ncu_summary") else document.parent
        if not (base / path).exists():
            broken.append(target)
    return broken


def test_every_relative_link_in_the_readmes_and_demo_resolves():
    found = {str(document.relative_to(REPO_ROOT)): broken_links(document) for document in documents()}
    assert len(found) > 100 and "demo/DEMO.md" in found and "README_zh.md" in found
    assert {name: links for name, links in found.items() if links} == {}


def test_a_link_written_from_the_wrong_folder_is_found(tmp_path):
    (tmp_path / "cuda" / "softmax").mkdir(parents=True)
    page = tmp_path / "DEMO.md"
    page.write_text("[ok](cuda/softmax/) [broken](demo/cuda/softmax/) [web](https://example.com/x) [here](#top)\n"
                    "```\n[in code](nowhere.md)\n```\n![chart](missing.png)\n")
    assert broken_links(page) == ["demo/cuda/softmax/", "missing.png"]
    summary = tmp_path / "ncu_summary.md"
    summary.write_text("[`vector_loads`](experience/cuda/CUDA.md#vector_loads) [x](experience/cuda/NOPE.md)\n")
    assert broken_links(summary) == ["experience/cuda/NOPE.md"]
