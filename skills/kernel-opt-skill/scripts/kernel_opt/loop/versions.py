"""The versions of a run as their folders' records describe them, and which one is best so far.

"Best so far" is decided here and only here, so `next`, `evaluate`, `status` and the final report
always agree on it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernel_opt.check.records import read_correctness
from kernel_opt.core.errors import UsageError
from kernel_opt.loop.records import RunRecord, read_evaluation, read_version_record
from kernel_opt.measure.records import read_benchmark
from kernel_opt.measure.verdicts import clearly_faster
from kernel_opt.profile.records import read_profile
from kernel_opt.solution import registry

_VERSION_DIR = re.compile(r"^v(\d+)$")


@dataclass
class VersionState:
    """What the files in one version folder say; None wherever a file or field is absent."""

    number: int
    directory: str
    solution: str
    has_solution: bool
    parent: str | None = None
    continued_past_target: bool = False  # made by `next --ignore-target` after the target was reached
    evaluation_state: str | None = None  # None: `evaluate` never ran on it
    evaluation_wall_s: float | None = None
    correct: bool | None = None  # correctness.json "passed"
    benchmark_verdict: str | None = None  # benchmark.json "verdict"
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    percent_of_ceiling: float | None = None
    target_reached: bool | None = None
    best_baseline: str | None = None  # the fastest PyTorch baseline its benchmark timed
    speedup_vs_best_baseline: float | None = None
    compared_with: str | None = None  # the version benchmark.json's comparison was against
    comparison_speedup: float | None = None
    comparison_ci_low: float | None = None
    comparison_verdict: str | None = None
    bottleneck: str | None = None
    memory_limiter: str | None = None
    top_stall: str | None = None
    gpu_name: str | None = None

    @property
    def name(self) -> str:
        return f"v{self.number}"

    @property
    def measured(self) -> bool:
        """Timed by the benchmark, correct, not failed by its evaluation: the only versions that can be best so far.

        An evaluation fails a timed version when its profile shows the timed calls skipped the work.
        """
        return (self.benchmark_verdict == "measured" and isinstance(self.median_us, (int, float))
                and self.median_us > 0 and self.correct is not False and self.evaluation_state != "failed")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **asdict(self), "measured": self.measured}


def version_number(name: str) -> int:
    """'v3' -> 3; anything else is a usage error that says what a version looks like."""
    match = _VERSION_DIR.match(Path(name).name)
    if not match:
        raise UsageError(f"{name!r} is not a version name", hint="versions are named v0, v1, v2, ...")
    return int(match.group(1))


def _solution_of(out: Path, number: int, run: RunRecord | None) -> Path:
    if run is not None:
        return run.solution_path(out, number)
    folder = out / f"v{number}"
    suffixes = list(dict.fromkeys(backend.suffix for backend in registry.backends()))  # .cu, .py, ...
    for suffix in suffixes:
        if (folder / f"v{number}{suffix}").is_file():
            return folder / f"v{number}{suffix}"
    return folder / f"v{number}{suffixes[0]}"  # nothing there yet: the first backend's suffix


def read_version(out: Path, number: int, run: RunRecord | None = None) -> VersionState:
    """Read one version folder's records into a VersionState (no file is required)."""
    folder = out / f"v{number}"
    solution = _solution_of(out, number, run)
    state = VersionState(number=number, directory=str(folder), solution=str(solution), has_solution=solution.is_file())
    version = read_version_record(folder)
    if version is not None:
        state.parent, state.continued_past_target = version.parent, version.continued_past_target
    evaluation = read_evaluation(folder)
    if evaluation is not None:
        state.evaluation_state, state.evaluation_wall_s = evaluation.state, evaluation.wall_s
    correctness = read_correctness(folder)
    if correctness is not None:
        state.correct = correctness.passed
    benchmark = read_benchmark(folder)
    if benchmark is not None:
        state.benchmark_verdict = benchmark.verdict
        state.median_us, state.p20_us, state.p80_us = benchmark.median_us, benchmark.p20_us, benchmark.p80_us
        state.percent_of_ceiling = benchmark.percent_of_ceiling
        state.target_reached = benchmark.target_reached
        state.best_baseline = benchmark.best_baseline
        state.speedup_vs_best_baseline = benchmark.speedup_vs_best_baseline
        state.gpu_name = benchmark.gpu_name
        if benchmark.comparison is not None:
            state.compared_with = benchmark.comparison.against_folder()
            state.comparison_speedup = benchmark.comparison.speedup
            state.comparison_ci_low = benchmark.comparison.ci_low
            state.comparison_verdict = benchmark.comparison.verdict
    profile = read_profile(folder)
    if profile is not None:
        state.bottleneck, state.memory_limiter = profile.bottleneck, profile.memory_limiter
        state.top_stall = profile.top_stall
    return state


def list_versions(out: Path, run: RunRecord | None = None) -> list[VersionState]:
    """Every vN folder under OUT, in version order."""
    if not out.is_dir():
        return []
    numbers = sorted(int(m.group(1)) for p in out.iterdir() if p.is_dir() and (m := _VERSION_DIR.match(p.name)))
    return [read_version(out, number, run) for number in numbers]


def best_measured(versions: list[VersionState], below: int | None = None) -> VersionState | None:
    """The best measured-and-correct version (optionally among those numbered below `below`).

    The interleaved comparisons decide, in version order: a version replaces the best so far
    only when it was compared with that very version and found faster beyond the comparison's
    own bias (measure/verdicts.clearly_faster: a success, or a neutral gain of more than 2% with
    its interval above 1). Anything less keeps the older version, which needs no new evidence;
    medians from separate runs differ by a few percent between processes, so they must not
    promote a version that its own interleaved comparison found no faster. A version with no comparison against the
    best so far (records from older runs) falls back to its median.
    """
    candidates = sorted((v for v in versions if v.measured and (below is None or v.number < below)),
                        key=lambda v: v.number)
    best: VersionState | None = None
    for version in candidates:
        if best is None:
            best = version
        elif version.compared_with == best.name:
            if version.comparison_verdict == "success" or clearly_faster(version.comparison_speedup,
                                                                          version.comparison_ci_low):
                best = version
        elif version.median_us < best.median_us:
            best = version
    return best


def best_so_far(versions: list[VersionState]) -> VersionState | None:
    """best_measured, or v0 when nothing was measured yet (the run starts from v0)."""
    return best_measured(versions) or next((v for v in versions if v.number == 0), None)
