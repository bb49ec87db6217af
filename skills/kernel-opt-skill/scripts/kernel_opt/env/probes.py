"""What this machine can do for the optimization loop: tool versions, GPUs, and per-step verdicts.

Every later step (compile, correctness, benchmark, ncu profile, SASS analysis) fails in its own
way when a tool is missing or two versions disagree, usually deep inside a long run. Probing
once, up front, turns those failures into one report that says which steps can run here, why
the others cannot, and what to install.

Each probe is a small function that returns a plain record and never raises because something
is absent: absence is the information. `assess_capabilities` and `overall_verdict` are pure
functions of those records, so they are tested with records built by hand.

Clock locking lives here too, but only as an explicit opt-in (`plan_clock_change`): nothing in
the probing path changes GPU state or needs root.
"""

from __future__ import annotations

import csv
import glob
import importlib
import importlib.metadata
import importlib.util
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from kernel_opt.core.errors import EnvironmentFault

# --- thresholds and search locations, in one place ------------------------------------------

PROBE_TIMEOUT_S = 30  # a version query that takes longer than this is a hung tool, not a slow one

# nsight-python 1.x refuses Nsight Compute older than 2026.2.1, while 0.9.6 works with
# ncu 2025.3.1 (both observed by this project on a Hopper machine with ncu 2025.3.1).
NSIGHT_PYTHON_1X_MIN_NCU = (2026, 2, 1)
NSIGHT_PYTHON_PIN_FOR_OLD_NCU = "0.9.6"

# Minimum Linux driver for each CUDA major release under minor-version compatibility, from
# NVIDIA's CUDA Toolkit release notes ("CUDA Toolkit and Minimum Required Driver Version for
# CUDA Minor Version Compatibility"). Code built by a newer nvcc than the driver supports fails
# at load time with "CUDA driver version is insufficient".
MIN_DRIVER_FOR_CUDA_MAJOR: dict[int, str] = {
    11: "450.80.02",
    12: "525.60.13",
    13: "580.65.06",
}

# Where Nsight Compute and the CUDA toolkit's binaries live when they are not on PATH.
CUDA_BIN_DIRS = ["/usr/local/cuda/bin"]
NCU_SEARCH_GLOBS = ["/opt/nvidia/nsight-compute/*", "/usr/local/cuda/bin", "/usr/local/cuda/nsight-compute-*"]
COMPUTE_SANITIZER_SEARCH_GLOBS = ["/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer"]
# ncu ships its Python report reader beside itself, as <ncu dir>/extras/python/ncu_report.py.
NCU_REPORT_RELATIVE_DIR = Path("extras") / "python"

NVIDIA_SMI_QUERY_FIELDS = (
    "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
    "power.limit,persistence_mode,compute_mode"
)
# The driver exposes "RmProfilingAdminOnly: 1" here when only root may read perf counters.
NVIDIA_DRIVER_PARAMS = Path("/proc/driver/nvidia/params")

INSTALL_CUDA_TOOLKIT = (
    "install the CUDA toolkit (e.g. `apt-get install cuda-toolkit-13-0` from NVIDIA's repository, "
    "see https://developer.nvidia.com/cuda-downloads) and put its bin/ folder on PATH"
)
INSTALL_NCU = (
    "install Nsight Compute (it ships with the CUDA toolkit, or `apt-get install nsight-compute-2025.3.1` "
    "from NVIDIA's repository) and put the folder holding `ncu` on PATH"
)
INSTALL_CUDA_TORCH = (
    "install a CUDA build of torch that matches the driver, e.g. "
    "`pip install torch --index-url https://download.pytorch.org/whl/cu130`"
)
RUN_ON_GPU_MACHINE = "run this step on a machine with an NVIDIA GPU (and a CUDA build of torch)"


# --- records ---------------------------------------------------------------------------------


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


@dataclass
class NcuReportProbe:
    """Nsight Compute's Python report reader, `ncu_report`, and how a later step can import it."""

    available: bool
    source: str | None = None  # "import", "pip package ncu-report", "ncu extras/python"
    path: str | None = None
    sys_path_entry: str | None = None  # folder to put on sys.path first; None when importable as is
    error: str | None = None


@dataclass
class SmiGpu:
    """One GPU as the driver reports it through nvidia-smi (all GPUs, whatever CUDA_VISIBLE_DEVICES says)."""

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


@dataclass
class Capability:
    """Whether one later step of the loop can run on this machine, and what to do if not."""

    step: str  # stable key: compile_cuda, cuda_correctness, ...
    label: str  # for people: "compile CUDA (nvcc)"
    needs: str
    can_run: bool
    reason: str
    how_to_fix: str | None = None  # also set when the step runs in a limited way (Triton interpreter)


