"""Prepare a solution to run (build it, describe it for the worker) and check its correctness.

Shared by correctness_check and benchmark: the benchmark times nothing that this check has
not passed, and it runs the very same check.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.check.compare import CorrectnessReport, report_from_events
from kernel_opt.core.errors import EnvironmentFault, ExitCode, KernelOptError, UsageError
from kernel_opt.env.device import gpu_arch

NO_GPU_NOTE = (
    "no GPU: the Triton kernel ran under the Triton interpreter (TRITON_INTERPRET=1) on the CPU; "
    "it checks the kernel's logic, not GPU-specific behaviour such as races, and it cannot run bfloat16"
)


@dataclass
class BuildOptions:
    arch: str = "auto"
    nvcc_flags: str = ""


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
    """What the worker needs to load a solution, and the build record for CUDA solutions."""
    spec: dict[str, Any] = {"backend": backend, "solution": str(solution)}
    if backend == "triton":
        return spec, None
    from kernel_opt.backends.cuda.build import DEFAULT_ARCH_WITHOUT_GPU, build_shared_library
    from kernel_opt.backends.cuda.signature import parse_solve_signature

    signature = parse_solve_signature(solution.read_text(errors="replace"))
    arch = options.arch
    if arch == "auto":
        arch = gpu_arch() if device == "cuda" else DEFAULT_ARCH_WITHOUT_GPU
        if device != "cuda":
            notes.append(f"no GPU to read the architecture from: compiled for {arch} (choose with --arch)")
    build = build_shared_library(solution, build_dir, arch, shlex.split(options.nvcc_flags))
    record = build.to_dict()
    record["signature"] = [p.describe() for p in signature.parameters]
    spec.update(library=build.library.as_posix(), signature=signature.to_dict())
    return spec, record


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
    report = CorrectnessReport(
        verdict="fail",
        solution=str(solution),
        reference=str(reference),
        backend=backend,
        device={"type": device, "name": None, "compute_capability": None},
        interpreter=backend == "triton" and device == "cpu",
        command=command,
        dims=dims,
        seeds=list(range(options.seeds)),
    )
    if report.interpreter:
        report.notes.append(NO_GPU_NOTE)
    try:
        if options.compile_only and backend == "triton":
            raise UsageError("--compile-only applies to CUDA solutions; Triton kernels compile when they first run")
        spec, report.build = solution_spec(solution.resolve(), backend, device, build_dir, build, report.notes)
        if options.compile_only:
            report.verdict = "pass"
            report.notes.append("--compile-only: the solution compiled; nothing was run, so correctness is not established")
            return report
        if backend == "cuda" and device != "cuda":
            raise EnvironmentFault(
                f"{solution.name} compiled for {report.build['arch']}, but running a CUDA kernel needs an NVIDIA GPU "
                "and this run is on the CPU (no GPU, or --device cpu); run this command on a GPU machine to check "
                "correctness",
                kind="no_gpu",
            )
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
        environment = {"TRITON_INTERPRET": "1"} if report.interpreter else {}
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
