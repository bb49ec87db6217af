"""The skill's own cache folder: measured ceilings, and compiled Python where the environment turns Python's off.

$KERNEL_OPT_CACHE_DIR, else $XDG_CACHE_HOME/kernel-opt-skill, else ~/.cache/kernel-opt-skill.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CACHE_DIR_ENV = "KERNEL_OPT_CACHE_DIR"
CACHE_SUBDIR = "kernel-opt-skill"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """$KERNEL_OPT_CACHE_DIR, else $XDG_CACHE_HOME/kernel-opt-skill, else ~/.cache/kernel-opt-skill."""
    environ = os.environ if environ is None else environ
    if environ.get(CACHE_DIR_ENV):
        return Path(environ[CACHE_DIR_ENV]).expanduser()
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / CACHE_SUBDIR
