"""Atomic file writes: a report is either the old one or the complete new one, never half."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


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
