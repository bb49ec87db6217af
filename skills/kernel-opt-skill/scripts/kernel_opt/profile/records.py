"""The profile's record: what DIR/ncu_summary.json holds, and how it is read back.

Plain data: the workspace, the final report and the experience log read it without
Nsight Compute. Per-kernel detail that only the reports show (occupancy limits, stall
shares, ncu's rule messages, every canonical metric) stays a JSON object.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.records import Record, check_schema, field_values, read_record
from kernel_opt.profile.problem_traits import ProblemTraits

NCU_SUMMARY_FILE = "ncu_summary.json"
NCU_SUMMARY_SCHEMA = "kernel_opt.ncu_summary/1"


@dataclass
class Collection(Record):
    """How the report was obtained, for the report's last section."""

    mode: str  # "profiled" or "from_report"
    report: str
    reader: str
    command: str | None = None
    ncu: str | None = None
    ncu_version: str | None = None
    clock_control: str = "unknown (read from an existing report)"
    section_set: str | None = None
    nvtx_range: str | None = None
    warmup_calls: int | None = None
    profiled_calls: int | None = None
    max_launches: int | None = None
    dims: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class FindingRecord(Record):
    """An observation worth acting on (profile.classify.Finding), with the values that triggered it."""

    key: str
    text: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class GuideLink(Record):
    """A guide section to read next (profile.classify.Suggestion) and why it applies."""

    guide: str
    strategy: str
    link: str
    why: str


@dataclass
class DominantKernel(Record):
    name: str | None
    share_pct: float | None  # of the profiled time


@dataclass
class BaselineChange(Record):
    """One metric or label before (the baseline version) and after (this one)."""

    name: str
    label: str
    unit: str
    before: Any
    after: Any
    change: float | None
    moved: bool


@dataclass
class BaselineComparison:
    dir: str | None  # the baseline version's folder
    changes: list[BaselineChange] = field(default_factory=list)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> BaselineComparison:
        changes = [BaselineChange.from_dict(item) for item in payload.get("changes") or []]
        return cls(dir=payload.get("dir"), changes=changes)


@dataclass
class KernelSummary:
    """One profiled kernel: its launches, share of the time, label and metrics."""

    name: str
    demangled_name: str | None = None
    launches: int = 0
    launch_configuration: str = ""
    total_duration_us: float | None = None
    share_pct: float | None = None
    inside_nvtx_range: bool | None = None
    label: str | None = None
    small_grid: bool = False
    reason: str = ""
    memory_limiter: str | None = None
    occupancy: dict[str, Any] = field(default_factory=dict)  # achieved_pct, theoretical_pct, limiters, ...
    # The assessments behind the label (profile/classify.py): absent from records made before they existed.
    pipes: dict[str, Any] = field(default_factory=dict)  # busiest math pipe, its % of peak, at its roof
    shared_memory: dict[str, Any] = field(default_factory=dict)  # bank conflicts, wavefronts/request, staging
    design: dict[str, Any] = field(default_factory=dict)  # the asynchronous features the SASS shows, and its source
    unverified: list[str] = field(default_factory=list)  # evidence the verdict needed and the report lacked
    top_stalls: list[dict[str, Any]] = field(default_factory=list)  # reason, value, share_pct
    findings: list[FindingRecord] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)  # canonical name -> value
    metric_sources: dict[str, Any] = field(default_factory=dict)  # canonical name -> the ncu metric read
    rules: list[dict[str, Any]] = field(default_factory=list)  # ncu's own rule results

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> KernelSummary:
        findings = [FindingRecord.from_dict(item) for item in payload.get("findings") or []]
        return cls(**field_values(cls, payload, findings=findings))


@dataclass
class NcuSummary:
    """DIR/ncu_summary.json: the bottleneck label with its evidence, what to read next, every kernel."""

    schema: str = NCU_SUMMARY_SCHEMA
    bottleneck: str | None = None  # memory_bound, compute_bound, latency_bound, occupancy_bound, overlap_bound
    small_grid: bool = False
    top_stall: str | None = None
    memory_limiter: str | None = None  # "DRAM", "L2" or "L1/shared"
    occupancy_limiters: list[str] = field(default_factory=list)
    busiest_pipe: str | None = None  # the math pipe closest to its own peak ("tensor", "FMA", ...)
    unverified: list[str] = field(default_factory=list)  # evidence the dominant kernel's verdict lacked
    reason: str = ""
    dominant_kernel: DominantKernel = field(default_factory=lambda: DominantKernel(None, None))
    metrics: dict[str, Any] = field(default_factory=dict)  # duration-weighted over the kernels
    findings: list[FindingRecord] = field(default_factory=list)
    read_next: list[GuideLink] = field(default_factory=list)
    traits: ProblemTraits | None = None  # the problem's family and traffic the advice was fitted to
    kernels: list[KernelSummary] = field(default_factory=list)
    device: dict[str, Any] = field(default_factory=dict)  # name, compute_capability
    launches_profiled: int = 0
    baseline: BaselineComparison | None = None
    collection: Collection | None = None
    thresholds: dict[str, float] = field(default_factory=dict)  # classify.THRESHOLDS' values

    def to_dict(self) -> dict[str, Any]:
        payload = asdict(self)
        if self.traits is not None:  # its own to_dict: it leaves out what a summary written before it lacks
            payload["traits"] = self.traits.to_dict()
        return payload

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = NCU_SUMMARY_FILE) -> NcuSummary:
        check_schema(payload, NCU_SUMMARY_SCHEMA, what)
        dominant = payload.get("dominant_kernel") or {}  # DominantKernel: None where a record lacks them
        baseline, collection, traits = payload.get("baseline"), payload.get("collection"), payload.get("traits")
        return cls(**field_values(
            cls, payload, schema=NCU_SUMMARY_SCHEMA,
            dominant_kernel=DominantKernel.from_dict(dominant),
            findings=[FindingRecord.from_dict(item) for item in payload.get("findings") or []],
            read_next=[GuideLink.from_dict(item) for item in payload.get("read_next") or []],
            kernels=[KernelSummary.from_dict(item) for item in payload.get("kernels") or []],
            baseline=BaselineComparison.from_dict(baseline) if isinstance(baseline, dict) else None,
            collection=Collection.from_dict(collection) if isinstance(collection, dict) else None,
            traits=ProblemTraits.from_dict(traits) if isinstance(traits, dict) else None,
        ))

    def metric(self, name: str) -> Any:
        """A duration-weighted metric by its canonical name (achieved_occupancy_pct, ...); None when absent."""
        return self.metrics.get(name)

    def dominant(self) -> KernelSummary | None:
        """The kernel the label comes from (the first one, for records that do not name it)."""
        return next((k for k in self.kernels if k.name == self.dominant_kernel.name),
                    self.kernels[0] if self.kernels else None)

    def moved(self) -> list[BaselineChange]:
        """The metrics and labels that moved since the baseline version ([] without one)."""
        return [change for change in (self.baseline.changes if self.baseline else []) if change.moved]


def read_profile(folder: Path) -> NcuSummary | None:
    """folder/ncu_summary.json (a version's, or its re-profile's), or None where there is none."""
    return read_record(folder / NCU_SUMMARY_FILE, NcuSummary.from_dict)
