"""The README's main job, `python3 tools/run_example.py`, run here as a newcomer runs it: twice, into fresh
run folders, each reporting both examples (on a machine without a GPU: what ran and what needs one)."""

import json
import subprocess
import sys

import pytest
from conftest import REPO_ROOT as REPO

pytestmark = pytest.mark.slow  # the whole job, twice, in child processes: the longest test of the suite


def _run_example(output_dir):
    completed = subprocess.run(
        [sys.executable, str(REPO / "tools" / "run_example.py"), "--output-dir", str(output_dir)],
        capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    return completed.stdout.split("summary (this run: ")[1]


def test_main_job_runs_here_twice_and_reports_each_example(tmp_path):
    _run_example(tmp_path)
    summary = _run_example(tmp_path)  # the README's command, again as it is: a fresh run folder
    run = tmp_path / "run-2"
    assert summary.startswith(f"{run};")
    assert "softmax, Triton" in summary and "softmax, CUDA" in summary
    assert (tmp_path / "latest").resolve() == run.resolve()
    assert (run / "env_check.md").exists() and (tmp_path / "run-1" / "env_check.md").exists()
    for folder in ("softmax_triton", "softmax_cuda"):
        assert str(run / folder / "final_report.md") in summary  # this run's reports, not the first run's
        assert (run / folder / "final_report.md").exists()
        assert (run / folder / "v0" / "evaluation.json").exists()
        report = (run / folder / "final_report.md").read_text()
        assert "no env_check.json in this folder" not in report  # the run's environment check is in each folder
        assert (run / folder / "env_check.json").read_bytes() == (run / "env_check.json").read_bytes()
    import torch

    if torch.cuda.is_available():
        assert summary.count("evaluated") == 2
    else:  # Triton ran under the interpreter, CUDA was compiled; timing and profiling are listed
        assert summary.count("partial: needs a GPU") == 2
        assert json.loads((run / "softmax_triton" / "v0" / "correctness.json").read_text())["passed"]
        # per example: the Triton check ran under the interpreter, so only CUDA's correctness needs the GPU
        needs = summary.split("needs a GPU (not run here): ")[1].split("; see ")[0]
        assert needs == ("softmax, Triton: memcheck, benchmark, profile, size sweep; "
                         "softmax, CUDA: correctness, memcheck, benchmark, profile, size sweep")
