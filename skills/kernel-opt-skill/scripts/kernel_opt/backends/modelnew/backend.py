"""The ModelNew backend: KernelBench's solution format, a .py that defines `class ModelNew(nn.Module)`.

A ModelNew takes the problem's get_init_inputs() and returns forward's result; its kernels come
from torch.utils.cpp_extension.load_inline (CUDA, built when the file is imported, in the child
process, under OUT/build/torch_extensions) or from Triton. It is checked against a KernelBench
problem file (solution/kernelbench.py), through the same child, poisoning, fresh-input and stream
rules as any solution; backends/modelnew/launcher.py says how a returned output meets them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_opt.backends.modelnew.source_signs import BUILDS_CUDA, TRITON_KERNEL
from kernel_opt.core.errors import EnvironmentFault, UsageError
from kernel_opt.solution.backend import AnalysisInputs, Backend, BuildOptions, CpuInterpreter, Launcher, Prepared

if TYPE_CHECKING:  # annotations only
    from kernel_opt.run.request import ChildRequest

_DEFINES_MODEL_NEW = re.compile(r"^class\s+ModelNew\b", re.MULTILINE)
# Source that defines a kernel of its own (CUDA through an extension, raw CUDA, Triton); without any,
# the ModelNew only calls libraries (torch ops, cuBLAS, cuDNN).
_OWN_KERNEL = re.compile(r"\bload_inline\b|\bcpp_extension\b|__global__|\btriton\.jit\b|@\s*jit\b|\bRawKernel\b")
EXTENSIONS_DIR = "torch_extensions"

INTERPRETER = CpuInterpreter(
    environment={"TRITON_INTERPRET": "1"},
    note="no GPU: the ModelNew ran on the CPU, any Triton kernel in it under the Triton interpreter "
    "(TRITON_INTERPRET=1); that checks the logic, not GPU behaviour such as races, and cannot run bfloat16",
)


def arch_list(arch: str) -> str:
    """--arch sm_90a / sm_90 / 90 as torch's TORCH_CUDA_ARCH_LIST entry: '9.0a', '9.0'."""
    match = re.fullmatch(r"(?:sm_|compute_)?(\d+?)(\d)([af]?)", arch.strip())
    if match is None:
        raise UsageError(f"--arch {arch!r} is not a CUDA architecture such as sm_90 or sm_90a")
    return f"{match.group(1)}.{match.group(2)}{match.group(3)}"


