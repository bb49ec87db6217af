"""Raw ncu metrics as ncu_report gives them, and one canonical value read from them (units converted)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernel_opt.profile.ncu.metric_aliases import MetricAlias


@dataclass
class RawMetric:
    """One metric as ncu_report gives it: name, value, ncu's own unit and description."""

    name: str
    value: float | int | str | None
    unit: str = ""
    description: str = ""
    instances: dict[str, float] | None = None  # an instanced metric's value per instance (INSTANCED_METRICS)


_TIME_TO_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
               "second": 1e6, "s": 1e6}
_BYTE_SCALE = {"byte": 1.0, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12,
               "kibyte": 2.0**10, "mibyte": 2.0**20, "gibyte": 2.0**30}


def convert_unit(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a time or byte quantity into the canonical unit; other units pass through.

    ncu_report usually hands raw values in base units (nsecond, byte), but a unit like
    "usecond" or "Kbyte/block" must still land in the canonical unit. Per-block and per-thread
    denominators are part of the canonical name, so only the numerator is converted.
    """
    numerator = (from_unit or "").split("/")[0].strip().lower()
    if to_unit == "us" and numerator in _TIME_TO_US:
        return value * _TIME_TO_US[numerator]
    if to_unit == "bytes" and numerator in _BYTE_SCALE:
        return value * _BYTE_SCALE[numerator]
    return value


def finite_number(value: Any) -> float | None:
    """A finite int or float as a float; None for anything else (strings, bools, NaN, infinity)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def resolve_alias(alias: MetricAlias, raw: Mapping[str, RawMetric]) -> tuple[float | None, str | None]:
    """(value in the canonical unit, the ncu name it came from), or (None, None) when absent."""
    found: list[tuple[float, str]] = []
    for name in alias.candidates:
        metric = raw.get(name)
        number = finite_number(metric.value) if metric is not None else None
        if number is None:
            continue
        found.append((convert_unit(number, metric.unit, alias.unit), name))
        if alias.combine == "first":
            break
    if not found and alias.pattern:
        pattern = re.compile(alias.pattern)
        for name in sorted(raw):
            number = finite_number(raw[name].value) if pattern.match(name) else None
            if number is not None:
                found.append((convert_unit(number, raw[name].unit, alias.unit), name))
    if not found:
        return None, None
    return max(found, key=lambda item: item[0]) if alias.combine == "max" else found[0]
