"""Shared test setup: the package import path, and skipping GPU/ncu/nvcc tests where absent."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
FIXTURES_DIR = TESTS_DIR / "fixtures"  # recorded and hand-made inputs the tests share
SKILL_ROOT = REPO_ROOT / "skills" / "kernel-opt-skill"
SCRIPTS_DIR = SKILL_ROOT / "scripts"
REFERENCE_DIR = REPO_ROOT / "reference"

if str(SCRIPTS_DIR) not in sys.path:
    sys.path.insert(0, str(SCRIPTS_DIR))


DEMO_UPKEEP = REPO_ROOT / "tools" / "demo_upkeep"  # the tools that keep demo/ up to date


def load_tool(name: str, folder: Path = REPO_ROOT / "tools") -> ModuleType:
    """Import <folder>/<name>.py (tools/, or DEMO_UPKEEP for the demo's tools): a script outside the package."""
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    gpu = _has_gpu()
    nvcc = shutil.which("nvcc") is not None
    ncu = shutil.which("ncu") is not None
    for item in items:  # markers, not keywords: a test's folder name (tests/unit/profile/ncu/) is a keyword too
        if item.get_closest_marker("gpu") and not gpu:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU (run on the GPU machine: tools/gpu_suite.sh)"))
        if item.get_closest_marker("nvcc") and not nvcc:
            item.add_marker(pytest.mark.skip(reason="needs nvcc on PATH"))
        if item.get_closest_marker("ncu") and not ncu:
            item.add_marker(pytest.mark.skip(reason="needs Nsight Compute (ncu) on PATH"))


@pytest.fixture
def scripts_dir() -> Path:
    return SCRIPTS_DIR


@pytest.fixture
def reference_dir() -> Path:
    return REFERENCE_DIR
