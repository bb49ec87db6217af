"""Canonical spellings of bottlenecks, backends, outcomes and chips.

The original log stored `memory`, `memory-bound` and `memory_bound` side by side, so a query
for one missed the others. Every label is normalised here on the way in, and a spelling that
is not listed is refused with the list of accepted ones. Backends and their spellings come
from the backend registry (each backend's `name` and `aliases`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernel_opt.core.errors import UsageError

# canonical -> accepted spellings (compared after lower-casing and turning ' ' and '-' into '_')
BOTTLENECK_ALIASES: dict[str, tuple[str, ...]] = {
    "memory_bound": ("memory", "mem", "memory_bound", "mem_bound", "memory_limited", "bandwidth", "bandwidth_bound",
                     "dram", "dram_bound"),
    "compute_bound": ("compute", "compute_bound", "compute_limited", "math", "math_bound", "sm_bound", "flops",
                      "alu_bound"),
    "latency_bound": ("latency", "latency_bound", "latency_limited", "stall", "stalls", "stall_bound"),
    "occupancy_bound": ("occupancy", "occupancy_bound", "occupancy_limited", "low_occupancy", "occ"),
    "overlap_bound": ("overlap", "overlap_bound", "overlap_limited", "async_pipeline", "pipeline_overlap"),
}
OUTCOME_ALIASES: dict[str, tuple[str, ...]] = {
    "success": ("success", "successful", "succeeded", "win", "improved", "improvement", "faster", "better", "positive"),
    "neutral": ("neutral", "no_change", "unchanged", "flat", "same", "noise", "inconclusive", "mixed"),
    "failure": ("failure", "fail", "failed", "regression", "regressed", "slower", "worse", "negative", "incorrect",
                "wrong"),
}

# The classifier reports `small_grid` as a detail beside its primary label, not as a label.
_NOT_A_PRIMARY_LABEL = {
    "small_grid": "small_grid is a detail, not a primary label: record the primary label the classifier gave "
    "(often latency_bound or occupancy_bound) and put small_grid in --notes",
}


def _key(text: str) -> str:
    return re.sub(r"[\s\-]+", "_", text.strip().lower())


def _normalize(kind: str, field: str, text: str | None, table: dict[str, tuple[str, ...]]) -> str | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise UsageError(f"{field} must be a string such as {next(iter(table))!r}, got {text!r}")
    key = _key(text)
    if not key:
        return None
    for canonical, aliases in table.items():
        if key == canonical or key in aliases:
            return canonical
    raise UsageError(
        f"unknown {kind} {text!r} in field {field!r}",
        hint=_NOT_A_PRIMARY_LABEL.get(key) or f"use one of: {describe_aliases(table)}",
    )


def normalize_bottleneck(text: str | None, field: str = "bottleneck") -> str | None:
    """'memory', 'Memory-Bound', 'dram' -> 'memory_bound'; None and '' stay None."""
    return _normalize("bottleneck", field, text, BOTTLENECK_ALIASES)


def backend_aliases() -> dict[str, tuple[str, ...]]:
    """Every registered backend -> its accepted spellings (its name first)."""
    from kernel_opt.solution import registry

    return {backend.name: (backend.name, *backend.aliases) for backend in registry.backends()}


def normalize_backend(text: str | None, field: str = "backend") -> str | None:
    """'CUDA', 'cu', 'nvcc' -> 'cuda'; 'tl' -> 'triton'; None and '' stay None."""
    return _normalize("backend", field, text, backend_aliases())


def normalize_outcome(text: str | None, field: str = "outcome") -> str | None:
    return _normalize("outcome", field, text, OUTCOME_ALIASES)


def describe_aliases(table: dict[str, tuple[str, ...]]) -> str:
    """'memory_bound (memory, mem, ...); compute_bound (...)' for --help and error hints."""
    return "; ".join(
        f"{canonical} ({', '.join(a for a in aliases if a != canonical)})" for canonical, aliases in table.items()
    )


# --- chips -----------------------------------------------------------------------------------

# (pattern over the cleaned name, canonical name, sm) in matching order: the more specific
# names first so "rtx 6000 ada" is not read as something shorter.
KNOWN_CHIPS: tuple[tuple[str, str, str], ...] = (
    (r"gb300", "GB300", "sm_103"),
    (r"b300", "B300", "sm_103"),
    (r"gb200", "GB200", "sm_100"),
    (r"b200", "B200", "sm_100"),
    (r"b100", "B100", "sm_100"),
    (r"rtx pro 6000", "RTX PRO 6000 Blackwell", "sm_120"),
    (r"rtx 50[5-9]0( ti)?", None, "sm_120"),
    (r"gh200", "GH200", "sm_90"),
    (r"h100", "H100", "sm_90"),
    (r"h200", "H200", "sm_90"),
    (r"h800", "H800", "sm_90"),
    (r"h20", "H20", "sm_90"),
    (r"rtx 6000 ada", "RTX 6000 Ada", "sm_89"),
    (r"l40s", "L40S", "sm_89"),
    (r"l40", "L40", "sm_89"),
    (r"l4", "L4", "sm_89"),
    (r"rtx 40[5-9]0( ti)?", None, "sm_89"),
    (r"(jetson )?agx orin|(jetson )?orin", "Jetson Orin", "sm_87"),
    (r"a100", "A100", "sm_80"),
    (r"a800", "A800", "sm_80"),
    (r"a30", "A30", "sm_80"),
    (r"(rtx )?a6000", "RTX A6000", "sm_86"),
    (r"(rtx )?a5000", "RTX A5000", "sm_86"),
    (r"(rtx )?a4000", "RTX A4000", "sm_86"),
    (r"a40", "A40", "sm_86"),
    (r"a10g", "A10G", "sm_86"),
    (r"a10", "A10", "sm_86"),
    (r"rtx 30[5-9]0( ti)?", None, "sm_86"),
    (r"quadro rtx [68]000", None, "sm_75"),
    (r"t4", "T4", "sm_75"),
    (r"rtx 20[6-8]0( ti| super)?", None, "sm_75"),
    (r"v100", "V100", "sm_70"),
    (r"titan v", "TITAN V", "sm_70"),
)

_ARCH_TOKEN = re.compile(r"(?:\b|_)(?:sm|compute)_?(\d{2,3})[a-z]?\b")
_CAPABILITY = re.compile(r"^\s*(\d{1,2})\.(\d)\s*$")
_VENDOR_WORDS = re.compile(r"\b(nvidia|geforce|tesla)\b")


@dataclass(frozen=True)
class Chip:
    """A GPU as the log stores it: its architecture (`sm_90`) and, when known, its name (`H100`)."""

    arch: str | None
    name: str | None

    @property
    def generation(self) -> str | None:
        """The major compute capability, '9' for sm_90: same generation, same core design."""
        if self.arch is None:
            return None
        number = self.arch.removeprefix("sm_")
        return number[:-1]

    def describe(self) -> str:
        if self.name and self.arch:
            return f"{self.name} ({self.arch})"
        return self.name or self.arch or "unknown chip"


def arch_from_capability(capability: str | float | None) -> str | None:
    """'9.0' or 9.0 -> 'sm_90'; '10.3' -> 'sm_103'; None stays None."""
    if capability is None:
        return None
    text = f"{capability:.1f}" if isinstance(capability, float) else str(capability)
    match = _CAPABILITY.match(text)
    if not match:
        raise UsageError(f"compute capability {capability!r} is not of the form MAJOR.MINOR (e.g. 9.0)")
    return f"sm_{match.group(1)}{match.group(2)}"


def _clean_name(text: str) -> str:
    cleaned = re.sub(r"[\s\-_/,]+", " ", text.lower())
    return " ".join(_VENDOR_WORDS.sub(" ", cleaned).split())


def _known_name(cleaned: str) -> tuple[str | None, str | None, str]:
    """(canonical name or None, sm, matched text) of the first known chip in a cleaned name."""
    for pattern, name, arch in KNOWN_CHIPS:
        match = re.search(rf"\b(?:{pattern})\b", cleaned)
        if match:
            return name or _display(match.group(0)), arch, match.group(0)
    return None, None, ""


def _display(matched: str) -> str:
    """'rtx 4090 ti' -> 'RTX 4090 Ti' for product lines the table matches by pattern."""
    spelled = {"rtx": "RTX", "ti": "Ti", "super": "SUPER", "quadro": "Quadro"}
    return " ".join(spelled.get(word, word.upper()) for word in matched.split())


def normalize_chip(text: str | None, capability: str | float | None = None, field: str = "chip") -> Chip:
    """Read a chip as people and tools write it.

    'H100', 'h100 80gb hbm3', 'NVIDIA H100 80GB HBM3' -> Chip('sm_90', 'H100');
    'sm_90', 'sm90a', '9.0', '90' -> Chip('sm_90', None); 'sm_89 L40S' -> Chip('sm_89', 'L40S').
    A device name from torch plus its compute capability (as benchmark.json records them)
    gives the capability's sm and the name, even for a GPU this table does not know.
    """
    if text is not None and not isinstance(text, str):
        raise UsageError(f"{field} must be a string such as 'H100' or 'sm_90', got {text!r}")
    text = (text or "").strip()
    arch = arch_from_capability(capability)
    if not text:
        return Chip(arch, None)
    lowered = text.lower()
    capability_match = _CAPABILITY.match(lowered)
    if capability_match or lowered.isdigit():
        given = arch_from_capability(lowered) if capability_match else f"sm_{lowered}"
        return Chip(_agree(arch, given, text, field), None)
    token = _ARCH_TOKEN.search(lowered)
    if token:
        arch = _agree(arch, f"sm_{token.group(1)}", text, field)
        lowered = (lowered[: token.start()] + " " + lowered[token.end() :]).strip()
    cleaned = _clean_name(lowered)
    if not cleaned:
        return Chip(arch, None)
    name, known_arch, _ = _known_name(cleaned)
    if name is not None:
        if arch is not None and known_arch != arch:
            raise UsageError(
                f"{field} {text!r}: {name} is {known_arch}, not {arch}",
                hint="give the chip's name or its sm_XY, or both when they agree",
            )
        return Chip(known_arch, name)
    if arch is None:
        raise UsageError(
            f"unknown chip {text!r} in field {field!r}",
            hint="write sm_XY (e.g. sm_90), a known name (H100, H200, A100, L40S, RTX A6000, B200, ...), "
            "or both for a GPU this table lacks: 'sm_89 RTX 4000 SFF Ada'",
        )
    # An unknown name with a known architecture: keep the name as written, minus vendor and sm.
    words = _ARCH_TOKEN.sub(" ", text).split()
    display = " ".join(word for word in words if word.lower() not in {"nvidia", "geforce", "tesla"})
    return Chip(arch, display or None)


def _agree(first: str | None, second: str, text: str, field: str) -> str:
    if first is not None and first != second:
        raise UsageError(f"{field} {text!r} names {second}, but the compute capability says {first}")
    return second


def chip_similarity(query: Chip, record: Chip) -> str:
    """'same_chip', 'same_arch', 'same_generation', 'other' or 'unknown' (a side lacks an arch)."""
    if query.arch is None or record.arch is None:
        if query.name and record.name and query.name == record.name:
            return "same_chip"
        return "unknown"
    if query.arch == record.arch:
        if query.name and record.name:
            return "same_chip" if query.name == record.name else "same_arch"
        # one side gave only sm_XY: the closest we can say is the same architecture
        return "same_arch"
    if query.generation == record.generation:
        return "same_generation"
    return "other"
