"""The experience log on disk: one JSON record per line, ids that never change, file locking.

Where it lives: `--log PATH`, else $KERNEL_OPT_EXPERIENCE_LOG, else
$XDG_DATA_HOME/kernel-opt-skill/experience.jsonl (~/.local/share/... without XDG_DATA_HOME).
It lives outside the skill folder so reinstalling the skill never loses it. The curated
entries shipped with the skill (experience/learned/curated.jsonl) are read beside it and
never written.

Concurrency: writers hold an exclusive flock on a sidecar `<log>.lock` (never replaced, so the
lock survives the atomic rewrite a merge does); an append writes one whole line with O_APPEND.
Readers hold a shared lock, so they never see half a line.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kernel_opt.core.errors import EnvironmentFault, KernelOptError, UsageError
from kernel_opt.core.files import write_text_atomic
from kernel_opt.experience.records import ExperienceRecord, record_from_dict, validate

ENVIRONMENT_VARIABLE = "KERNEL_OPT_EXPERIENCE_LOG"
SKILL_ROOT = Path(__file__).resolve().parents[3]  # skills/kernel-opt-skill
CURATED_PATH = SKILL_ROOT / "experience" / "learned" / "curated.jsonl"
SUMMARY_NAME = "experiences.md"  # `sync` writes it beside the log, never into the skill folder


def summary_path(log_path: Path) -> Path:
    """Where `sync` writes the human summary of a log: beside it."""
    return Path(log_path).parent / SUMMARY_NAME

LOCAL = "local"
CURATED = "curated"

_LEADING_ID = re.compile(rb'^\s*\{\s*"id"\s*:\s*(\d+)')


def default_log_path(environ: Mapping[str, str] | None = None) -> Path:
    """The per-user log: $KERNEL_OPT_EXPERIENCE_LOG, else the XDG data directory."""
    environ = os.environ if environ is None else environ
    if environ.get(ENVIRONMENT_VARIABLE):
        return Path(environ[ENVIRONMENT_VARIABLE]).expanduser()
    data_home = environ.get("XDG_DATA_HOME") or str(Path(environ.get("HOME", str(Path.home()))) / ".local" / "share")
    return Path(data_home).expanduser() / "kernel-opt-skill" / "experience.jsonl"


@dataclass(frozen=True)
class SkippedLine:
    """A line that holds no usable record; reported, never fatal."""

    path: str
    line_number: int
    reason: str

    def describe(self) -> str:
        return f"{self.path}:{self.line_number}: {self.reason}"


@dataclass(frozen=True)
class Entry:
    """A record and the log it came from: local ids are '12', curated ones 'curated:12'."""

    origin: str
    record: ExperienceRecord

    @property
    def ref(self) -> str:
        return str(self.record.id) if self.origin == LOCAL else f"{self.origin}:{self.record.id}"


@dataclass
class LogContents:
    path: Path
    origin: str
    records: list[ExperienceRecord] = field(default_factory=list)
    skipped: list[SkippedLine] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # every line as read, for lossless rewrites
    record_lines: list[int] = field(default_factory=list)  # 0-based index into `lines` per record

    def entries(self) -> list[Entry]:
        return [Entry(self.origin, record) for record in self.records]


@contextmanager
def locked(path: Path, exclusive: bool = True) -> Iterator[None]:
    """Hold flock on `<path>.lock`: exclusive for writers, shared for readers."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise EnvironmentFault(
            f"cannot open the lock file {lock_path}: {error.strerror}",
            hint=f"pass --log PATH (or set {ENVIRONMENT_VARIABLE}) to a writable folder",
        ) from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        os.close(descriptor)


def parse_log_text(text: str, path: Path, origin: str) -> LogContents:
    """Parse JSONL text; bad lines become SkippedLine entries with their 1-based line number."""
    contents = LogContents(path=path, origin=origin, lines=text.splitlines())
    first_line_of_id: dict[int, int] = {}
    for index, line in enumerate(contents.lines):
        line_number = index + 1
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            contents.skipped.append(
                SkippedLine(str(path), line_number, f"not valid JSON ({error.msg} at column {error.colno})")
            )
            continue
        try:
            record = record_from_dict(data)
        except KernelOptError as error:
            contents.skipped.append(SkippedLine(str(path), line_number, f"invalid record: {error.message}"))
            continue
        if record.id is None:
            contents.skipped.append(SkippedLine(str(path), line_number, "record has no id"))
            continue
        if record.id in first_line_of_id:
            contents.skipped.append(
                SkippedLine(
                    str(path), line_number, f"id {record.id} already used on line {first_line_of_id[record.id]}"
                )
            )
            continue
        first_line_of_id[record.id] = line_number
        contents.records.append(record)
        contents.record_lines.append(index)
    return contents