@dataclass
class NsightPythonCompatibility:
    usable: bool
    message: str


Verdict = Literal["ok", "cpu_only", "broken"]


@dataclass
class EnvironmentReport:
    verdict: Verdict
    headline: str  # one plain sentence: the verdict and its main reason
    probes: Probes
    capabilities: list[Capability]
    warnings: list[str] = field(default_factory=list)

    def capability(self, step: str) -> Capability:
        return next(item for item in self.capabilities if item.step == step)

    def to_dict(self) -> dict:
        return asdict(self)


# --- parsing ---------------------------------------------------------------------------------

_NVCC_VERSION = re.compile(r"release\s+(\d+\.\d+),\s*V(\d+(?:\.\d+)+)")
_NSIGHT_TOOL_VERSION = re.compile(r"Version\s+(\d+(?:\.\d+)+)")
_MISSING_SMI_VALUES = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]"}


def version_tuple(text: str | None) -> tuple[int, ...]:
    """'2025.3.1.0' -> (2025, 3, 1, 0); '2.13.0+cpu' -> (2, 13, 0); leading numeric parts only."""
    if not text:
        return ()
    parts: list[int] = []
    for piece in re.split(r"[.+-]", text.strip().lstrip("vV")):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def parse_nvcc_version(text: str) -> tuple[str, str] | None:
    """`nvcc --version` (or `cuobjdump --version`) -> (release, full version), e.g. ('13.0', '13.0.88')."""
    match = _NVCC_VERSION.search(text)
    return (match.group(1), match.group(2)) if match else None


def parse_nsight_tool_version(text: str) -> str | None:
    """`ncu --version` / `compute-sanitizer --version` -> '2025.3.1.0'."""
    match = _NSIGHT_TOOL_VERSION.search(text)
    return match.group(1) if match else None


def parse_nvcc_architectures(text: str) -> list[str]:
    """`nvcc --list-gpu-arch` prints one compute_XY per line."""
    return [line.strip() for line in text.splitlines() if re.fullmatch(r"compute_\d+[a-z]?", line.strip())]


def _smi_value(text: str) -> str | None:
    value = text.strip()
    return None if value.lower() in _MISSING_SMI_VALUES else value


def _smi_int(text: str) -> int | None:
    value = _smi_value(text)
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


def _smi_float(text: str) -> float | None:
    value = _smi_value(text)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def parse_nvidia_smi_csv(text: str) -> list[SmiGpu]:
    """Parse `nvidia-smi --query-gpu=<NVIDIA_SMI_QUERY_FIELDS> --format=csv,noheader,nounits`.

    "[N/A]" and "[Not Supported]" (common on consumer cards and in VMs) become None rather than
    errors, because a missing clock reading must not hide the rest of the GPU's facts.
    """
    gpus: list[SmiGpu] = []
    rows = [row for row in csv.reader(io.StringIO(text), skipinitialspace=True) if any(cell.strip() for cell in row)]
    for index, row in enumerate(rows):
        if len(row) < 9:
            continue  # a warning line, not a GPU row
        name, driver, sm_clock, max_sm_clock, memory_clock, max_memory_clock, power, persistence, mode = row[:9]
        gpus.append(
            SmiGpu(
                index=index,
                name=name.strip(),
                driver_version=_smi_value(driver),
                sm_clock_mhz=_smi_int(sm_clock),
                max_sm_clock_mhz=_smi_int(max_sm_clock),
                memory_clock_mhz=_smi_int(memory_clock),
                max_memory_clock_mhz=_smi_int(max_memory_clock),
                power_limit_w=_smi_float(power),
                persistence_mode=_smi_value(persistence),
                compute_mode=_smi_value(mode),
            )
        )
    return gpus


# --- probing helpers -------------------------------------------------------------------------


def _run(argv: list[str], timeout_s: float = PROBE_TIMEOUT_S) -> tuple[int | None, str]:
    """Run a read-only query; (returncode, stdout+stderr), or (None, why) when it could not run."""
    try:
        completed = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return None, f"`{' '.join(argv)}` did not answer within {timeout_s:.0f} s"
    except OSError as error:
        return None, f"`{' '.join(argv)}` could not start: {error}"
    return completed.returncode, (completed.stdout or "") + (completed.stderr or "")


def _natural_key(text: str) -> list:
    return [int(piece) if piece.isdigit() else piece for piece in re.split(r"(\d+)", text)]


