"""Relying on a correctness record instead of running the check again: only for the very same subject.

`workspace.py evaluate` runs correctness_check on every shape with several seeds, then the
benchmark, whose gate would run that check again at one seed: 7.3 s of a 71 s evaluation of
an fp16 8192x4096 Triton layernorm on an H100. The benchmark may rely on the record
instead when it is a pass, on a GPU, for the same bytes of the solution and ref.py, built the
same way, at the same sizes. Anything else (another file, an edit since, the CPU interpreter, a
record written before subjects were recorded) runs the check again, and the report says why.
The benchmark's own checks of the timed calls' outputs are not affected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_opt.check.records import SUBJECT_FIELDS, CheckSubject, CorrectnessReport
from kernel_opt.core.errors import KernelOptError
from kernel_opt.core.files import file_sha256, read_json
from kernel_opt.solution.backend import BuildOptions


def check_subject(solution: Path, reference: Path, build: BuildOptions) -> CheckSubject:
    """What a correctness verdict is about: the two files' contents and the build options."""
    return CheckSubject(solution_sha256=file_sha256(solution), reference_sha256=file_sha256(reference),
                        arch=build.arch, nvcc_flags=build.compiler_flags)


def reusable_check(record_path: Path, subject: CheckSubject, dims: dict[str, Any],
                   kernelbench_tolerances: bool = False) -> tuple[CorrectnessReport | None, str]:
    """The record at `record_path` when it passed for this subject and these sizes on a GPU; else None and why not."""
    try:
        payload = read_json(record_path)
    except KernelOptError as error:
        return None, f"{record_path} could not be read ({error.message})"
    if payload is None:
        return None, f"{record_path} does not exist"
    try:
        report = CorrectnessReport.from_dict(payload, str(record_path))
    except (KernelOptError, TypeError, ValueError) as error:
        return None, f"{record_path} is not a correctness record ({error})"
    if not report.passed:
        return None, f"{record_path} is not a pass (verdict {report.verdict})"
    if report.device.type != "cuda" or report.interpreter:
        return None, f"{record_path} was checked without a GPU"
    if not report.subject:
        return None, f"{record_path} does not say which files it checked (written by an older version)"
    changed = [name for name in SUBJECT_FIELDS if getattr(report.subject, name) != getattr(subject, name)]
    if changed:
        return None, f"{record_path} is about another subject ({', '.join(changed)} differ)"
    if report.kernelbench_tolerances != kernelbench_tolerances:
        return None, f"{record_path} was judged at other tolerances (--kernelbench-tolerances " \
                     f"{'given' if report.kernelbench_tolerances else 'not given'} there)"
    if dict(report.dims) != dict(dims):
        return None, f"{record_path} was checked at other sizes ({report.dims} here {dims})"
    return report, f"relied on {record_path}: a pass on {report.device.name or 'the GPU'} for the same " \
                   f"solution and ref.py bytes and build ({len(report.cases)} cases)"
