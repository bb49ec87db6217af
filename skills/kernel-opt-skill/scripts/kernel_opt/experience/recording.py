"""Build a new record from what the user typed and what a version folder measured.

Rules: a measured number wins over a typed one, and a typed number that disagrees with the
measurement is refused (retyping is how wrong numbers got into the old log). The outcome is
the measured verdict unless the user gives one; a given outcome that contradicts the
measurement needs `--force` and a note saying why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.experience.evidence import VersionEvidence
from kernel_opt.experience.labels import normalize_backend, normalize_bottleneck, normalize_chip, normalize_outcome
from kernel_opt.experience.records import ExperienceRecord, validate
from kernel_opt.measure.verdicts import comparison_verdict

# A typed value within 1% (or 0.05 absolute, one rounded decimal of a percentage) of the
# measured one is the same number written with fewer digits; the measured value is kept.
TYPED_VALUE_REL_TOLERANCE = 0.01
TYPED_VALUE_ABS_TOLERANCE = 0.05

# record field -> the command-line flag that sets it, for messages
FLAGS: dict[str, str] = {
    "backend": "--backend",
    "chip": "--chip",
    "dims": "--dims",
    "iteration": "--iteration",
    "bottleneck": "--bottleneck",
    "stall": "--stall",
    "speedup": "--speedup",
    "latency_before_us": "--latency-before",
    "latency_after_us": "--latency-after",
    "memory_sol_before_pct": "--memory-sol-before",
    "memory_sol_after_pct": "--memory-sol-after",
    "sm_sol_before_pct": "--sm-sol-before",
    "sm_sol_after_pct": "--sm-sol-after",
    "occupancy_before_pct": "--occupancy-before",
    "occupancy_after_pct": "--occupancy-after",
}


@dataclass
class NewRecord:
    record: ExperienceRecord
    measured_outcome: str | None
    warnings: list[str] = field(default_factory=list)
    not_measured: list[str] = field(default_factory=list)


def _same_number(typed: float, measured: float) -> bool:
    return math.isclose(typed, measured, rel_tol=TYPED_VALUE_REL_TOLERANCE, abs_tol=TYPED_VALUE_ABS_TOLERANCE)


def _merge_measured(given: dict[str, Any], measured: dict[str, Any], source: str) -> dict[str, Any]:
    """Fill typed fields from measured ones; refuse typed values that contradict them."""
    merged = dict(given)
    for name, value in measured.items():
        if value is None or value == {}:  # an empty dims object records nothing
            continue
        typed = given.get(name)
        if typed is None or typed == {}:
            merged[name] = value
            continue
        flag = FLAGS.get(name, f"--{name.replace('_', '-')}")
        if name == "chip":
            typed_chip = normalize_chip(typed, field=flag)
            measured_chip = normalize_chip(" ".join(p for p in (measured.get("chip"), measured.get("chip_name")) if p))
            if typed_chip.arch != measured_chip.arch or (
                typed_chip.name and measured_chip.name and typed_chip.name != measured_chip.name
            ):
                raise UsageError(f"{flag} {typed!r} contradicts {source}, which ran on {measured_chip.describe()}",
                                 hint=f"drop {flag}; the chip is read from the recorded run")
            merged[name] = value
            continue
        if name == "bottleneck":
            agree = normalize_bottleneck(typed, field=flag) == value
        elif name == "backend":
            agree = normalize_backend(typed, field=flag) == value
        elif isinstance(value, float) and isinstance(typed, (int, float)):
            agree = _same_number(float(typed), value)
        else:
            agree = typed == value
        if not agree:
            raise UsageError(
                f"{flag} {typed!r} contradicts the measured value {value!r} in {source}",
                hint=f"drop {flag}: with --from, measured numbers are copied from the version folder",
            )
        merged[name] = value
    return merged


def build_record(
    given: dict[str, Any],
    evidence: VersionEvidence | None = None,
    force: bool = False,
) -> NewRecord:
    """The record to append, from typed fields (`given`, ExperienceRecord names) and evidence.

    `given["outcome"]` may be None: the measured verdict is used. Raises UsageError when the
    outcome cannot be decided or contradicts the measurement without --force and --notes.
    """
    given = {name: value for name, value in given.items() if value is not None}
    warnings: list[str] = []
    not_measured: list[str] = []
    if evidence is not None:
        measured = evidence.record_fields()
        typed_hypothesis = given.get("hypothesis")
        if typed_hypothesis and measured.get("hypothesis") and typed_hypothesis.strip() != measured["hypothesis"]:
            warnings.append(f"--hypothesis replaces the one in {evidence.version_dir / 'hypothesis.txt'}")
            measured["hypothesis"] = typed_hypothesis
        fields_ = _merge_measured(given, measured, str(evidence.version_dir))
        measured_outcome = evidence.measured_outcome
        warnings += evidence.warnings
        not_measured += evidence.not_measured
        if not fields_.get("optimization") and fields_.get("hypothesis"):
            fields_["optimization"] = fields_["hypothesis"]
            warnings.append("--optimization not given: the Hypothesis line of hypothesis.txt stands in for it")
    else:
        fields_ = dict(given)
        speedup = fields_.get("speedup")
        measured_outcome = comparison_verdict(float(speedup), None, None, correct=True) if speedup is not None else None

    typed_outcome = normalize_outcome(fields_.pop("outcome", None))
    notes = fields_.get("notes")
    if typed_outcome is None and measured_outcome is None:
        raise UsageError(
            "the outcome is not measured here, so --outcome is required",
            hint="pass --outcome success|neutral|failure, or record from a version compared with "
            "benchmark.py --against (add --from DIR/vN) so the verdict is measured",
        )
    agreeing_source = "measured" if evidence is not None else "computed"
    if typed_outcome is None:
        outcome, source = measured_outcome, agreeing_source
    elif measured_outcome is None:
        outcome, source = typed_outcome, "given"
    elif typed_outcome == measured_outcome:
        outcome, source = typed_outcome, agreeing_source
    else:
        described = _describe_measurement(fields_, measured_outcome)
        if not force:
            raise UsageError(
                f"--outcome {typed_outcome} contradicts the measurement: {described}",
                hint="drop --outcome to record the measured verdict, or pass --force with --notes saying why "
                "the measurement is wrong",
            )
        if not notes:
            raise UsageError("--force needs --notes saying why the measured outcome is overridden")
        outcome, source = typed_outcome, "forced"
        warnings.append(f"outcome forced to {typed_outcome} against the measurement ({described})")

    if not fields_.get("optimization"):
        raise UsageError("field 'optimization' is required: say what this version changed",
                         hint="pass --optimization TEXT")
    for name in ("kernel", "backend"):
        if not fields_.get(name):
            raise UsageError(f"field {name!r} is required: pass --{name}")
    record = ExperienceRecord(id=None, outcome=outcome, outcome_source=source, **fields_)
    return NewRecord(validate(record), measured_outcome, warnings, not_measured)


def _describe_measurement(fields_: dict[str, Any], verdict: str) -> str:
    if fields_.get("correct") is False:
        return "the version failed its correctness check, so it is a failure"
    speedup = fields_.get("speedup")
    if speedup is None:
        return f"measured {verdict}"
    interval = ""
    if fields_.get("speedup_ci_low") is not None and fields_.get("speedup_ci_high") is not None:
        interval = f" [{fields_['speedup_ci_low']:.3f}, {fields_['speedup_ci_high']:.3f}]"
    return f"speedup {speedup:.3f}x{interval} is a {verdict}"
