"""Prepare a solution to run (build it, describe it for the worker) and check its correctness.

Shared by correctness_check and benchmark: the benchmark times nothing that this check has
not passed, and it runs the very same check.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.backends import registry
from kernel_opt.backends.base import BuildOptions
from kernel_opt.check.compare import CorrectnessReport, report_from_events
from kernel_opt.core.errors import ExitCode, KernelOptError, UsageError

__all__ = ["BuildOptions", "CheckOptions", "check_correctness", "exit_code_of", "solution_spec"]


@dataclass
class CheckOptions:
    seeds: int = 3
    atol: float | None = None
    rtol: float | None = None
    timeout_s: float = 120.0
    compile_only: bool = False


def solution_spec(
    solution: Path, backend: str, device: str, build_dir: Path, options: BuildOptions, notes: list[str]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """What the worker needs to load a solution (its backend prepares it), and the build record if it has a build."""
    definition = registry.get(backend)
    prepared = definition.prepare(solution, device, build_dir, options, notes)
    spec = {"backend": backend, "solution": str(solution), **prepared.request, **registry.request_fields(definition)}
    return spec, prepared.build


def check_correctness(
    solution: Path,
    reference: Path,
    backend: str,
    device: str,
    dims: dict[str, Any],
    options: CheckOptions,
    build: BuildOptions,
    build_dir: Path,
    command: str,
) -> CorrectnessReport:
    """Build, run every shape and seed in a child process, and return the filled report."""
    definition = registry.get(backend)
    interpreter = definition.cpu_interpreter if device == "cpu" else None
    report = CorrectnessReport(
        verdict="fail",
        solution=str(solution),
        reference=str(reference),
        backend=backend,
        device={"type": device, "name": None, "compute_capability": None},
        interpreter=interpreter is not None,
        command=command,
        dims=dims,
        seeds=list(range(options.seeds)),
    )
    if interpreter is not None:
        report.notes.append(interpreter.note)
    try:
        if options.compile_only and not definition.builds_ahead:
            builders = " and ".join(b.title for b in registry.backends() if b.builds_ahead)
            raise UsageError(f"--compile-only applies to {builders} solutions; {definition.title} kernels compile "
                             "when they first run")
        spec, report.build = solution_spec(solution.resolve(), backend, device, build_dir, build, report.notes)
        if options.compile_only:
            report.verdict = "pass"
            report.notes.append("--compile-only: the solution compiled; nothing was run, so correctness is not established")
            return report
        if device != "cuda" and not definition.runs_on_cpu:
            raise definition.cannot_run_without_gpu(solution, report.build)
        from kernel_opt.run.runner import run_worker

        request = {
            **spec,
            "mode": "correctness",
            "reference": str(reference.resolve()),
            "device": device,
            "cli_dims": dims,
            "seeds": report.seeds,
            "atol": options.atol,
            "rtol": options.rtol,
        }
        environment = dict(interpreter.environment) if interpreter is not None else {}
        outcome = run_worker(request, timeout_s=options.timeout_s, env=environment)
        report_from_events(report, outcome)
    except KernelOptError as error:
        report.error = error.to_dict()
        report.verdict = {
            ExitCode.USAGE: "usage_error",
            ExitCode.ENVIRONMENT_FAULT: "environment_error",
        }.get(error.exit_code, "solution_error")
    return report


def exit_code_of(report: CorrectnessReport) -> int:
    if report.error is not None:
        return int(report.error.get("exit_code", ExitCode.SOLUTION_FAULT))
    return int(ExitCode.OK if report.passed else ExitCode.CHECK_FAILED)