def read_log(path: Path, origin: str = LOCAL, lock: bool = True) -> LogContents:
    """Read a log; a missing file is an empty log."""
    path = Path(path)
    if not path.exists():
        return LogContents(path=path, origin=origin)
    if path.is_dir():
        raise UsageError(f"the experience log {path} is a folder", hint="pass --log PATH/TO/experience.jsonl")
    raw = None
    if lock and origin == LOCAL:
        try:
            with locked(path, exclusive=False):
                raw = path.read_bytes()
        except EnvironmentFault:
            raw = None  # a log in a folder we cannot write (a teammate's, read-only): read it unlocked
    if raw is None:
        raw = path.read_bytes()
    return parse_log_text(raw.decode("utf-8", errors="replace"), path, origin)


def next_id(raw: bytes) -> int:
    """One more than the highest id anywhere in the file, corrupt lines included.

    Ids are never reused: appends take max + 1, and `merge --groups` keeps each group's
    highest id, so the maximum never drops. Records are written with "id" first, so a
    prefix match finds it without parsing the line (a torn line still shows its id).
    """
    highest = 0
    for line in raw.splitlines():
        match = _LEADING_ID.match(line)
        if match:
            highest = max(highest, int(match.group(1)))
            continue
        try:
            value = json.loads(line).get("id")
        except (ValueError, AttributeError):
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            highest = max(highest, value)
    return highest + 1


def append_records(path: Path, records: list[ExperienceRecord]) -> list[ExperienceRecord]:
    """Validate, give each record the next id, and append them under the lock."""
    for record in records:
        if record.id is not None:
            raise UsageError(f"a new record may not bring its own id (got {record.id}); the log assigns ids")
        validate(record)
    path = Path(path)
    with locked(path):
        raw = path.read_bytes() if path.exists() else b""
        first = next_id(raw)
        for offset, record in enumerate(records):
            record.id = first + offset
        payload = "".join(record.to_json_line() for record in records).encode("utf-8")
        if raw and not raw.endswith(b"\n"):
            payload = b"\n" + payload  # a torn last line stays corrupt; ours starts on a fresh line
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(payload)
                while view:
                    written = os.write(descriptor, view)
                    view = view[written:]
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        except OSError as error:
            raise EnvironmentFault(f"cannot append to {path}: {error.strerror}",
                                   hint="check the disk and the file's permissions") from None
    return records


def rewrite_log(path: Path, text: str) -> Path | None:
    """Replace the log atomically after copying the old one to `<log>.bak`; caller holds the lock.

    Returns the backup's path, or None when there was no old log to back up.
    """
    path = Path(path)
    backup = None
    try:
        mode = None
        if path.exists():
            mode = path.stat().st_mode & 0o777
            backup = path.with_name(path.name + ".bak")
            write_text_atomic(backup, path.read_bytes().decode("utf-8", errors="replace"))
        write_text_atomic(path, text)
        if mode is not None:
            os.chmod(path, mode)  # the temporary file was private; keep the log's own permissions
    except OSError as error:
        raise EnvironmentFault(f"cannot rewrite {path}: {error.strerror}; the old log is unchanged") from None
    return backup


@dataclass
class Experience:
    """Everything a query reads: the user's log and the curated entries beside it."""

    local: LogContents
    curated: LogContents | None

    def entries(self) -> list[Entry]:
        curated = self.curated.entries() if self.curated else []
        return self.local.entries() + curated

    @property
    def skipped(self) -> list[SkippedLine]:
        return self.local.skipped + (self.curated.skipped if self.curated else [])

    def find(self, reference: str) -> Entry:
        """An entry by '12', '#12' or 'curated:3'; an id merged into a group finds the group."""
        text = reference.strip().lstrip("#")
        origin, _, number = text.rpartition(":")
        origin = origin or LOCAL
        if origin not in (LOCAL, CURATED) or not number.isdigit():
            raise UsageError(f"{reference!r} is not a record id", hint="ids look like 12 (your log) or curated:3")
        wanted = int(number)
        entries = [entry for entry in self.entries() if entry.origin == origin]
        for entry in entries:
            if entry.record.id == wanted:
                return entry
        for entry in entries:
            if wanted in entry.record.provenance.get("merged_ids", []):
                return entry
        where = self.local.path if origin == LOCAL else (self.curated.path if self.curated else "the curated entries")
        raise UsageError(f"no record {reference!r} in {where}", hint="run `experience_log.py list` to see the ids")


def load_experience(log_path: Path, curated_path: Path | None = CURATED_PATH) -> Experience:
    curated = read_log(curated_path, origin=CURATED, lock=False) if curated_path is not None else None
    return Experience(local=read_log(log_path), curated=curated)