def find_tool(name: str, search_globs: list[str]) -> tuple[str, str] | None:
    """(path, source) of an executable: PATH first, then the given folders, newest version first."""
    on_path = shutil.which(name)
    if on_path:
        return on_path, "PATH"
    for pattern in search_globs:
        for folder in sorted(glob.glob(pattern), key=_natural_key, reverse=True):
            candidate = Path(folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate), folder
    return None


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".strip()


# --- probes ----------------------------------------------------------------------------------


def probe_python() -> PythonProbe:
    return PythonProbe(version=platform.python_version(), executable=sys.executable)


def probe_torch() -> TorchProbe:
    """torch's version, the CUDA it was built with, and the GPUs it can use.

    A tiny op runs on the GPU because `torch.cuda.is_available()` can be true while kernels
    still fail (a torch build without this GPU's architecture, a busy exclusive-mode GPU).
    """
    try:
        import torch
    except Exception as error:  # ImportError, or a broken install raising anything
        return TorchProbe(installed=False, error=_error_text(error))
    probe = TorchProbe(installed=True, version=str(torch.__version__), cuda_build_version=torch.version.cuda)
    try:
        # torch explains a failed CUDA init (driver too old, no device) only as a warning; keep it.
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            probe.cuda_available = bool(torch.cuda.is_available())
        if not probe.cuda_available:
            if caught:
                probe.error = str(caught[0].message).strip().splitlines()[0]
            return probe
        probe.compiled_archs = list(torch.cuda.get_arch_list())
        for index in range(torch.cuda.device_count()):
            properties = torch.cuda.get_device_properties(index)
            l2_bytes = getattr(properties, "L2_cache_size", None)
            probe.gpus.append(
                TorchGpu(
                    index=index,
                    name=properties.name,
                    compute_capability=f"{properties.major}.{properties.minor}",
                    arch=f"sm_{properties.major}{properties.minor}",
                    sm_count=int(properties.multi_processor_count),
                    memory_gib=round(properties.total_memory / 2**30, 2),
                    l2_cache_mib=round(l2_bytes / 2**20, 2) if l2_bytes else None,
                )
            )
        probe.gpu_smoke_test_passed = float(torch.ones(8, device="cuda").sum().item()) == 8.0
    except Exception as error:
        probe.gpu_smoke_test_passed = False
        probe.error = _error_text(error)
    return probe


def probe_package(distribution: str, module: str) -> PackageProbe:
    """Import `module` and read `distribution`'s version from its metadata.

    The module is imported (not just located) so a package that is installed but broken shows
    up here rather than in the middle of a profile run.
    """
    try:
        version: str | None = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        version = None
    if importlib.util.find_spec(module) is None:
        return PackageProbe(distribution, module, installed=False, version=version, error=f"`import {module}` finds no module")
    try:
        imported = importlib.import_module(module)
    except Exception as error:
        return PackageProbe(distribution, module, installed=False, version=version, error=_error_text(error))
    location = str(Path(imported.__file__).parent) if getattr(imported, "__file__", None) else None
    if version is None:
        version = getattr(imported, "__version__", None)
    return PackageProbe(distribution, module, installed=True, version=version, location=location)


def probe_triton() -> PackageProbe:
    return probe_package("triton", "triton")


def probe_nsight_python() -> PackageProbe:
    """nsight-python imports as `nsight`; an unrelated PyPI package also called `nsight` exists."""
    probe = probe_package("nsight-python", "nsight")
    if probe.installed and probe.version is None:
        probe.installed = False
        probe.error = "the importable `nsight` module is not nsight-python (no nsight-python distribution installed)"
    return probe


def probe_nvcc() -> NvccProbe:
    found = find_tool("nvcc", CUDA_BIN_DIRS)
    if found is None:
        return NvccProbe(name="nvcc", found=False, error="nvcc is not on PATH nor in /usr/local/cuda/bin")
    path, source = found
    returncode, output = _run([path, "--version"])
    parsed = parse_nvcc_version(output)
    probe = NvccProbe(name="nvcc", found=True, path=path, source=source)
    if returncode != 0 or parsed is None:
        probe.error = f"`nvcc --version` gave no version: {output.strip()[:200]}"
        return probe
    probe.release, probe.version = parsed
    _, architectures = _run([path, "--list-gpu-arch"])
    probe.gpu_architectures = parse_nvcc_architectures(architectures)
    return probe


def _probe_nsight_tool(name: str, search_globs: list[str]) -> ToolProbe:
    found = find_tool(name, search_globs)
    if found is None:
        return ToolProbe(name=name, found=False, error=f"{name} is not on PATH nor in {', '.join(search_globs)}")
    path, source = found
    returncode, output = _run([path, "--version"])
    version = parse_nsight_tool_version(output)
    probe = ToolProbe(name=name, found=True, path=path, version=version, source=source)
    if returncode != 0 or version is None:
        probe.error = f"`{name} --version` gave no version: {output.strip()[:200]}"
    return probe


