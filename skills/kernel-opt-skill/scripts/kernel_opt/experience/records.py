"""The experience record: one optimization step, what it changed and what it measured.

A record is validated whenever it is built from user input or read from a log, and an error
names the field at fault. Units are part of the field names (`_us`, `_pct`); `speedup` is
old_time / new_time, so above 1 means the step made the kernel faster.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

from kernel_opt.core.cli import parse_dim_value
from kernel_opt.core.errors import UsageError
from kernel_opt.core.records import now_iso
from kernel_opt.experience.labels import normalize_backend, normalize_bottleneck, normalize_chip, normalize_outcome
from kernel_opt.solution.families import kernel_family, normalize_kernel

SCHEMA_VERSION = 1
# measured: the verdict of a recorded comparison; computed: from a typed --speedup (no
# interval); given: typed where nothing was measured; forced: typed against the measurement.
OUTCOME_SOURCES = ("measured", "computed", "given", "forced")
STRATEGY_MAX_CHARS = 48

_PERCENT_FIELDS = (
    "memory_sol_before_pct",
    "memory_sol_after_pct",
    "sm_sol_before_pct",
    "sm_sol_after_pct",
    "occupancy_before_pct",
    "occupancy_after_pct",
)
_POSITIVE_FIELDS = ("latency_before_us", "latency_after_us", "speedup", "speedup_ci_low", "speedup_ci_high")
_TEXT_FIELDS = (
    "kernel", "kernel_family", "backend", "chip", "chip_name", "bottleneck", "bottleneck_after", "stall",
    "strategy", "optimization", "hypothesis", "expected", "outcome", "notes", "baseline", "version_dir",
)


@dataclass
class ExperienceRecord:
    """One step of an optimization run. `id` comes first: the store reads it from line starts."""

    id: int | None
    kernel: str
    backend: str
    optimization: str
    outcome: str
    strategy: str = ""
    kernel_family: str = ""
    chip: str | None = None  # sm_XY
    chip_name: str | None = None  # "H100"; None when only the architecture is known
    bottleneck: str | None = None  # the classifier's label for the version the change started from
    bottleneck_after: str | None = None  # and for the version it produced
    stall: str | None = None  # top warp-stall reason before the change, e.g. "long_scoreboard"
    dims: dict[str, Any] = field(default_factory=dict)
    iteration: int | None = None  # N of the version folder vN
    baseline: str | None = None  # the version it was compared against, e.g. "v2"
    hypothesis: str | None = None
    expected: str | None = None
    correct: bool | None = None
    speedup: float | None = None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    latency_before_us: float | None = None
    latency_after_us: float | None = None
    memory_sol_before_pct: float | None = None
    memory_sol_after_pct: float | None = None
    sm_sol_before_pct: float | None = None
    sm_sol_after_pct: float | None = None
    occupancy_before_pct: float | None = None
    occupancy_after_pct: float | None = None
    outcome_source: str = "given"  # one of OUTCOME_SOURCES
    notes: str | None = None
    version_dir: str | None = None
    created_at: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)  # merged_ids, imported_from
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json_line(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(", ", ": ")) + "\n"


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ExperienceRecord))
# Fields that say where a record lives or came from, not what it measured: two records that
# differ only here describe the same experience.
BOOKKEEPING_FIELDS = frozenset({"id", "created_at", "provenance"})


def strategy_slug(text: str) -> str:
    """A short grouping key: 'Vectorized float4 loads!' -> 'vectorized_float4_loads'."""
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if len(slug) > STRATEGY_MAX_CHARS:
        slug = slug[:STRATEGY_MAX_CHARS].rsplit("_", 1)[0]
    return slug


def validate(record: ExperienceRecord) -> ExperienceRecord:
    """Normalise labels and check every field in place; raise UsageError naming the bad field."""
    _normalise_text_and_labels(record)
    _check_numbers(record)
    _check_provenance(record)
    return record


def _normalise_text_and_labels(record: ExperienceRecord) -> None:
    for name in _TEXT_FIELDS:
        value = getattr(record, name)
        if value is not None and not isinstance(value, str):
            raise UsageError(f"field {name!r} must be text, got {value!r}")
        if isinstance(value, str):
            setattr(record, name, value.strip())
    for name in ("kernel", "backend", "optimization", "outcome"):
        if not getattr(record, name):
            raise UsageError(f"field {name!r} is required and may not be empty", hint=f"pass --{name}")
    record.kernel = normalize_kernel(record.kernel)
    record.kernel_family = kernel_family(record.kernel)
    record.backend = normalize_backend(record.backend)
    record.outcome = normalize_outcome(record.outcome)
    record.bottleneck = normalize_bottleneck(record.bottleneck or None)
    record.bottleneck_after = normalize_bottleneck(record.bottleneck_after or None, field="bottleneck_after")
    record.strategy = strategy_slug(record.strategy or record.optimization)
    if not record.strategy:
        raise UsageError("field 'strategy' has no letters or digits",
                         hint="name the strategy, e.g. --strategy vector_loads")
    if record.chip or record.chip_name:
        chip = normalize_chip(" ".join(part for part in (record.chip, record.chip_name) if part))
        record.chip, record.chip_name = chip.arch, chip.name
    record.chip = record.chip or None
    for name in ("chip_name", "stall", "hypothesis", "expected", "notes", "baseline", "version_dir"):
        if getattr(record, name) == "":
            setattr(record, name, None)
    if record.stall is not None:
        record.stall = re.sub(r"[\s\-]+", "_", record.stall.lower())


def _check_numbers(record: ExperienceRecord) -> None:
    _check_id(record)
    _check_dims(record.dims)
    if record.iteration is not None and (
        isinstance(record.iteration, bool) or not isinstance(record.iteration, int) or record.iteration < 0
    ):
        raise UsageError(f"field 'iteration' must be a version number >= 0, got {record.iteration!r}")
    if record.correct is not None and not isinstance(record.correct, bool):
        raise UsageError(f"field 'correct' must be true or false, got {record.correct!r}")
    for name in _PERCENT_FIELDS:
        value = _check_number(record, name)
        if value is not None and not 0.0 <= value <= 100.0:
            raise UsageError(f"field {name!r} is a percentage and must lie in [0, 100], got {value!r}")
    for name in _POSITIVE_FIELDS:
        value = _check_number(record, name)
        if value is not None and value <= 0:
            raise UsageError(f"field {name!r} must be positive, got {value!r}")
    if (
        record.speedup_ci_low is not None
        and record.speedup_ci_high is not None
        and record.speedup_ci_low > record.speedup_ci_high
    ):
        raise UsageError(
            f"fields 'speedup_ci_low' ({record.speedup_ci_low}) and 'speedup_ci_high' ({record.speedup_ci_high}) "
            "are reversed"
        )


def _check_provenance(record: ExperienceRecord) -> None:
    if record.outcome_source not in OUTCOME_SOURCES:
        raise UsageError(
            f"field 'outcome_source' must be one of {', '.join(OUTCOME_SOURCES)}, got {record.outcome_source!r}"
        )
    if record.outcome_source == "forced" and not record.notes:
        raise UsageError("field 'notes' is required when the outcome was forced against the measurement")
    if not record.created_at:
        record.created_at = now_iso()
    try:
        datetime.fromisoformat(record.created_at)
    except (TypeError, ValueError):
        raise UsageError(f"field 'created_at' must be an ISO 8601 time, got {record.created_at!r}") from None
    if not isinstance(record.provenance, dict):
        raise UsageError(f"field 'provenance' must be an object, got {record.provenance!r}")
    if isinstance(record.schema_version, bool) or record.schema_version != SCHEMA_VERSION:
        raise UsageError(
            f"field 'schema_version' is {record.schema_version!r}; this kernel-opt reads version {SCHEMA_VERSION}",
            hint="update kernel-opt-skill to read records written by a newer version",
        )


def _check_id(record: ExperienceRecord) -> None:
    if record.id is not None and (isinstance(record.id, bool) or not isinstance(record.id, int) or record.id < 1):
        raise UsageError(f"field 'id' must be a positive integer, got {record.id!r}")


def _check_number(record: ExperienceRecord, name: str) -> float | None:
    value = getattr(record, name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"field {name!r} must be a finite number, got {value!r}")
    setattr(record, name, float(value))
    return float(value)


def _check_dims(dims: Any) -> None:
    if not isinstance(dims, dict):
        raise UsageError(f"field 'dims' must be an object such as {{\"N\": 4096}}, got {dims!r}")
    for key, value in dims.items():
        if not isinstance(key, str) or not key:
            raise UsageError(f"field 'dims' has a key that is not a name: {key!r}")
        if not isinstance(value, (int, float, str, bool)):
            raise UsageError(f"field 'dims' value for {key!r} must be a number or text, got {value!r}")


def record_from_dict(data: Any) -> ExperienceRecord:
    """Build and validate a record from a parsed JSON object (a log line, a teammate's file)."""
    if not isinstance(data, dict):
        raise UsageError(f"a record must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(FIELD_NAMES))
    if unknown:
        raise UsageError(
            f"unknown field {unknown[0]!r}" + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
        )
    missing = [name for name in ("kernel", "backend", "optimization", "outcome") if name not in data]
    if missing:
        raise UsageError(f"field {missing[0]!r} is required and missing")
    return validate(ExperienceRecord(**{"id": None, **data}))


def content_key(record: ExperienceRecord) -> str:
    """A digest of what a record says (not where it lives): equal keys mean duplicate records."""
    payload = {key: value for key, value in record.to_dict().items() if key not in BOOKKEEPING_FIELDS}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# A latency's unit -> microseconds, the unit the record stores (latency_before_us).
LATENCY_UNITS_US: dict[str, float] = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6}
_LATENCY = re.compile(r"^\s*([0-9.eE+-]+)\s*([a-zµμ]*)\s*$")


def parse_latency_us(text: str, bare_unit: str, flag: str) -> tuple[float, bool]:
    """'4.2ms' -> (4200.0, True); '4.2' read in `bare_unit` ('ms' -> 4200.0, False). A usage error names the flag.

    The original skill took latencies in milliseconds and this log stores microseconds: a
    number without a unit is read in `bare_unit` and the caller says so, so a typed value is
    never silently 1000x off.
    """
    match = _LATENCY.match(str(text))
    unit = match.group(2) if match else ""
    if match is None or (unit and unit not in LATENCY_UNITS_US):
        raise UsageError(f"{flag} {text!r} is not a time such as 4.2, 4.2ms or 4200us",
                         hint=f"units: {', '.join(LATENCY_UNITS_US)}; a bare number is read in --latency-unit "
                         f"(default ms, as in the original skill)")
    try:
        value = float(match.group(1))
    except ValueError:
        raise UsageError(f"{flag} {text!r} is not a number") from None
    return value * LATENCY_UNITS_US[unit or bare_unit], bool(unit)


def parse_dims(text: str | None) -> dict[str, Any]:
    """'N=4096,D=1024', 'N=4096 D=1024' or '{"N": 4096}' -> {'N': 4096, 'D': 1024}.

    Anything else (e.g. '4096x4096') is kept verbatim under 'shape' rather than guessed at.
    """
    if text is None or not text.strip():
        return {}
    text = text.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise UsageError(f"--dims is not valid JSON: {error}") from None
        _check_dims(value)
        return value
    parts = [part for part in re.split(r"[,\s]+", text) if part]
    if parts and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=[^=]+", part) for part in parts):
        return {key: parse_dim_value(value) for key, value in (part.split("=", 1) for part in parts)}
    return {"shape": text}
