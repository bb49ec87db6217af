"""cuobjdump, run and read: per-kernel SASS instructions (`-sass`) and resources (`-res-usage`).

cuobjdump is the CUDA toolkit's, or the copy the triton wheel ships; it reads a cubin, an
object or a shared library, whatever backend's compiler produced it. None of this needs a GPU.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from kernel_opt.core.errors import EnvironmentFault

CUOBJDUMP_TIMEOUT_S = 120

_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_ARCH = re.compile(r"^\s*arch\s*=\s*(sm_\w+)")
_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(?:(@!?U?P(?:T|\d+))\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)")
_RESOURCE_FUNCTION = re.compile(r"^\s*Function\s+(\S+?):\s*$")
_RESOURCE_FIELD = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")


@dataclass
class SassFunction:
    """One kernel's disassembly: its opcodes with modifiers, in program order."""

    mangled_name: str
    arch: str | None
    opcodes: list[str] = field(default_factory=list)  # "LDG.E.128.CONSTANT", "FFMA", ...


def parse_sass(text: str) -> list[SassFunction]:
    """Functions and their instructions from `cuobjdump -sass` output.

    A library can carry the same function twice (one entry per embedded cubin); the first copy
    per (function, arch) is kept.
    """
    functions: list[SassFunction] = []
    seen: set[tuple[str, str | None]] = set()
    current: SassFunction | None = None
    arch: str | None = None
    for line in text.splitlines():
        arch_match = _ARCH.match(line)
        if arch_match:
            arch = arch_match.group(1)
            current = None
            continue
        function = _FUNCTION.match(line)
        if function:
            key = (function.group(1), arch)
            current = None if key in seen else SassFunction(function.group(1), arch)
            if current is not None:
                seen.add(key)
                functions.append(current)
            continue
        if current is None:
            continue
        instruction = _INSTRUCTION.match(line)
        if instruction:
            current.opcodes.append(instruction.group(3))
    return functions


@dataclass
class ResourceUsage:
    """`cuobjdump -res-usage` for one function (per thread, except SHARED which is per block)."""

    registers: int | None = None
    stack_bytes: int | None = None
    shared_bytes: int | None = None
    local_bytes: int | None = None
    constant_bytes: int | None = None


def parse_resource_usage(text: str) -> dict[str, ResourceUsage]:
    usage: dict[str, ResourceUsage] = {}
    current: str | None = None
    for line in text.splitlines():
        function = _RESOURCE_FUNCTION.match(line)
        if function:
            current = function.group(1)
            continue
        if current is None or "REG:" not in line:
            continue
        values = dict(_RESOURCE_FIELD.findall(line))
        usage.setdefault(current, ResourceUsage(
            registers=_int(values.get("REG")),
            stack_bytes=_int(values.get("STACK")),
            shared_bytes=_int(values.get("SHARED")),
            local_bytes=_int(values.get("LOCAL")),
            constant_bytes=_int(values.get("CONSTANT[0]")),
        ))
        current = None
    return usage


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


# --- running cuobjdump ----------------------------------------------------------------------


def find_cuobjdump() -> tuple[str, str]:
    """(path, where it was found): the CUDA toolkit's, else the copy inside the triton package."""
    from kernel_opt.env.probes import probe_cuobjdump

    probe = probe_cuobjdump()
    if not probe.found or not probe.path:
        raise EnvironmentFault(
            "cuobjdump (the SASS disassembler) is not available here",
            hint="install the CUDA toolkit (it ships cuobjdump) or `pip install triton`, whose wheel bundles it",
            kind="no_cuobjdump",
        )
    version = f" {probe.version}" if probe.version else ""
    return probe.path, f"cuobjdump{version} from {probe.source}"


def run_cuobjdump(cuobjdump: str, binary: Path, mode: str) -> str:
    """`cuobjdump -sass` or `-res-usage` on a cubin, object or shared library."""
    try:
        completed = subprocess.run([cuobjdump, mode, str(binary)], capture_output=True, text=True,
                                   timeout=CUOBJDUMP_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EnvironmentFault(f"cuobjdump {mode} {binary.name} failed to run: {error}") from error
    if completed.returncode != 0:
        raise EnvironmentFault(
            f"cuobjdump {mode} {binary.name} exited with code {completed.returncode}: {completed.stderr.strip()[:500]}",
            hint="an old cuobjdump cannot read code for a newer architecture; use the CUDA toolkit's",
        )
    return completed.stdout


def kernels_from_binary(cuobjdump: str, binary: Path) -> tuple[list[SassFunction], dict[str, ResourceUsage]]:
    functions = parse_sass(run_cuobjdump(cuobjdump, binary, "-sass"))
    return functions, parse_resource_usage(run_cuobjdump(cuobjdump, binary, "-res-usage"))
