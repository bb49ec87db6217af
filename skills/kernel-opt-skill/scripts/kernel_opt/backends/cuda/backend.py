"""The CUDA backend: a .cu with extern "C" void solve(...), built by nvcc, called through ctypes."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_opt.core.errors import EnvironmentFault, KernelOptError, SolutionError
from kernel_opt.solution.backend import AnalysisInputs, Backend, BuildOptions, Launcher, Prepared
from kernel_opt.solution.outline import DimParameter, SolutionDims

if TYPE_CHECKING:  # annotations only
    from kernel_opt.run.request import ChildRequest

_SYNC_CALLS = re.compile(r"\bcuda(Device|Stream)Synchronize\s*\(")
SYNCHRONIZE_WARNING = (
    "solve calls cudaDeviceSynchronize/cudaStreamSynchronize: every timed call includes a host round "
    "trip, which inflates its time; launch on the cudaStream_t parameter and let the caller synchronise"
)


def source_synchronizes(source_text: str) -> bool:
    """Whether CUDA source calls cudaDeviceSynchronize/cudaStreamSynchronize (comments excluded)."""
    from kernel_opt.backends.cuda.signature import strip_comments

    return bool(_SYNC_CALLS.search(strip_comments(source_text)))


class CudaLauncher(Launcher):
    """The built library's solve, its arguments bound by parameter name (cuda/launch.py)."""

    def __init__(self, prepared: dict[str, Any]):
        from kernel_opt.backends.cuda.launch import CudaSolution
        from kernel_opt.backends.cuda.signature import Parameter, SolveSignature

        self.signature = SolveSignature(tuple(Parameter(**p) for p in prepared["signature"]["parameters"]))
        self.cuda = CudaSolution(Path(prepared["library"]), self.signature)
        self.kernels = prepared.get("kernels")  # the build's kernel names (ptxas), absent in older requests

    def prepared(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> Callable[[], None]:
        arguments = self.cuda.bind(values, dims, outputs)
        return lambda: self.cuda(arguments)

    def raise_launch_error(self) -> None:
        launch_error = self.cuda.last_launch_error()
        if launch_error:
            raise SolutionError(f"a kernel launch inside solve failed: {launch_error}", kind="launch_error")

    def clear_launch_error(self) -> None:
        self.cuda.last_launch_error()

    def capture_failure_reason(self, message: str) -> str:
        if not self.signature.takes_stream:
            message += (" (solve takes no cudaStream_t, so it launches on the legacy default stream, which cannot be "
                        "captured)")
        return message

    def own_kernel_names(self) -> frozenset[str] | None:
        """The __global__ functions ptxas compiled into the library; None when its log listed none.

        An empty list more likely means a log without entries (other flags, another toolkit) than a
        solution without kernels, and "library code only" must never be claimed on a guess.
        """
        from kernel_opt.check.integrity.launch_rules import own_base_names

        return own_base_names(self.kernels) if self.kernels else None

    def takes_caller_stream(self) -> bool:
        """solve(..., cudaStream_t) launches on the stream it is given; without one, on the legacy default stream."""
        return self.signature.takes_stream

    def input_maker(self):
        from kernel_opt.backends.cuda.inferred_inputs import infer_instance

        return lambda dims, seed, device: infer_instance(self.signature, dims, seed, device)


class CudaBackend(Backend):
    name = "cuda"
    title = "CUDA"
    suffix = ".cu"
    contract = 'a .cu file with extern "C" void solve(...)'
    aliases = ("cu", "cuda_c", "cuda_cpp", "cuda_c++", "nvcc")
    builds_ahead = True
    gpu_only_reason = "a CUDA kernel runs only on an NVIDIA GPU"

    def claims(self, solution: Path, source: str | None) -> bool:
        """Every .cu: whether it defines a usable solve is the build's check, reported as the solution's fault."""
        return solution.suffix == ".cu"

    def prepare(self, solution: Path, device: str, build_dir: Path, options: BuildOptions,
                notes: list[str]) -> Prepared:
        """nvcc builds a shared library (for this GPU, or sm_90a without one); solve's signature is parsed."""
        import shlex

        from kernel_opt.backends.cuda.build import DEFAULT_ARCH_WITHOUT_GPU, auto_target, build_shared_library
        from kernel_opt.backends.cuda.signature import parse_solve_signature
        from kernel_opt.env.device import gpu_arch

        signature = parse_solve_signature(solution.read_text(errors="replace"))
        arch = options.arch
        if arch == "auto":
            arch = auto_target(gpu_arch() if device == "cuda" else DEFAULT_ARCH_WITHOUT_GPU)
            if device != "cuda":
                notes.append(f"no GPU to read the architecture from: compiled for {arch} (choose with --arch)")
        build = build_shared_library(solution, build_dir, arch, shlex.split(options.compiler_flags))
        record = build.to_dict()
        record["signature"] = [p.describe() for p in signature.parameters]
        return Prepared(request={"library": build.library.as_posix(), "signature": signature.to_dict(),
                                 "kernels": [kernel.name for kernel in build.kernels]}, build=record)

    def load(self, request: ChildRequest) -> Launcher:
        return CudaLauncher(request.solution.prepared)

    def dim_parameters(self, solution: Path) -> SolutionDims:
        """solve's scalar parameters, bound by name ignoring case (solve(int N) takes --n=...)."""
        from kernel_opt.backends.cuda.signature import parse_solve_signature

        try:
            signature = parse_solve_signature(solution.read_text(errors="replace"))
        except (OSError, KernelOptError):  # no solve to read: the build reports it as the solution's fault
            return SolutionDims()
        return SolutionDims(names=tuple(DimParameter(p.name, p.dtype) for p in signature.scalars),
                            case_insensitive=True)

    def defines_own_kernels(self, solution: Path) -> bool | None:
        """A __global__ function in the file; without one, solve only calls libraries (cuBLAS, cuDNN, ...)."""
        from kernel_opt.backends.cuda.signature import strip_comments

        try:
            return "__global__" in strip_comments(solution.read_text(errors="replace"))
        except OSError:
            return None

    def cannot_run_without_gpu(self, solution: Path, build: dict[str, Any] | None) -> KernelOptError:
        return EnvironmentFault(
            f"{solution.name} compiled for {(build or {}).get('arch')}, but running a CUDA kernel needs an NVIDIA GPU "
            "and this run is on the CPU (no GPU, or --device cpu); run this command on a GPU machine to check "
            "correctness",
            kind="no_gpu",
        )

    def analyze(self, request: AnalysisInputs):
        import shlex

        from kernel_opt.backends.cuda.build import DEFAULT_ARCH_WITHOUT_GPU, auto_target
        from kernel_opt.backends.cuda.static_analysis import analyze_cuda
        from kernel_opt.env.device import gpu_arch_if_any

        arch = request.options.arch
        if arch == "auto":
            arch = auto_target(gpu_arch_if_any() or DEFAULT_ARCH_WITHOUT_GPU)
        return analyze_cuda(request.solution, request.build_dir, arch, shlex.split(request.options.compiler_flags))

    def source_warnings(self, solution: Path) -> list[str]:
        return [SYNCHRONIZE_WARNING] if source_synchronizes(solution.read_text(errors="replace")) else []


BACKEND = CudaBackend()
