"""Compiled Python kept between the skill's processes where the environment turns Python's own cache off.

Many container images set PYTHONDONTWRITEBYTECODE, and then every process compiles torch's Python source
again: importing torch took about 5 s a process on an H200 host set up that way, and a checked and timed pair
starts several processes. The skill's processes keep their bytecode in the skill's cache folder instead
(core/cache.py, under pycache/), which leaves the installed packages and the user's folders as they are.
A PYTHONPYCACHEPREFIX the user set is kept; KERNEL_OPT_BYTECODE_CACHE=off leaves Python's setting alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from kernel_opt.core.cache import cache_dir

OPT_OUT_ENV = "KERNEL_OPT_BYTECODE_CACHE"
_OFF = ("off", "0", "no", "false")


def bytecode_prefix(environ: Mapping[str, str]) -> Path | None:
    """Where this environment's processes should keep bytecode; None where Python's own setting already serves."""
    if environ.get(OPT_OUT_ENV, "").strip().lower() in _OFF:
        return None
    if environ.get("PYTHONPYCACHEPREFIX") or not environ.get("PYTHONDONTWRITEBYTECODE"):
        return None  # the user's own prefix, or Python's __pycache__ folders at work
    return cache_dir(environ) / "pycache"


def with_bytecode_cache(environ: dict[str, str]) -> dict[str, str]:
    """A child's environment with the cache in force (a copy; the given one where nothing changes)."""
    prefix = bytecode_prefix(environ)
    if prefix is None:
        return environ
    changed = {name: value for name, value in environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
    changed["PYTHONPYCACHEPREFIX"] = str(prefix)
    return changed


def use_bytecode_cache(environ: Mapping[str, str] | None = None) -> Path | None:
    """This process: read and write bytecode under the cache from here on (call it before importing torch)."""
    prefix = bytecode_prefix(os.environ if environ is None else environ)
    if prefix is not None:
        sys.pycache_prefix = str(prefix)
        sys.dont_write_bytecode = False
    return prefix
