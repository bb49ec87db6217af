"""evaluate's summary sets a faster version's time against the number its Expected gave."""

from run_fixtures import synthetic_run

from kernel_opt.commands.workspace import _prediction_line
from kernel_opt.loop.workspace import run_status


def test_a_faster_version_s_time_is_set_against_its_expected(tmp_path):
    out = tmp_path / "out"
    synthetic_run(out)
    status = run_status(out)
    assert _prediction_line(status, out / "v1") == (
        'prediction: held: 1.250x against v0 where Expected said about 1.3x ("time drops ~1.3x")')
    assert _prediction_line(status, out / "v2") is None  # slower: the comparison's verdict says so already
    (out / "v1" / "hypothesis.txt").write_text(
        "Hypothesis: x\nRationale: y\nExpected: DRAM throughput rises and time drops about 2x against v0\n")
    assert _prediction_line(run_status(out), out / "v1").startswith(
        "prediction: fell short: 1.250x against v0 where Expected said about 2x")
