"""nsight-python's DataFrame, read back from the CSV the sweep keeps (sweep.csv).

The CSV is nsight-python 0.9.6's `ProfileResults.to_dataframe()` of every size, written as it
is: one row per (annotation, metric, size) with the statistics over the runs (AvgValue, StdDev,
MinValue, MaxValue, NumRuns, RelativeStdDevPct, StableMeasurement), the kernels (`Kernel`;
"a|b" where the sweep's combiner summed several kernels of one annotation), and the GPU. The
size sits in a column named after the swept dim. Read with the csv module, so the parent process
needs neither pandas nor nsight-python.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from kernel_opt.core.errors import EnvironmentFault

# The columns this reader needs; nsight-python writes more (CI95_*, Host, clocks, Geomean, ...).
REQUIRED_COLUMNS = ("Annotation", "Metric", "AvgValue", "StdDev", "MinValue", "MaxValue", "NumRuns", "Kernel", "GPU")
# nsight-python joins the kernels the combiner summed with this separator (NCUActionData.combine).
KERNEL_SEPARATOR = "|"


@dataclass(frozen=True)
class MetricStats:
    """One metric of one annotation at one size, over nsight-python's runs (in the metric's base unit)."""

    mean: float | None
    stddev: float | None
    minimum: float | None
    maximum: float | None
    runs: int | None
    relative_stddev_pct: float | None = None
    stable: bool | None = None  # nsight-python: relative standard deviation under 2%


@dataclass
class AnnotationFrame:
    """Everything the frame says about one annotation at one size."""

    annotation: str
    value: int
    metrics: dict[str, MetricStats] = field(default_factory=dict)
    kernels: list[str] = field(default_factory=list)  # per call, in launch order
    gpu: str | None = None


def _number(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _flag(text: str | None) -> bool | None:
    return {"true": True, "false": False}.get((text or "").strip().lower())


def _size(text: str, column: str, path: Path) -> int:
    number = _number(text)
    if number is None or not number.is_integer():
        raise EnvironmentFault(f"{path}: column {column!r} holds {text!r}, not an integer size",
                               kind="unexpected_frame")
    return int(number)


def read_frame(path: Path, dim: str) -> dict[tuple[str, int], AnnotationFrame]:
    """(annotation, size) -> its metrics and kernels, from a CSV in nsight-python 0.9.6's column layout.

    An empty or missing file reads as no rows; a file without the columns nsight-python writes is
    an environment fault (another nsight-python version wrote it), never a silent empty sweep.
    """
    if not path.is_file():
        return {}
    with path.open(newline="", encoding="utf-8") as stream:
        reader = csv.DictReader(stream)
        columns = reader.fieldnames or []
        if not columns:
            return {}
        missing = [column for column in (*REQUIRED_COLUMNS, dim) if column not in columns]
        if missing:
            raise EnvironmentFault(
                f"{path} lacks the column(s) {', '.join(missing)}: it is not the DataFrame nsight-python 0.9.6 writes",
                hint="install the pinned nsight-python (env_check.py names it) and run the sweep again",
                kind="unexpected_frame")
        frames: dict[tuple[str, int], AnnotationFrame] = {}
        for row in reader:
            key = (row["Annotation"], _size(row[dim], dim, path))
            entry = frames.setdefault(key, AnnotationFrame(annotation=key[0], value=key[1]))
            runs = _number(row["NumRuns"])
            entry.metrics[row["Metric"]] = MetricStats(
                mean=_number(row["AvgValue"]), stddev=_number(row["StdDev"]), minimum=_number(row["MinValue"]),
                maximum=_number(row["MaxValue"]), runs=int(runs) if runs is not None else None,
                relative_stddev_pct=_number(row.get("RelativeStdDevPct")), stable=_flag(row.get("StableMeasurement")),
            )
            if row["Kernel"] and not entry.kernels:
                entry.kernels = row["Kernel"].split(KERNEL_SEPARATOR)
            entry.gpu = entry.gpu or row["GPU"] or None
    return frames


def merge_frames(paths: list[Path], destination: Path) -> int:
    """Concatenate per-size CSVs (same layout) into one, header once; the number of rows written.

    Used by the sweep's child, whose pandas could do it too: the csv module keeps the parent and
    the child on one code path that CPU tests run.
    """
    columns: list[str] = []
    rows: list[dict[str, str]] = []
    for path in paths:
        with path.open(newline="", encoding="utf-8") as stream:
            reader = csv.DictReader(stream)
            columns += [column for column in reader.fieldnames or [] if column not in columns]
            rows += list(reader)
    destination.parent.mkdir(parents=True, exist_ok=True)
    with destination.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)
