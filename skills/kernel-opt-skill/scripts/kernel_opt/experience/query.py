"""search (words across every text field) and list (filters on normalised labels)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kernel_opt.experience.labels import Chip
from kernel_opt.experience.records import strategy_slug
from kernel_opt.experience.store import Entry
from kernel_opt.solution.families import normalize_kernel

_SEARCHED_FIELDS = (
    "kernel", "kernel_family", "backend", "chip", "chip_name", "bottleneck", "bottleneck_after", "stall",
    "strategy", "optimization", "hypothesis", "expected", "outcome", "notes", "baseline", "version_dir",
)


def searchable_text(entry: Entry) -> str:
    record = entry.record
    parts = [str(getattr(record, name)) for name in _SEARCHED_FIELDS if getattr(record, name) is not None]
    parts.append(json.dumps(record.dims, sort_keys=True))
    return " ".join(parts).lower()


def search(entries: list[Entry], words: list[str]) -> list[Entry]:
    """Entries whose text fields contain every word (case-insensitive), in log order."""
    wanted = [word.lower() for word in words if word.strip()]
    return [entry for entry in entries if all(word in searchable_text(entry) for word in wanted)]


@dataclass(frozen=True)
class Filters:
    kernel: str | None = None
    family: str | None = None
    backend: str | None = None
    chip: Chip | None = None
    bottleneck: str | None = None
    outcome: str | None = None
    strategy: str | None = None

    def accepts(self, entry: Entry) -> bool:
        record = entry.record
        if self.kernel and record.kernel != normalize_kernel(self.kernel):
            return False
        if self.family and record.kernel_family != self.family:
            return False
        if self.backend and record.backend != self.backend:
            return False
        if self.chip is not None:
            if self.chip.arch and record.chip != self.chip.arch:
                return False
            if self.chip.name and record.chip_name != self.chip.name:
                return False
        if self.bottleneck and record.bottleneck != self.bottleneck:
            return False
        if self.outcome and record.outcome != self.outcome:
            return False
        if self.strategy and record.strategy != strategy_slug(self.strategy):
            return False
        return True


def filter_entries(entries: list[Entry], filters: Filters) -> list[Entry]:
    return [entry for entry in entries if filters.accepts(entry)]
