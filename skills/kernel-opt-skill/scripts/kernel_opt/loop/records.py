"""The loop's records: OUT/run.json, OUT/vN/version.json and OUT/vN/evaluation.json, and how they are read back.

The tools' own records (correctness, benchmark, ncu_summary) live with their stages, each with
the `read_*` function that finds it in a version folder (check/records.py, measure/records.py,
profile/records.py); this module adds the newest profile of a version (its re-profile, if any).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.correctness import BuildOptions
from kernel_opt.core.cli import dim_arguments
from kernel_opt.core.errors import ExitCode, UsageError
from kernel_opt.core.records import Record, check_schema, field_values, read_record
from kernel_opt.measure.records import DEFAULT_TARGET_PERCENT
from kernel_opt.profile.records import NcuSummary, read_profile

RUN_FILE = "run.json"
RUN_SCHEMA = "kernel_opt.run/1"
EVALUATION_FILE = "evaluation.json"
EVALUATION_SCHEMA = "kernel_opt.evaluation/1"
VERSION_FILE = "version.json"
VERSION_SCHEMA = "kernel_opt.version/1"
REFERENCE_FILE = "ref.py"
# A later profile of the same version, beside the run's own (tools/demo_upkeep/reprofile_demo.sh, then
# tools/demo_upkeep/apply_reprofile.py): the version's label under a newer collection and classifier.
REPROFILE_DIR = "reprofile"


@dataclass
class RunRecord:
    """OUT/run.json: what every command of the run needs to know, written once by `init`."""

    kernel_name: str  # the operation, e.g. "softmax": the experience log's --kernel
    backend: str  # a registered backend's name: "cuda", "triton", "modelnew", ...
    solution_pattern: str  # where version n's source lives, relative to OUT: "v{n}/v{n}.cu"
    reference_file: str  # relative to OUT
    dims: dict[str, Any]  # the --NAME=VALUE problem sizes passed to every tool
    iterations_budget: int  # versions v1..vN the run may create; fixed at init
    target_percent: float  # of the roofline ceiling at which the loop may stop
    created_at: str
    source_kernel: str  # the file v0 was copied from
    source_reference: str  # the file ref.py was copied from
    nvcc_flags: str = ""  # passed to every tool that builds a CUDA solution
    arch: str = "auto"
    # Every check of the run judges outputs at KernelBench's atol = rtol = 1e-2 (precision downgrades flagged,
    # zeros and wrong results still caught: check/tolerance.py) instead of the reference-error rule; fixed at init.
    kernelbench_tolerances: bool = False
    schema: str = RUN_SCHEMA

    def solution_path(self, out: Path, number: int) -> Path:
        return out / self.solution_pattern.format(n=number)

    def dim_arguments(self) -> list[str]:
        """The dims as the tools take them: ["--N=4096", "--D=4096"]."""
        return dim_arguments(self.dims)

    def build_options(self) -> BuildOptions:
        """--arch / --nvcc-flags as every tool that compiles takes them."""
        return BuildOptions(self.arch, self.nvcc_flags)

    def tolerance_arguments(self) -> list[str]:
        """--kernelbench-tolerances where the run judges at KernelBench's tolerance, for the tools that check."""
        return ["--kernelbench-tolerances"] if self.kernelbench_tolerances else []

    def build_arguments(self) -> list[str]:
        """--arch / --nvcc-flags for the tools that compile, only where they differ from the default."""
        return self.build_options().arguments()

    def to_dict(self) -> dict[str, Any]:
        """As init writes it; kernelbench_tolerances only where set, so runs made without it read back as written."""
        payload = asdict(self)
        if not self.kernelbench_tolerances:
            del payload["kernelbench_tolerances"]
        return payload

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = RUN_FILE) -> RunRecord:
        check_schema(payload, RUN_SCHEMA, what)
        missing = {"kernel_name", "backend", "solution_pattern", "iterations_budget"} - set(payload)
        if missing:
            raise UsageError(f"{what} lacks {', '.join(sorted(missing))}",
                             hint="it is written by `workspace.py init`; start a new run rather than editing it")
        defaults = {"reference_file": REFERENCE_FILE, "dims": {}, "target_percent": DEFAULT_TARGET_PERCENT,
                    "created_at": "", "source_kernel": "", "source_reference": ""}
        values = {**defaults, **payload}
        _check_run_types(values, what)
        return cls(**field_values(cls, values, schema=RUN_SCHEMA))


_RUN_TEXT_FIELDS = ("kernel_name", "backend", "solution_pattern", "reference_file", "created_at", "source_kernel",
                    "source_reference", "nvcc_flags", "arch")


