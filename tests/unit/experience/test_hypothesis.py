"""hypothesis_check: fields present and filled, Expected names a metric, a direction, an amount."""

import json
import subprocess
import sys

import pytest
from experience_fixtures import HYPOTHESIS

from kernel_opt.commands import hypothesis_check
from kernel_opt.experience.hypothesis import check_hypothesis, metrics_in, parse_hypothesis


def test_a_good_hypothesis_passes():
    check = check_hypothesis(HYPOTHESIS)
    assert check.ok and check.problems == []
    assert check.fields["hypothesis"].startswith("Loading each row")
    assert check.metrics_named == ["time", "bandwidth", "DRAM", "SOL"]


def test_markdown_forms_and_continuation_lines():
    text = """## Hypothesis
Stage the K-tile through shared memory with cp.async,
double-buffered.

**Rationale:** long-scoreboard stalls are 62% of issue slots.
- Expected: long scoreboard stalls fall from 62% to under 30%; duration ~1.3x faster.
"""
    fields, repeated = parse_hypothesis(text)
    assert fields["hypothesis"] == "Stage the K-tile through shared memory with cp.async, double-buffered."
    assert fields["rationale"] == "long-scoreboard stalls are 62% of issue slots."
    assert repeated == []
    assert check_hypothesis(text).ok


@pytest.mark.parametrize(
    "text, problems",
    [
        ("", ["Hypothesis: missing; add a line starting with 'Hypothesis:'",
              "Rationale: missing; add a line starting with 'Rationale:'",
              "Expected: missing; add a line starting with 'Expected:'"]),
        ("Hypothesis: use float4\nRationale: TODO\nExpected: DRAM throughput rises to 80%\n",
         ["Rationale: empty; fill it in"]),
        ("Hypothesis: use float4\nRationale:\nExpected: DRAM throughput rises to 80%\n",
         ["Rationale: empty; fill it in"]),
        ("Hypothesis: <one change>\nRationale: r\nExpected: DRAM throughput rises to 80%\n",
         ["Hypothesis: still holds a template slot <one change>; replace it"]),
        ("Hypothesis: h\nRationale: r\nExpected: it will be better by 20%\n",
         ["Expected: names no metric; say which one moves (e.g. DRAM throughput, memory SOL, achieved occupancy, "
          "registers per thread, long-scoreboard stalls, duration)"]),
        ("Hypothesis: h\nRationale: r\nExpected: achieved occupancy 50%\n",
         ["Expected: gives no direction; say whether the metric rises or falls"]),
        ("Hypothesis: h\nRationale: r\nExpected: registers per thread drop a lot\n",
         ["Expected: gives no amount; say roughly how much (e.g. 'from ~45% to >75%', '~1.3x faster')"]),
        ("Hypothesis: a\nHypothesis: b\nRationale: r\nExpected: spills drop to zero\n",
         ["Hypothesis: appears more than once; a version tests one hypothesis"]),
    ],
)
def test_bad_hypotheses_are_rejected_with_each_problem(text, problems):
    check = check_hypothesis(text)
    assert not check.ok
    assert check.problems == problems


@pytest.mark.parametrize(
    "expected, metric",
    [
        ("memory SOL rises from 40% to 75%", "memory SOL"),
        ("SM SOL rises to 70%", "SM SOL"),
        ("shared-memory bank conflicts fall to 0", "bank conflicts"),
        ("tensor pipe utilisation doubles", "tensor pipe"),
        ("spills drop from 48 bytes to 0", "spills"),
        ("L2 hit rate rises from 50% to 80%", "cache hit rate"),
        ("executed instructions drop ~4x", "instructions"),
        ("mio throttle stalls halve", "stall reasons"),
        ("kernel time falls from 120 us to 90 us", "time"),
    ],
)
def test_metric_vocabulary(expected, metric):
    assert metric in metrics_in(expected)
    assert check_hypothesis(f"Hypothesis: h\nRationale: r\nExpected: {expected}\n").ok


def test_cli_exit_codes_and_json(tmp_path, capsys):
    version = tmp_path / "v1"
    version.mkdir()
    (version / "hypothesis.txt").write_text(HYPOTHESIS)
    assert hypothesis_check.main([str(version)]) == 0
    printed = capsys.readouterr().out
    assert "valid (Expected names time, bandwidth, DRAM, SOL)" in printed
    assert 'time prediction: about 1.4x ("duration drops by ~1.4x")' in printed
    (version / "hypothesis.txt").write_text(HYPOTHESIS.replace("duration drops by ~1.4x", "duration drops a lot"))
    assert hypothesis_check.main([str(version)]) == 0
    assert "note: Expected gives the time no number the tools read" in capsys.readouterr().out
    (version / "hypothesis.txt").write_text("Hypothesis: h\nExpected: faster\n")
    assert hypothesis_check.main([str(version / "hypothesis.txt"), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["ok"] is False
    assert payload["problems"] == [
        "Rationale: missing; add a line starting with 'Rationale:'",
        "Expected: gives no amount; say roughly how much (e.g. 'from ~45% to >75%', '~1.3x faster')",
    ]
    assert hypothesis_check.main([str(tmp_path / "v9")]) == 2
    assert "no hypothesis file" in capsys.readouterr().err


def test_wrapper_script_runs(scripts_dir, tmp_path):
    (tmp_path / "hypothesis.txt").write_text(HYPOTHESIS)
    result = subprocess.run(
        [sys.executable, str(scripts_dir / "hypothesis_check.py"), str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["ok"] is True


def test_a_reader_that_closes_the_pipe_ends_the_command_quietly(tmp_path):
    """`hypothesis_check.py X | head -1` printed a BrokenPipeError traceback (2026-11-26): a closed stdout now
    ends the command as SIGPIPE would (exit 141), with nothing on stderr."""
    import subprocess
    import sys

    from conftest import REPO_ROOT

    (tmp_path / "hypothesis.txt").write_text(
        "Hypothesis: unroll the loop\nRationale: issue slots are 90% busy\nExpected: time drops 10% to 4.5 us\n")
    child = subprocess.Popen([sys.executable, str(REPO_ROOT / "skills/kernel-opt-skill/scripts/hypothesis_check.py"),
                              str(tmp_path / "hypothesis.txt")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.close()  # the reader is gone before the command writes anything
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=60) == 141 and stderr == ""
