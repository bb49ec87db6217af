"""Reading and writing the JSON and text records: a report is either the old one or the complete new one, never half."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import UsageError


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | os.PathLike, payload: dict) -> Path:
    return write_text_atomic(path, json.dumps(payload, indent=2, default=str) + "\n")


@contextmanager
def exclusive_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive flock on `<path>.lock` (a sidecar that is never replaced) for a read-modify-write of
    `path` that other processes may attempt at the same time; an atomic write alone would lose one of them."""
    lock_path = Path(path).with_name(Path(path).name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def read_json(path: str | os.PathLike) -> dict[str, Any] | None:
    """A tool's JSON record, or None when the file does not exist; a usage error when it is not a JSON object."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UsageError(f"{path} is not valid JSON (line {error.lineno}: {error.msg})",
                         hint="re-run the step that writes it; never edit the records by hand") from None
    if not isinstance(payload, dict):
        raise UsageError(f"{path} must hold a JSON object, found {type(payload).__name__}")
    return payload


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
