"""What the reference costs at a run's sizes, measured once per run and reused by its later versions.

The PyTorch baselines of an optimization run (ref.py eager and under torch.compile) and the work
of one reference call (FLOPs and minimum bytes) do not change from one version to the next. Yet
every evaluation measured them again: torch.compile's first call took 18 s of a 71 s evaluation
of an fp16 8192x4096 Triton layernorm on an H100 (2026-11-25), and counting the reference's FLOPs
4-7 s of each one, since entering a torch dispatch mode imports torch._dynamo (seconds where
Python has no bytecode cached, as on that machine). `workspace.py evaluate` therefore keeps them
in OUT/reference_cache.json, keyed on everything that could move them: the GPU (model, board, driver),
the torch and triton versions, ref.py's bytes, the sizes and the seed. A version whose key
matches reuses the entries, and its benchmark.md says which version measured them and when;
anything else measures them again. The final benchmark (SKILL.md's Finish step) reads no cache:
it times every baseline again, side by side with the best version, in one process.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import exclusive_lock, file_sha256, read_json, write_json_atomic
from kernel_opt.core.records import check_schema, now_iso
from kernel_opt.measure.records import TimedEntry, compile_baseline_name
from kernel_opt.measure.roofline import FLOP_COUNTING

REFERENCE_CACHE_FILE = "reference_cache.json"
REFERENCE_CACHE_SCHEMA = "kernel_opt.reference_cache/1"


def baseline_names(kinds: list[str], compile_modes: list[str]) -> list[str]:
    """The entry names a benchmark times for these --baseline kinds and compile modes, in its order."""
    names = ["eager"] if "eager" in kinds else []
    return names + ([compile_baseline_name(mode) for mode in compile_modes] if "compile" in kinds else [])


def still_to_time(kinds: list[str], compile_modes: list[str], cached: list[TimedEntry]) -> tuple[list[str], list[str]]:
    """The kinds and compile modes the worker must still time once `cached` entries are reused."""
    have = {entry.name for entry in cached}
    modes = [mode for mode in compile_modes if compile_baseline_name(mode) not in have]
    remaining = [kind for kind in kinds if (kind == "eager" and "eager" not in have) or (kind == "compile" and modes)]
    return remaining, modes if "compile" in remaining else []


def package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def visible_gpu(gpus: list[Any]) -> Any | None:
    """The nvidia-smi GPU that CUDA's first device is: CUDA_VISIBLE_DEVICES' first entry (an index, or a
    GPU-... UUID), else GPU 0. An index means nvidia-smi's (PCI bus) order, as `eval.py --gpus` sets
    CUDA_DEVICE_ORDER=PCI_BUS_ID for its workers."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if first.startswith("GPU-"):
        return next((gpu for gpu in gpus if getattr(gpu, "uuid", None) == first), None)
    index = int(first) if first.isdigit() else 0
    return next((gpu for gpu in gpus if gpu.index == index), None)


def machine_key(gpu: Any | None) -> dict[str, Any]:
    """The machine a measurement was made on: the GPU model and driver (nvidia-smi), torch and triton."""
    return {
        "gpu": getattr(gpu, "name", None),
        "driver": getattr(gpu, "driver_version", None),
        "torch": package_version("torch"),
        "triton": package_version("triton"),
    }


def reference_key(reference: Path, dims: dict[str, Any], seed: int, gpu: Any | None) -> dict[str, Any]:
    """What a cached measurement must share with this benchmark to be reused (JSON values, compared whole).

    The board's UUID is part of it: where several GPUs share a run folder (`eval.py --gpus`), a solution's
    speedups are against baselines timed on its own GPU, never on a sibling of the same model.
    """
    return {
        **machine_key(gpu),
        "gpu_uuid": getattr(gpu, "uuid", None),
        "reference_sha256": file_sha256(reference),
        "dims": {name: dims[name] for name in sorted(dims)},
        "seed": seed,
    }


@dataclass
class ReferenceCache:
    """OUT/reference_cache.json: timed baselines and the counted work, each with the key it was measured under."""

    path: Path

    def _payload(self) -> dict[str, Any]:
        payload = read_json(self.path)
        if payload is None:
            return {"baselines": [], "work": []}
        check_schema(payload, REFERENCE_CACHE_SCHEMA, str(self.path))
        for part in ("baselines", "work"):
            if not isinstance(payload.get(part, []), list):
                raise UsageError(f"{self.path}: {part!r} is not a list", hint="delete it: the next evaluation "
                                 "measures again")
        return {"baselines": payload.get("baselines", []), "work": payload.get("work", [])}

    def baselines(self, key: dict[str, Any], names: list[str]) -> list[TimedEntry]:
        """The cached baselines among `names` under exactly this key, marked with where they came from."""
        stored = self._payload()["baselines"]
        found = []
        for name in names:
            item = next((item for item in reversed(stored)
                         if item.get("key") == key and (item.get("entry") or {}).get("name") == name), None)
            if item is not None:
                entry = TimedEntry.from_dict(item["entry"])
                entry.cached_from = f"timed by {item.get('by')} at {item.get('at')} ({self.path.name})"
                entry.paired_solution_us = entry.paired_solution_samples_us = None  # paired with another version
                found.append(entry)
        return found

    def work(self, key: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
        """The work counted under this key the current way (FLOP_COUNTING), and where it came from; else None."""
        item = next((item for item in reversed(self._payload()["work"])
                     if item.get("key") == key and item.get("counting") == FLOP_COUNTING), None)
        if item is None or not isinstance(item.get("work"), dict):
            return None
        return dict(item["work"]), f"counted by {item.get('by')} at {item.get('at')} ({self.path.name})"

    def remember(self, key: dict[str, Any], baselines: list[TimedEntry], work: dict[str, Any] | None,
                 by: str) -> None:
        """Add what was measured now (baselines not reused and without error, work when given) under `key`.

        An older entry under the same key and name is replaced; nothing reused is written again.
        """
        fresh = [entry for entry in baselines if entry.cached_from is None and entry.error is None and entry.median_us]
        if not fresh and not work:
            return
        with exclusive_lock(self.path):  # the workers of `eval.py --gpus` share one file
            self._add(key, fresh, work, by)

    def _add(self, key: dict[str, Any], fresh: list[TimedEntry], work: dict[str, Any] | None, by: str) -> None:
        payload, stamp = self._payload(), now_iso()
        names = {entry.name for entry in fresh}
        payload["baselines"] = [item for item in payload["baselines"]
                                if not (item.get("key") == key and (item.get("entry") or {}).get("name") in names)]
        payload["baselines"] += [{"key": key, "entry": entry.to_dict(), "by": by, "at": stamp} for entry in fresh]
        if work:
            payload["work"] = [item for item in payload["work"] if item.get("key") != key]
            payload["work"].append({"key": key, "work": work, "counting": FLOP_COUNTING, "by": by, "at": stamp})
        write_json_atomic(self.path, {"schema": REFERENCE_CACHE_SCHEMA, **payload})
