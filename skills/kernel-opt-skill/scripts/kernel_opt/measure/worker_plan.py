"""What the parent settles before the benchmark's worker starts: its request, and the baselines the run's cache holds.

The run's reference_cache.json (measure/reference_cache.py) may already hold the reference's
baselines and work at these sizes, timed by an earlier version: the worker is told to count the
work only where the cache lacks it, and, when it may time, which baselines are still to time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.measure.benchmark_request import BenchmarkRequest
from kernel_opt.measure.records import BenchmarkReport, TimedEntry
from kernel_opt.measure.reference_cache import ReferenceCache, baseline_names, reference_key, still_to_time, visible_gpu
from kernel_opt.run.request import BenchmarkPart, ChildRequest, Tolerances
from kernel_opt.solution import registry
from kernel_opt.solution.build_record import BuildRecord
from kernel_opt.solution.spec import solution_spec


@dataclass
class WorkerPlan:
    """What the parent settles before the worker starts: its request, and what the run's cache held then."""

    request: ChildRequest | None = None  # the worker's request, less what it is told when released (release_fields)
    cache: ReferenceCache | None = None
    key: dict[str, Any] | None = None
    work: tuple[dict[str, Any], str] | None = None  # counted by an earlier version (ReferenceCache.work)


def plan_worker(report: BenchmarkReport, request: BenchmarkRequest, solution: Path, reference: Path) -> WorkerPlan:
    """Build the solution (and --against) and read the run's cached work: the worker's request.

    Notes, warnings, the build and the clocks go to `report` (for a held worker, a scratch record
    whose clocks are read again at its release).
    """
    from kernel_opt.env.probes import probe_nvidia_smi

    build_dir = request.output_dir / "build"
    spec, build_record = solution_spec(solution, report.backend, "cuda", build_dir, request.build, report.notes)
    if build_record:
        report.solution.build = BuildRecord.from_dict(build_record).for_benchmark()
    report.warnings += registry.get(report.backend).source_warnings(solution)
    against_spec = None
    if request.against is not None:
        other = request.against.resolve()
        against_spec, _ = solution_spec(other, registry.detect(other), "cuda", build_dir, request.build, report.notes)
    smi = probe_nvidia_smi()
    report.clocks_start = list(smi.gpus)
    plan = WorkerPlan()
    if request.reference_cache is not None:
        plan.cache = ReferenceCache(request.reference_cache)
        plan.key = reference_key(reference, request.dims, request.seed, visible_gpu(smi.gpus))
        plan.work = plan.cache.work(plan.key)
    part = BenchmarkPart(request.seed, Tolerances(request.atol, request.rtol, request.kernelbench_tolerances),
                         against_spec, None if plan.work is None else {**plan.work[0], "cached_from": plan.work[1]},
                         compiles_a_baseline(request, plan))
    plan.request = ChildRequest(spec, str(reference), "cuda", request.dims, part)
    return plan


def compiles_a_baseline(request: BenchmarkRequest, plan: WorkerPlan) -> bool:
    """Whether the worker will compile a torch.compile baseline (not all cached yet): a held worker then pays
    torch.compile's one-off start while it waits (benchmark_child._warm_up_compiler)."""
    _, kinds, modes = baselines_to_time(request, plan)
    return "compile" in kinds and bool(modes)


def baselines_to_time(request: BenchmarkRequest, plan: WorkerPlan) -> tuple[list[TimedEntry], list[str], list[str]]:
    """The run's cached baselines for this request, read now, and the kinds and compile modes still to time."""
    kinds, modes = list(request.baselines), list(request.compile_modes)
    if plan.cache is None:
        return [], kinds, modes
    cached = plan.cache.baselines(plan.key, baseline_names(kinds, modes))
    return (cached, *still_to_time(kinds, modes, cached))


def release_fields(report: BenchmarkReport, request: BenchmarkRequest, plan: WorkerPlan) -> dict[str, Any]:
    """What the worker is told when it may time: the baselines still to time once those in the run's cache,
    read now, are reused (they fill report.baselines)."""
    cached, kinds, modes = baselines_to_time(request, plan)
    if plan.cache is not None:
        report.baselines = cached
    return {"baselines": kinds, "compile_modes": modes}
