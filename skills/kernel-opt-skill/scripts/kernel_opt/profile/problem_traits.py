"""What the profiled problem is, beyond its label: its kernel family, and whether the solution moves each byte once.

The label says what limits a kernel; which strategies can lift that limit depends on the problem
too. A GELU and a GEMM can both be memory-bound, but tiling helps only the GEMM; a softmax that
reads each row twice gains from a single pass, a GELU that reads each byte once cannot. The
family comes from the operations the reference computes (solution.families.reference_family),
else from tensor-core instructions in the dominant kernel; the traffic from the profile's DRAM
bytes per call against the problem's counted minimum in the benchmark record of the same folder
(`benchmark.json`, written by the benchmark step before the profile step). Advice
(profile/suggestions.py) and the experience log's ranking read these traits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.records import Record
from kernel_opt.measure.records import BenchmarkReport
from kernel_opt.profile.thresholds import threshold
from kernel_opt.solution.families import OTHER_FAMILY, reference_family


@dataclass
class ProblemTraits(Record):
    """The profiled problem's family and traffic, with where each came from; None where nothing says."""

    family: str | None = None  # a key of solution.families.FAMILIES
    family_source: str | None = None  # "the reference calls tanh, pow", ...
    minimum_bytes: float | None = None  # the problem's counted bytes per call (benchmark.json work.bytes)
    bytes_source: str | None = None  # "ref.py bytes()", "inputs read once + outputs written once"
    dram_bytes_per_call: float | None = None  # read + written by every profiled kernel, per profiled call
    percent_of_ceiling: float | None = None  # the benchmark's, against the binding roofline ceiling
    target_percent: float | None = None  # the benchmark's target (the run's)
    target_reached: bool | None = None  # the benchmark's verdict on that target (it also counts beating every roof)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON; `target_reached` only where a benchmark gave it, so summaries written before it read the same."""
        payload = super().to_dict()
        if self.target_reached is None:
            payload.pop("target_reached", None)
        return payload

    @property
    def known_family(self) -> str | None:
        """The family where one was decided (not "other")."""
        return self.family if self.family and self.family != OTHER_FAMILY else None

    @property
    def traffic_ratio(self) -> float | None:
        """DRAM bytes per call over the problem's minimum: about 1 when each byte is read once."""
        if not self.dram_bytes_per_call or not self.minimum_bytes:
            return None
        return self.dram_bytes_per_call / self.minimum_bytes

    @property
    def reads_once(self) -> bool | None:
        """The solution moves each byte once (within `minimum_traffic_ratio`); None where the traffic is unknown."""
        ratio = self.traffic_ratio
        return None if ratio is None else ratio <= threshold("minimum_traffic_ratio")

    @property
    def at_memory_roof(self) -> bool:
        """Each byte read once and the benchmark's target reached: nothing but fewer bytes is left. The benchmark's
        own verdict decides (a version faster than every roof measured has reached it at any %); a record written
        without that verdict falls back to comparing the % with the target."""
        if not self.reads_once:
            return False
        if self.target_reached is not None:
            return self.target_reached
        return self.percent_of_ceiling is not None and self.target_percent is not None \
            and self.percent_of_ceiling >= self.target_percent


def problem_traits(reference: Path | None, benchmark: BenchmarkReport | None, dram_bytes: float | None,
                   profiled_calls: int | None, tensor_cores: bool | None,
                   dims: dict[str, Any] | None = None) -> ProblemTraits:
    """The traits of a profiled problem.

    Args:
        reference: ref.py or the KernelBench problem (None when a kept report is read).
        benchmark: the benchmark record of the profile's folder; used only when it measured the same sizes.
        dram_bytes: the profile's DRAM bytes, read and written, summed over every kernel's launches.
        profiled_calls: how many calls of the solution those launches belong to.
        tensor_cores: the dominant kernel runs tensor instructions.
        dims: the sizes the profile ran at.
    """
    traits = ProblemTraits()
    evidence = reference_family(reference) if reference is not None else None
    if evidence is not None:
        traits.family, traits.family_source = evidence.family, evidence.source
    elif tensor_cores:
        traits.family, traits.family_source = "matmul_like", "tensor-core instructions in the dominant kernel"
    if benchmark is None or not benchmark.measured or (dims and benchmark.dims and dict(benchmark.dims) != dims):
        return traits
    work = benchmark.work
    traits.minimum_bytes = work.bytes if work.has("bytes") else None
    traits.bytes_source = work.bytes_source if work.has("bytes_source") else None
    traits.percent_of_ceiling, traits.target_percent = benchmark.percent_of_ceiling, benchmark.target_percent
    traits.target_reached = benchmark.target_reached
    if dram_bytes and profiled_calls:
        traits.dram_bytes_per_call = dram_bytes / profiled_calls
    return traits
