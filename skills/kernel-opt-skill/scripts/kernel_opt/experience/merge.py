"""merge: import a teammate's log, and collapse duplicate records into one.

Both run under the log's exclusive lock, copy the old log to `<log>.bak`, and replace it
atomically. Lines this code cannot read are carried over verbatim (someone may repair them);
every record that is not carried over is named in the report, so nothing disappears silently.

- `--from OTHER.jsonl`: each of its records whose content (everything but id, time and
  provenance) is not yet in the log is appended with a new local id and
  `provenance.imported_from = [{"log": OTHER, "id": its id there}]`. Merging the same file
  again adds nothing.
- `--duplicates` (or `--groups` with no ids, its meaning before ids were accepted): records
  with identical content become one record. It keeps the group's highest id (so the log's
  highest id never drops and ids are never reused), the earliest `created_at`, and the other
  ids in `provenance.merged_ids`, where `show` still finds them.
- `--groups "1,3" "2,4,5"` (the original skill's form): each listed group of the log's ids
  becomes one record, whatever its content, after a person or agent decided they describe the
  same experiment. The content is the group's best record (the fastest success, else the
  lowest time after, else the newest), notes joined, the longest hypothesis kept; the id,
  `created_at` and `merged_ids` follow the rule above.
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
    warnings: list[str] = field(default_factory=list)

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
            "warnings": self.warnings,
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


def parse_id_groups(texts: list[str]) -> list[list[int]]:
    """'1,3' '2 4 5' -> [[1, 3], [2, 4, 5]]; ids of the log only ('#3' reads as 3), each in one group at most."""
    groups: list[list[int]] = []
    seen: set[int] = set()
    for text in texts:
        group = []
        for part in (p for p in text.replace(",", " ").split() if p):
            if ":" in part:
                raise UsageError(f"--groups {text!r}: {part} is a curated record, which is read-only",
                                 hint="merge groups name ids of your log (experience_log.py list shows them)")
            try:
                identifier = int(part.lstrip("#"))
            except ValueError:
                raise UsageError(f"--groups {text!r}: {part!r} is not a record id",
                                 hint='write each group as comma-separated ids: --groups "1,3" "2,4,5"') from None
            if identifier in seen:
                raise UsageError(f"--groups: id {identifier} appears in more than one group")
            seen.add(identifier)
            group.append(identifier)
        if group:
            groups.append(group)
    return groups


def _best(records: list[ExperienceRecord]) -> ExperienceRecord:
    """The record whose numbers a merged group keeps: the fastest success, else the lowest time after, else the
    newest (the original skill's choice)."""
    successes = [r for r in records if r.outcome == "success" and r.speedup is not None]
    if successes:
        return max(successes, key=lambda r: (r.speedup, r.id or 0))
    timed = [r for r in records if r.latency_after_us is not None]
    if timed:
        return min(timed, key=lambda r: (r.latency_after_us, -(r.id or 0)))
    return max(records, key=lambda r: r.id or 0)


def _merged_group(members: list[ExperienceRecord]) -> ExperienceRecord:
    """One record standing for `members`: the best one's content under the group's highest id."""
    kept = copy.deepcopy(_best(members))
    kept.id = max(r.id for r in members if r.id is not None)
    notes = list(dict.fromkeys(r.notes.strip() for r in members if r.notes and r.notes.strip()))
    kept.notes = " | ".join(notes) or None
    kept.hypothesis = max((r.hypothesis or "" for r in members), key=len) or None
    kept.created_at = min(r.created_at for r in members)
    merged_ids = set(kept.provenance.get("merged_ids", []))
    imported_from = list(kept.provenance.get("imported_from", []))
    for other in members:
        if other.id != kept.id:
            merged_ids.add(other.id)
        merged_ids.update(other.provenance.get("merged_ids", []))
        imported_from += [item for item in other.provenance.get("imported_from", []) if item not in imported_from]
    merged_ids.discard(kept.id)
    kept.provenance = {**kept.provenance, "merged_ids": sorted(merged_ids)}
    if imported_from:
        kept.provenance["imported_from"] = imported_from
    return kept


def _collapse_listed(lines: list[str], records: list[ExperienceRecord], record_lines: list[int],
                     id_groups: list[list[int]], report: MergeReport) -> list[str]:
    position_of = {record.id: position for position, record in enumerate(records)}
    missing = sorted({i for group in id_groups for i in group if i not in position_of})
    if missing:
        raise UsageError(f"--groups names id(s) not in the log: {', '.join(map(str, missing))}",
                         hint="experience_log.py merge (no options) lists every record with its id")
    replaced: dict[int, str | None] = {}
    for group in id_groups:
        if len(group) < 2:
            report.warnings.append(f"group {group[0]}: one id, kept as it was")
            continue
        members = [records[position_of[i]] for i in group]
        outcomes = sorted({r.outcome for r in members})
        if len(outcomes) > 1:
            report.warnings.append(f"group {','.join(map(str, group))}: outcomes differ ({', '.join(outcomes)}); "
                                   "the merged record keeps its best member's")
        kept = _merged_group(members)
        for member in members:
            replaced[record_lines[position_of[member.id]]] = None
        replaced[record_lines[position_of[kept.id]]] = kept.to_json_line().rstrip("\n")
        report.groups.append({"kept_id": kept.id, "merged_ids": sorted(i for i in group if i != kept.id)})
    report.groups.sort(key=lambda group: group["kept_id"])
    kept_lines = (replaced.get(index, line) for index, line in enumerate(lines))
    return [line for line in kept_lines if line is not None]


def merge(log: Path, source: Path | None = None, groups: bool = False,
          id_groups: list[list[int]] | None = None) -> MergeReport:
    """Import `source`, collapse identical records (`groups`) and/or the listed id groups; see the module docstring."""
    if source is None and not groups and not id_groups:
        raise UsageError("merge needs --from OTHER.jsonl, --duplicates or --groups \"ID,ID\" ...")
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
        if id_groups:
            text = "\n".join(lines) + ("\n" if lines else "")
            contents = parse_log_text(text, log, LOCAL)
            lines = _collapse_listed(contents.lines, contents.records, contents.record_lines, id_groups, report)
        if report.changed:
            text = "\n".join(lines) + "\n"
            backup = rewrite_log(log, text)
            report.backup = str(backup) if backup else None
    return report
