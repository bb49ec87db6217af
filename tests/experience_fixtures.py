"""Builders for the experience-layer tests: records, logs and recorded version folders.

The version-folder files follow the fields `add --from` reads (see kernel_opt/experience/evidence.py);
the numbers are made up for the tests and claim nothing about any GPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kernel_opt.experience.records import ExperienceRecord

H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}


def record(**fields: Any) -> ExperienceRecord:
    values: dict[str, Any] = dict(
        id=None, kernel="softmax", backend="cuda", optimization="float4 loads", outcome="success",
        chip="sm_90", chip_name="H100", bottleneck="memory_bound",
    )
    values.update(fields)
    return ExperienceRecord(**values)


def write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2))


def version_folder(
    root: Path,
    number: int,
    *,
    passed: bool = True,
    median_us: float | None = 100.0,
    comparison: dict | None = None,
    profile: dict | None = None,
    hypothesis: str | None = None,
    device: dict | None = H100,
) -> Path:
    folder = root / f"v{number}"
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "correctness.json",
               {"passed": passed, "backend": "cuda", "dims": {"N": 4096, "D": 4096}, "device": device})
    if median_us is not None:
        write_json(folder / "benchmark.json",
                   {"gpu": device, "solution": {"median_us": median_us}, "comparison": comparison})
    if profile is not None:
        write_json(folder / "ncu_summary.json", profile)
    if hypothesis is not None:
        (folder / "hypothesis.txt").write_text(hypothesis)
    return folder


def profile(
    bottleneck: str, memory_sol: float, sm_sol: float, occupancy: float, stall: str | None = "long_scoreboard"
) -> dict:
    return {
        "bottleneck": bottleneck,
        "top_stall": stall,
        "metrics": {"memory_sol_pct": memory_sol, "sm_sol_pct": sm_sol, "achieved_occupancy_pct": occupancy,
                    "duration_us": 90.0},
    }


def comparison(against: Path, speedup: float, ci_low: float, ci_high: float, verdict: str) -> dict:
    return {
        "against": str(against / "v.cu"),
        "against_dir": str(against),
        "speedup": speedup,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "verdict": verdict,
    }


HYPOTHESIS = """Hypothesis: Loading each row with float4 (16-byte) accesses instead of scalar floats will cut \
memory instructions 4x.
Rationale: v2's profile shows memory SOL 41% with long-scoreboard stalls on the row loads and 4 sectors per request.
Expected: DRAM throughput rises from ~41% to >70% of peak and duration drops by ~1.4x.
"""
