"""correctness_check --sanitize end to end on the CPU: a stand-in compute-sanitizer runs the real child under the
Triton interpreter and hands back a log recorded on an H100; the verdict, the record and the outputs follow."""

import json
import os
import shlex

import pytest
from conftest import FIXTURES_DIR, REPO_ROOT
from unit.check.test_sanitizer import fake_tool

from kernel_opt.check import correctness
from kernel_opt.check.records import CorrectnessReport
from kernel_opt.check.sanitizer import FINDINGS_EXIT_CODE, sanitizer_command
from kernel_opt.commands.correctness_check import main

pytestmark = pytest.mark.slow  # every test here runs correctness_check's child under the interpreter

FIXTURES = FIXTURES_DIR / "sanitizer"
VECTOR_ADD = REPO_ROOT / "reference" / "vector_add"


# --- correctness_check --sanitize end to end, with a stand-in compute-sanitizer ----------------------


def sanitized_check(tmp_path, monkeypatch, recorded: str, solution="good/vector_add.py", ref=VECTOR_ADD / "ref.py"):
    """correctness_check --sanitize memcheck on the CPU: the stand-in tool runs the real child under the
    Triton interpreter (the GPU check is lifted for the test) and hands back a recorded log."""
    # `recorded`: a fixture's name, or an absolute path; "" for a tool that writes an empty log
    tool = fake_tool(tmp_path / "bin", str(FIXTURES / recorded) if recorded else "")
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(correctness, "check_sanitizer_device", lambda device: None)
    out = tmp_path / "out"
    out.mkdir()
    (out / "correctness.json").write_text('{"the full check": "kept"}')
    code = main([str(VECTOR_ADD / solution), "--ref", str(ref), "--output-dir", str(out), "--sanitize", "memcheck"])
    return code, json.loads((out / "correctness_memcheck.json").read_text()), out, tool


def test_a_memcheck_finding_fails_the_run_with_its_evidence(tmp_path, monkeypatch, capsys):
    code, report, out, tool = sanitized_check(tmp_path, monkeypatch, "memcheck_oob.txt")
    assert code == 3 and report["verdict"] == "solution_error" and report["passed"] is False
    assert report["error"]["kind"] == "sanitizer_finding"
    assert report["error"]["message"].startswith("memcheck found 25 error(s); the first: Invalid __global__ write")
    sanitizer = report["sanitizer"]
    assert (sanitizer["tool"], sanitizer["exit_code"], sanitizer["completed"], sanitizer["errors"]) == (
        "memcheck", FINDINGS_EXIT_CODE, True, 25)
    assert sanitizer["version"] == "2025.3.1.0"
    assert [(f["location"], f["count"]) for f in sanitizer["findings"]] == [("oob.cu:6", 24), (None, 1)]
    # one case, the smallest, one seed; the child's own run of it passed
    assert report["seeds"] == [0] and report["planned_cases"] == 1
    assert [case["dims"] for case in report["cases"]] == [{"n": 1}] and report["cases"][0]["passed"]
    assert any("one case runs, the smallest (n=1" in note for note in report["notes"])
    # the tool ran the child with the caching allocator off and exactly this prefix
    seen = json.loads((out / "fake_tool.json").read_text())
    log_file = out / "sanitizer_memcheck.log"
    assert seen == {"prefix": sanitizer_command(str(tool), "memcheck", log_file)[1:], "caching": "1"}
    assert sanitizer["command"] == shlex.join(sanitizer_command(str(tool), "memcheck", log_file))
    assert log_file.read_text() == (FIXTURES / "memcheck_oob.txt").read_text()
    # the full check's record is not replaced; the findings table is in the sanitizer's own report
    assert json.loads((out / "correctness.json").read_text()) == {"the full check": "kept"}
    markdown = " ".join((out / "correctness_memcheck.md").read_text().split())  # table padding aside
    assert "## compute-sanitizer: memcheck 25 error(s) in one case, the smallest shape (n=1), seed 0." in markdown
    assert ("| Invalid __global__ write of size 4 bytes | error | tail_write(float *, int) | oob.cu:6 "
            "| (232,0,0) / (3,0,0) | 0x7fd682800fa0 |") in markdown
    printed = capsys.readouterr().out
    assert printed.startswith("SOLUTION ERROR (sanitizer_finding): memcheck found 25 error(s)")
    assert f"report: {out / 'correctness_memcheck.md'}" in printed
    assert CorrectnessReport.from_dict(report).sanitizer.findings[0].count == 24


def test_a_clean_sanitized_run_passes_its_one_case(tmp_path, monkeypatch, capsys):
    code, report, out, _ = sanitized_check(tmp_path, monkeypatch, "memcheck_clean.txt")
    assert code == 0 and report["verdict"] == "pass" and report["error"] is None
    assert (report["sanitizer"]["errors"], report["sanitizer"]["findings"]) == (0, [])
    printed = capsys.readouterr().out
    assert printed.startswith("PASS under compute-sanitizer memcheck: no errors, and the smallest case (n=1, seed 0)")
    assert "without --sanitize" in printed


def test_lines_a_clean_summary_does_not_count_are_notes_not_findings(tmp_path, monkeypatch):
    recorded = tmp_path / "note.txt"
    recorded.write_text("========= COMPUTE-SANITIZER\n========= Note: 2 kernels were not instrumented\n"
                        "========= ERROR SUMMARY: 0 errors\n")
    code, report, _, _ = sanitized_check(tmp_path, monkeypatch, str(recorded))
    assert code == 0 and report["verdict"] == "pass"
    assert (report["sanitizer"]["findings"], report["sanitizer"]["tool_messages"]) == (
        [], ["Note: 2 kernels were not instrumented"])


def test_outputs_are_written_before_the_harness_reads_them(tmp_path, monkeypatch):
    """setup()'s torch.empty outputs are copied for the reference (and to float64 for the truth): under
    initcheck that copy would read memory nothing wrote, so the sanitized child fills them first."""
    ref = tmp_path / "ref.py"
    check = "    assert bool(torch.isnan(out).all()), 'out reached the reference unwritten'\n"
    ref.write_text((VECTOR_ADD / "ref.py").read_text().replace("def reference(x, y, out, **_):\n",
                                                               "def reference(x, y, out, **_):\n" + check))
    code, report, _, _ = sanitized_check(tmp_path, monkeypatch, "memcheck_clean.txt", ref=ref)
    assert code == 0, report["error"]


def test_a_sanitizer_that_printed_no_summary_is_exit_4(tmp_path, monkeypatch):
    code, report, _, _ = sanitized_check(tmp_path, monkeypatch, "")
    assert code == 4 and report["error"]["kind"] == "sanitizer_failed"
    assert report["sanitizer"]["completed"] is False
