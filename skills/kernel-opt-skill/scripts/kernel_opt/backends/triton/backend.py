"""The Triton backend: what the tools ask of a `.py` solution that defines run_kernel(**kwargs)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_opt.core.errors import UsageError
from kernel_opt.solution.backend import AnalysisInputs, Backend, CpuInterpreter, Launcher
from kernel_opt.solution.outline import SolutionDims, outline_module

if TYPE_CHECKING:  # annotations only
    from kernel_opt.run.request import ChildRequest

# A top-level definition, assignment or import of run_kernel: what makes a .py a Triton solution here.
_DEFINES_RUN_KERNEL = re.compile(
    r"^(?:(?:async\s+)?def\s+run_kernel\b|run_kernel\s*[:=]|from\s+\S+\s+import\s+(?:\([^)]*|.*)\brun_kernel\b)",
    re.MULTILINE,
)

INTERPRETER = CpuInterpreter(
    environment={"TRITON_INTERPRET": "1"},
    note="no GPU: the Triton kernel ran under the Triton interpreter (TRITON_INTERPRET=1) on the CPU; "
    "it checks the kernel's logic, not GPU-specific behaviour such as races, and it cannot run bfloat16",
)


class TritonBackend(Backend):
    name = "triton"
    title = "Triton"
    suffix = ".py"
    contract = "a .py that defines run_kernel(**kwargs)"
    aliases = ("tl", "triton_lang", "openai_triton")
    runs_on_cpu = True
    cpu_interpreter = INTERPRETER
    static_analysis_needs_inputs = True
    runtime_modules = ("triton", "triton.language")

    def claims(self, solution: Path, source: str | None) -> bool:
        """A .py that defines (or imports) run_kernel at top level; any .py when it cannot be read."""
        if solution.suffix != ".py":
            return False
        return source is None or bool(_DEFINES_RUN_KERNEL.search(source))

    def dim_parameters(self, solution: Path) -> SolutionDims:
        """Its setup() (used when ref.py has none) and run_kernel's keyword defaults (e.g. BLOCK=1024)."""
        try:
            outline = outline_module(solution, "solution")
        except UsageError:  # not valid Python: the run reports it as the solution's fault
            return SolutionDims()
        run_kernel = outline.functions.get("run_kernel")
        names = tuple(p for p in run_kernel.parameters if p.has_default) if run_kernel else ()
        return SolutionDims(setup=outline.functions.get("setup"), names=names)

    def defines_own_kernels(self, solution: Path) -> bool | None:
        """A @triton.jit function in the file; without one, run_kernel only calls libraries."""
        try:
            return bool(re.search(r"\btriton\.jit\b|@\s*jit\b", solution.read_text(errors="replace")))
        except OSError:
            return None

    def load(self, request: ChildRequest) -> Launcher:
        from kernel_opt.backends.triton.solution import TritonLauncher

        return TritonLauncher(Path(request.solution.path))

    def analyze(self, request: AnalysisInputs):
        from kernel_opt.backends.triton.compile_only import compile_target
        from kernel_opt.backends.triton.static_analysis import analyze_triton

        if request.options.compiler_flags:
            raise UsageError("--nvcc-flags applies to CUDA solutions only")
        return analyze_triton(request.solution, request.reference, request.dims, request.build_dir,
                              compile_target(request.options.arch))


BACKEND = TritonBackend()
