"""What the tools print, read: version strings and nvidia-smi's CSV. Pure functions, tested without the tools."""

from __future__ import annotations

import csv
import io
import re

from kernel_opt.env.probe_records import SmiGpu

_NVCC_VERSION = re.compile(r"release\s+(\d+\.\d+),\s*V(\d+(?:\.\d+)+)")
_NSIGHT_TOOL_VERSION = re.compile(r"Version\s+(\d+(?:\.\d+)+)")
_MISSING_SMI_VALUES = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]"}


def version_tuple(text: str | None) -> tuple[int, ...]:
    """'2025.3.1.0' -> (2025, 3, 1, 0); '2.13.0+cpu' -> (2, 13, 0); leading numeric parts only."""
    if not text:
        return ()
    parts: list[int] = []
    for piece in re.split(r"[.+-]", text.strip().lstrip("vV")):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def parse_nvcc_version(text: str) -> tuple[str, str] | None:
    """`nvcc --version` (or `cuobjdump --version`) -> (release, full version), e.g. ('13.0', '13.0.88')."""
    match = _NVCC_VERSION.search(text)
    return (match.group(1), match.group(2)) if match else None


def parse_nsight_tool_version(text: str) -> str | None:
    """`ncu --version` / `compute-sanitizer --version` -> '2025.3.1.0'."""
    match = _NSIGHT_TOOL_VERSION.search(text)
    return match.group(1) if match else None


def parse_nvcc_architectures(text: str) -> list[str]:
    """`nvcc --list-gpu-arch` prints one compute_XY per line."""
    return [line.strip() for line in text.splitlines() if re.fullmatch(r"compute_\d+[a-z]?", line.strip())]


def _smi_value(text: str) -> str | None:
    value = text.strip()
    return None if value.lower() in _MISSING_SMI_VALUES else value


def _smi_int(text: str) -> int | None:
    value = _smi_value(text)
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


def _smi_float(text: str) -> float | None:
    value = _smi_value(text)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def parse_nvidia_smi_csv(text: str) -> list[SmiGpu]:
    """Parse `nvidia-smi --query-gpu=<NVIDIA_SMI_QUERY_FIELDS> --format=csv,noheader,nounits`.

    "[N/A]" and "[Not Supported]" (common on consumer cards and in VMs) become None rather than
    errors, because a missing clock reading must not hide the rest of the GPU's facts.
    """
    gpus: list[SmiGpu] = []
    rows = [row for row in csv.reader(io.StringIO(text), skipinitialspace=True) if any(cell.strip() for cell in row)]
    for index, row in enumerate(rows):
        if len(row) < 9:
            continue  # a warning line, not a GPU row
        name, driver, sm_clock, max_sm_clock, memory_clock, max_memory_clock, power, persistence, mode = row[:9]
        gpus.append(
            SmiGpu(
                index=index,
                name=name.strip(),
                driver_version=_smi_value(driver),
                sm_clock_mhz=_smi_int(sm_clock),
                max_sm_clock_mhz=_smi_int(max_sm_clock),
                memory_clock_mhz=_smi_int(memory_clock),
                max_memory_clock_mhz=_smi_int(max_memory_clock),
                power_limit_w=_smi_float(power),
                persistence_mode=_smi_value(persistence),
                compute_mode=_smi_value(mode),
                uuid=_smi_value(row[9]) if len(row) > 9 else None,  # absent from output parsed before it was asked
            )
        )
    return gpus