def _check_run_types(values: dict[str, Any], what: str) -> None:
    """Refuse a run.json whose fields have the wrong types (valid JSON edited by hand): a usage error naming the
    field, never a traceback later in status or next."""
    def wrong(name: str, wanted: str) -> UsageError:
        return UsageError(f"{what}: {name} is {values[name]!r}, not {wanted}",
                          hint="run.json is written by `workspace.py init`; restore it, or start a new run")

    budget = values["iterations_budget"]
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
        raise wrong("iterations_budget", "a whole number >= 0")
    target = values["target_percent"]
    if not isinstance(target, (int, float)) or isinstance(target, bool) or not 0 < target < float("inf"):
        raise wrong("target_percent", "a number of percent above 0, e.g. 90")
    dims = values["dims"]
    if not isinstance(dims, dict) or not all(
            isinstance(value, (int, float, str, bool)) for value in dims.values()):
        raise wrong("dims", "an object of sizes such as {\"N\": 4096}")
    for name in _RUN_TEXT_FIELDS:
        if name in values and not isinstance(values[name], str):
            raise wrong(name, "text")
    if not isinstance(values.get("kernelbench_tolerances", False), bool):
        raise wrong("kernelbench_tolerances", "true or false")


@dataclass
class VersionRecord:
    """OUT/vN/version.json: which version vN was copied from, and when."""

    version: str
    parent: str | None  # None for v0, which was copied from the run's starting kernel
    copied_from: str
    created_at: str
    parent_median_us: float | None = None  # the parent's time when vN was created
    continued_past_target: bool = False  # made by `next --ignore-target` after the target was reached
    schema: str = VERSION_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        """As `init` (v0: no parent, so no parent facts) and `next` (v1 on) have always written it."""
        payload: dict[str, Any] = {"version": self.version, "parent": self.parent, "copied_from": self.copied_from}
        if self.parent is not None:
            payload["parent_median_us"] = self.parent_median_us
        payload["created_at"] = self.created_at
        if self.parent is not None:
            payload["continued_past_target"] = self.continued_past_target
        payload["schema"] = self.schema
        return payload

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = VERSION_FILE) -> VersionRecord:
        check_schema(payload, VERSION_SCHEMA, what)
        return cls(**field_values(cls, payload, schema=VERSION_SCHEMA,
                                  continued_past_target=bool(payload.get("continued_past_target"))))


@dataclass
class StepResult(Record):
    """One step of `evaluate`: which tool, how it ended, how long it took, what it wrote."""

    name: str  # correctness, compile_check, hypothesis, ceilings, benchmark, profile, static_analysis, recommend
    status: str  # ok, failed, usage_error, solution_error, cannot_run_here, skipped
    wall_s: float = 0.0
    exit_code: int | None = None
    summary: str = ""
    outputs: list[str] = field(default_factory=list)


STEP_STATUS_BY_EXIT_CODE = {
    ExitCode.OK: "ok",
    ExitCode.CHECK_FAILED: "failed",
    ExitCode.USAGE: "usage_error",
    ExitCode.SOLUTION_FAULT: "solution_error",
    ExitCode.ENVIRONMENT_FAULT: "cannot_run_here",
}


@dataclass
class EvaluationRecord:
    """OUT/vN/evaluation.json."""

    version: str
    state: str
    exit_code: int
    started_at: str
    wall_s: float
    gpu_available: bool
    against: str | None  # the best version so far that vN was compared and profiled against
    steps: list[StepResult] = field(default_factory=list)
    needs_gpu: list[str] = field(default_factory=list)  # steps this machine could not run, with why
    recommendations: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    schema: str = EVALUATION_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = EVALUATION_FILE) -> EvaluationRecord:
        check_schema(payload, EVALUATION_SCHEMA, what)
        steps = [StepResult.from_dict(step) for step in payload.get("steps") or []]
        return cls(**field_values(cls, payload, steps=steps, schema=EVALUATION_SCHEMA))


# --- finding the records in a run folder -----------------------------------------------------------


def read_run_record(out: Path) -> RunRecord | None:
    """OUT/run.json, or None where there is none; a usage error naming the file when it is not a run record."""
    return read_record(out / RUN_FILE, RunRecord.from_dict)


def read_version_record(folder: Path) -> VersionRecord | None:
    return read_record(folder / VERSION_FILE, VersionRecord.from_dict)


def read_evaluation(folder: Path) -> EvaluationRecord | None:
    return read_record(folder / EVALUATION_FILE, EvaluationRecord.from_dict)


def read_newest_profile(folder: Path) -> tuple[NcuSummary | None, bool]:
    """The version's re-profile (folder/reprofile/ncu_summary.json) when it has one, else its own profile.

    The bool says whether the re-profile was read: the run's own profile stays the record of
    what the run saw, the re-profile is the version's label today.
    """
    newer = read_profile(folder / REPROFILE_DIR)
    return (newer, True) if newer is not None else (read_profile(folder), False)
