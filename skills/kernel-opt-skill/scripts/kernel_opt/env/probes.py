"""Probing this machine: tool versions, Python packages, torch's GPUs, and what nvidia-smi reports.

Every later step (compile, correctness, benchmark, ncu profile, SASS analysis) fails in its own
way when a tool is missing or two versions disagree, usually deep inside a long run. Probing
once, up front, turns those failures into one report (env_check.py) that says which steps can
run here, why the others cannot, and what to install.

Each probe is a small function that returns a plain record (probe_records.py) and never raises
because something is absent: absence is the information; what a tool prints is read in
tool_output.py. What the records mean for each step of the loop is
decided in capabilities.py, from these records alone; nothing here changes GPU state or needs
root (clock locking, an explicit opt-in, is in clocks.py).
"""

from __future__ import annotations

import contextlib
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
from collections.abc import Mapping
from pathlib import Path

from kernel_opt.env.probe_records import (
    NcuReportProbe,
    NvccProbe,
    NvidiaSmiProbe,
    PackageProbe,
    Probes,
    PythonProbe,
    ToolProbe,
    TorchGpu,
    TorchProbe,
)
from kernel_opt.env.tool_output import (
    parse_nsight_tool_version,
    parse_nvcc_architectures,
    parse_nvcc_version,
    parse_nvidia_smi_csv,
)
from kernel_opt.env.toolkit_headers import missing_context_headers, toolkit_include_flags

# --- timeouts and search locations, in one place ---------------------------------------------

PROBE_TIMEOUT_S = 30  # a version query that takes longer than this is a hung tool, not a slow one

# Where Nsight Compute and the CUDA toolkit's binaries live when they are not on PATH.
CUDA_BIN_DIRS = ["/usr/local/cuda/bin"]
NCU_SEARCH_GLOBS = ["/opt/nvidia/nsight-compute/*", "/usr/local/cuda/bin", "/usr/local/cuda/nsight-compute-*"]
COMPUTE_SANITIZER_SEARCH_GLOBS = ["/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer"]
# ncu ships its Python report reader beside itself, as <ncu dir>/extras/python/ncu_report.py.
NCU_REPORT_RELATIVE_DIR = Path("extras") / "python"

NVIDIA_SMI_QUERY_FIELDS = (
    "name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
    "power.limit,persistence_mode,compute_mode,uuid"
)
# The driver exposes "RmProfilingAdminOnly: 1" here when only root may read perf counters.
NVIDIA_DRIVER_PARAMS = Path("/proc/driver/nvidia/params")


# --- probing helpers -------------------------------------------------------------------------


def run_tool(argv: list[str], timeout_s: float = PROBE_TIMEOUT_S) -> tuple[int | None, str]:
    """Run a tool to its end; (returncode, stdout+stderr), or (None, why) when it could not start or hung.

    Probes only run read-only queries through it; clocks.py runs the opt-in clock commands.
    """
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
        return PackageProbe(distribution, module, installed=False, version=version,
                            error=f"`import {module}` finds no module")
    try:
        # A package may print on import (nsight-python warns when nvidia-ml-py is missing): never onto
        # env_check's stdout, where --json promises one JSON object.
        with contextlib.redirect_stdout(io.StringIO()):
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
    returncode, output = run_tool([path, "--version"])
    parsed = parse_nvcc_version(output)
    probe = NvccProbe(name="nvcc", found=True, path=path, source=source)
    if returncode != 0 or parsed is None:
        probe.error = f"`nvcc --version` gave no version: {output.strip()[:200]}"
        return probe
    probe.release, probe.version = parsed
    _, architectures = run_tool([path, "--list-gpu-arch"])
    probe.gpu_architectures = parse_nvcc_architectures(architectures)
    probe.missing_library_headers = missing_context_headers(toolkit_include_flags(path))
    return probe


def _probe_nsight_tool(name: str, search_globs: list[str]) -> ToolProbe:
    found = find_tool(name, search_globs)
    if found is None:
        return ToolProbe(name=name, found=False, error=f"{name} is not on PATH nor in {', '.join(search_globs)}")
    path, source = found
    returncode, output = run_tool([path, "--version"])
    version = parse_nsight_tool_version(output)
    probe = ToolProbe(name=name, found=True, path=path, version=version, source=source)
    if returncode != 0 or version is None:
        probe.error = f"`{name} --version` gave no version: {output.strip()[:200]}"
    return probe


def probe_ncu() -> ToolProbe:
    return _probe_nsight_tool("ncu", NCU_SEARCH_GLOBS)


def compute_sanitizer_search_globs(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Where compute-sanitizer may be besides PATH: $CUDA_HOME/bin first, then the default toolkit."""
    cuda_home = environ.get("CUDA_HOME")
    return ([str(Path(cuda_home) / "bin")] if cuda_home else []) + COMPUTE_SANITIZER_SEARCH_GLOBS


def probe_compute_sanitizer(environ: Mapping[str, str] = os.environ) -> ToolProbe:
    probe = _probe_nsight_tool("compute-sanitizer", compute_sanitizer_search_globs(environ))
    if not probe.found and not environ.get("CUDA_HOME"):
        probe.error = f"{probe.error} (CUDA_HOME is not set)"
    return probe


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
    returncode, output = run_tool([path, "--version"])
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
    returncode, output = run_tool([path, f"--query-gpu={NVIDIA_SMI_QUERY_FIELDS}", "--format=csv,noheader,nounits"])
    if returncode != 0:
        return NvidiaSmiProbe(found=True, path=path, error=output.strip()[:300] or f"nvidia-smi exited {returncode}")
    return NvidiaSmiProbe(found=True, path=path, gpus=parse_nvidia_smi_csv(output))


def driver_version(smi: NvidiaSmiProbe) -> str | None:
    """The NVIDIA driver version nvidia-smi reports (from the first GPU that gives one); None where it cannot say."""
    return next((gpu.driver_version for gpu in smi.gpus if gpu.driver_version), None)


def probe_profiling_admin_only(params_file: Path = NVIDIA_DRIVER_PARAMS) -> bool | None:
    """True when the driver lets only root read performance counters (ncu then fails with ERR_NVGPUCTRPERM)."""
    try:
        text = params_file.read_text()
    except OSError:
        return None
    match = re.search(r"RmProfilingAdminOnly:\s*(\d+)", text)
    return bool(int(match.group(1))) if match else None


def collect_probes() -> Probes:
    """Every probe, once (each returns a record; none raises for something absent)."""
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
        numpy=probe_package("numpy", "numpy"),
    )
