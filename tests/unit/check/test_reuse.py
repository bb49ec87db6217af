"""check/reuse.py: the benchmark relies on a correctness record only for the very same subject."""

import json

import pytest

from kernel_opt.check.records import CheckSubject, CorrectnessReport, DeviceInfo
from kernel_opt.check.reuse import check_subject, reusable_check
from kernel_opt.solution.backend import BuildOptions


@pytest.fixture
def files(tmp_path):
    solution, reference = tmp_path / "v1.py", tmp_path / "ref.py"
    solution.write_text("def run_kernel(x, out): ...\n")
    reference.write_text("def reference(x, out): ...\n")
    return solution, reference


def write_record(path, subject, verdict="pass", device="cuda", interpreter=False, dims=None):
    report = CorrectnessReport(verdict=verdict, solution="v1.py", reference="ref.py", backend="triton",
                               device=DeviceInfo(device, "NVIDIA H100 80GB HBM3", "9.0"),
                               interpreter=interpreter, command="correctness_check.py v1.py", dims=dims or {"N": 64},
                               seeds=[0, 1, 2], subject=subject)
    path.write_text(json.dumps(report.to_dict()))
    return path


def test_the_subject_is_the_bytes_of_both_files_and_the_build(files):
    solution, reference = files
    subject = check_subject(solution, reference, BuildOptions("sm_90a", "-lineinfo"))
    assert subject.solution_sha256 != subject.reference_sha256
    assert (subject.arch, subject.nvcc_flags) == ("sm_90a", "-lineinfo")
    assert len(subject.solution_sha256) == 64
    assert list(subject.to_dict()) == ["solution_sha256", "reference_sha256", "arch", "nvcc_flags"]


def test_a_pass_on_the_gpu_for_the_same_subject_and_sizes_is_relied_on(files, tmp_path):
    subject = check_subject(*files, BuildOptions())
    record = write_record(tmp_path / "correctness.json", subject)
    report, reason = reusable_check(record, subject, {"N": 64})
    assert report is not None and report.passed
    assert reason.startswith(f"relied on {record}") and "NVIDIA H100 80GB HBM3" in reason


@pytest.mark.parametrize(("change", "fragment"), [
    (dict(verdict="fail"), "is not a pass"),
    (dict(device="cpu", interpreter=True), "without a GPU"),
    (dict(dims={"N": 128}), "at other sizes"),
    (dict(subject=CheckSubject()), "older version"),
])
def test_anything_else_runs_the_check_again(files, tmp_path, change, fragment):
    subject = check_subject(*files, BuildOptions())
    record = write_record(tmp_path / "correctness.json", change.pop("subject", subject), **change)
    report, reason = reusable_check(record, subject, {"N": 64})
    assert report is None and fragment in reason


def test_an_edit_since_the_check_is_another_subject(files, tmp_path):
    solution, reference = files
    record = write_record(tmp_path / "correctness.json", check_subject(solution, reference, BuildOptions()))
    solution.write_text("def run_kernel(x, out): pass  # edited after the check\n")
    report, reason = reusable_check(record, check_subject(solution, reference, BuildOptions()), {"N": 64})
    assert report is None and "solution_sha256 differ" in reason
    other_build = check_subject(solution, reference, BuildOptions(compiler_flags="--use_fast_math"))
    assert "nvcc_flags" in reusable_check(record, other_build, {"N": 64})[1]


def test_a_missing_or_broken_record_is_a_reason_not_an_error(files, tmp_path):
    subject = check_subject(*files, BuildOptions())
    assert reusable_check(tmp_path / "absent.json", subject, {})[1].endswith("does not exist")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    report, reason = reusable_check(broken, subject, {})
    assert report is None and "could not be read" in reason


@pytest.mark.parametrize("recorded, asked", [(True, False), (False, True)])
def test_a_record_judged_at_other_tolerances_is_not_relied_on(files, tmp_path, recorded, asked):
    subject = check_subject(*files, BuildOptions())
    record = write_record(tmp_path / "correctness.json", subject)
    payload = json.loads(record.read_text())
    payload["kernelbench_tolerances"] = recorded
    record.write_text(json.dumps(payload))
    report, reason = reusable_check(record, subject, {"N": 64}, kernelbench_tolerances=asked)
    assert report is None and "judged at other tolerances" in reason
    assert reusable_check(record, subject, {"N": 64}, kernelbench_tolerances=recorded)[0] is not None
