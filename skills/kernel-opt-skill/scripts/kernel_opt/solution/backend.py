"""What a kernel language (a backend) provides, so that every tool can treat solutions alike.

A backend says which solution files are its own, prepares one for the child process (CUDA:
an nvcc build and the parsed solve() signature), loads it there as a `Launcher` (a call with
its arguments bound up front), and analyses its compiled kernels without a GPU. The tools never
compare backend names: they ask the backend (found by name in `kernel_opt.solution.registry`).
The backends themselves are plugins, one folder each under `kernel_opt/backends/`, which nothing
imports by name. What a backend's guide advises once a kernel is profiled is not part of this
interface: its folder's `suggestions.py` provides it (profile/advice.py).

A backend module must not import torch or triton at import time (`--help` works without
them): heavy imports go inside the methods that need them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from kernel_opt.core.errors import EnvironmentFault, KernelOptError, UsageError
from kernel_opt.solution.outline import SolutionDims

if TYPE_CHECKING:  # annotations only: the records live with the code that computes them
    from kernel_opt.run.request import ChildRequest
    from kernel_opt.sass.report import StaticReport
    from kernel_opt.solution.contract import ProblemInstance


@dataclass
class BuildOptions:
    """How to build a solution that has a build step: the target architecture and extra compiler flags.

    Each backend reads them its own way (CUDA: nvcc's -arch and flags; a backend without a
    compiler of its own refuses flags). The command line keeps the names it has always had,
    --arch and --nvcc-flags, and records keep `nvcc_flags`.
    """

    arch: str = "auto"
    compiler_flags: str = ""  # one string, split like a shell line by the backend that compiles

    def arguments(self) -> list[str]:
        """--arch / --nvcc-flags as the tools take them, only where they differ from the default."""
        arguments = [] if self.arch == "auto" else ["--arch", self.arch]
        if self.compiler_flags:
            arguments.append(f"--nvcc-flags={self.compiler_flags}")  # "=" form: the value starts with "-"
        return arguments


@dataclass
class Prepared:
    """A solution made ready for the child process.

    `request` holds what the child needs to load it (JSON values, e.g. the built library's
    path), beyond the backend's name and the solution's path; the child request carries it as
    `request.solution.prepared` (run/request.py), for this backend alone to read. `build` is the
    build record the reports show (CUDA: nvcc command, arch, per-kernel resources), None without
    a build step.
    """

    request: dict[str, Any]
    build: dict[str, Any] | None = None


@dataclass(frozen=True)
class CpuInterpreter:
    """How a backend runs on a machine without a GPU when that takes an interpreter."""

    environment: Mapping[str, str]  # set in the child process, e.g. TRITON_INTERPRET=1
    note: str  # what the interpreter can and cannot check, for the correctness report


@dataclass
class AnalysisInputs:
    """What static_analysis.py asks of a backend: compile, never run, and disassemble."""

    solution: Path
    reference: Path | None  # ref.py, whose setup() makes inputs to specialise on (Triton)
    dims: dict[str, Any]
    build_dir: Path
    options: BuildOptions


@dataclass(frozen=True)
class WeightHolder:
    """Which of its own tensors holds one of the values a solution takes when it is built (a ModelNew's weight).

    `how`: "by name" (the Model's state_dict key, as load_state_dict copies it), "by value" (another
    name, the same number of elements and the same values at the seed every model is built from),
    "ambiguous" (several of its tensors hold those values and none has the name), or "none".
    """

    how: Literal["by name", "by value", "ambiguous", "none"]
    key: str | None = None  # the solution's own state_dict key, for "by name" and "by value"


class Launcher(ABC):
    """A solution loaded in the child process: one call path whatever its language."""

    setup: Callable | None = None  # the solution's own setup(), used when ref.py has none

    @abstractmethod
    def prepared(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> Callable[[], None]:
        """A no-argument call with every argument bound up front, so timing it times only the launch."""

    def raise_launch_error(self) -> None:
        """Raise SolutionError if a launch inside the last call failed (reading the error clears it)."""
        return None  # a backend whose launches raise where they fail has nothing to read

    def clear_launch_error(self) -> None:
        """Forget a launch error that was expected (a refused CUDA graph capture leaves one behind)."""
        return None  # a backend whose launches raise where they fail has nothing to read

    def capture_failure_reason(self, message: str) -> str:
        """Why a CUDA graph capture of this solution failed, for the benchmark report."""
        return message

    def own_kernel_names(self) -> frozenset[str] | None:
        """Base names (check.integrity.launch_rules.kernel_base_name) of the GPU kernels the solution itself defines.

        The launch check lists every other kernel that runs during a call as library code
        (torch, cuBLAS, ...); None when the backend cannot tell, and the listing says so.
        """
        return None

    def arguments_taken_once(self, dims: dict[str, Any], device: str) -> frozenset[str]:
        """Names of the values the solution takes when it is built, not on each call (a ModelNew's weights).

        A change to them between calls never reaches the solution, so the rounding probe
        (check/integrity/rounding_probe.py) leaves them alone.
        """
        return frozenset()

    def weight_holders(self, dims: dict[str, Any], device: str) -> dict[str, WeightHolder]:
        """For each value taken once (arguments_taken_once), the tensor of the solution's own that holds it."""
        return {}

    def use_weights(self, dims: dict[str, Any], device: str, weights: dict[str, Any] | None) -> None:
        """From now on hold these values (argument name -> tensor) in place of those taken once, where a tensor of its
        own holds them (weight_holders); None: back to the problem's own. The re-drawn weights check
        (check/integrity/redrawn_weights.py) calls it; a solution that takes every value on each call ignores it."""
        return None

    def takes_caller_stream(self) -> bool:
        """Whether the solution launches on the stream it is called on (torch's current stream, or a stream argument).

        The launch check calls it on a fresh stream when it does; otherwise it can only use the
        legacy default stream, which is then the caller's stream it must keep to.
        """
        return True

    def input_maker(self) -> Callable[[dict[str, Any], int, str], ProblemInstance] | None:
        """(dims, seed, device) -> inputs made from the solution itself (CUDA: from solve's signature), or None.

        Used only when neither ref.py nor the solution defines setup().
        """
        return None


class Backend(ABC):
    """One kernel language. Subclasses set the class attributes and implement claims() and load()."""

    name: ClassVar[str]  # the --backend value and the records' "backend" field: "cuda"
    title: ClassVar[str]  # in sentences: "CUDA"
    suffix: ClassVar[str]  # of a new version's file in a run folder: ".cu"
    contract: ClassVar[str]  # what a solution file must be, for help and detection errors
    aliases: ClassVar[tuple[str, ...]] = ()  # other spellings the experience log accepts: "cu", "nvcc"
    runs_on_cpu: ClassVar[bool] = False  # a solution can run (and be checked) without a GPU
    cpu_interpreter: ClassVar[CpuInterpreter | None] = None  # ... and running there takes this interpreter
    builds_ahead: ClassVar[bool] = False  # it has a build step that can run alone (--compile-only)
    # static_analysis.py needs ref.py and the problem sizes (the kernel is specialised on its inputs)
    static_analysis_needs_inputs: ClassVar[bool] = False
    gpu_only_reason: ClassVar[str] = "this kind of solution runs only on an NVIDIA GPU"
    # Packages that loading a solution imports (e.g. triton): the child imports them before it
    # snapshots the primitives a solution must not replace (run/tampering.py), so their own
    # import-time effects are never blamed on the solution.
    runtime_modules: ClassVar[tuple[str, ...]] = ()
    # Why static_analysis.py cannot analyse this backend's solutions (analyze() refuses them); None: it can.
    no_static_analysis_reason: ClassVar[str | None] = None

    @abstractmethod
    def claims(self, solution: Path, source: str | None) -> bool:
        """Whether this solution file is one of this backend's, by its suffix and its content.

        `source` is None when the file cannot be read: claim by suffix alone, so that the
        caller's own "not found" error is the one reported.
        """

    def prepare(self, solution: Path, device: str, build_dir: Path, options: BuildOptions,
                notes: list[str]) -> Prepared:
        """Build what the child needs (in the parent, before any child starts); notes collect remarks."""
        return Prepared(request={})

    @abstractmethod
    def load(self, request: ChildRequest) -> Launcher:
        """Load a prepared solution in the child process: `request.solution` (its path, and Prepared.request's
        values as `prepared`), with the problem (`request.reference`) and the event log (`request.events`)."""

    def dim_parameters(self, solution: Path) -> SolutionDims:
        """The problem sizes the solution file itself takes by name (its setup(), its entry point's parameters).

        Read without running anything (the parent checks `--NAME=VALUE` before a child starts);
        nothing when the file cannot be read: the run reports that.
        """
        return SolutionDims()

    def runs_without_gpu(self, solution: Path) -> bool:
        """Whether this very file can run on the CPU (the backend's rule; a ModelNew's source may build CUDA)."""
        return self.runs_on_cpu

    def cannot_run_without_gpu(self, solution: Path, build: dict[str, Any] | None) -> KernelOptError:
        """The error for a correctness run on the CPU, for a backend that does not run there."""
        return EnvironmentFault(
            f"{solution.name}: {self.gpu_only_reason}, and this run is on the CPU (no GPU, or --device cpu)",
            kind="no_gpu",
        )

    def defines_own_kernels(self, solution: Path) -> bool | None:
        """Whether the source defines a GPU kernel of its own, not only library calls (torch, cuBLAS); None: unknown.

        Read from the source, so it says what the file contains, not what a call launched.
        """
        return None

    def static_analysis_unavailable(self, solution: Path) -> str | None:
        """Why this solution's kernels cannot be compiled ahead of a run for static analysis; None: they can."""
        return self.no_static_analysis_reason

    def analyze(self, request: AnalysisInputs) -> StaticReport:
        """Compile (never run) the solution's kernels and analyse their SASS: resources and instruction mix."""
        raise UsageError(f"static analysis is not available for {self.title} solutions")

    def source_warnings(self, solution: Path) -> list[str]:
        """What in the source will distort a benchmark, read before timing it."""
        return []
