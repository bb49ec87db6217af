"""merge: import a teammate's log, and collapse duplicate records into one.

Both run under the log's exclusive lock, copy the old log to `<log>.bak`, and replace it
atomically. Lines this code cannot read are carried over verbatim (someone may repair them);
every record that is not carried over is named in the report, so nothing disappears silently.

- `--from OTHER.jsonl`: each of its records whose content (everything but id, time and
  provenance) is not yet in the log is appended with a new local id and
  `provenance.imported_from = [{"log": OTHER, "id": its id there}]`. Merging the same file
  again adds nothing.
- `--groups`: records with identical content become one record. It keeps the group's
  highest id (so the log's highest id never drops and ids are never reused), the earliest
  `created_at`, and the other ids in `provenance.merged_ids`, where `show` still finds them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.experience.records import ExperienceRecord, content_key
from kernel_opt.experience.store import LOCAL, SkippedLine, locked, next_id, parse_log_text, read_log, rewrite_log


@dataclass
class MergeReport:
    log: str
    source: str | None = None
    imported: list[dict[str, Any]] = field(default_factory=list)  # {"id": new, "source_id": old}
    duplicates: list[dict[str, Any]] = field(default_factory=list)  # {"source_id": old, "existing_id": id}
    groups: list[dict[str, Any]] = field(default_factory=list)  # {"kept_id": id, "merged_ids": [...]}
    skipped_in_source: list[SkippedLine] = field(default_factory=list)
    skipped_in_log: list[SkippedLine] = field(default_factory=list)  # kept verbatim
    backup: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.imported or self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {
            "log": self.log,
            "source": self.source,
            "changed": self.changed,
            "imported": self.imported,
            "duplicates": self.duplicates,
            "groups": self.groups,
            "skipped_in_source": [line.describe() for line in self.skipped_in_source],
            "kept_unreadable_lines": [line.describe() for line in self.skipped_in_log],
            "backup": self.backup,
        }


def imported_copy(record: ExperienceRecord, new_id: int, log: str) -> ExperienceRecord:
    """Another log's record under a local id, with `provenance.imported_from` naming log and id there."""
    imported = copy.deepcopy(record)
    origin: dict[str, Any] = {"log": log, "id": record.id}
    if record.provenance:
        origin["provenance"] = record.provenance  # ids there belong to that log, so nest them
    imported.id = new_id
    imported.provenance = {"imported_from": [origin]}
    return imported


def _import(
    lines: list[str], records: list[ExperienceRecord], raw: bytes, source: Path, report: MergeReport
) -> list[str]:
    other = read_log(source, origin=LOCAL, lock=False)
    report.skipped_in_source = other.skipped
    known = {content_key(record): record.id for record in records}
    identifier = next_id(raw)
    new_lines = []
    for record in other.records:
        key = content_key(record)
        if key in known:
            report.duplicates.append({"source_id": record.id, "existing_id": known[key]})
            continue
        imported = imported_copy(record, identifier, str(source.resolve()))
        identifier += 1
        known[key] = imported.id
        new_lines.append(imported.to_json_line().rstrip("\n"))
        report.imported.append({"id": imported.id, "source_id": record.id})
    return lines + new_lines


def _collapse(
    lines: list[str], records: list[ExperienceRecord], record_lines: list[int], report: MergeReport
) -> list[str]:
    groups: dict[str, list[int]] = {}
    for position, record in enumerate(records):
        groups.setdefault(content_key(record), []).append(position)
    replaced: dict[int, str | None] = {}  # line index -> new text, or None to drop
    for members in groups.values():
        if len(members) < 2:
            continue
        kept_position = max(members, key=lambda p: records[p].id)
        kept = copy.deepcopy(records[kept_position])
        others = [records[p] for p in members if p != kept_position]
        merged_ids = set(kept.provenance.get("merged_ids", []))
        imported_from = list(kept.provenance.get("imported_from", []))
        for other in others:
            merged_ids.add(other.id)
            merged_ids.update(other.provenance.get("merged_ids", []))
            imported_from += [item for item in other.provenance.get("imported_from", []) if item not in imported_from]
        kept.created_at = min(records[p].created_at for p in members)
        kept.provenance = {**kept.provenance, "merged_ids": sorted(merged_ids)}
        if imported_from:
            kept.provenance["imported_from"] = imported_from
        replaced[record_lines[kept_position]] = kept.to_json_line().rstrip("\n")
        for other_position in members:
            if other_position != kept_position:
                replaced[record_lines[other_position]] = None
        report.groups.append({"kept_id": kept.id, "merged_ids": sorted(o.id for o in others)})
    report.groups.sort(key=lambda group: group["kept_id"])
    result = []
    for index, line in enumerate(lines):
        if index in replaced:
            if replaced[index] is not None:
                result.append(replaced[index])
        else:
            result.append(line)
    return result


def merge(log: Path, source: Path | None = None, groups: bool = False) -> MergeReport:
    """Import `source` and/or collapse duplicate groups in `log`; see the module docstring."""
    if source is None and not groups:
        raise UsageError("merge needs --from OTHER.jsonl, --groups, or both")
    log = Path(log)
    report = MergeReport(log=str(log), source=str(source) if source else None)
    if source is not None:
        source = Path(source)
        if not source.is_file():
            raise UsageError(f"merge --from {source}: no such file")
        if log.exists() and source.resolve() == log.resolve():
            raise UsageError("merge --from names the log itself",
                             hint="to collapse duplicates inside one log use merge --groups")
    with locked(log):
        raw = log.read_bytes() if log.exists() else b""
        contents = parse_log_text(raw.decode("utf-8", errors="replace"), log, LOCAL)
        report.skipped_in_log = contents.skipped
        lines = list(contents.lines)
        if source is not None:
            lines = _import(lines, contents.records, raw, source, report)
        if groups:
            text = "\n".join(lines) + ("\n" if lines else "")
            contents = parse_log_text(text, log, LOCAL)
            lines = _collapse(contents.lines, contents.records, contents.record_lines, report)
        if report.changed:
            text = "\n".join(lines) + "\n"
            backup = rewrite_log(log, text)
            report.backup = str(backup) if backup else None
    return report
