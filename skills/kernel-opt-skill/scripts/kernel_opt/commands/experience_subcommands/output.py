"""What experience_log.py's subcommands print alike: a record's one-line summary, a table of records, skipped lines."""

from __future__ import annotations

import sys
from pathlib import Path

from kernel_opt.core.cli import print_json
from kernel_opt.core.render import markdown_table
from kernel_opt.experience.labels import Chip
from kernel_opt.experience.store import Entry, Experience

PROG = "experience_log.py"


def report_skipped(experience: Experience) -> list[str]:
    """Warn on stderr about each unreadable line of the log; returns them for --json."""
    lines = [line.describe() for line in experience.skipped]
    for line in lines:
        print(f"warning: skipped {line}", file=sys.stderr)
    return lines


def summary_line(entry: Entry) -> str:
    """One record on one line: id, kernel, backend, chip, bottleneck, strategy and outcome."""
    record = entry.record
    chip = Chip(record.chip, record.chip_name).describe() if record.chip or record.chip_name else "chip not recorded"
    speed = f", {record.speedup:.2f}x" if record.speedup is not None else ""
    return (
        f"#{entry.ref}: {record.kernel} · {record.backend} · {chip} · {record.bottleneck or 'bottleneck not recorded'}"
        f" → {record.strategy}: {record.outcome} ({record.outcome_source}{speed})"
    )


def entries_table(entries: list[Entry]) -> str:
    """Records as a Markdown table, one row each."""
    rows = []
    for entry in entries:
        record = entry.record
        rows.append([
            entry.ref,
            record.kernel,
            record.backend,
            Chip(record.chip, record.chip_name).describe() if record.chip or record.chip_name else None,
            record.bottleneck,
            record.strategy,
            record.outcome,
            f"{record.speedup:.2f}x" if record.speedup is not None else None,
        ])
    return markdown_table(rows, ["id", "kernel", "backend", "chip", "bottleneck", "strategy", "outcome", "speedup"])


def print_entries(command: str, entries: list[Entry], log_path: Path, skipped: list[str], wants_json: bool) -> int:
    """Print records as a table (or one JSON object) with the next step; returns the exit code."""
    if wants_json:
        print_json({
            "ok": True,
            "command": command,
            "log": str(log_path),
            "count": len(entries),
            "records": [{"ref": entry.ref, "origin": entry.origin, **entry.record.to_dict()} for entry in entries],
            "skipped_lines": skipped,
        })
        return 0
    if not entries:
        print(f"no matching records (log: {log_path})")
        return 0
    print(entries_table(entries))
    print(f"\n{len(entries)} record{'s' if len(entries) != 1 else ''}; next: `{PROG} show ID` for one in full")
    return 0