def probe_ncu() -> ToolProbe:
    return _probe_nsight_tool("ncu", NCU_SEARCH_GLOBS)


def probe_compute_sanitizer() -> ToolProbe:
    return _probe_nsight_tool("compute-sanitizer", COMPUTE_SANITIZER_SEARCH_GLOBS)


def _triton_cuobjdump() -> str | None:
    """Triton wheels bundle cuobjdump at triton/backends/nvidia/bin/; located without importing triton."""
    spec = importlib.util.find_spec("triton")
    for root in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(root) / "backends" / "nvidia" / "bin" / "cuobjdump"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def probe_cuobjdump() -> ToolProbe:
    found = find_tool("cuobjdump", CUDA_BIN_DIRS)
    if found is None:
        bundled = _triton_cuobjdump()
        found = (bundled, "triton package") if bundled else None
    if found is None:
        return ToolProbe(
            name="cuobjdump", found=False,
            error="cuobjdump is not on PATH, in /usr/local/cuda/bin, nor in triton/backends/nvidia/bin",
        )
    path, source = found
    returncode, output = _run([path, "--version"])
    parsed = parse_nvcc_version(output)
    return ToolProbe(name="cuobjdump", found=True, path=path, source=source, version=parsed[1] if parsed else None)


def ncu_report_candidates(ncu_path: str | None, search_globs: list[str] = NCU_SEARCH_GLOBS) -> list[Path]:
    """Folders that may hold ncu_report.py: beside the ncu in use first, then other installs.

    /usr/local/cuda/bin/ncu is a wrapper script, so the real install folder is found through
    the resolved path and through the nsight-compute-* folders of the toolkit.
    """
    folders: list[Path] = []
    if ncu_path:
        for base in (Path(ncu_path).parent, Path(ncu_path).resolve().parent):
            folders.append(base / NCU_REPORT_RELATIVE_DIR)
    for pattern in search_globs:
        for folder in sorted(glob.glob(pattern), key=_natural_key, reverse=True):
            folders.append(Path(folder) / NCU_REPORT_RELATIVE_DIR)
    unique: list[Path] = []
    for folder in folders:
        if folder not in unique:
            unique.append(folder)
    return unique


def probe_ncu_report(ncu_path: str | None, search_globs: list[str] = NCU_SEARCH_GLOBS) -> NcuReportProbe:
    """Find `ncu_report`: importable as is, from the ncu-report pip package, or beside ncu.

    The copy beside ncu is only located, not imported: it loads a native library, and putting
    folders on this process's sys.path is the profiling step's business.
    """
    if importlib.util.find_spec("ncu_report") is not None:
        try:
            module = importlib.import_module("ncu_report")
        except Exception as error:
            return NcuReportProbe(available=False, error=f"`import ncu_report` failed: {_error_text(error)}")
        try:
            importlib.metadata.version("ncu-report")
            source = "pip package ncu-report"
        except importlib.metadata.PackageNotFoundError:
            source = "import"
        return NcuReportProbe(available=True, source=source, path=getattr(module, "__file__", None))
    for folder in ncu_report_candidates(ncu_path, search_globs):
        if (folder / "ncu_report.py").is_file():
            return NcuReportProbe(
                available=True, source="ncu extras/python", path=str(folder / "ncu_report.py"),
                sys_path_entry=str(folder),
            )
    return NcuReportProbe(
        available=False,
        error="ncu_report is neither importable nor beside an Nsight Compute install (extras/python)",
    )


def probe_nvidia_smi() -> NvidiaSmiProbe:
    """Driver version and clocks for every GPU; a machine without nvidia-smi is a normal answer."""
    path = shutil.which("nvidia-smi")
    if path is None:
        return NvidiaSmiProbe(found=False, error="nvidia-smi is not on PATH (no NVIDIA driver here)")
    returncode, output = _run([path, f"--query-gpu={NVIDIA_SMI_QUERY_FIELDS}", "--format=csv,noheader,nounits"])
    if returncode != 0:
        return NvidiaSmiProbe(found=True, path=path, error=output.strip()[:300] or f"nvidia-smi exited {returncode}")
    return NvidiaSmiProbe(found=True, path=path, gpus=parse_nvidia_smi_csv(output))


