"""What a kernel was built as, read from its SASS: the tensor-core path, asynchronous copies, warp specialization.

The verdict needs to know whether low occupancy is a choice. A kernel that feeds wgmma from TMA
or cp.async stages, often with producer and consumer warps (setmaxnreg), runs one or two big
blocks per SM on purpose: more warps are not its lever, overlap is. The evidence comes, best
first, from the executed opcode mix ncu recorded (`sass__inst_executed_per_opcode`: what ran), a
static analysis of the same kernel (`static_analysis.json`: what was compiled), or, with no SASS
at all, the wgmma and TMA pipe metrics, which see wgmma and TMA but not cp.async or setmaxnreg;
what could not be seen is listed, so a verdict that depends on it says so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.profile.ncu.metrics import KernelMetrics
from kernel_opt.profile.thresholds import threshold
from kernel_opt.sass.instruction_mix import TENSOR_SUFFIX

# The asynchronous building blocks and the base SASS opcodes that show them.
ASYNC_FEATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("wgmma", ("HGMMA", "QGMMA", "IGMMA", "BGMMA")),  # warpgroup MMA: operands from shared memory, asynchronous
    ("TMA", ("UTMALDG", "UBLKCP")),  # bulk tensor / bulk copies into shared memory
    ("cp.async", ("LDGSTS",)),  # global -> shared without registers (sm_80+)
    ("warp specialization", ("USETMAXREG",)),  # setmaxnreg: producer and consumer warpgroups re-balance registers
)
# The opcodes that decide memory and math efficiency, shown in the evidence table.
KEY_OPCODES: tuple[str, ...] = ("HGMMA", "QGMMA", "HMMA", "LDSM", "LDGSTS", "UTMALDG", "USETMAXREG", "LDL", "STL",
                                "FFMA", "MUFU")
SourceKind = str  # "executed opcode mix (ncu)", "static analysis (compiled SASS)" or "pipe metrics (no SASS)"


@dataclass
class KernelDesign:
    """The design evidence for one kernel: which asynchronous features it uses, and what could not be checked."""

    source: SourceKind
    async_features: list[str]  # "wgmma (HGMMA x2.10M)", "TMA (UTMALDG x164k)", ...
    unchecked: list[str] = field(default_factory=list)  # features the evidence cannot show
    tensor_instructions: dict[str, float] = field(default_factory=dict)  # tensor opcode -> count
    key_opcodes: dict[str, float] = field(default_factory=dict)  # KEY_OPCODES present -> count
    tensor_cores: bool | None = None  # the kernel runs tensor instructions; None when nothing says

    @property
    def feature_names(self) -> set[str]:
        """The features alone ("wgmma", "TMA", ...), without the counts `async_features` shows beside them."""
        return {text.split(" (", 1)[0] for text in self.async_features}

    @property
    def asynchronous(self) -> bool:
        """Built as an asynchronous pipeline: wgmma, TMA, cp.async or warp specialization seen."""
        return bool(self.async_features)


def assess_design(metrics: KernelMetrics, static_opcodes: Mapping[str, float] | None = None) -> KernelDesign:
    """The design evidence: the executed opcode mix first, else a static analysis's, else the pipe metrics."""
    if metrics.executed_opcodes:
        return design_from_opcodes(metrics.executed_opcodes, "executed opcode mix (ncu)")
    if static_opcodes:
        return design_from_opcodes(static_opcodes, "static analysis (compiled SASS)")
    return _design_from_pipes(metrics)


def design_from_opcodes(counts: Mapping[str, float], source: SourceKind) -> KernelDesign:
    """Design evidence from base-opcode counts (executed or static)."""
    features = []
    for name, opcodes in ASYNC_FEATURES:
        seen = [f"{opcode} x{count_text(counts[opcode])}" for opcode in opcodes if counts.get(opcode)]
        if seen:
            features.append(f"{name} ({', '.join(seen)})")
    tensor = {opcode: float(count) for opcode, count in counts.items() if opcode.endswith(TENSOR_SUFFIX) and count}
    key = {opcode: float(counts[opcode]) for opcode in KEY_OPCODES if counts.get(opcode)}
    return KernelDesign(source, features, [], tensor, key, tensor_cores=bool(tensor))


def _design_from_pipes(metrics: KernelMetrics) -> KernelDesign:
    """Without SASS: wgmma and TMA show in their pipes; cp.async and setmaxnreg do not show at all."""
    features: list[str] = []
    unchecked: list[str] = []
    for name, value, what in (("wgmma", metrics.gmma_instructions_pct, "wgmma instruction rate"),
                              ("TMA", metrics.tma_pipe_pct, "TMA pipe")):
        if value is None:
            unchecked.append(name)
        elif value > 0:
            features.append(f"{name} ({what} {value:.2f}%)")
    unchecked += ["cp.async (LDGSTS)", "warp specialization (USETMAXREG)"]
    tensor = metrics.tensor_pipe_pct
    tensor_cores = None if tensor is None else tensor >= threshold("tensor_pipe_idle_pct")
    return KernelDesign("pipe metrics (no SASS)", features, unchecked, tensor_cores=tensor_cores)


def count_text(count: float) -> str:
    """2097152 -> '2.10M', 163840 -> '164k', 1584 -> '1584': instruction counts at a glance."""
    if count >= 1e6:
        return f"{count / 1e6:.2f}M"
    if count >= 1e5:
        return f"{count / 1e3:.0f}k"
    return f"{count:g}"


# --- a static analysis beside the profile ----------------------------------------------------


def load_static_opcodes(path: Path) -> dict[str, dict[str, float]]:
    """Kernel name -> base-opcode counts from a static_analysis.json; {} when the file is absent or unreadable.

    Names are reduced to the kernel's function name (`base_kernel_name`), the one ncu reports;
    a name compiled several times (Triton variants) is left out, since it is not known which ran.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    found: dict[str, list[dict[str, float]]] = {}
    for kernel in data.get("kernels") or []:
        counts = (kernel.get("mix") or {}).get("opcode_counts") or {}
        for name in {base_kernel_name(kernel.get("name") or ""), base_kernel_name(kernel.get("mangled_name") or "")}:
            if name:
                found.setdefault(name, []).append(counts)
    return {name: dict(counts[0]) for name, counts in found.items() if len(counts) == 1 or _all_equal(counts)}


def _all_equal(items: list[Any]) -> bool:
    return all(item == items[0] for item in items)


_MANGLED_PART = re.compile(r"(\d+)")


def base_kernel_name(name: str) -> str:
    """The bare function name: 'void ns::gemm<(bool)1>(float*)' -> 'gemm', '_Z11gemm_kernelPf' -> 'gemm_kernel'."""
    text = name.strip()
    if text.startswith("_Z"):
        return _itanium_function_name(text)
    while "<" in text:  # drop template arguments, innermost first (they may hold parentheses)
        reduced = re.sub(r"<[^<>]*>", "", text)
        if reduced == text:
            break
        text = reduced
    text = text.split("(")[0]
    text = text.split()[-1] if text.split() else ""
    return text.split("::")[-1]


def _itanium_function_name(mangled: str) -> str:
    """The last name component of an Itanium-mangled name (nested `_ZN...E` or plain `_Z<len><name>`)."""
    position, nested = (3, True) if mangled.startswith("_ZN") else (2, False)
    last = ""
    while position < len(mangled):
        match = _MANGLED_PART.match(mangled, position)
        if not match:
            break
        length = int(match.group(1))
        last = mangled[match.end(): match.end() + length]
        position = match.end() + length
        if not nested:
            break
    return last
