"""What this machine can do for the optimization loop: one verdict per step, and for the machine.

`assess_capabilities` asks each step of the loop (compile CUDA, CUDA and Triton correctness,
benchmark, ncu profile, compute-sanitizer, static SASS analysis) whether it can run here, why (not), and how to
fix it; `overall_verdict` sums them up. All pure functions of the probe records (probe_records.py), so
they are tested with records built by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Literal

from kernel_opt.env.probe_records import PackageProbe, Probes
from kernel_opt.env.probes import collect_probes, driver_version
from kernel_opt.env.tool_output import version_tuple

# --- versions, minimums and fixes, in one place ----------------------------------------------

# nsight-python 1.x refuses Nsight Compute older than 2026.2.1, while 0.9.6 works with
# ncu 2025.3.1 (both observed by this project on a Hopper machine with ncu 2025.3.1).
NSIGHT_PYTHON_1X_MIN_NCU = (2026, 2, 1)
NSIGHT_PYTHON_PIN_FOR_OLD_NCU = "0.9.6"
# The size sweep (ncu_profile.py --sweep, profile/sweep/) calls nsight-python's API as 0.9.6 has it
# and was run with it against ncu 2025.3.1 on an H100: it asks for exactly this version.
NSIGHT_PYTHON_SWEEP_PIN = NSIGHT_PYTHON_PIN_FOR_OLD_NCU
INSTALL_NSIGHT_PYTHON = (
    f"python3 -m pip install nsight-python=={NSIGHT_PYTHON_SWEEP_PIN} "
    "(it brings pandas, deepdiff, nvtx and ncu-report; or pip install -e '.[profile]')"
)

# Minimum Linux driver for each CUDA major release under minor-version compatibility, from
# NVIDIA's CUDA Toolkit release notes ("CUDA Toolkit and Minimum Required Driver Version for
# CUDA Minor Version Compatibility"). Code built by a newer nvcc than the driver supports fails
# at load time with "CUDA driver version is insufficient".
MIN_DRIVER_FOR_CUDA_MAJOR: dict[int, str] = {
    11: "450.80.02",
    12: "525.60.13",
    13: "580.65.06",
}

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
    """Whether the installed nsight-python can drive the installed ncu, in one sentence."""

    usable: bool
    message: str


Verdict = Literal["ok", "cpu_only", "broken"]


@dataclass
class EnvironmentReport:
    """The machine's verdict, every step's capability, the probes they rest on, and warnings (env_check.json)."""

    verdict: Verdict
    headline: str  # one plain sentence: the verdict and its main reason
    probes: Probes
    capabilities: list[Capability]
    warnings: list[str] = field(default_factory=list)

    def capability(self, step: str) -> Capability:
        return next(item for item in self.capabilities if item.step == step)

    def to_dict(self) -> dict:
        return asdict(self)


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


def sweep_nsight_python(nsight_version: str | None, ncu_version: str | None) -> NsightPythonCompatibility:
    """Can the size sweep use this nsight-python with this ncu? Only the pinned version, where it takes this ncu.

    The sweep calls nsight-python's decorator, annotations and DataFrame as 0.9.6 has them; a
    1.x refuses ncu older than 2026.2.1 outright.
    """
    if nsight_version is None:
        return NsightPythonCompatibility(False, "nsight-python is not installed")
    compatibility = nsight_python_compatibility(nsight_version, ncu_version)
    if not compatibility.usable:
        return compatibility
    if version_tuple(nsight_version)[:3] != version_tuple(NSIGHT_PYTHON_SWEEP_PIN):
        return NsightPythonCompatibility(
            False,
            f"nsight-python {nsight_version} is installed, but the size sweep is written against nsight-python "
            f"{NSIGHT_PYTHON_SWEEP_PIN} (the version that works with ncu 2025.3.1)",
        )
    return NsightPythonCompatibility(
        True, f"nsight-python {nsight_version} (the pinned version) with ncu {ncu_version or '(none)'}")


def _gpu_usable(probes: Probes) -> bool:
    """torch is installed, sees a GPU, and a tiny op on it did not fail."""
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
            listed = ", ".join(nvcc.gpu_architectures)
            return f"nvcc {nvcc.version} cannot target this GPU's {arch} (it lists {listed})"
    driver = driver_version(probes.nvidia_smi)
    release_major = version_tuple(nvcc.release)[:1]
    minimum = MIN_DRIVER_FOR_CUDA_MAJOR.get(release_major[0]) if release_major else None
    if driver and minimum and version_tuple(driver) < version_tuple(minimum):
        return (
            f"driver {driver} is too old for code built by nvcc {nvcc.version} (CUDA {nvcc.release} needs driver "
            f"{minimum} or newer)"
        )
    return None


# --- one rule per step of the loop, in report order ------------------------------------------


@dataclass(frozen=True)
class GpuAccess:
    """Whether kernels can run on a GPU here and, if not, why and what would fix it (every GPU step says the same)."""

    usable: bool
    why_not: str  # "" when usable
    fix: str


def gpu_access(probes: Probes) -> GpuAccess:
    """The GPU verdict every step that needs a GPU shares."""
    usable = _gpu_usable(probes)
    torch_fix = INSTALL_CUDA_TORCH if probes.torch.installed else "pip install torch (a CUDA build, see pytorch.org)"
    return GpuAccess(usable, "" if usable else why_no_gpu(probes),
                     torch_fix if probes.nvidia_smi.gpus else RUN_ON_GPU_MACHINE)


CapabilityStep = Callable[[Probes, GpuAccess], Capability]

# Every step's rule, in the order the report lists the steps.
CAPABILITY_STEPS: list[CapabilityStep] = []


def capability_step(step: CapabilityStep) -> CapabilityStep:
    """Register `step` (after every step defined before it)."""
    CAPABILITY_STEPS.append(step)
    return step


def assess_capabilities(probes: Probes) -> list[Capability]:
    """For each later step of the loop: can it run here, why (not), and how to fix it."""
    gpu = gpu_access(probes)
    return [step(probes, gpu) for step in CAPABILITY_STEPS]


@capability_step
def compile_cuda_capability(probes: Probes, gpu: GpuAccess) -> Capability:
    """nvcc alone; no GPU needed (correctness_check.py --compile-only)."""
    label, needs, nvcc = "compile CUDA (nvcc)", "nvcc", probes.nvcc
    if nvcc.found and nvcc.version:
        detail = f"nvcc {nvcc.version} at {nvcc.path}"
        if nvcc.missing_library_headers:
            detail += (f"; this toolkit lacks {', '.join(nvcc.missing_library_headers)} (the CUDA math libraries' "
                       "headers), so a load_inline source that includes ATen/cuda/CUDAContext.h cannot be "
                       "compile-checked here (exit 4, missing_headers); c10/cuda/CUDAStream.h gives the current "
                       "stream without them")
        return Capability("compile_cuda", label, needs, True, detail)
    return Capability("compile_cuda", label, needs, False, nvcc.error or "nvcc is missing", INSTALL_CUDA_TOOLKIT)


@capability_step
def cuda_correctness_capability(probes: Probes, gpu: GpuAccess) -> Capability:
    """Build with nvcc, run on the GPU through torch tensors."""
    label, needs, nvcc = "CUDA correctness", "GPU + torch (CUDA build) + nvcc", probes.nvcc
    if not gpu.usable:
        return Capability("cuda_correctness", label, needs, False, gpu.why_not, gpu.fix)
    if not (nvcc.found and nvcc.version):
        return Capability("cuda_correctness", label, needs, False, "nvcc is missing", INSTALL_CUDA_TOOLKIT)
    if problem := _nvcc_targets_gpu(probes):
        return Capability("cuda_correctness", label, needs, False, problem,
                          "install a CUDA toolkit that supports this GPU and driver, or update the driver")
    first = probes.torch.gpus[0]
    return Capability("cuda_correctness", label, needs, True, f"{first.name} ({first.arch}) with nvcc {nvcc.version}")


@capability_step
def triton_correctness_capability(probes: Probes, gpu: GpuAccess) -> Capability:
    """Compiled on the GPU, or interpreted on the CPU."""
    label, needs, triton = "Triton correctness", "torch + triton; GPU, or CPU via TRITON_INTERPRET=1", probes.triton
    if not probes.torch.installed or not triton.installed:
        missing = "torch" if not probes.torch.installed else "triton"
        return Capability("triton_correctness", label, needs, False, f"{missing} is not importable",
                          f"pip install {missing}")
    if gpu.usable:
        return Capability("triton_correctness", label, needs, True,
                          f"triton {triton.version} on {probes.torch.gpus[0].name}")
    detail = (f"on the CPU only, under the Triton interpreter (TRITON_INTERPRET=1, triton {triton.version}): "
              "values are checked but bf16 is unsupported there and timings mean nothing")
    fix = f"for the compiled kernel, bf16 and timings: {RUN_ON_GPU_MACHINE}"
    if numpy_breaks_interpreter(probes.numpy):
        detail += (f"; with NumPy {probes.numpy.version} the interpreter fails kernels whose loop bound or index "
                   "is a runtime value (triton-lang/triton#9171), and the check then exits 4")
        fix = (f"python -m pip install 'numpy<2.4' in a virtual environment outside the project folder, to leave the "
               f"system's NumPy as it is and keep about 100 MB out of a folder that travels to a GPU host: python -m "
               f"venv --system-site-packages ~/.venvs/kernel-opt, then run the scripts with "
               f"~/.venvs/kernel-opt/bin/python; {fix}")
    return Capability("triton_correctness", label, needs, True, detail, fix)


def numpy_breaks_interpreter(numpy: PackageProbe | None) -> bool:
    """NumPy 2.4 made int() of a 1-element array an error, which Triton's interpreter relies on."""
    if numpy is None or not numpy.installed or not numpy.version:
        return False
    try:
        major, minor = (int(part) for part in numpy.version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (2, 4)


@capability_step
def benchmark_capability(probes: Probes, gpu: GpuAccess) -> Capability:
    """Needs the GPU, nothing else."""
    if gpu.usable:
        return Capability("benchmark", "benchmark", "GPU", True, f"{probes.torch.gpus[0].name}")
    return Capability("benchmark", "benchmark", "GPU", False, gpu.why_not, gpu.fix)


def _ncu_blocker(probes: Probes, gpu: GpuAccess) -> tuple[str, str] | None:
    """(why, fix) when ncu cannot profile here at all: no GPU, no ncu, or counters readable by root only."""
    ncu = probes.ncu
    if not gpu.usable:
        reasons = [gpu.why_not] + ([] if ncu.found else ["ncu is missing"])
        return "; ".join(reasons), gpu.fix if ncu.found else f"{gpu.fix}; {INSTALL_NCU}"
    if not ncu.found:
        return ncu.error or "ncu is missing", INSTALL_NCU
    if probes.profiling_admin_only and not probes.is_root:
        return (
            "the driver lets only root read GPU performance counters (RmProfilingAdminOnly=1) and this is not "
            "root, so ncu would fail with ERR_NVGPUCTRPERM",
            "run the profiling step as root, or have an admin set the nvidia module option "
            "NVreg_RestrictProfilingToAdminUsers=0 (https://developer.nvidia.com/ERR_NVGPUCTRPERM)",
        )
    return None


@capability_step
def ncu_profile_capability(probes: Probes, gpu: GpuAccess) -> Capability:
    """ncu needs the GPU, the ncu binary, a way to read its reports, and permission to read counters."""
    label, needs = "ncu profile", "GPU + ncu + (nsight-python 0.9.x, or ncu_report)"
    ncu = probes.ncu
    if blocker := _ncu_blocker(probes, gpu):
        return Capability("ncu_profile", label, needs, False, *blocker)
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


@capability_step
def sanitizer_capability(probes: Probes, gpu: GpuAccess) -> Capability:
    """compute-sanitizer runs a kernel on the GPU (correctness_check.py --sanitize, evaluate's memcheck step)."""
    label, needs, tool = "compute-sanitizer (memcheck, racecheck)", "GPU + compute-sanitizer", probes.compute_sanitizer
    if not gpu.usable:
        reasons = [gpu.why_not] + ([] if tool.found else ["compute-sanitizer is missing"])
        return Capability("sanitizer", label, needs, False, "; ".join(reasons),
                          gpu.fix if tool.found else f"{gpu.fix}; {INSTALL_CUDA_TOOLKIT}")
    if not tool.found:
        return Capability("sanitizer", label, needs, False, tool.error or "compute-sanitizer is missing",
                          f"{INSTALL_CUDA_TOOLKIT}, or pass --no-sanitize to workspace.py evaluate")
    return Capability("sanitizer", label, needs, True, f"compute-sanitizer {tool.version or ''} at {tool.path}".strip())


@capability_step
def size_sweep_capability(probes: Probes, gpu: GpuAccess) -> Capability:
    """ncu_profile.py --sweep: what the profile needs, and nsight-python at its pinned version, importable."""
    label = "size sweep (ncu_profile.py --sweep)"
    needs = f"GPU + ncu + nsight-python {NSIGHT_PYTHON_SWEEP_PIN} with its dependencies"
    if blocker := _ncu_blocker(probes, gpu):
        return Capability("size_sweep", label, needs, False, *blocker)
    nsight = probes.nsight_python
    rule = sweep_nsight_python(nsight.version, probes.ncu.version)
    if not rule.usable:
        return Capability("size_sweep", label, needs, False, rule.message, INSTALL_NSIGHT_PYTHON)
    if not nsight.installed:  # the distribution is there, `import nsight` fails (a dependency is missing)
        if "ncu_report" in (nsight.error or ""):
            return _sweep_reader_capability(probes, label, needs, rule.message)
        return Capability("size_sweep", label, needs, False,
                          f"nsight-python {nsight.version} is installed but does not import: {nsight.error}",
                          INSTALL_NSIGHT_PYTHON)
    return Capability("size_sweep", label, needs, True, rule.message)


def _sweep_reader_capability(probes: Probes, label: str, needs: str, installed: str) -> Capability:
    """nsight-python is installed and fails only for want of ncu_report: the sweep can put ncu's own copy on the
    child's path (profile/sweep/runner.py), so reinstalling nsight-python is never the fix."""
    reader = probes.ncu_report
    if reader.available and reader.sys_path_entry:
        return Capability("size_sweep", label, needs, True,
                          f"{installed}; it imports ncu_report, which is not on this Python's path but ships with "
                          f"ncu in {reader.sys_path_entry}: the sweep puts that folder on its PYTHONPATH (to import "
                          f"nsight yourself: export PYTHONPATH={reader.sys_path_entry}:$PYTHONPATH)")
    return Capability("size_sweep", label, needs, False,
                      f"{installed}, but it cannot import ncu_report (Nsight Compute's report reader), and no copy "
                      "was found beside ncu",
                      "add the extras/python folder of your Nsight Compute install (the one holding ncu_report.py) "
                      "to PYTHONPATH, or python3 -m pip install ncu-report; nsight-python itself needs no reinstall")


@capability_step
def sass_analysis_capability(probes: Probes, gpu: GpuAccess) -> Capability:
    """cuobjdump plus a cubin to read (nvcc builds one; Triton needs its GPU compile)."""
    label, needs = "static SASS analysis", "cuobjdump + a cubin (from nvcc, or from a Triton GPU compile)"
    cuobjdump, nvcc = probes.cuobjdump, probes.nvcc
    if not cuobjdump.found:
        return Capability("sass_analysis", label, needs, False, cuobjdump.error or "cuobjdump is missing",
                          f"{INSTALL_CUDA_TOOLKIT}, or pip install triton (it bundles cuobjdump)")
    if not (nvcc.found or gpu.usable):
        return Capability("sass_analysis", label, needs, False,
                          f"cuobjdump found ({cuobjdump.source}) but nothing here can produce a cubin",
                          INSTALL_CUDA_TOOLKIT)
    if gpu.usable:
        scope = "CUDA and Triton kernels" if nvcc.found else "Triton kernels"
    else:
        scope = "CUDA kernels (built by nvcc)"
    version = f" {cuobjdump.version}" if cuobjdump.version else ""
    return Capability("sass_analysis", label, needs, True, f"cuobjdump{version} from {cuobjdump.source}, for {scope}")


# --- the machine as a whole ------------------------------------------------------------------


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
