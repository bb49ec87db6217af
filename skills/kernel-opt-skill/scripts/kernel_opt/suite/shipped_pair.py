"""A pair sent to another machine and its records brought back: what `eval.py --ray` ships with each task.

A Ray worker may sit on another host, where neither the problem and solution files nor the output
folder exist. The driver reads both files' bytes (`ship`); the task writes them into a scratch
folder of its own, evaluates the pair there with `evaluate_pair` (`evaluate_shipped`) and returns
the entry and every file of the pair's folder (correctness.json, benchmark.json, their Markdown,
build/), with the scratch paths in the text records put back to the driver's paths, so the records
read as those of a local run; the driver writes them into OUT/pairs/NAME/ (`land`). Nothing on the
worker outlives the task, and nothing but the driver writes the output folder.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.files import write_text_atomic
from kernel_opt.suite.pairs import Pair
from kernel_opt.suite.records import EvalEntry
from kernel_opt.suite.runner import PAIRS_DIR, STALE_RECORDS, EvalRequest, evaluate_pair

MAX_RETURNED_FILE_BYTES = 16 << 20  # a pair's folder holds records and small builds; a larger file stays behind
TEXT_SUFFIXES = (".json", ".md", ".txt", ".log", ".yaml")  # the records whose paths are put back

Evaluate = Callable[[Pair, EvalRequest, str], EvalEntry]


@dataclass
class ShippedPair:
    """A pair as the driver knows it (its paths) and the bytes of its two files."""

    pair: Pair
    problem_bytes: bytes
    solution_bytes: bytes | None


@dataclass
class PairResult:
    """What comes back: the entry (as JSON), the pair folder's files by relative path, and any left behind."""

    entry: dict[str, Any]
    files: dict[str, bytes] = field(default_factory=dict)
    left_behind: list[str] = field(default_factory=list)


def ship(pair: Pair) -> ShippedPair:
    """Read the pair's files in the driver."""
    solution = pair.solution.read_bytes() if pair.solution is not None else None
    return ShippedPair(pair, pair.problem.read_bytes(), solution)


def evaluate_shipped(shipped: ShippedPair, request: EvalRequest, device: str,
                     evaluate: Evaluate = evaluate_pair) -> PairResult:
    """On the worker: lay the files out in a scratch folder, evaluate the pair there, bring its records back."""
    with tempfile.TemporaryDirectory(prefix="kernel-opt-eval-") as scratch_name:
        scratch = Path(scratch_name).resolve()
        pair = shipped.pair
        problem = scratch / "problems" / pair.problem.name
        problem.parent.mkdir(parents=True)
        problem.write_bytes(shipped.problem_bytes)
        solution = None
        if pair.solution is not None and shipped.solution_bytes is not None:
            solution = scratch / "solutions" / pair.solution.name
            solution.parent.mkdir(parents=True)
            solution.write_bytes(shipped.solution_bytes)
        local = dataclasses.replace(request, problems_dir=problem.parent, output_dir=scratch / "out",
                                    solutions_dir=solution.parent if solution else scratch / "solutions")
        entry = evaluate(dataclasses.replace(pair, problem=problem, solution=solution), local, device)
        back = {str(problem): str(pair.problem), str(scratch / "out"): str(request.output_dir),
                **({str(solution): str(pair.solution)} if solution else {})}
        result = PairResult(_relocated_entry(entry, back))
        _collect(scratch / "out" / PAIRS_DIR / pair.name, back, result)
    return result


def _relocated_entry(entry: EvalEntry, back: dict[str, str]) -> dict[str, Any]:
    payload = entry.to_dict()
    for name in ("problem", "solution", "message"):
        if isinstance(payload.get(name), str):
            payload[name] = relocate(payload[name], back)
    payload["notes"] = [relocate(note, back) for note in payload.get("notes") or []]
    return payload


def relocate(text: str, back: dict[str, str]) -> str:
    """`text` with each scratch path put back to the driver's (longest first, so no path is cut short)."""
    for scratch in sorted(back, key=len, reverse=True):
        text = text.replace(scratch, back[scratch])
    return text


def _collect(folder: Path, back: dict[str, str], result: PairResult) -> None:
    if not folder.is_dir():
        return
    for path in sorted(item for item in folder.rglob("*") if item.is_file()):
        relative = str(path.relative_to(folder))
        if path.stat().st_size > MAX_RETURNED_FILE_BYTES:
            result.left_behind.append(f"{relative} ({path.stat().st_size >> 20} MiB)")
            continue
        data = path.read_bytes()
        if path.suffix in TEXT_SUFFIXES:
            try:
                data = relocate(data.decode("utf-8"), back).encode("utf-8")
            except UnicodeDecodeError:
                pass  # not text after all: as it is
        result.files[relative] = data


def land(result: PairResult, output_dir: Path) -> EvalEntry:
    """In the driver: the returned files into OUT/pairs/NAME/ (each written whole), and the entry."""
    entry = EvalEntry.from_dict(result.entry)
    folder = output_dir / PAIRS_DIR / entry.name
    for stale in STALE_RECORDS:
        (folder / stale).unlink(missing_ok=True)
    for relative, data in result.files.items():
        target = folder / relative
        if folder.resolve() not in target.resolve().parents:
            continue  # a path that leaves the pair's folder is not written
        try:
            write_text_atomic(target, data.decode("utf-8"))
        except UnicodeDecodeError:  # a binary from the build
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    if result.left_behind:
        entry.notes.append(f"left on the worker (too large to bring back): {', '.join(result.left_behind)}")
    return entry
