"""Static analysis of a Triton ModelNew: its forward run once compile-only, its kernels' SASS read back.

The Model's weights and the inputs come from the KernelBench problem, as in every other step; the
forward is called with Triton's launches switched to compile-only (backends/triton/compile_only.py),
so its Triton kernels compile for the target (without a GPU: sm_90 through a stand-in driver) and
never run. Torch operations in the forward run on the inputs' device as written. A ModelNew that
builds CUDA with load_inline is analysed by inline_static.py instead.

Without a GPU this is also the one place a Triton kernel meets Triton's compiler: the interpreter
(TRITON_INTERPRET=1) runs the Python of a kernel, so a kernel that reads a plain module-level
float passes there and fails to compile on a GPU (demo/kernelbench L2_01's first v0, H100,
2026-11-25); compiling it here fails it on the CPU as a compile error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_opt.backends.triton.compile_only import (
    TritonCompilation,
    compile_only_fault,
    compile_only_triton,
    compiler_not_interpreter,
)
from kernel_opt.sass.report import StaticReport

CALLER = "ModelNew.forward"


def compile_model_new(solution: Path, reference: Path, dims: dict[str, Any],
                      target_arch: str | None) -> list[TritonCompilation]:
    """Compile (never run) the Triton kernels ModelNew's forward launches at one problem size."""
    from kernel_opt.backends.modelnew.launcher import ModelNewLauncher
    from kernel_opt.solution.contract import load_reference, problem_cases
    from kernel_opt.solution.inputs import build_instance

    with compiler_not_interpreter():
        problem = load_reference(reference)
        launcher = ModelNewLauncher(solution, str(reference))
        sizes = problem_cases(dims, [], problem.setup)[0]
        device = "cpu" if target_arch is not None else "cuda"
        instance = build_instance(problem.setup, dict(sizes), seed=0, device=device)
        call = launcher.prepared(instance.values, instance.dims, instance.outputs)
        with compile_only_triton(target_arch) as compiled:
            try:
                call()
            except Exception as error:  # a compile error is the kernel's, whenever it comes
                if type(error).__name__ == "CompilationError" or not compiled:
                    raise compile_only_fault(error, target_arch, CALLER) from error
        return list(compiled)


def analyze_model_new(solution: Path, reference: Path, dims: dict[str, Any], build_dir: Path,
                      target_arch: str | None) -> StaticReport:
    """Compile a Triton ModelNew's kernels and analyse their SASS (target_arch None: this GPU)."""
    from kernel_opt.backends.triton.static_analysis import report_from_compilations
    from kernel_opt.core.dependencies import require
    from kernel_opt.sass.cuobjdump import find_cuobjdump

    require("triton", "static analysis of a Triton ModelNew")
    find_cuobjdump()  # before compiling: a machine without it cannot finish
    compilations = compile_model_new(solution, reference, dims, target_arch)
    return report_from_compilations(compilations, solution, build_dir, target_arch, "modelnew", CALLER)
