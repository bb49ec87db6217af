"""What benchmark.py is asked to do: the typed request, its defaults, and its checks before anything runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.check.correctness import BuildOptions, check_tolerance_options
from kernel_opt.core.cli import comma_list, dim_arguments
from kernel_opt.core.errors import UsageError
from kernel_opt.measure.records import DEFAULT_TARGET_PERCENT

PROG = "benchmark.py"
DEFAULT_COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
DEFAULT_BASELINES = ("eager", "compile")
DEFAULT_SEED = 0
DEFAULT_CHECK_SEEDS = 3
DEFAULT_TIMEOUT_S = 900.0  # max-autotune compiles of a matmul baseline can take minutes
CHECK_TIMEOUT_CAP_S = 300.0  # the correctness check before timing runs no baselines: it needs less


@dataclass
class BenchmarkRequest:
    """What benchmark.py is asked to do, as typed options."""

    solution: Path
    reference: Path
    output_dir: Path
    dims: dict[str, Any] = field(default_factory=dict)
    against: Path | None = None
    baselines: list[str] = field(default_factory=lambda: list(DEFAULT_BASELINES))
    compile_modes: list[str] = field(default_factory=lambda: list(DEFAULT_COMPILE_MODES))
    backend: str = "auto"
    seed: int = DEFAULT_SEED
    check_seeds: int = DEFAULT_CHECK_SEEDS  # seeds of the correctness check run first
    atol: float | None = None
    rtol: float | None = None
    target_percent: float = DEFAULT_TARGET_PERCENT
    timeout_s: float = DEFAULT_TIMEOUT_S
    build: BuildOptions = field(default_factory=BuildOptions)
    checked_by: Path | None = None  # a correctness.json to rely on instead of the gate's check (check/reuse.py)
    reference_cache: Path | None = None  # a run's reference_cache.json: reuse baselines and work measured there
    kernelbench_tolerances: bool = False  # outputs judged at KernelBench's atol = rtol = 1e-2 (check/tolerance.py)

    def argv(self) -> list[str]:
        """The same request as benchmark.py's arguments; the loop's choices are always spelled out."""
        arguments = [str(self.solution), "--ref", str(self.reference), "--output-dir", str(self.output_dir),
                     *self.build.arguments(), "--target-percent", f"{self.target_percent:g}",
                     "--baseline", ",".join(self.baselines) or "none", "--compile-modes", ",".join(self.compile_modes),
                     "--seeds", str(self.check_seeds)]
        arguments += [] if self.against is None else ["--against", str(self.against)]
        arguments += [] if self.backend == "auto" else ["--backend", self.backend]
        arguments += [] if self.seed == DEFAULT_SEED else ["--seed", str(self.seed)]
        arguments += [] if self.atol is None else ["--atol", str(self.atol)]
        arguments += [] if self.rtol is None else ["--rtol", str(self.rtol)]
        arguments += ["--kernelbench-tolerances"] if self.kernelbench_tolerances else []
        arguments += [] if self.timeout_s == DEFAULT_TIMEOUT_S else ["--timeout", str(self.timeout_s)]
        arguments += [] if self.checked_by is None else ["--checked-by", str(self.checked_by)]
        arguments += [] if self.reference_cache is None else ["--reference-cache", str(self.reference_cache)]
        return arguments + dim_arguments(self.dims)


def baselines_option(text: str) -> list[str]:
    """--baseline's value as baseline names: 'both' is eager and compile, 'none' is none (core/cli.comma_list)."""
    return [name for item in comma_list(text) for name in (DEFAULT_BASELINES if item == "both" else (item,))]


def validated_paths(request: BenchmarkRequest) -> tuple[Path, Path]:
    """The solution and ref.py, resolved; UsageError (exit 2) for a bad option or a missing file."""
    unknown = set(request.baselines) - set(DEFAULT_BASELINES)
    if unknown:
        raise UsageError(f"unknown --baseline {sorted(unknown)}; use eager, compile, both (eager,compile) or none")
    if not 0 < request.target_percent <= 100:
        raise UsageError("--target-percent must be in (0, 100]")
    check_tolerance_options(request.atol, request.rtol, request.kernelbench_tolerances)
    solution, reference = request.solution.resolve(), request.reference.resolve()
    for path, role in ((solution, "solution"), (reference, "reference"), (request.against, "--against")):
        if path is not None and not Path(path).is_file():
            raise UsageError(f"{role} file not found: {path}")
    return solution, reference