def probe_profiling_admin_only(params_file: Path = NVIDIA_DRIVER_PARAMS) -> bool | None:
    """True when the driver lets only root read performance counters (ncu then fails with ERR_NVGPUCTRPERM)."""
    try:
        text = params_file.read_text()
    except OSError:
        return None
    match = re.search(r"RmProfilingAdminOnly:\s*(\d+)", text)
    return bool(int(match.group(1))) if match else None


def collect_probes() -> Probes:
    ncu = probe_ncu()
    return Probes(
        python=probe_python(),
        torch=probe_torch(),
        triton=probe_triton(),
        nvcc=probe_nvcc(),
        ncu=ncu,
        nsight_python=probe_nsight_python(),
        ncu_report=probe_ncu_report(ncu.path),
        compute_sanitizer=probe_compute_sanitizer(),
        cuobjdump=probe_cuobjdump(),
        nvidia_smi=probe_nvidia_smi(),
        profiling_admin_only=probe_profiling_admin_only(),
        is_root=os.geteuid() == 0,
    )


# --- verdicts --------------------------------------------------------------------------------


def nsight_python_compatibility(nsight_version: str | None, ncu_version: str | None) -> NsightPythonCompatibility:
    """Can this nsight-python drive this ncu? 0.9.x: yes; 1.x: only with ncu >= 2026.2.1."""
    if nsight_version is None:
        return NsightPythonCompatibility(False, "nsight-python is not installed")
    nsight = version_tuple(nsight_version)
    ncu = version_tuple(ncu_version)
    minimum = ".".join(map(str, NSIGHT_PYTHON_1X_MIN_NCU))
    if nsight[:1] and nsight[0] >= 1:
        if ncu and ncu < NSIGHT_PYTHON_1X_MIN_NCU:
            return NsightPythonCompatibility(
                False,
                f"nsight-python {nsight_version} refuses ncu {ncu_version} (1.x needs ncu {minimum} or newer); "
                f"install `pip install nsight-python=={NSIGHT_PYTHON_PIN_FOR_OLD_NCU}`, which works with "
                f"ncu 2025.3.1, or upgrade Nsight Compute to {minimum} or newer",
            )
        return NsightPythonCompatibility(True, f"nsight-python {nsight_version} with ncu {ncu_version or '(none)'}")
    if nsight[:2] == (0, 9):
        return NsightPythonCompatibility(True, f"nsight-python {nsight_version} works with ncu 2025.3.1 and newer")
    return NsightPythonCompatibility(
        False,
        f"nsight-python {nsight_version} is older than any version this skill was tested with; "
        f"install `pip install nsight-python=={NSIGHT_PYTHON_PIN_FOR_OLD_NCU}`",
    )


def _driver_version(probes: Probes) -> str | None:
    return next((gpu.driver_version for gpu in probes.nvidia_smi.gpus if gpu.driver_version), None)


def _gpu_usable(probes: Probes) -> bool:
    torch = probes.torch
    return torch.installed and torch.cuda_available and bool(torch.gpus) and torch.gpu_smoke_test_passed is not False


def why_no_gpu(probes: Probes) -> str:
    """One sentence on why kernels cannot run on a GPU here, naming the most specific cause."""
    torch = probes.torch
    smi_gpus = probes.nvidia_smi.gpus
    if not torch.installed:
        return f"torch is not installed ({torch.error}), so no kernel can be run or checked"
    if torch.cuda_available and torch.gpu_smoke_test_passed is False:
        return f"torch sees a GPU but a one-element op on it failed ({torch.error})"
    if smi_gpus and torch.cuda_build_version is None:
        return (
            f"nvidia-smi sees {len(smi_gpus)} GPU(s) ({smi_gpus[0].name}) but torch {torch.version} is a CPU-only "
            "build, so it cannot use them"
        )
    if smi_gpus:
        detail = f": {torch.error}" if torch.error else ""
        return f"nvidia-smi sees {smi_gpus[0].name} but torch {torch.version} reports no usable CUDA device{detail}"
    if probes.nvidia_smi.found and probes.nvidia_smi.error:
        return f"the NVIDIA driver does not answer: {probes.nvidia_smi.error.splitlines()[0]}"
    build = "a CPU-only build" if torch.cuda_build_version is None else f"built with CUDA {torch.cuda_build_version}"
    return f"this machine has no NVIDIA GPU that torch can use (torch {torch.version} is {build})"