class ModelNewBackend(Backend):
    name = "modelnew"
    title = "ModelNew"
    suffix = ".py"
    contract = "a .py that defines class ModelNew (KernelBench's format), checked against a KernelBench problem file"
    aliases = ("kernelbench", "model_new")
    runs_on_cpu = True  # pure-torch and Triton ModelNews run there; prepare() refuses CUDA extensions
    cpu_interpreter = INTERPRETER
    gpu_only_reason = "a ModelNew that builds CUDA code runs only on an NVIDIA GPU"
    static_analysis_needs_inputs = True  # the problem's inputs and weights, to run forward compile-only

    def claims(self, solution: Path, source: str | None) -> bool:
        """A .py that defines class ModelNew at top level."""
        return solution.suffix == ".py" and source is not None and bool(_DEFINES_MODEL_NEW.search(source))

    def runs_without_gpu(self, solution: Path) -> bool:
        """A pure-torch or Triton ModelNew runs on the CPU; one whose source builds CUDA code is only compiled there."""
        try:
            return not BUILDS_CUDA.search(solution.read_text(errors="replace"))
        except OSError:
            return True  # the check that reads it reports the missing file

    def prepare(self, solution: Path, device: str, build_dir: Path, options: BuildOptions,
                notes: list[str]) -> Prepared:
        """Nothing is built here: load_inline builds when the child imports the file, under build_dir."""
        if options.compiler_flags:
            raise UsageError("--nvcc-flags applies to .cu solutions; a ModelNew passes its flags to load_inline "
                             "(extra_cuda_cflags) itself")
        source = solution.read_text(errors="replace")
        if device != "cuda" and BUILDS_CUDA.search(source):
            raise EnvironmentFault(f"{solution.name} builds CUDA code (load_inline / cpp_extension), which runs only "
                                   f"on an NVIDIA GPU, and this run is on the CPU (no GPU, or --device cpu): "
                                   f"{_compile_here(solution, build_dir, options)}; run this command on a GPU machine",
                                   kind="no_gpu")
        request: dict[str, Any] = {"extensions_dir": str((build_dir / EXTENSIONS_DIR).resolve())}
        if options.arch != "auto":
            request["cuda_arch_list"] = arch_list(options.arch)
        return Prepared(request=request)

    def load(self, request: ChildRequest) -> Launcher:
        from kernel_opt.backends.modelnew.launcher import ModelNewLauncher

        return ModelNewLauncher(Path(request.solution.path), request.reference, request.solution.prepared,
                                request.events)

    def defines_own_kernels(self, solution: Path) -> bool | None:
        source = _source_of(solution)
        return None if source is None else bool(_OWN_KERNEL.search(source))

    def static_analysis_unavailable(self, solution: Path) -> str | None:
        """One kind of kernel per analysis: a file with both load_inline CUDA and Triton kernels is not analysed (half
        a report would let racecheck be skipped for the other half's shared memory)."""
        source = _source_of(solution) or ""  # an unreadable file: analyze() says what is wrong with it
        if BUILDS_CUDA.search(source) and TRITON_KERNEL.search(source):
            return ("static analysis is not available for a ModelNew with both load_inline CUDA and Triton kernels "
                    "(ncu_profile.py's report covers every kernel a call launches)")
        return None

    def analyze(self, request: AnalysisInputs):
        """Triton kernels compile ahead of a run with the problem's inputs (modelnew/static_analysis.py); load_inline
        sources compile without them (modelnew/inline_static.py), for the architecture torch builds for."""
        from kernel_opt.backends.modelnew.static_analysis import analyze_model_new
        from kernel_opt.backends.triton.compile_only import compile_target

        if request.options.compiler_flags:
            raise UsageError("--nvcc-flags applies to .cu solutions; a ModelNew passes its flags to load_inline "
                             "(extra_cuda_cflags) itself")
        reason = self.static_analysis_unavailable(request.solution)
        if reason is not None:
            raise UsageError(reason, hint="profile it with ncu_profile.py")
        if BUILDS_CUDA.search(_source_of(request.solution) or ""):
            from kernel_opt.backends.modelnew.inline_static import analyze_inline_model_new

            return analyze_inline_model_new(request.solution, request.build_dir, _inline_arch(request.options))
        if request.reference is None:
            raise UsageError("static analysis of a ModelNew needs its KernelBench problem file: pass --ref problem.py")
        return analyze_model_new(request.solution, request.reference, request.dims, request.build_dir,
                                 compile_target(request.options.arch))


BACKEND = ModelNewBackend()


def _source_of(solution: Path) -> str | None:
    """The solution's text; None where it cannot be read (the step that loads it says why)."""
    try:
        return solution.read_text(errors="replace")
    except OSError:
        return None


def _inline_arch(options: BuildOptions) -> str:
    """What load_inline sources are compiled for here: --arch, else the GPU torch would build for (no
    arch-specific suffix), else, without a GPU, the default."""
    from kernel_opt.backends.cuda.build import DEFAULT_ARCH_WITHOUT_GPU, normalize_arch
    from kernel_opt.env.device import gpu_arch_if_any

    if options.arch != "auto":
        return normalize_arch(options.arch)
    return gpu_arch_if_any() or DEFAULT_ARCH_WITHOUT_GPU


def _compile_here(solution: Path, build_dir: Path, options: BuildOptions) -> str:
    """The compile check without a GPU (modelnew/inline_build.py): what compiled, in words; its errors raise."""
    from kernel_opt.backends.modelnew.inline_build import compile_inline_extensions
    from kernel_opt.backends.modelnew.inline_static import INLINE_COMPILE_DIR

    arch = _inline_arch(options)
    extensions = compile_inline_extensions(solution, build_dir / INLINE_COMPILE_DIR, arch)
    if not extensions:
        return ("it asked torch's cpp_extension to build nothing when imported, and its import ran without error here "
                "(a build of its own at import, nvcc through subprocess for one, succeeded)")
    names = ", ".join(repr(extension.name) for extension in extensions)
    return f"its extension(s) {names} compiled here for {arch} with nvcc and the host compiler (not linked, not run)"
