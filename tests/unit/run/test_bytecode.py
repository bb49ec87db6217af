"""The skill's cache folder, and compiled Python kept there where the environment turns Python's cache off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kernel_opt.core.cache import cache_dir
from kernel_opt.run.bytecode import bytecode_prefix, use_bytecode_cache, with_bytecode_cache
from kernel_opt.run.runner import child_environment


def test_cache_dir_precedence():
    home = Path.home()
    assert cache_dir({"KERNEL_OPT_CACHE_DIR": "/x/ko", "XDG_CACHE_HOME": "/y"}) == Path("/x/ko")
    assert cache_dir({"XDG_CACHE_HOME": "/y"}) == Path("/y/kernel-opt-skill")
    assert cache_dir({}) == home / ".cache" / "kernel-opt-skill"


def test_the_prefix_is_used_only_where_python_would_keep_no_bytecode():
    off = {"PYTHONDONTWRITEBYTECODE": "1", "KERNEL_OPT_CACHE_DIR": "/c"}
    assert bytecode_prefix(off) == Path("/c/pycache")
    assert bytecode_prefix({"KERNEL_OPT_CACHE_DIR": "/c"}) is None  # Python's own __pycache__ folders serve
    assert bytecode_prefix({**off, "PYTHONDONTWRITEBYTECODE": ""}) is None  # empty is unset, as Python reads it
    assert bytecode_prefix({**off, "PYTHONPYCACHEPREFIX": "/mine"}) is None  # the user's own prefix stays
    assert bytecode_prefix({**off, "KERNEL_OPT_BYTECODE_CACHE": "off"}) is None
    assert bytecode_prefix({**off, "KERNEL_OPT_BYTECODE_CACHE": " No "}) is None


def test_a_child_environment_trades_the_switch_for_the_prefix_and_leaves_the_rest():
    given = {"PYTHONDONTWRITEBYTECODE": "1", "KERNEL_OPT_CACHE_DIR": "/c", "PATH": "/bin"}
    changed = with_bytecode_cache(given)
    assert changed == {"PYTHONPYCACHEPREFIX": "/c/pycache", "KERNEL_OPT_CACHE_DIR": "/c", "PATH": "/bin"}
    assert given["PYTHONDONTWRITEBYTECODE"] == "1"  # a copy was changed
    untouched = {"PATH": "/bin"}
    assert with_bytecode_cache(untouched) is untouched


def test_this_process_reads_and_writes_under_the_prefix(monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert use_bytecode_cache({"PYTHONDONTWRITEBYTECODE": "1", "KERNEL_OPT_CACHE_DIR": "/c"}) == Path("/c/pycache")
    assert sys.pycache_prefix == "/c/pycache" and sys.dont_write_bytecode is False
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert use_bytecode_cache({"KERNEL_OPT_BYTECODE_CACHE": "off", "PYTHONDONTWRITEBYTECODE": "1"}) is None
    assert sys.dont_write_bytecode is True


def test_a_worker_child_keeps_the_bytecode_of_what_it_imports_in_the_cache(tmp_path, monkeypatch):
    """Where the image says PYTHONDONTWRITEBYTECODE, a child's imports are compiled once and read back after."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "helper_module.py").write_text("VALUE = 7\n")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("KERNEL_OPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    environment = child_environment({"PYTHONPATH": str(source)})
    subprocess.run([sys.executable, "-c", "import helper_module; assert helper_module.VALUE == 7"],
                   env=environment, check=True, timeout=60)
    kept = list((tmp_path / "cache" / "pycache").rglob("helper_module.*.pyc"))
    assert len(kept) == 1 and not (source / "__pycache__").exists()


def test_only_the_console_script_sets_the_cache_for_its_process(monkeypatch, capsys):
    """kernel-opt in a process of its own keeps its bytecode; main() called in-process changes nothing global."""
    from kernel_opt import main as entry

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("KERNEL_OPT_CACHE_DIR", "/c")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.delenv("KERNEL_OPT_BYTECODE_CACHE", raising=False)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "argv", ["kernel-opt", "--help"])
    assert entry.main() == 0 and sys.pycache_prefix is None
    assert entry.console() == 0 and sys.pycache_prefix == "/c/pycache"
    capsys.readouterr()