def _nvcc_targets_gpu(probes: Probes) -> str | None:
    """Why nvcc cannot build for (or the driver cannot load code from nvcc for) this GPU; None if fine."""
    nvcc = probes.nvcc
    if probes.torch.gpus and nvcc.gpu_architectures:
        arch = probes.torch.gpus[0].arch
        if arch.replace("sm_", "compute_") not in nvcc.gpu_architectures:
            return f"nvcc {nvcc.version} cannot target this GPU's {arch} (it lists {', '.join(nvcc.gpu_architectures)})"
    driver = _driver_version(probes)
    release_major = version_tuple(nvcc.release)[:1]
    minimum = MIN_DRIVER_FOR_CUDA_MAJOR.get(release_major[0]) if release_major else None
    if driver and minimum and version_tuple(driver) < version_tuple(minimum):
        return (
            f"driver {driver} is too old for code built by nvcc {nvcc.version} (CUDA {nvcc.release} needs driver "
            f"{minimum} or newer)"
        )
    return None


def assess_capabilities(probes: Probes) -> list[Capability]:
    """For each later step of the loop: can it run here, why (not), and how to fix it."""
    gpu = _gpu_usable(probes)
    no_gpu_reason = "" if gpu else why_no_gpu(probes)
    torch_fix = INSTALL_CUDA_TORCH if probes.torch.installed else "pip install torch (a CUDA build, see pytorch.org)"
    gpu_fix = torch_fix if probes.nvidia_smi.gpus else RUN_ON_GPU_MACHINE
    nvcc, ncu, triton = probes.nvcc, probes.ncu, probes.triton
    capabilities: list[Capability] = []

    # compile CUDA: nvcc alone; no GPU needed (correctness_check.py --compile-only)
    if nvcc.found and nvcc.version:
        capabilities.append(Capability("compile_cuda", "compile CUDA (nvcc)", "nvcc", True,
                                       f"nvcc {nvcc.version} at {nvcc.path}"))
    else:
        capabilities.append(Capability("compile_cuda", "compile CUDA (nvcc)", "nvcc", False,
                                       nvcc.error or "nvcc is missing", INSTALL_CUDA_TOOLKIT))

    # CUDA correctness: build with nvcc, run on the GPU through torch tensors
    label, needs = "CUDA correctness", "GPU + torch (CUDA build) + nvcc"
    if not gpu:
        capabilities.append(Capability("cuda_correctness", label, needs, False, no_gpu_reason, gpu_fix))
    elif not (nvcc.found and nvcc.version):
        capabilities.append(Capability("cuda_correctness", label, needs, False, "nvcc is missing", INSTALL_CUDA_TOOLKIT))
    elif problem := _nvcc_targets_gpu(probes):
        capabilities.append(Capability("cuda_correctness", label, needs, False, problem,
                                       "install a CUDA toolkit that supports this GPU and driver, or update the driver"))
    else:
        capabilities.append(Capability("cuda_correctness", label, needs, True,
                                       f"{probes.torch.gpus[0].name} ({probes.torch.gpus[0].arch}) with nvcc {nvcc.version}"))

    # Triton correctness: compiled on the GPU, or interpreted on the CPU
    label, needs = "Triton correctness", "torch + triton; GPU, or CPU via TRITON_INTERPRET=1"
    if not probes.torch.installed or not triton.installed:
        missing = "torch" if not probes.torch.installed else "triton"
        capabilities.append(Capability("triton_correctness", label, needs, False,
                                       f"{missing} is not importable", f"pip install {missing}"))
    elif gpu:
        capabilities.append(Capability("triton_correctness", label, needs, True,
                                       f"triton {triton.version} on {probes.torch.gpus[0].name}"))
    else:
        capabilities.append(Capability(
            "triton_correctness", label, needs, True,
            f"on the CPU only, under the Triton interpreter (TRITON_INTERPRET=1, triton {triton.version}): "
            "values are checked but bf16 is unsupported there and timings mean nothing",
            f"for the compiled kernel, bf16 and timings: {RUN_ON_GPU_MACHINE}",
        ))

    # benchmark: needs the GPU, nothing else
    if gpu:
        capabilities.append(Capability("benchmark", "benchmark", "GPU", True, f"{probes.torch.gpus[0].name}"))
    else:
        capabilities.append(Capability("benchmark", "benchmark", "GPU", False, no_gpu_reason, gpu_fix))

    capabilities.append(_ncu_capability(probes, gpu, no_gpu_reason, gpu_fix))

    # static SASS analysis: cuobjdump plus a cubin to read (nvcc builds one; Triton needs its GPU compile)
    label, needs = "static SASS analysis", "cuobjdump + a cubin (from nvcc, or from a Triton GPU compile)"
    cuobjdump = probes.cuobjdump
    if not cuobjdump.found:
        capabilities.append(Capability("sass_analysis", label, needs, False, cuobjdump.error or "cuobjdump is missing",
                                       f"{INSTALL_CUDA_TOOLKIT}, or pip install triton (it bundles cuobjdump)"))
    elif not (nvcc.found or gpu):
        capabilities.append(Capability("sass_analysis", label, needs, False,
                                       f"cuobjdump found ({cuobjdump.source}) but nothing here can produce a cubin",
                                       INSTALL_CUDA_TOOLKIT))
    else:
        scope = "CUDA and Triton kernels" if gpu and nvcc.found else ("Triton kernels" if gpu else "CUDA kernels (built by nvcc)")
        version = f" {cuobjdump.version}" if cuobjdump.version else ""
        capabilities.append(Capability("sass_analysis", label, needs, True,
                                       f"cuobjdump{version} from {cuobjdump.source}, for {scope}"))
    return capabilities


