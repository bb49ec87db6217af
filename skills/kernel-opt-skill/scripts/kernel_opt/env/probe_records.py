"""What the probes found: one plain record per tool, package or GPU, and `Probes` holding them all.

capabilities.py decides from these records alone what each step of the loop can do here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernel_opt.core.records import Section


@dataclass
class PythonProbe:
    version: str
    executable: str


@dataclass
class TorchGpu:
    """One GPU as torch (and so every kernel launched here) sees it; indices follow CUDA_VISIBLE_DEVICES."""

    index: int
    name: str
    compute_capability: str  # "9.0"
    arch: str  # "sm_90": what nvcc needs in -arch
    sm_count: int
    memory_gib: float
    l2_cache_mib: float | None = None


@dataclass
class TorchProbe:
    installed: bool
    version: str | None = None
    cuda_build_version: str | None = None  # CUDA torch was built with; None for a CPU-only build
    cuda_available: bool = False
    compiled_archs: list[str] = field(default_factory=list)  # torch.cuda.get_arch_list()
    gpus: list[TorchGpu] = field(default_factory=list)
    gpu_smoke_test_passed: bool | None = None  # a tiny op on the GPU worked; None when not tried
    error: str | None = None


@dataclass
class PackageProbe:
    """A Python package: importable or not, with its version from the distribution metadata."""

    distribution: str
    module: str
    installed: bool
    version: str | None = None
    location: str | None = None
    error: str | None = None


@dataclass
class ToolProbe:
    """A command-line tool: where it was found (PATH, CUDA toolkit, triton package) and its version."""

    name: str
    found: bool
    path: str | None = None
    version: str | None = None
    source: str | None = None  # "PATH", "/usr/local/cuda/bin", "triton package", ...
    error: str | None = None


@dataclass
class NvccProbe(ToolProbe):
    release: str | None = None  # "13.0": the CUDA release, which sets the minimum driver
    gpu_architectures: list[str] = field(default_factory=list)  # `nvcc --list-gpu-arch`: compute_75, ...
    missing_library_headers: list[str] = field(default_factory=list)  # of CONTEXT_HEADERS (env/toolkit_headers.py)


@dataclass
class NcuReportProbe:
    """Nsight Compute's Python report reader, `ncu_report`, and how a later step can import it."""

    available: bool
    source: str | None = None  # "import", "pip package ncu-report", "ncu extras/python"
    path: str | None = None
    sys_path_entry: str | None = None  # folder to put on sys.path first; None when importable as is
    error: str | None = None


@dataclass
class SmiGpu(Section):
    """One GPU as the driver reports it through nvidia-smi (all GPUs, whatever CUDA_VISIBLE_DEVICES says).

    The benchmark records it before and after timing (its clocks), so it reads back as a record's section.
    """

    index: int
    name: str
    driver_version: str | None
    sm_clock_mhz: int | None
    max_sm_clock_mhz: int | None
    memory_clock_mhz: int | None
    max_memory_clock_mhz: int | None
    power_limit_w: float | None
    persistence_mode: str | None  # "Enabled" / "Disabled"
    compute_mode: str | None  # "Default", "Exclusive_Process", "Prohibited"
    uuid: str | None = None  # "GPU-5f1c...": which board, where two of one model sit in a host


@dataclass
class NvidiaSmiProbe:
    found: bool
    path: str | None = None
    gpus: list[SmiGpu] = field(default_factory=list)
    error: str | None = None


@dataclass
class Probes:
    python: PythonProbe
    torch: TorchProbe
    triton: PackageProbe
    nvcc: NvccProbe
    ncu: ToolProbe
    nsight_python: PackageProbe
    ncu_report: NcuReportProbe
    compute_sanitizer: ToolProbe
    cuobjdump: ToolProbe
    nvidia_smi: NvidiaSmiProbe
    profiling_admin_only: bool | None = None  # driver restricts perf counters to root; None: unknown
    is_root: bool = False
    numpy: PackageProbe | None = None  # the Triton interpreter computes with it (NumPy 2.4 breaks some kernels there)
