"""tools/sanitizer_corpus.py without a GPU: the jobs it derives from expected.yaml and how it judges a row;
and the racecheck decision on the real SASS of two fixtures (nvcc and cuobjdump, no GPU)."""

import pytest
from conftest import REFERENCE_DIR, load_tool

from kernel_opt.check.sanitizer import racecheck_reason
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.profile.static_analysis import StaticAnalysisRequest, analyze_solution

corpus = load_tool("sanitizer_corpus")
VECTOR_ADD = REFERENCE_DIR / "vector_add"


def test_every_fixture_with_a_sanitize_field_gets_its_plain_check_and_each_tool(tmp_path):
    jobs = corpus.manifest_jobs(VECTOR_ADD / "expected.yaml", tmp_path)
    steps = {(job.name, job.step): job for job in jobs}
    assert len(jobs) == 24
    assert {step for name, step in steps if name == "vector_add/good/vector_add.cu"} == {
        "plain", "memcheck", "racecheck", "initcheck", "synccheck"}
    memcheck = steps[("vector_add/wrong/tail_write.cu", "memcheck")]
    assert (memcheck.expected_exit, memcheck.expected_at, memcheck.record) == (3, "tail_write.cu:15",
                                                                              "correctness_memcheck.json")
    assert memcheck.command[-5:] == ["--timeout=20", "--output-dir", str(memcheck.folder), "--sanitize", "memcheck"]
    assert memcheck.command[3:5] == ["--ref", str(VECTOR_ADD / "ref.py")]
    clean = steps[("vector_add/wrong/smem_race.cu", "memcheck")]
    assert (clean.expected_exit, clean.expected_at) == (0, None)
    plain = steps[("vector_add/wrong/divergent_barrier.cu", "plain")]
    assert "--timeout=30" in plain.command and "--sanitize" not in plain.command and plain.expected_exit == 0
    evaluate = corpus.evaluate_job(VECTOR_ADD, tmp_path)
    assert evaluate.expected_exit == 3 and evaluate.expected_steps["racecheck"] == "solution_error"
    assert "smem_race.cu" in evaluate.command[-1] and " evaluate " in evaluate.command[-1]


def test_a_row_needs_the_exit_and_the_line_the_first_finding_names(tmp_path):
    job = corpus.Job("vector_add/wrong/tail_write.cu", "memcheck", 3, [], tmp_path, "correctness_memcheck.json",
                     "tail_write.cu:15")
    found = {"verdict": "solution_error", "error": {"kind": "sanitizer_finding", "message": "memcheck found 255"},
             "sanitizer": {"errors": 255, "warnings": 0, "findings": [{"location": "tail_write.cu:15"}]}}
    ok, got = corpus.judge(job, 3, found)
    assert ok and got.endswith("255 errors, 0 warnings; first at tail_write.cu:15")
    elsewhere = {**found, "sanitizer": {**found["sanitizer"], "findings": [{"location": "tail_write.cu:13"}]}}
    assert corpus.judge(job, 3, elsewhere)[0] is False  # the right exit at the wrong line is a mismatch
    assert corpus.judge(job, 0, {"verdict": "pass", "sanitizer": {"errors": 0, "findings": []}})[0] is False
    assert corpus.judge(job, None, None) == (False, "no exit: killed after 900 s")
    assert corpus.judge(job, 4, None) == (False, "exit 4: no correctness_memcheck.json")


def test_the_evaluate_row_needs_every_named_step_status(tmp_path):
    job = corpus.evaluate_job(VECTOR_ADD, tmp_path)
    steps = [{"name": "correctness", "status": "ok", "summary": "pass"},
             {"name": "memcheck", "status": "ok", "summary": "no errors"},
             {"name": "racecheck", "status": "solution_error", "summary": "racecheck found 1 error(s)"},
             {"name": "benchmark", "status": "skipped", "summary": "an earlier check failed"}]
    assert corpus.judge(job, 3, {"state": "failed", "steps": steps})[0]
    steps[2] = {"name": "racecheck", "status": "skipped", "summary": "no kernel uses shared memory"}
    assert not corpus.judge(job, 3, {"state": "failed", "steps": steps})[0]


@pytest.mark.slow
@pytest.mark.nvcc
@pytest.mark.parametrize("fixture, needed", [("good/vector_add.cu", False), ("wrong/smem_race.cu", True)])
def test_racecheck_is_chosen_from_the_compiled_kernel(tmp_path, fixture, needed):
    try:
        report = analyze_solution(StaticAnalysisRequest(VECTOR_ADD / fixture, tmp_path, build=_sm90()))
    except EnvironmentFault as error:  # no cuobjdump (neither the toolkit's nor triton's)
        pytest.skip(error.message)
    run, why = racecheck_reason(report)
    assert run is needed
    assert why.startswith("uses shared memory (vector_add_kernel: 2 shared-memory instructions, 1024 B shared"
                          if needed else "no kernel uses shared memory (vector_add_kernel")


def _sm90():
    from kernel_opt.solution.backend import BuildOptions

    return BuildOptions(arch="sm_90")