def _ncu_capability(probes: Probes, gpu: bool, no_gpu_reason: str, gpu_fix: str) -> Capability:
    """ncu needs the GPU, the ncu binary, a way to read its reports, and permission to read counters."""
    label, needs = "ncu profile", "GPU + ncu + (nsight-python 0.9.x, or ncu_report)"
    ncu = probes.ncu
    if not gpu:
        reasons = [no_gpu_reason] + ([] if ncu.found else ["ncu is missing"])
        return Capability("ncu_profile", label, needs, False, "; ".join(reasons),
                          gpu_fix if ncu.found else f"{gpu_fix}; {INSTALL_NCU}")
    if not ncu.found:
        return Capability("ncu_profile", label, needs, False, ncu.error or "ncu is missing", INSTALL_NCU)
    if probes.profiling_admin_only and not probes.is_root:
        return Capability(
            "ncu_profile", label, needs, False,
            "the driver lets only root read GPU performance counters (RmProfilingAdminOnly=1) and this is not "
            "root, so ncu would fail with ERR_NVGPUCTRPERM",
            "run the profiling step as root, or have an admin set the nvidia module option "
            "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)",
        )
    nsight = probes.nsight_python
    compatibility = nsight_python_compatibility(nsight.version if nsight.installed else None, ncu.version)
    reader = probes.ncu_report
    if compatibility.usable:
        return Capability("ncu_profile", label, needs, True, f"ncu {ncu.version}; {compatibility.message}")
    if reader.available:
        note = "" if not nsight.installed else f" ({compatibility.message})"
        return Capability("ncu_profile", label, needs, True,
                          f"ncu {ncu.version}; reports read with ncu_report from {reader.source}{note}")
    if nsight.installed:
        fix = compatibility.message.split("; ", 1)[-1]
    else:
        pin = f"=={NSIGHT_PYTHON_PIN_FOR_OLD_NCU}" if version_tuple(ncu.version) < NSIGHT_PYTHON_1X_MIN_NCU else ""
        fix = f"pip install 'nsight-python{pin}' (or pip install ncu-report)"
    return Capability("ncu_profile", label, needs, False,
                      f"ncu {ncu.version} found, but no way to read its reports: {compatibility.message}, "
                      "and ncu_report is not available", fix)


def overall_verdict(probes: Probes, capabilities: list[Capability]) -> tuple[Verdict, str]:
    """ok: kernels run and time on the GPU. cpu_only: no GPU, but compiling or interpreting works. broken: neither."""
    by_step = {item.step: item for item in capabilities}
    if _gpu_usable(probes) and by_step["benchmark"].can_run and (
        by_step["cuda_correctness"].can_run or by_step["triton_correctness"].can_run
    ):
        gpu = probes.torch.gpus[0]
        return "ok", f"The GPU path works: {gpu.name} ({gpu.arch}, {gpu.sm_count} SMs, {gpu.memory_gib:g} GiB)."
    runnable = [item.label for item in capabilities if item.can_run]
    if not _gpu_usable(probes) and (by_step["compile_cuda"].can_run or by_step["triton_correctness"].can_run):
        return "cpu_only", (
            f"No usable GPU: {why_no_gpu(probes)}; CUDA kernels cannot run and nothing can be timed or profiled "
            f"here, but {', '.join(runnable)} can."
        )
    if _gpu_usable(probes):
        blocked = "; ".join(f"{item.label}: {item.reason}" for item in capabilities if not item.can_run)
        return "broken", f"A GPU is visible but no kernel can run on it ({blocked})."
    return "broken", f"Nothing in the loop can run here: {why_no_gpu(probes)}."


