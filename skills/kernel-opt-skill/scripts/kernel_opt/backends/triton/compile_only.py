"""Compile a Triton solution's kernels without running them, with or without a GPU.

The solution's `run_kernel` is called with Triton's launches switched to compile-only
(`warmup=True`). With a GPU that uses the real driver; without one a stand-in driver reports
the target (`--arch`, default sm_90), which is enough for Triton to produce the cubin.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import EnvironmentFault, SolutionError, UsageError


@dataclass
class TritonCompilation:
    """One kernel compiled by a Triton launch: the compiled object and the options it was built with."""

    kernel: Any  # triton.compiler.CompiledKernel
    function_name: str
    variant: str


class _TargetOnlyDriver:
    """Stands in for Triton's CUDA driver where there is no GPU: it names a target and nothing else.

    Triton asks the active driver for the target, the device and the stream before it compiles;
    a compile-only launch (`warmup=True`) never touches the device, so these answers suffice.
    """

    def __init__(self, target: Any):
        self.target = target

    def get_current_target(self):
        return self.target

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int | None = None) -> int:
        return 0

    def is_active(self) -> bool:
        return True


@contextlib.contextmanager
def compile_only_triton(target_arch: str | None) -> Iterator[list[TritonCompilation]]:
    """Within this context every Triton launch compiles and records its kernel instead of running.

    `target_arch` ("sm_90"): compile for it through a stand-in driver (no GPU needed); None: use
    the real driver (this machine's GPU). Autotuned kernels compile every config they would try.
    """
    from triton.runtime import driver as driver_config
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    compiled: list[TritonCompilation] = []
    original_run = JITFunction.run
    original_autotune = Autotuner.run
    previous_driver = getattr(driver_config, "_active", None)

    def run(self, *args, grid, warmup, **kwargs):
        kernel = original_run(self, *args, grid=grid, warmup=True, **kwargs)
        if kernel is not None:
            compiled.append(TritonCompilation(kernel, self.fn.__name__, _variant(self, args, kwargs, kernel)))
        return kernel

    def autotune_run(self, *args, **kwargs):
        kwargs.pop("warmup", None)
        return self.warmup(*args, **kwargs)

    if target_arch is not None:
        from triton.backends.compiler import GPUTarget

        capability = int(target_arch.removeprefix("sm_").rstrip("a"))
        driver_config.set_active(_TargetOnlyDriver(GPUTarget("cuda", capability, 32)))
    JITFunction.run = run
    Autotuner.run = autotune_run
    try:
        yield compiled
    finally:
        JITFunction.run = original_run
        Autotuner.run = original_autotune
        if target_arch is not None:
            driver_config._active = previous_driver  # reset_active() would build the real driver, which fails here


def compile_target(arch: str) -> str | None:
    """The target compile-only launches build for: None (this GPU's, through the real driver) on a GPU when
    --arch is auto; otherwise the named arch, or sm_90 without a GPU."""
    from kernel_opt.backends.cuda.build import DEFAULT_ARCH_WITHOUT_GPU, normalize_arch
    from kernel_opt.env.device import gpu_arch_if_any

    if arch == "auto" and gpu_arch_if_any():
        return None
    return normalize_arch(DEFAULT_ARCH_WITHOUT_GPU if arch == "auto" else arch)


def _variant(function: Any, args: tuple, kwargs: dict, kernel: Any) -> str:
    """num_warps / num_stages and the constexpr values of one compilation, for the report."""
    metadata = kernel.metadata
    parts = [f"num_warps={getattr(metadata, 'num_warps', '?')}", f"num_stages={getattr(metadata, 'num_stages', '?')}"]
    names = [param.name for param in getattr(function, "params", [])]
    bound = dict(zip(names, args, strict=False))  # fewer positional arguments than parameters is usual
    bound.update({key: value for key, value in kwargs.items() if key in names})
    for param in getattr(function, "params", []):
        if param.is_constexpr and param.name in bound:
            parts.append(f"{param.name}={bound[param.name]}")
    return ", ".join(parts)


def compile_triton_solution(solution: Path, reference: Path | None, dims: dict[str, Any],
                            target_arch: str | None) -> list[TritonCompilation]:
    """Compile (never run) the kernels a Triton solution's run_kernel launches for one problem size.

    Inputs come from setup() in ref.py (or the solution): on the CPU when compiling for a named
    target, on the GPU otherwise.
    """
    from kernel_opt.backends.triton.solution import load_triton_solution
    from kernel_opt.solution.contract import call_with_accepted, load_reference, problem_cases
    from kernel_opt.solution.inputs import build_instance

    with compiler_not_interpreter():
        triton_solution = load_triton_solution(solution)
        setup = None
        if reference is not None:
            setup = load_reference(reference).setup
        setup = setup or triton_solution.setup
        if setup is None:
            raise UsageError(
                "static analysis of a Triton solution needs inputs to specialise the kernel on, and neither ref.py "
                "nor the solution defines setup()",
                hint="pass --ref ref.py (with setup(seed, device, **dims)) and the same --NAME=VALUE dims as the "
                "other steps",
            )
        dims = problem_cases(dims, [], setup)[0]
        device = "cpu" if target_arch is not None else "cuda"
        instance = build_instance(setup, dict(dims), seed=0, device=device)
        with compile_only_triton(target_arch) as compiled:
            try:
                call_with_accepted(triton_solution.run_kernel, {**instance.dims, **instance.values})
            except Exception as error:  # a compile error is the kernel's, even after another kernel compiled
                if type(error).__name__ == "CompilationError" or not compiled:
                    raise compile_only_fault(error, target_arch) from error
        return list(compiled)


@contextlib.contextmanager
def compiler_not_interpreter() -> Iterator[None]:
    """TRITON_INTERPRET unset for the block (the interpreter would replace compilation), then as it was."""
    interpret = os.environ.pop("TRITON_INTERPRET", None)
    try:
        yield
    finally:
        if interpret is not None:
            os.environ["TRITON_INTERPRET"] = interpret


def compile_only_fault(error: Exception, target_arch: str | None, caller: str = "run_kernel") -> Exception:
    """A call that raised before any kernel compiled: the kernel's fault, or this machine's."""
    if type(error).__name__ == "CompilationError":
        return SolutionError(f"the Triton kernel failed to compile: {error}", kind="compile_error")
    where = "without a GPU" if target_arch is not None else "on this GPU"
    fault = EnvironmentFault if target_arch is not None else SolutionError
    return fault(
        f"{caller} could not be executed compile-only {where}: {type(error).__name__}: "
        f"{str(error).strip().splitlines()[0] if str(error).strip() else ''}",
        hint=f"run static_analysis.py on a GPU machine ({caller} may need the GPU for more than the launch)",
    )
