"""Stand-ins for the tests of the suite's pools: a fake two-GPU host and an evaluator that behaves by pair name.

`fake_gpus` puts an `nvidia-smi` on PATH that lists two GPUs of two models (what `eval.py --gpus`
discovers, and what each worker asks about the GPU it holds); every process started after it,
the pools' workers included, sees it. `evaluate_by_name` stands in for `runner.evaluate_pair` in a
worker process (importable by name, as multiprocessing's spawn needs): it takes a little time, names
the GPU its process holds through the real `held_gpu`, and for the pair named "crash" kills its
own process, for "hang" never returns.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from kernel_opt.suite.runner import device_identity, entry_key, held_gpu, new_entry

FAKE_GPUS = (("Fake H100 80GB HBM3", "GPU-00000000-aaaa-0000-0000-000000000000"),
             ("Fake H200", "GPU-11111111-bbbb-1111-1111-111111111111"))
PAIR_SECONDS = 0.6  # long enough that both workers hold a pair at once


def fake_gpus(folder: Path, monkeypatch, gpus=FAKE_GPUS) -> None:
    """An nvidia-smi on PATH answering the probe's query with `gpus` (name, uuid), as a two-GPU host would."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = "\n".join(f"{name}, 580.159.04, 345, 1980, 2619, 2619, 700.00, Enabled, Default, {uuid}"
                     for name, uuid in gpus)
    script = folder / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{rows}\nEOF\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def evaluate_by_name(pair, request, device):
    """A pair's entry without running it: "correct", with the GPU this process holds and when it ran."""
    if pair.name == "crash":
        os._exit(9)
    if pair.name == "hang":
        time.sleep(3600)
    started = time.time()
    time.sleep(PAIR_SECONDS)
    identity = device_identity(device)
    entry = new_entry(pair, entry_key(pair, request, identity))
    entry.verdict, entry.device, entry.gpu = "correct", identity, held_gpu(device)
    entry.wall_s = round(time.time() - started, 2)
    entry.notes = [f"ran {started:.3f} {time.time():.3f} pid {os.getpid()}"]
    return entry


def interval(entry) -> tuple[float, float]:
    """When `evaluate_by_name` ran the pair: (start, end), wall clock."""
    _, start, end, *_ = entry.notes[0].split()
    return float(start), float(end)
