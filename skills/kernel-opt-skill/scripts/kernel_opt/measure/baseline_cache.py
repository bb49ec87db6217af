"""PyTorch baselines timed once per run and reused by its later versions.

The baselines of an optimization run (ref.py eager and under torch.compile, at the run's sizes)
do not change from one version to the next, yet timing them cost every evaluation seconds, and
torch.compile's first call 18 s of a 71 s evaluation (fp16 8192x4096 Triton layernorm, H100,
2026-11-25). `workspace.py evaluate` therefore keeps them in OUT/baselines.json, keyed on
everything that could move their time: the GPU model and driver, the torch and triton versions,
ref.py's bytes, the sizes and the seed. A version whose key matches reuses the entry, and its
benchmark.md names the version that timed it and when; anything else times the baseline again.
The final benchmark (SKILL.md's Finish step) does not read the file: it times every baseline
again, side by side with the best version, in one process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import file_sha256, read_json, write_json_atomic
from kernel_opt.core.records import check_schema, now_iso
from kernel_opt.measure.records import TimedEntry

BASELINES_FILE = "baselines.json"
BASELINES_SCHEMA = "kernel_opt.baselines/1"


def baseline_names(kinds: list[str], compile_modes: list[str]) -> list[str]:
    """The entry names a benchmark times for these --baseline kinds and compile modes, in its order."""
    names = ["eager"] if "eager" in kinds else []
    return names + ([f"torch.compile ({mode})" for mode in compile_modes] if "compile" in kinds else [])


def still_to_time(kinds: list[str], compile_modes: list[str], cached: list[TimedEntry]) -> tuple[list[str], list[str]]:
    """The kinds and compile modes the worker must still time once `cached` entries are reused."""
    have = {entry.name for entry in cached}
    modes = [mode for mode in compile_modes if f"torch.compile ({mode})" not in have]
    remaining = [kind for kind in kinds if (kind == "eager" and "eager" not in have) or (kind == "compile" and modes)]
    return remaining, modes if "compile" in remaining else []


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def visible_gpu(gpus: list[Any]) -> Any | None:
    """The nvidia-smi GPU that CUDA's first device is: CUDA_VISIBLE_DEVICES' first index, else GPU 0."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    index = int(first) if first.isdigit() else 0
    return next((gpu for gpu in gpus if gpu.index == index), None)


def baseline_key(reference: Path, dims: dict[str, Any], seed: int, gpu: Any | None) -> dict[str, Any]:
    """What a cached baseline must share with this benchmark to be reused (JSON values, compared whole)."""
    return {
        "gpu": getattr(gpu, "name", None),
        "driver": getattr(gpu, "driver_version", None),
        "torch": package_version("torch"),
        "triton": package_version("triton"),
        "reference_sha256": file_sha256(reference),
        "dims": {name: dims[name] for name in sorted(dims)},
        "seed": seed,
    }


@dataclass
class BaselineCache:
    """OUT/baselines.json: timed baselines with the key they were timed under."""

    path: Path

    def _entries(self) -> list[dict[str, Any]]:
        payload = read_json(self.path)
        if payload is None:
            return []
        check_schema(payload, BASELINES_SCHEMA, str(self.path))
        entries = payload.get("entries")
        if not isinstance(entries, list):
            raise UsageError(f"{self.path} has no list of entries", hint="delete it: the next evaluation re-times")
        return entries

    def lookup(self, key: dict[str, Any], names: list[str]) -> list[TimedEntry]:
        """The cached entries for `names` under exactly this key, marked with where they came from."""
        found = []
        for name in names:
            stored = next((item for item in reversed(self._entries())
                           if item.get("key") == key and (item.get("entry") or {}).get("name") == name), None)
            if stored is not None:
                entry = TimedEntry.from_dict(stored["entry"])
                entry.cached_from = f"timed by {stored.get('timed_by')} at {stored.get('timed_at')} ({self.path.name})"
                found.append(entry)
        return found

    def remember(self, key: dict[str, Any], entries: list[TimedEntry], timed_by: str) -> None:
        """Add entries timed now (not reused, without error) under `key`; older ones under the same key go."""
        fresh = [entry for entry in entries if entry.cached_from is None and entry.error is None and entry.median_us]
        if not fresh:
            return
        names = {entry.name for entry in fresh}
        kept = [item for item in self._entries()
                if not (item.get("key") == key and (item.get("entry") or {}).get("name") in names)]
        stamp = now_iso()
        kept += [{"key": key, "entry": entry.to_dict(), "timed_by": timed_by, "timed_at": stamp} for entry in fresh]
        write_json_atomic(self.path, {"schema": BASELINES_SCHEMA, "entries": kept})
