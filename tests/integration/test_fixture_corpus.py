"""Every fixture in reference/*/expected.yaml gets the verdict the manifest says it must.

On a machine without a GPU the CPU-checkable fixtures run (Triton interpreter, nvcc) and the
GPU ones must exit 4 where the manifest says so; on a GPU machine every entry runs.
"""

import json

import pytest
import yaml
from conftest import REPO_ROOT

from kernel_opt.commands.correctness_check import main

REFERENCE = REPO_ROOT / "reference"


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


HAS_GPU = _has_gpu()


def _entries():
    for manifest in sorted(REFERENCE.glob("*/expected.yaml")):
        for entry in yaml.safe_load(manifest.read_text())["fixtures"]:
            label = f"{manifest.parent.name}/{entry['file']}" + "".join(entry.get("args", []))
            yield pytest.param(manifest.parent, entry, id=label)


@pytest.mark.slow
@pytest.mark.parametrize("problem, entry", list(_entries()))
def test_fixture_gets_its_expected_verdict(problem, entry, tmp_path):
    on_gpu = HAS_GPU or entry["runs_on"] == "cpu"
    expected_exit = entry["exit"] if on_gpu else entry.get("without_gpu")
    if expected_exit is None:
        pytest.skip("needs a GPU")
    expected_kind = entry.get("kind") if on_gpu else entry.get("kind_without_gpu", "no_gpu")
    arguments = [str(problem / entry["file"]), "--ref", str(problem / entry.get("ref", "ref.py")),
                 "--output-dir", str(tmp_path)]
    arguments += list(entry.get("args", []))
    if not HAS_GPU:
        arguments += ["--seeds", "2"]  # the interpreter is slow; two seeds still exercise reuse across calls
    code = main(arguments)
    report = json.loads((tmp_path / "correctness.json").read_text())
    launches = report.get("launches") or {}
    assert code == expected_exit, report.get("error") or launches.get("problems") or report["warnings"]
    if expected_exit in (3, 4):
        assert report["error"]["kind"] == expected_kind
    assert report["passed"] is (expected_exit == 0)
    if "reason" in entry and expected_exit == entry["exit"]:
        found = " ".join([*(launches.get("problems") or []), (report.get("error") or {}).get("message", "")])
        assert entry["reason"] in found
    if "failure" in entry and expected_exit == entry["exit"]:  # a sentence of "Why it failed"
        assert entry["failure"] in (tmp_path / "correctness.md").read_text()
    if HAS_GPU and "own_kernels" in entry:
        assert launches["profiled"] and launches["own_kernels"] == entry["own_kernels"], launches
    if not HAS_GPU and report.get("error") is None:  # nothing runs on a GPU here, and the record says so
        assert launches["profiled"] is False and "not profiled" in launches["note"]
