"""The optimization guides a profile points to, and links to their sections.

A suggestion names a strategy or a label; its link is the guide's path from the skill root with
the anchor GitHub gives the heading that names it, read from the guide itself so the link stays
right when a heading's wording changes. Each backend's advice names its guide (`StrategyAdvice.guide`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from kernel_opt.core.errors import UsageError
from kernel_opt.profile.advice import advice_for

SKILL_ROOT = Path(__file__).resolve().parents[3]  # skills/kernel-opt-skill/


def guide_path(backend: str) -> str:
    """The backend's guide, relative to the skill root: 'experience/cuda/CUDA.md' for cuda."""
    guide = advice_for(backend).guide
    if guide is None:
        raise UsageError(f"the {backend} backend has no optimization guide to link to")
    return guide


def github_anchor(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped (not _ or -), spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


class Heading(NamedTuple):
    """A guide heading: its level (2 for ##), its key (first `backticked` name, else first word), its anchor, and
    whether it opens with the backticked name, as a strategy's section does ("### `tma_pipeline` (sm_90)")."""

    level: int
    key: str
    anchor: str
    opens_with_name: bool


def _guide_headings(guide: str) -> tuple[Heading, ...]:
    """Every heading of levels 2-4 in the guide, in order; empty where the file is missing."""
    path = SKILL_ROOT / guide_path(guide)
    if not path.is_file():
        return ()
    headings = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^(#{2,4})\s+(.*)$", line)
        if not match:
            continue
        heading = match.group(2)
        named = re.search(r"`([A-Za-z0-9_]+)`", heading)
        headings.append(Heading(len(match.group(1)), named.group(1) if named else heading.split()[0],
                                github_anchor(heading), named is not None and named.start() == 0))
    return tuple(headings)


@lru_cache(maxsize=4)
def guide_anchors(guide: str) -> dict[str, str]:
    """Strategy or label name -> anchor, read from the guide's headings (the first heading of a name wins): reading
    the real headings keeps the links right when a heading's tail changes."""
    anchors: dict[str, str] = {}
    for heading in _guide_headings(guide):
        anchors.setdefault(heading.key, heading.anchor)
    return anchors


def guide_link(guide: str, name: str) -> str:
    """`GUIDE.md#anchor` for a strategy or label name (the bare name as anchor where no heading names it)."""
    anchor = guide_anchors(guide).get(name, name)
    return f"{guide_path(guide)}#{anchor}"


@lru_cache(maxsize=4)
def guide_strategies(backend: str) -> frozenset[str]:
    """The strategies a backend's guide has a section for ("### `name`"); empty where the backend has no guide."""
    if advice_for(backend).guide is None:
        return frozenset()
    return frozenset(heading.key for heading in _guide_headings(backend)
                     if heading.level == 3 and heading.opens_with_name)
