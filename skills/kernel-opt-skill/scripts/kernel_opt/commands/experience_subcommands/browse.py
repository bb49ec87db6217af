"""experience_log.py recommend, search, list and show: reading the log and the curated records."""

from __future__ import annotations

import sys
from pathlib import Path

from kernel_opt.commands.experience_subcommands.output import print_entries, report_skipped, summary_line
from kernel_opt.core.cli import print_json
from kernel_opt.core.errors import UsageError
from kernel_opt.core.render import render
from kernel_opt.experience.labels import (
    Chip,
    normalize_backend,
    normalize_bottleneck,
    normalize_chip,
    normalize_outcome,
)
from kernel_opt.experience.query import Filters, filter_entries, search
from kernel_opt.experience.ranking import RecommendRequest, recommend_from_log
from kernel_opt.experience.store import load_experience


def recommend_command(args, log_path: Path, curated_path, wants_json: bool) -> int:
    """`recommend`: strategies that worked in similar situations, and failures to avoid."""
    request = RecommendRequest(kernel=args.kernel, backend=args.backend, chip=args.chip, bottleneck=args.bottleneck,
                               limit=args.n, log_path=log_path, curated_path=curated_path, family=args.family)
    result, skipped = recommend_from_log(request)
    for line in skipped:
        print(f"warning: skipped {line}", file=sys.stderr)
    if wants_json:
        print_json({"ok": True, "command": "recommend", "log": str(log_path), **result.to_dict(),
                    "skipped_lines": skipped})
        return 0
    sys.stdout.write(render("experience_recommend.md.j2", result=result))
    return 0


def search_command(args, log_path: Path, curated_path, wants_json: bool) -> int:
    """`search WORD...`: records whose text fields contain every word."""
    experience = load_experience(log_path, curated_path)
    skipped = report_skipped(experience)
    return print_entries("search", search(experience.entries(), args.words), log_path, skipped, wants_json)


def list_command(args, log_path: Path, curated_path, wants_json: bool) -> int:
    """`list`: records matching the filters, the last -n of them."""
    experience = load_experience(log_path, curated_path)
    skipped = report_skipped(experience)
    filters = Filters(
        kernel=args.kernel,
        family=args.family,
        backend=normalize_backend(args.backend, field="--backend"),
        chip=_chip_option(args.chip),
        bottleneck=normalize_bottleneck(args.bottleneck, field="--bottleneck"),
        outcome=normalize_outcome(args.outcome, field="--outcome"),
        strategy=args.strategy,
    )
    entries = filter_entries(experience.entries(), filters)
    if args.n is not None:
        if args.n < 1:
            raise UsageError(f"-n must be at least 1, got {args.n}")
        entries = entries[-args.n :]
    return print_entries("list", entries, log_path, skipped, wants_json)


def show_command(args, log_path: Path, curated_path, wants_json: bool) -> int:
    """`show ID`: one record in full."""
    experience = load_experience(log_path, curated_path)
    skipped = report_skipped(experience)
    entry = experience.find(args.id)
    data = entry.record.to_dict()
    if wants_json:
        print_json({"ok": True, "command": "show", "ref": entry.ref, "origin": entry.origin, "record": data,
                    "skipped_lines": skipped})
        return 0
    if str(entry.record.id) != args.id.strip().lstrip("#").rpartition(":")[2]:
        print(f"(id {args.id} was merged into #{entry.ref})")
    print(summary_line(entry))
    width = max(len(key) for key in data)
    for key, value in data.items():
        if value in (None, "", {}, []):
            continue
        print(f"  {key:<{width}}  {value}")
    return 0


def _chip_option(text: str | None) -> Chip | None:
    return normalize_chip(text, field="--chip") if text else None
