"""What every JSON record shares: a schema tag, a timestamp, and a tolerant way back from JSON.

Records are read long after they were written (demo/ holds runs from earlier versions of this
package), so `from_dict` accepts a record without its `schema` tag and without fields added
since, and fills them with their defaults; a record tagged with another schema is refused,
because its fields may not mean what this version thinks they mean.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import read_json

RecordType = TypeVar("RecordType", bound="Record")


def now_iso() -> str:
    """The current UTC time to the second, as records store it: 2026-11-22T05:40:17+00:00."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def check_schema(payload: Mapping[str, Any], expected: str, what: str) -> None:
    """Accept a record tagged `expected`, or untagged (written before the tag existed)."""
    found = payload.get("schema")
    if found is not None and found != expected:
        raise UsageError(f"{what} has schema {found!r}, but this version of kernel_opt reads {expected!r}",
                         hint="read it with the kernel_opt version that wrote it, or re-run the step that writes it")


def read_record(path: Path, from_dict: Callable[..., RecordType]) -> RecordType | None:
    """The record in a file, read with its `from_dict(payload, what=...)`; None where there is no file.

    A file that is not that record is a usage error naming the file (from_dict's `what`).
    """
    payload = read_json(path)
    return None if payload is None else from_dict(payload, what=str(path))


def field_values(cls: type, payload: Mapping[str, Any], **converted: Any) -> dict[str, Any]:
    """Keyword arguments for dataclass `cls` from a JSON object.

    Keys the dataclass does not know are dropped (derived values such as "passed"); a field the
    payload lacks takes its default, or None when it has none. `converted` replaces the raw
    values of nested records the caller has already turned into their own types.
    """
    values: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if not item.init:
            continue
        if item.name in converted:
            values[item.name] = converted[item.name]
        elif item.name in payload:
            values[item.name] = payload[item.name]
        elif item.default is not dataclasses.MISSING:
            values[item.name] = item.default
        elif item.default_factory is not dataclasses.MISSING:
            values[item.name] = item.default_factory()
        else:
            values[item.name] = None
    return values


class Record:
    """For a dataclass record whose fields are plain JSON: to_dict is asdict, from_dict `field_values`.

    A record with nested records, a schema tag or derived fields overrides them.
    """

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls: type[RecordType], payload: Mapping[str, Any]) -> RecordType:
        return cls(**field_values(cls, payload))