def environment_warnings(probes: Probes) -> list[str]:
    """Things that do not stop a step but skew its results or will surprise later."""
    warnings: list[str] = []
    for gpu in probes.nvidia_smi.gpus:
        if gpu.compute_mode and gpu.compute_mode.lower() == "prohibited":
            warnings.append(f"GPU {gpu.index} ({gpu.name}) is in compute mode Prohibited: no process may use it")
        elif gpu.compute_mode and gpu.compute_mode.lower().startswith("exclusive"):
            warnings.append(f"GPU {gpu.index} is in compute mode {gpu.compute_mode}: another process can lock you out")
    nsight = probes.nsight_python
    if nsight.installed:
        compatibility = nsight_python_compatibility(nsight.version, probes.ncu.version)
        if not compatibility.usable:
            warnings.append(compatibility.message)
    torch = probes.torch
    if torch.gpus and torch.compiled_archs and torch.gpus[0].arch not in torch.compiled_archs:
        warnings.append(
            f"torch {torch.version} was not compiled for {torch.gpus[0].arch} ({', '.join(torch.compiled_archs)}); "
            "its own kernels (the reference) may run through PTX JIT or fail"
        )
    if probes.nvcc.found and probes.nvcc.release and torch.cuda_build_version:
        if version_tuple(probes.nvcc.release)[:1] != version_tuple(torch.cuda_build_version)[:1]:
            warnings.append(
                f"nvcc is CUDA {probes.nvcc.release} but torch was built with CUDA {torch.cuda_build_version}; "
                "fine for extern \"C\" kernels, but the driver must support the newer of the two"
            )
    return warnings


def check_environment(probes: Probes | None = None) -> EnvironmentReport:
    """Probe this machine (or use given probes) and decide what can run here."""
    probes = probes if probes is not None else collect_probes()
    capabilities = assess_capabilities(probes)
    verdict, headline = overall_verdict(probes, capabilities)
    return EnvironmentReport(verdict, headline, probes, capabilities, environment_warnings(probes))


# --- opt-in clock locking --------------------------------------------------------------------

ClockAction = Literal["lock", "unlock"]


@dataclass
class ClockCommandResult:
    command: list[str]
    returncode: int | None
    output: str


def clock_lock_commands(nvidia_smi: str, gpus: list[SmiGpu]) -> list[list[str]]:
    """Commands that pin each GPU's SM clock at its maximum.

    One command for all GPUs when they share a maximum (the usual single-model node); one per
    GPU (`-i N`) when they differ, so no GPU is locked at another model's clock.
    """
    maxima = {gpu.max_sm_clock_mhz for gpu in gpus}
    if None in maxima or not maxima:
        raise EnvironmentFault(
            "nvidia-smi did not report a maximum SM clock, so there is no clock to lock at; nothing was changed",
            hint="check `nvidia-smi -q -d CLOCK`; some GPUs (and most VMs) do not allow clock locking",
        )
    if len(maxima) == 1:
        clock = maxima.pop()
        return [[nvidia_smi, f"--lock-gpu-clocks={clock},{clock}"]]
    return [[nvidia_smi, "-i", str(gpu.index), f"--lock-gpu-clocks={gpu.max_sm_clock_mhz},{gpu.max_sm_clock_mhz}"]
            for gpu in gpus]


def clock_reset_command(nvidia_smi: str) -> list[str]:
    return [nvidia_smi, "--reset-gpu-clocks"]


def plan_clock_change(action: ClockAction, smi: NvidiaSmiProbe) -> list[list[str]]:
    """The exact nvidia-smi commands for an opt-in clock change, after checking they can work.

    Raises EnvironmentFault (nothing changed) without nvidia-smi or without root: changing clocks
    is a machine-wide act, so it is never attempted half-way or through a silent sudo.
    """
    if not smi.found or smi.path is None:
        raise EnvironmentFault("nvidia-smi is not on PATH, so GPU clocks cannot be changed; nothing was changed")
    if smi.error:
        raise EnvironmentFault(f"nvidia-smi does not answer ({smi.error.splitlines()[0]}); nothing was changed")
    commands = [clock_reset_command(smi.path)] if action == "unlock" else clock_lock_commands(smi.path, smi.gpus)
    if os.geteuid() != 0:
        flag = "--lock-clocks" if action == "lock" else "--unlock-clocks"
        raise EnvironmentFault(
            f"changing GPU clocks needs root and this is not root; nothing was changed (it would run: "
            f"{'; '.join(' '.join(command) for command in commands)})",
            hint=f"run `sudo python env_check.py {flag}` on a machine you own, or run that command with sudo yourself",
        )
    return commands


def run_clock_command(command: list[str]) -> ClockCommandResult:
    returncode, output = _run(command)
    return ClockCommandResult(command=command, returncode=returncode, output=output.strip())
