"""correctness_check --sanitize on a real GPU: every fixture of reference/*/expected.yaml under each tool its
`sanitize:` field names, with the exit and the source line of the first finding it must give; and
workspace.py evaluate choosing racecheck from a kernel's SASS.

Run on the GPU machine with tools/gpu_suite.sh, or all at once (with the plain checks and a table)
with tools/sanitizer_corpus.sh OUT_DIR.
"""

import json
from pathlib import Path

import pytest
import yaml

from kernel_opt.commands import workspace as workspace_command
from kernel_opt.commands.correctness_check import main
from kernel_opt.env.probes import probe_compute_sanitizer

REFERENCE = Path(__file__).resolve().parents[2] / "reference"
SANITIZER = probe_compute_sanitizer()

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not SANITIZER.found, reason=f"needs compute-sanitizer: {SANITIZER.error}")]


def _entries():
    for manifest in sorted(REFERENCE.glob("*/expected.yaml")):
        for entry in yaml.safe_load(manifest.read_text())["fixtures"]:
            for tool, expected in (entry.get("sanitize") or {}).items():
                yield pytest.param(manifest.parent, entry, tool, expected,
                                   id=f"{manifest.parent.name}/{entry['file']}-{tool}")


@pytest.mark.parametrize("problem, entry, tool, expected", list(_entries()))
def test_fixture_gets_its_sanitizer_verdict(problem, entry, tool, expected, tmp_path):
    code = main([str(problem / entry["file"]), "--ref", str(problem / "ref.py"), "--output-dir", str(tmp_path),
                 "--sanitize", tool, *entry.get("args", [])])
    report = json.loads((tmp_path / f"correctness_{tool}.json").read_text())
    sanitizer = report["sanitizer"]
    assert code == expected, (report.get("error"), sanitizer.get("tool_messages"))
    assert sanitizer["completed"] and sanitizer["version"] == SANITIZER.version
    assert report["planned_cases"] == 1 and report["seeds"] == [0]
    assert (tmp_path / f"sanitizer_{tool}.log").is_file() and not (tmp_path / "correctness.json").exists()
    if expected == 0:
        assert (sanitizer["errors"], sanitizer["warnings"], sanitizer["findings"]) == (0, 0, [])
        assert report["cases"][0]["passed"]
    else:
        assert report["error"]["kind"] == "sanitizer_finding" and report["error"]["message"].startswith(tool)
        assert entry["sanitize_at"] in (sanitizer["findings"][0]["location"] or ""), sanitizer["findings"][0]


def test_evaluate_runs_racecheck_for_a_kernel_that_uses_shared_memory_and_fails_it(tmp_path):
    out = tmp_path / "run"
    problem = REFERENCE / "vector_add"
    assert workspace_command.main(["init", str(out), "--kernel", str(problem / "wrong" / "smem_race.cu"), "--ref",
                                   str(problem / "ref.py"), "--iterations", "1", "--name", "vector_add"]) == 0
    assert workspace_command.main(["evaluate", str(out), "v0"]) == 3
    record = json.loads((out / "v0" / "evaluation.json").read_text())
    steps = {step["name"]: step for step in record["steps"]}
    assert (steps["correctness"]["status"], steps["memcheck"]["status"]) == ("ok", "ok")
    # the run copies the kernel to v0/v0.cu, so that is the file the finding names (H100, 2026-11-25)
    assert steps["racecheck"]["status"] == "solution_error" and "v0.cu:22" in steps["racecheck"]["summary"]
    assert steps["benchmark"]["status"] == "skipped" and record["state"] == "failed"
    assert json.loads((out / "v0" / "static_analysis.json").read_text())["kernels"][0]["mix"]["shared_loads"] == 1
