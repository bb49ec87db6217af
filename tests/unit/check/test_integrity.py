"""Integrity checks are plugins: the registry, the verdict they enter, and a toy check run through the real check.

The toy (tests/integrity_toy.py) is the whole of what a new check takes: one module, registered
here with one line. No product file knows it, yet the correctness check's child runs it, its
result lands under its own key in correctness.json, fails the verdict with its reason, and gets
its section in correctness.md.
"""

import json
import os
from pathlib import Path

import pytest
from conftest import FIXTURES_DIR, REFERENCE_DIR, TESTS_DIR
from integrity_toy import RepeatCheck

from kernel_opt.check.integrity import registry
from kernel_opt.check.integrity.protocol import When
from kernel_opt.commands.correctness_check import main
from kernel_opt.core.errors import UsageError

VECTOR_ADD = REFERENCE_DIR / "vector_add"
FLICKERS = FIXTURES_DIR / "integrity_toy" / "flickers.py"


@pytest.fixture
def toy_check(monkeypatch):
    """The toy registered in this process, and importable by name in the child (which inherits PYTHONPATH)."""
    registry.register(RepeatCheck)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")])))
    yield RepeatCheck
    registry.unregister(RepeatCheck.name)


def check(tmp_path: Path, solution: Path, capsys) -> tuple[int, dict, str, str]:
    code = main([str(solution), "--ref", str(VECTOR_ADD / "ref.py"), "--output-dir", str(tmp_path), "--device", "cpu",
                 "--seeds", "1", "--n=1000"])
    return (code, json.loads((tmp_path / "correctness.json").read_text()), (tmp_path / "correctness.md").read_text(),
            capsys.readouterr().out)


def test_the_built_in_checks_run_in_their_order():
    assert [check.name for check in registry.checks()] == [
        "tampering", "output_poisoning", "input_mutation", "launches", "rounding_probe", "redrawn_weights"]
    assert [check.name for check in registry.checks(When.AFTER_CASES)] == ["launches", "rounding_probe",
                                                                           "redrawn_weights"]
    assert registry.child_names() == ()


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_a_planted_wrong_solution_passes_the_built_in_checks(tmp_path, capsys):
    code, record, markdown, _ = check(tmp_path, FLICKERS, capsys)
    assert code == 0 and record["verdict"] == "pass" and "repeat" not in record


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_a_toy_check_registered_by_one_line_fails_it_end_to_end(toy_check, tmp_path, capsys):
    assert registry.child_names() == ("integrity_toy:RepeatCheck",)
    code, record, markdown, out = check(tmp_path, FLICKERS, capsys)
    assert code == 1 and record["verdict"] == "fail" and all(case["passed"] for case in record["cases"])
    assert record["repeat"] == {"calls": 3, "differing": ["out"]}
    assert list(record).index("repeat") == list(record).index("rounding_probe") + 1  # after the built-in ones
    assert out.startswith("FAIL (Triton interpreter on the CPU): the outputs are not a function of the inputs alone.")
    assert "  - output 'out' changed between 3 calls on the same inputs" in out
    assert "## Repeated calls\n\n3 calls on the same inputs; outputs that changed: out.\n" in markdown
    assert "- output 'out' changed between 3 calls on the same inputs" in markdown


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_an_honest_solution_passes_the_toy_check_too(toy_check, tmp_path, capsys):
    code, record, markdown, _ = check(tmp_path, VECTOR_ADD / "good" / "vector_add.py", capsys)
    assert code == 0 and record["repeat"] == {"calls": 3, "differing": []}
    assert "## Repeated calls" in markdown


def test_a_check_s_name_is_its_own_and_the_child_must_be_able_to_import_it(toy_check):
    class Impostor(RepeatCheck):
        pass

    with pytest.raises(UsageError, match="an integrity check named 'repeat' is already registered"):
        registry.register(Impostor)
    registry.register(RepeatCheck)  # the same class again is no change
    assert [check.name for check in registry.checks()].count("repeat") == 1
    with pytest.raises(UsageError, match="integrity check nowhere:Nothing cannot be imported in the child process"):
        registry.register_named(("nowhere:Nothing",))


def test_a_check_s_section_reads_back_in_its_place_even_where_no_check_claims_it():
    from kernel_opt.check.records import CorrectnessReport

    payload = {"verdict": "pass", "backend": "triton", "dims": {}, "build": None, "launches": {"profiled": False},
               "repeat": {"calls": 3, "differing": []}, "error": None}
    report = CorrectnessReport.from_dict(payload)
    assert report.integrity == {"launches": {"profiled": False}, "repeat": {"calls": 3, "differing": []}}
    written = list(report.to_dict())
    assert written[written.index("build") + 1:written.index("error")] == ["launches", "repeat"]
