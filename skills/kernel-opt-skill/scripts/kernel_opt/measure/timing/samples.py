"""What a timer returns: per-call samples and how they were taken, or why a CUDA graph could not be captured."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from kernel_opt.measure import statistics
from kernel_opt.measure.timing.l2_flush import FlushMode

TimingMethod = Literal["events", "cuda_graph", "cuda_graph_differential"]


@dataclass
class TimingSamples:
    """Per-call times of one callable, in microseconds, and how they were taken.

    `samples_us` holds one value per timed rep; for `method == "cuda_graph"` each value is a
    replay's time divided by `calls_per_sample`. `warmup` counts the untimed calls made
    before the first sample. `flush_l2` says whether the L2 was flushed before every timed
    call (never for CUDA-graph timing: the graph holds only `fn`).
    """

    samples_us: list[float]
    warmup: int
    reps: int
    flush_l2: bool
    method: TimingMethod
    calls_per_sample: int = 1
    flush_mode: FlushMode | None = None
    flush_bytes: int = 0
    estimate_us: float | None = None
    interleaved: bool = False
    device_name: str | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> statistics.SampleSummary:
        return statistics.summarize(self.samples_us)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def p20_us(self) -> float:
        return statistics.percentile(self.samples_us, 20.0)

    @property
    def p80_us(self) -> float:
        return statistics.percentile(self.samples_us, 80.0)

    @property
    def min_us(self) -> float:
        return float(min(self.samples_us))

    @property
    def mean_us(self) -> float:
        return float(sum(self.samples_us) / len(self.samples_us))

    @property
    def relative_spread(self) -> float:
        return statistics.relative_spread(self.samples_us)

    def to_dict(self) -> dict:
        payload = asdict(self)
        payload["ok"] = True
        payload.update(
            median_us=self.median_us,
            p20_us=self.p20_us,
            p80_us=self.p80_us,
            min_us=self.min_us,
            mean_us=self.mean_us,
            relative_spread=self.relative_spread,
        )
        return payload


@dataclass(frozen=True)
class GraphCaptureFailure:
    """`fn` could not be captured in a CUDA graph; `reason` is the error torch or CUDA gave.

    Typical causes: `fn` synchronises (cudaDeviceSynchronize, .item(), .cpu()), launches on
    the legacy default stream instead of the current one, or allocates with cudaMalloc.
    """

    reason: str
    method: TimingMethod = "cuda_graph"

    @property
    def message(self) -> str:
        return f"graph capture failed: {self.reason}"

    def to_dict(self) -> dict:
        return {"ok": False, "method": self.method, "error": self.message}
