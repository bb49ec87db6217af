"""experience_log.py merge, sync and stats: keeping the log tidy, and summarising it."""

from __future__ import annotations

import sys
from pathlib import Path

from kernel_opt.commands.experience_subcommands.output import PROG, entries_table, print_entries, report_skipped
from kernel_opt.core.cli import print_json
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.core.files import write_text_atomic
from kernel_opt.experience.merge import merge, parse_id_groups
from kernel_opt.experience.store import Entry, load_experience, summary_path
from kernel_opt.experience.summary import compute_stats, render_stats, render_summary, stats_to_dict


def merge_command(args, log_path: Path, curated_path, wants_json: bool) -> int:
    """`merge`: import a teammate's log and/or collapse groups of records; alone, list them for review."""
    id_groups = parse_id_groups(args.groups or [])
    duplicates = args.duplicates or args.groups == []  # `--groups` with no ids: its meaning before ids
    if args.from_log is None and not duplicates and not id_groups:
        return review(log_path, wants_json)
    report = merge(log_path, source=args.from_log, groups=duplicates, id_groups=id_groups)
    if wants_json:
        print_json({"ok": True, "command": "merge", **report.to_dict()})
        return 0
    for line in report.skipped_in_source:
        print(f"warning: skipped {line.describe()}", file=sys.stderr)
    for line in report.skipped_in_log:
        print(f"warning: unreadable line kept as it was: {line.describe()}", file=sys.stderr)
    if report.source:
        print(f"imported {len(report.imported)} record(s) from {report.source}; "
              f"{len(report.duplicates)} already present; {len(report.skipped_in_source)} unreadable line(s) skipped")
        for item in report.imported:
            print(f"  #{item['id']} <- {report.source} #{item['source_id']}")
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if duplicates or id_groups:
        print(f"collapsed {len(report.groups)} group(s)" + ("" if id_groups else " of duplicates"))
        for group in report.groups:
            print(f"  #{group['kept_id']} now also stands for {', '.join('#' + str(i) for i in group['merged_ids'])}")
    if report.backup:
        print(f"previous log kept at {report.backup}")
    if not report.changed:
        print(f"{log_path} unchanged")
    print(f"next: `{PROG} sync` to refresh the summary")
    return 0


def review(log_path: Path, wants_json: bool) -> int:
    """merge without options: every record of the log, by kernel and backend, to decide what to merge."""
    experience = load_experience(log_path, None)
    skipped = report_skipped(experience)
    entries = experience.entries()
    if wants_json:
        return print_entries("merge", entries, log_path, skipped, wants_json)
    if not entries:
        print(f"no records to review (log: {log_path})")
        return 0
    by_group: dict[tuple[str, str], list[Entry]] = {}
    for entry in entries:
        by_group.setdefault((entry.record.kernel, entry.record.backend), []).append(entry)
    for (kernel, backend), group in sorted(by_group.items()):
        print(f"### {kernel} [{backend}]")
        print(entries_table(group) + "\n")
    print(f'to merge records that describe one experiment: `{PROG} merge --groups "ID,ID" "ID,ID,ID"` '
          "(each quoted group becomes one record; ids not named stay as they are)")
    return 0


def sync_command(args, log_path: Path, curated_path, wants_json: bool) -> int:
    """`sync`: write the human summary experiences.md beside the log (or to --output)."""
    experience = load_experience(log_path, curated_path)
    skipped = report_skipped(experience)
    output = args.output or summary_path(log_path)
    text = render_summary(experience.entries())
    try:
        write_text_atomic(output, text)
    except OSError as error:
        raise EnvironmentFault(f"cannot write {output}: {error.strerror}",
                               hint="pass --output PATH somewhere writable") from None
    if wants_json:
        print_json({"ok": True, "command": "sync", "output": str(output), "records": len(experience.entries()),
                    "skipped_lines": skipped})
        return 0
    print(f"wrote {output} from {len(experience.entries())} record(s)")
    print(f"next: `{PROG} stats` for success rates, or read {output.name}")
    return 0


def stats_command(args, log_path: Path, curated_path, wants_json: bool) -> int:
    """`stats`: counts, success rates and median speedups by backend, bottleneck, chip, strategy."""
    experience = load_experience(log_path, curated_path)
    skipped = report_skipped(experience)
    stats = compute_stats(experience.entries())
    if wants_json:
        print_json({"ok": True, "command": "stats", "log": str(log_path), **stats_to_dict(stats),
                    "skipped_lines": skipped})
        return 0
    sys.stdout.write(render_stats(stats))
    return 0
