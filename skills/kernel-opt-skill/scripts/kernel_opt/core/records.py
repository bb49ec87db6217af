"""What every JSON record shares: a schema tag, a timestamp, and a tolerant way back from JSON.

Records are read long after they were written (demo/ holds runs from earlier versions of this
package), so `from_dict` accepts a record without its `schema` tag and without fields added
since, and fills them with their defaults; a record tagged with another schema is refused,
because its fields may not mean what this version thinks they mean. The JSON objects nested in a
record are typed `Section`s, which write back exactly the JSON they were read from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from kernel_opt.core.errors import ExitCode, KernelOptError, UsageError
from kernel_opt.core.files import read_json

RecordType = TypeVar("RecordType", bound="Record")
SectionType = TypeVar("SectionType", bound="Section")


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


class _Unset:
    """The default of a section's field that is written only once it is set (see Section)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __copy__(self) -> _Unset:
        return self

    def __deepcopy__(self, memo: dict) -> _Unset:
        return self


UNSET: Any = _Unset()


class Section:
    """A JSON object inside a record, as a dataclass: typed fields, and the JSON exactly as it was.

    A section read from a record writes back what it read: the same keys in the same order, keys
    this version does not know included (kept aside and written where they stood). A key the JSON
    lacks reads as the field's default (None where it has none) and is not written back, so a
    record written before a key existed stays as it was. A section built in code writes its fields
    in the order they are declared, except a field left at UNSET, which is written once it is set
    (to None too). Like the dict it stands for, a section is falsy when it would write {}.

    A subclass lists in `readers` how the JSON value of a nested field becomes its type
    (`section_of`, `list_of`, `dict_of`); a value of another shape than expected stays as read.
    """

    readers: ClassVar[dict[str, Callable[[Any], Any]]] = {}
    # Per section, once it has them: the fields not written, the keys read that no field holds, and the
    # order of the keys it was read with (the class's values stand for "none").
    _unset: ClassVar[frozenset[str]] = frozenset()
    _extra: ClassVar[Mapping[str, Any]] = {}
    _order: ClassVar[tuple[str, ...]] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if value is UNSET:
            object.__setattr__(self, "_unset", self._unset | {name})
            value = None
        elif name in self._unset:
            object.__setattr__(self, "_unset", self._unset - {name})
        object.__setattr__(self, name, value)

    def _written(self) -> list[str]:
        return [item.name for item in dataclasses.fields(self) if item.name not in self._unset]

    def __bool__(self) -> bool:
        return bool(self._written() or self._extra)

    def has(self, name: str) -> bool:
        """Whether field `name` is written: read from the JSON, or set in code (not left UNSET)."""
        return name not in self._unset

    def to_dict(self) -> dict[str, Any]:
        values = {name: to_json(getattr(self, name)) for name in self._written()}
        payload: dict[str, Any] = {}
        for key in self._order:  # as read: its keys in their order
            if key in values:
                payload[key] = values.pop(key)
            elif key in self._extra:
                payload[key] = to_json(self._extra[key])
        payload.update(values)  # built in code, or set since it was read
        return payload

    @classmethod
    def from_dict(cls: type[SectionType], payload: Mapping[str, Any]) -> SectionType:
        names = [item.name for item in dataclasses.fields(cls) if item.init]
        values = {name: cls.readers[name](payload[name]) if name in cls.readers else payload[name]
                  for name in names if name in payload}
        required = [item.name for item in dataclasses.fields(cls) if item.init and item.default is dataclasses.MISSING
                    and item.default_factory is dataclasses.MISSING]
        section = cls(**values, **{name: None for name in required if name not in payload})
        object.__setattr__(section, "_unset", section._unset | {name for name in names if name not in payload})
        object.__setattr__(section, "_extra", {key: value for key, value in payload.items() if key not in names})
        object.__setattr__(section, "_order", tuple(payload))
        return section


def section_of(section: type[Section]) -> Callable[[Any], Any]:
    """A reader for a field holding one section (None, or a value that is no object, stays as read)."""
    return lambda value: section.from_dict(value) if isinstance(value, Mapping) else value


def list_of(item: type) -> Callable[[Any], Any]:
    """A reader for a field holding a list of sections or records (`item.from_dict` for each object in it)."""
    return lambda value: [item.from_dict(entry) if isinstance(entry, Mapping) else entry for entry in value] \
        if isinstance(value, list) else value


def dict_of(item: type) -> Callable[[Any], Any]:
    """A reader for a field holding sections or records by name, in their order."""
    return lambda value: {key: item.from_dict(entry) if isinstance(entry, Mapping) else entry
                          for key, entry in value.items()} if isinstance(value, Mapping) else value


def to_json(value: Any) -> Any:
    """A record's field as JSON: a nested record or section through its to_dict, containers item by item."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(to_json(item) for item in value)
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    return value


@dataclasses.dataclass
class ErrorRecord(Section):
    """Why a step failed, as a record keeps it ("error"): KernelOptError.to_dict(), or a child's failure."""

    kind: str
    message: str
    hint: str | None
    exit_code: int

    @classmethod
    def from_error(cls, error: KernelOptError) -> ErrorRecord:
        return cls.from_dict(error.to_dict())

    def code(self) -> int:
        """Its exit code; 3 (the solution is at fault) for an error that names none."""
        return int(ExitCode.SOLUTION_FAULT if self.exit_code is None else self.exit_code)
