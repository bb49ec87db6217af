"""Datasheet peaks of NVIDIA GPUs, kept as data (data/datasheet.yaml) with a source per value.

A roofline needs ceilings. The measured ones (ceilings.py) say what this board does today;
the datasheet ones say what NVIDIA promises, and a report shows both so a reader can see
how far the measurement sits below the promise. No number enters without the document,
the place in it, and the figure as printed: `load_datasheet` refuses a file that breaks
that rule, so a value typed in from memory cannot slip in.

Lookup is by the exact name torch reports (`torch.cuda.get_device_name()`), case and spacing
aside. There is no fuzzy matching on purpose: "NVIDIA H100 NVL" or "NVIDIA A100-SXM4-40GB"
have different peaks from their siblings, and an unknown board gets None, not a guess.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from kernel_opt.core.errors import UsageError

DATASHEET_PATH = Path(__file__).resolve().parents[1] / "data" / "datasheet.yaml"
SCHEMA_VERSION = 1

# The values a GPU entry may carry. Tensor rates are dense; fp16 is the FP32-accumulate rate.
SPEC_FIELDS: tuple[str, ...] = (
    "memory_bandwidth_gbps",
    "fp32_tflops",
    "tf32_tensor_tflops",
    "bf16_tensor_tflops",
    "fp16_tensor_tflops",
    "fp8_tensor_tflops",
    "sm_count",
    "l2_cache_mib",
    "boost_clock_mhz",
)
TENSOR_FIELDS = frozenset(name for name in SPEC_FIELDS if "_tensor_" in name)
SPARSE_HALVED_NOTE = "sparse figure halved"

# torch dtype name -> the datasheet rate a matmul in that dtype can reach.
_DTYPE_FIELDS: dict[str, str] = {
    "float32": "fp32_tflops",
    "tf32": "tf32_tensor_tflops",
    "bfloat16": "bf16_tensor_tflops",
    "float16": "fp16_tensor_tflops",
    "float8_e4m3fn": "fp8_tensor_tflops",
    "float8_e5m2": "fp8_tensor_tflops",
    "float8_e4m3fnuz": "fp8_tensor_tflops",
    "float8_e5m2fnuz": "fp8_tensor_tflops",
}


class DatasheetError(UsageError):
    """datasheet.yaml breaks a rule (a value without a source, an unknown field, ...)."""

    kind = "datasheet"


@dataclass(frozen=True)
class Source:
    key: str
    title: str
    publisher: str
    url: str
    note: str | None = None
    checked_via: tuple[str, ...] = ()


@dataclass(frozen=True)
class SourcedValue:
    """One datasheet number, the figure as printed, and where it is printed."""

    value: int | float
    quoted: str
    source: Source
    location: str
    sparse_quoted_tflops: float | None = None
    note: str | None = None

    def citation(self) -> str:
        """'title, location (url)': what a report prints beside the number."""
        return f"{self.source.title}, {self.location} ({self.source.url})"

    def to_dict(self) -> dict:
        return {
            "value": self.value,
            "quoted": self.quoted,
            "sparse_quoted_tflops": self.sparse_quoted_tflops,
            "note": self.note,
            "source": self.source.title,
            "url": self.source.url,
            "location": self.location,
        }


@dataclass(frozen=True)
class GpuDatasheet:
    key: str
    display_name: str
    torch_names: tuple[str, ...]
    specs: dict[str, SourcedValue] = field(default_factory=dict)

    def value(self, name: str) -> float | None:
        """The stored value of one spec field, or None where no document gives it."""
        if name not in SPEC_FIELDS:
            raise UsageError(f"unknown datasheet field {name!r}; known: {', '.join(SPEC_FIELDS)}")
        entry = self.specs.get(name)
        return None if entry is None else entry.value

    @property
    def memory_bandwidth_gbps(self) -> float | None:
        return self.value("memory_bandwidth_gbps")

    def peak_tflops(self, dtype: str, allow_tf32: bool = False) -> float | None:
        """Dense matmul peak for a torch dtype name ("float32", "bfloat16", ...).

        float32 maps to the non-tensor FP32 rate unless `allow_tf32` (the reference permits
        TF32), so a strict-FP32 kernel is never measured against the TF32 roof.
        """
        name = dtype.removeprefix("torch.")
        if name == "float32" and allow_tf32:
            name = "tf32"
        field_name = _DTYPE_FIELDS.get(name)
        return None if field_name is None else self.value(field_name)

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "display_name": self.display_name,
            "torch_names": list(self.torch_names),
            "specs": {name: entry.to_dict() for name, entry in self.specs.items()},
        }


@dataclass(frozen=True)
class Datasheet:
    sources: dict[str, Source]
    gpus: dict[str, GpuDatasheet]

    def lookup(self, torch_name: str | None) -> GpuDatasheet | None:
        if not torch_name:
            return None
        wanted = normalize_gpu_name(torch_name)
        for gpu in self.gpus.values():
            if any(normalize_gpu_name(name) == wanted for name in gpu.torch_names):
                return gpu
        return None


def normalize_gpu_name(name: str) -> str:
    """Case and spacing do not distinguish GPUs: 'nvidia  h100 pcie' == 'NVIDIA H100 PCIe'."""
    return re.sub(r"\s+", " ", name).strip().lower()


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise DatasheetError(f"datasheet.yaml, {where}: {message}")


def _nonempty_text(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _parse_source(key: str, raw: Any) -> Source:
    where = f"sources.{key}"
    _require(isinstance(raw, dict), where, "must be a mapping")
    for required in ("title", "publisher", "url"):
        _require(_nonempty_text(raw.get(required)), where, f"needs a non-empty {required!r}")
    _require(str(raw["url"]).startswith("https://"), where, f"url must be https://, got {raw['url']!r}")
    checked_via = raw.get("checked_via") or []
    _require(isinstance(checked_via, list), where, "checked_via must be a list of URLs")
    return Source(
        key=key,
        title=raw["title"].strip(),
        publisher=raw["publisher"].strip(),
        url=raw["url"].strip(),
        note=raw.get("note"),
        checked_via=tuple(checked_via),
    )


def _parse_value(where: str, name: str, raw: Any, sources: dict[str, Source]) -> SourcedValue:
    _require(name in SPEC_FIELDS, where, f"unknown field {name!r}; allowed: {', '.join(SPEC_FIELDS)}")
    _require(isinstance(raw, dict), where, "must be a mapping with value, quoted, source, location")
    value = raw.get("value")
    _require(
        isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0,
        where,
        f"value must be a positive number, got {value!r}",
    )
    _require(_nonempty_text(raw.get("quoted")), where, "needs 'quoted': the figure as the document prints it")
    _require(raw.get("source") in sources, where, f"source {raw.get('source')!r} is not listed under sources")
    _require(_nonempty_text(raw.get("location")), where, "needs 'location': the table/page/row in the document")
    sparse = raw.get("sparse_quoted_tflops")
    note = raw.get("note")
    if sparse is not None:
        _require(name in TENSOR_FIELDS, where, "only tensor-core rates can be quoted with sparsity")
        _require(
            isinstance(sparse, (int, float)) and math.isclose(value, sparse / 2.0, rel_tol=1e-9),
            where,
            f"value {value} must be half the sparse figure {sparse} (values are stored dense)",
        )
        _require(
            isinstance(note, str) and SPARSE_HALVED_NOTE in note,
            where,
            f"a halved sparse figure needs the note {SPARSE_HALVED_NOTE!r}",
        )
    return SourcedValue(
        value=value,  # ints (SM counts, clocks) stay ints
        quoted=raw["quoted"],
        source=sources[raw["source"]],
        location=raw["location"],
        sparse_quoted_tflops=None if sparse is None else float(sparse),
        note=note,
    )


def parse_datasheet(document: Any) -> Datasheet:
    """Validate a parsed datasheet.yaml and build its records; DatasheetError on any violation."""
    _require(isinstance(document, dict), "top level", "must be a mapping")
    _require(
        document.get("schema_version") == SCHEMA_VERSION,
        "schema_version",
        f"expected {SCHEMA_VERSION}, got {document.get('schema_version')!r}",
    )
    raw_sources = document.get("sources") or {}
    _require(isinstance(raw_sources, dict) and raw_sources, "sources", "must be a non-empty mapping")
    sources = {key: _parse_source(key, raw) for key, raw in raw_sources.items()}

    raw_gpus = document.get("gpus") or {}
    _require(isinstance(raw_gpus, dict) and raw_gpus, "gpus", "must be a non-empty mapping")
    gpus: dict[str, GpuDatasheet] = {}
    seen_names: dict[str, str] = {}
    for key, raw in raw_gpus.items():
        where = f"gpus.{key}"
        _require(isinstance(raw, dict), where, "must be a mapping")
        _require(_nonempty_text(raw.get("display_name")), where, "needs a display_name")
        torch_names = raw.get("torch_names") or []
        _require(
            isinstance(torch_names, list) and torch_names and all(_nonempty_text(n) for n in torch_names),
            where,
            "needs torch_names: the names torch.cuda.get_device_name() reports for this board",
        )
        for name in torch_names:
            normalized = normalize_gpu_name(name)
            _require(normalized not in seen_names, where,
                     f"torch name {name!r} is also listed under {seen_names.get(normalized)}")
            seen_names[normalized] = key
        raw_specs = raw.get("specs") or {}
        _require(isinstance(raw_specs, dict) and raw_specs, where, "needs at least one sourced spec")
        specs = {
            name: _parse_value(f"{where}.specs.{name}", name, entry, sources) for name, entry in raw_specs.items()
        }
        gpus[key] = GpuDatasheet(
            key=key, display_name=raw["display_name"], torch_names=tuple(torch_names), specs=specs
        )
    return Datasheet(sources=sources, gpus=gpus)


def load_datasheet(path: str | Path | None = None) -> Datasheet:
    """Read and validate a datasheet file (default: the one shipped with the skill)."""
    if path is None:
        return _load_default()
    return _load(Path(path))


def _load(path: Path) -> Datasheet:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise DatasheetError(f"cannot read {path}: {error}") from error
    return parse_datasheet(document)


@lru_cache(maxsize=1)
def _load_default() -> Datasheet:
    return _load(DATASHEET_PATH)


def lookup_gpu(torch_name: str | None) -> GpuDatasheet | None:
    """The datasheet entry for the GPU torch names `torch_name`, or None when it is not listed."""
    return load_datasheet().lookup(torch_name)
