"""sync (the human summary, experiences.md) and stats (counts, success rates, median speedups).

Both count a record once however many copies exist (same content = same experience), and
both order everything by fixed keys, so the same log always gives the same bytes.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernel_opt.core.render import render
from kernel_opt.experience.labels import Chip
from kernel_opt.experience.records import content_key
from kernel_opt.experience.store import CURATED, Entry
from kernel_opt.solution.families import FAMILIES, OTHER_FAMILY

STATS_DIMENSIONS: tuple[str, ...] = ("backend", "bottleneck", "chip", "strategy")


def unique_entries(entries: list[Entry]) -> list[Entry]:
    """One entry per distinct content, local before curated, each in log order."""
    seen: set[str] = set()
    result = []
    for entry in sorted(entries, key=_entry_order):
        key = content_key(entry.record)
        if key not in seen:
            seen.add(key)
            result.append(entry)
    return result


def _entry_order(entry: Entry) -> tuple:
    return (entry.origin == CURATED, entry.record.id or 0)


def chip_label(entry: Entry) -> str:
    record = entry.record
    if record.chip is None and record.chip_name is None:
        return "chip not recorded"
    return Chip(record.chip, record.chip_name).describe()


@dataclass
class GroupStats:
    key: str
    records: int = 0
    successes: int = 0
    neutral: int = 0
    failures: int = 0
    speedups: list[float] = field(default_factory=list)

    @property
    def success_rate_pct(self) -> float:
        return 100.0 * self.successes / self.records if self.records else 0.0

    @property
    def median_speedup(self) -> float | None:
        return statistics.median(self.speedups) if self.speedups else None

    def add(self, entry: Entry) -> None:
        record = entry.record
        self.records += 1
        self.successes += record.outcome == "success"
        self.neutral += record.outcome == "neutral"
        self.failures += record.outcome == "failure"
        if record.speedup is not None:
            self.speedups.append(record.speedup)

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "records": self.records,
            "successes": self.successes,
            "neutral": self.neutral,
            "failures": self.failures,
            "success_rate_pct": round(self.success_rate_pct, 1),
            "median_speedup": round(self.median_speedup, 4) if self.median_speedup is not None else None,
            "measured_speedups": len(self.speedups),
        }


_KEYS: dict[str, Callable[[Entry], str]] = {
    "backend": lambda entry: entry.record.backend,
    "bottleneck": lambda entry: entry.record.bottleneck or "not recorded",
    "chip": chip_label,
    "strategy": lambda entry: entry.record.strategy,
}


def compute_stats(entries: list[Entry]) -> dict[str, Any]:
    """{'total': GroupStats, 'by': {dimension: [GroupStats, ...]}} over distinct records."""
    unique = unique_entries(entries)
    total = GroupStats("all")
    by: dict[str, dict[str, GroupStats]] = {dimension: {} for dimension in STATS_DIMENSIONS}
    for entry in unique:
        total.add(entry)
        for dimension, key_of in _KEYS.items():
            key = key_of(entry)
            by[dimension].setdefault(key, GroupStats(key)).add(entry)
    ordered = {
        dimension: sorted(groups.values(), key=lambda g: (-g.records, g.key)) for dimension, groups in by.items()
    }
    return {"total": total, "by": ordered, "duplicates_ignored": len(entries) - len(unique)}


def stats_to_dict(stats: dict[str, Any]) -> dict[str, Any]:
    return {
        "total": stats["total"].to_dict(),
        "by": {dimension: [group.to_dict() for group in groups] for dimension, groups in stats["by"].items()},
        "duplicates_ignored": stats["duplicates_ignored"],
    }


def render_stats(stats: dict[str, Any]) -> str:
    return render("experience_stats.md.j2", stats=stats, dimensions=STATS_DIMENSIONS)


@dataclass
class StrategyRow:
    """What one strategy did for one kernel family on one chip, with one outcome."""

    strategy: str
    kernels: list[str]
    bottlenecks: list[str]
    refs: list[str]
    speedups: list[float]
    example: str
    notes: list[str]

    @property
    def median_speedup(self) -> float | None:
        return statistics.median(self.speedups) if self.speedups else None


@dataclass
class ChipSection:
    chip: str
    worked: list[StrategyRow] = field(default_factory=list)
    no_effect: list[StrategyRow] = field(default_factory=list)
    failed: list[StrategyRow] = field(default_factory=list)


@dataclass
class FamilySection:
    family: str
    description: str
    chips: list[ChipSection] = field(default_factory=list)


def _rows(entries: list[Entry]) -> list[StrategyRow]:
    by_strategy: dict[str, list[Entry]] = {}
    for entry in entries:
        by_strategy.setdefault(entry.record.strategy, []).append(entry)
    rows = []
    for strategy, members in by_strategy.items():
        best = max(members, key=lambda e: (e.record.speedup or 0.0, -_entry_order(e)[1]))
        rows.append(
            StrategyRow(
                strategy=strategy,
                kernels=sorted({e.record.kernel for e in members}),
                bottlenecks=sorted({e.record.bottleneck or "not recorded" for e in members}),
                refs=[e.ref for e in members],
                speedups=sorted(e.record.speedup for e in members if e.record.speedup is not None),
                example=best.record.optimization,
                notes=[e.record.notes for e in members if e.record.notes],
            )
        )
    return sorted(rows, key=lambda row: (-(row.median_speedup or 0.0), row.strategy))


def build_summary(entries: list[Entry]) -> list[FamilySection]:
    """Per kernel family and chip: what worked, what had no effect, what failed."""
    unique = unique_entries(entries)
    sections = []
    descriptions = {family: description for family, (description, _) in FAMILIES.items()}
    descriptions[OTHER_FAMILY] = "Kernels outside the families above"
    for family, description in descriptions.items():
        members = [entry for entry in unique if entry.record.kernel_family == family]
        if not members:
            continue
        section = FamilySection(family, description)
        for chip in sorted({chip_label(entry) for entry in members}):
            on_chip = [entry for entry in members if chip_label(entry) == chip]
            section.chips.append(
                ChipSection(
                    chip=chip,
                    worked=_rows([e for e in on_chip if e.record.outcome == "success"]),
                    no_effect=_rows([e for e in on_chip if e.record.outcome == "neutral"]),
                    failed=_rows([e for e in on_chip if e.record.outcome == "failure"]),
                )
            )
        sections.append(section)
    return sections


def render_summary(entries: list[Entry]) -> str:
    unique = unique_entries(entries)
    return render(
        "experiences.md.j2",
        families=build_summary(entries),
        total=len(unique),
        curated=sum(1 for entry in unique if entry.origin == CURATED),
    )
