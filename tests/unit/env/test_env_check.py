"""env_check: version parsing, the capability table, the CLI on this machine, and opt-in clock locking.

Clock locking is only ever exercised against a fake nvidia-smi placed first on PATH: a test
must never change a real GPU's clocks.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_opt.commands import env_check
from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.env import capabilities as assessment
from kernel_opt.env import clocks, tool_output
from kernel_opt.env import probes as environment
from kernel_opt.env.capabilities import Capability
from kernel_opt.env.probe_records import (
    NcuReportProbe,
    NvccProbe,
    NvidiaSmiProbe,
    PackageProbe,
    Probes,
    PythonProbe,
    SmiGpu,
    ToolProbe,
    TorchGpu,
    TorchProbe,
)

NVCC_OUTPUT = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""

NCU_OUTPUT = """\
NVIDIA (R) Nsight Compute Command Line Profiler
Copyright (c) 2018-2025 NVIDIA Corporation
Version 2025.3.1.0 (build 36398880) (public-release)
"""

SANITIZER_OUTPUT = """\
NVIDIA (R) Compute Sanitizer
Copyright (c) 2020-2025 NVIDIA Corporation
Version 2025.3.0.0 (build 36396457) (public-release)
"""

# Two GPUs as `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` prints them; the
# second is a VM-style card where clocks and power are not reported.
SMI_CSV = """\
NVIDIA H100 80GB HBM3, 580.82.07, 345, 1980, 2619, 2619, 700.00, Enabled, Default
NVIDIA A10G, 535.104.05, [N/A], [N/A], 405, 6251, [Not Supported], Disabled, Exclusive_Process
"""

H100_SMI_LINE = "NVIDIA H100 80GB HBM3, 580.82.07, 345, 1980, 2619, 2619, 700.00, Enabled, Default"


# --- parsing ---------------------------------------------------------------------------------


def test_parse_nvidia_smi_csv_reads_every_field_and_maps_unreported_values_to_none():
    first, second = tool_output.parse_nvidia_smi_csv(SMI_CSV)
    assert first == SmiGpu(
        index=0, name="NVIDIA H100 80GB HBM3", driver_version="580.82.07", sm_clock_mhz=345, max_sm_clock_mhz=1980,
        memory_clock_mhz=2619, max_memory_clock_mhz=2619, power_limit_w=700.0, persistence_mode="Enabled",
        compute_mode="Default",
    )
    assert second.index == 1 and second.name == "NVIDIA A10G"
    assert second.sm_clock_mhz is None and second.max_sm_clock_mhz is None and second.power_limit_w is None
    assert second.max_memory_clock_mhz == 6251 and second.compute_mode == "Exclusive_Process"


def test_parse_nvidia_smi_csv_reads_the_boards_uuid_where_the_query_asked_for_it():
    (gpu,) = tool_output.parse_nvidia_smi_csv(H100_SMI_LINE + ", GPU-5f1c2d3e-0000-1111-2222-333344445555")
    assert gpu.uuid == "GPU-5f1c2d3e-0000-1111-2222-333344445555" and gpu.compute_mode == "Default"
    assert tool_output.parse_nvidia_smi_csv(H100_SMI_LINE)[0].uuid is None  # output read before the uuid was asked
    assert environment.NVIDIA_SMI_QUERY_FIELDS.endswith(",uuid")


def test_parse_nvidia_smi_csv_skips_blank_and_short_lines():
    assert tool_output.parse_nvidia_smi_csv("\n\nNo devices were found\n") == []


def test_parse_nvcc_version():
    assert tool_output.parse_nvcc_version(NVCC_OUTPUT) == ("13.0", "13.0.88")
    assert tool_output.parse_nvcc_version("Cuda compilation tools, release 12.4, V12.4.131") == ("12.4", "12.4.131")
    assert tool_output.parse_nvcc_version("command not found") is None


def test_parse_nsight_tool_versions():
    assert tool_output.parse_nsight_tool_version(NCU_OUTPUT) == "2025.3.1.0"
    assert tool_output.parse_nsight_tool_version(SANITIZER_OUTPUT) == "2025.3.0.0"
    assert tool_output.parse_nsight_tool_version("==ERROR== unknown option") is None


def test_parse_nvcc_architectures_keeps_only_compute_lines():
    assert tool_output.parse_nvcc_architectures("compute_75\ncompute_90\ncompute_90a\nwarning: x\n") == [
        "compute_75", "compute_90", "compute_90a",
    ]


@pytest.mark.parametrize(
    "text, expected",
    [("2025.3.1.0", (2025, 3, 1, 0)), ("2.13.0+cpu", (2, 13, 0)), ("v0.9.6", (0, 9, 6)), (None, ()), ("abc", ())],
)
def test_version_tuple(text, expected):
    assert tool_output.version_tuple(text) == expected


# --- capability table from hand-built probes -------------------------------------------------

H100 = TorchGpu(index=0, name="NVIDIA H100 80GB HBM3", compute_capability="9.0", arch="sm_90", sm_count=132,
                memory_gib=79.19, l2_cache_mib=50.0)
NVCC_13 = NvccProbe(name="nvcc", found=True, path="/usr/local/cuda/bin/nvcc", version="13.0.88", source="PATH",
                    release="13.0",
                    gpu_architectures=["compute_75", "compute_80", "compute_89", "compute_90", "compute_100"])
NCU_2025 = ToolProbe(name="ncu", found=True, path="/opt/nvidia/nsight-compute/2025.3.1/ncu", version="2025.3.1.0",
                     source="PATH")
MISSING_TOOL = ToolProbe(name="missing", found=False, error="not found")
SANITIZER_2025 = ToolProbe(name="compute-sanitizer", found=True, path="/usr/local/cuda/bin/compute-sanitizer",
                           version="2025.3.1.0", source="PATH")


def make_probes(*, gpu: bool, **overrides) -> Probes:
    """A machine described by hand: a CUDA torch with an H100 when gpu=True, else a CPU-only torch."""
    torch = (
        TorchProbe(installed=True, version="2.13.0+cu130", cuda_build_version="13.0", cuda_available=True,
                   compiled_archs=["sm_80", "sm_90", "sm_100"], gpus=[H100], gpu_smoke_test_passed=True)
        if gpu
        else TorchProbe(installed=True, version="2.13.0+cpu", cuda_build_version=None)
    )
    smi = (
        NvidiaSmiProbe(found=True, path="/usr/bin/nvidia-smi", gpus=tool_output.parse_nvidia_smi_csv(H100_SMI_LINE))
        if gpu
        else NvidiaSmiProbe(found=False, error="nvidia-smi is not on PATH")
    )
    fields = dict(
        python=PythonProbe(version="3.11.7", executable=sys.executable),
        torch=torch,
        triton=PackageProbe("triton", "triton", installed=True, version="3.6.0"),
        nvcc=NVCC_13,
        ncu=NCU_2025 if gpu else ToolProbe(name="ncu", found=False, error="ncu is not on PATH"),
        nsight_python=PackageProbe("nsight-python", "nsight", installed=gpu, version="0.9.6" if gpu else None),
        ncu_report=NcuReportProbe(available=False, error="not found"),
        compute_sanitizer=SANITIZER_2025 if gpu else MISSING_TOOL,
        cuobjdump=ToolProbe(name="cuobjdump", found=True, path="/x/triton/backends/nvidia/bin/cuobjdump",
                            version="12.8.55", source="triton package"),
        nvidia_smi=smi,
        profiling_admin_only=False if gpu else None,
        is_root=False,
    )
    fields.update(overrides)
    return Probes(**fields)


def by_step(capabilities: list[Capability]) -> dict[str, Capability]:
    return {item.step: item for item in capabilities}


def test_no_gpu_with_nvcc_can_compile_and_interpret_but_not_run_time_or_profile():
    report = assessment.check_environment(make_probes(gpu=False))
    steps = by_step(report.capabilities)
    assert [item.step for item in report.capabilities] == [
        "compile_cuda", "cuda_correctness", "triton_correctness", "benchmark", "ncu_profile", "sanitizer", "size_sweep",
        "sass_analysis",
    ]
    assert steps["compile_cuda"].can_run and "13.0.88" in steps["compile_cuda"].reason
    assert not steps["cuda_correctness"].can_run and "CPU-only build" in steps["cuda_correctness"].reason
    assert steps["triton_correctness"].can_run
    assert "TRITON_INTERPRET=1" in steps["triton_correctness"].reason and "bf16" in steps["triton_correctness"].reason
    assert not steps["benchmark"].can_run
    assert not steps["ncu_profile"].can_run and "ncu is missing" in steps["ncu_profile"].reason
    assert not steps["sanitizer"].can_run and "compute-sanitizer is missing" in steps["sanitizer"].reason
    assert not steps["size_sweep"].can_run and steps["size_sweep"].reason == steps["ncu_profile"].reason
    assert "cusparse.h" not in steps["compile_cuda"].reason  # a toolkit with the libraries' headers says nothing
    assert steps["sass_analysis"].can_run and "CUDA kernels" in steps["sass_analysis"].reason
    assert report.verdict == "cpu_only"
    assert report.headline.startswith("No usable GPU")


@pytest.mark.parametrize(("version", "limited"), [("2.4.6", True), ("3.0.0", True), ("2.3.5", False), (None, False)])
def test_the_interpreter_row_says_what_numpy_2_4_breaks_and_how_to_keep_the_system_s_numpy(version, limited):
    numpy = None if version is None else PackageProbe("numpy", "numpy", installed=True, version=version)
    row = by_step(assessment.check_environment(make_probes(gpu=False, numpy=numpy)).capabilities)["triton_correctness"]
    assert row.can_run  # most kernels still run there
    assert ("the interpreter fails kernels whose loop bound or index is a runtime value" in row.reason) is limited
    assert row.how_to_fix.startswith("python -m pip install 'numpy<2.4' in a virtual environment outside the "
                                     "project folder") is limited
    assert ("venv --system-site-packages ~/.venvs/kernel-opt" in row.how_to_fix) is limited
    with_gpu = by_step(assessment.check_environment(make_probes(gpu=True, numpy=numpy)).capabilities)
    assert "NumPy" not in with_gpu["triton_correctness"].reason  # compiled on the GPU, the interpreter is not used


@pytest.mark.parametrize("gpu", [True, False])
def test_each_capability_step_called_alone_gives_its_own_row(gpu):
    """assess_capabilities is the registered steps in order; each step answers for its step only."""
    probes = make_probes(gpu=gpu)
    access = assessment.gpu_access(probes)
    assert access.usable is gpu and bool(access.why_not) is not gpu
    rows = [step(probes, access) for step in assessment.CAPABILITY_STEPS]
    assert [row.step for row in rows] == ["compile_cuda", "cuda_correctness", "triton_correctness", "benchmark",
                                          "ncu_profile", "sanitizer", "size_sweep", "sass_analysis"]
    assert [step.__name__ for step in assessment.CAPABILITY_STEPS] == [f"{row.step}_capability" for row in rows]
    assert rows == assessment.assess_capabilities(probes)
    benchmark = assessment.benchmark_capability(probes, access)
    assert benchmark.can_run is gpu and (benchmark.how_to_fix is None) is gpu


def test_a_toolkit_without_the_math_libraries_headers_is_named_where_it_can_still_compile(tmp_path):
    from dataclasses import replace

    from kernel_opt.env.toolkit_headers import missing_context_headers

    (tmp_path / "cublas_v2.h").write_text("")
    (tmp_path / "cublasLt.h").write_text("")
    assert missing_context_headers([f"-I{tmp_path}", "-I/nonexistent"]) == ["cusparse.h", "cusolverDn.h"]
    probes = make_probes(gpu=False)
    probes.nvcc = replace(NVCC_13, missing_library_headers=["cusparse.h", "cusolverDn.h"])
    compile_cuda = by_step(assessment.check_environment(probes).capabilities)["compile_cuda"]
    assert compile_cuda.can_run and compile_cuda.reason.startswith("nvcc 13.0.88 at /usr/local/cuda/bin/nvcc; this "
                                                                   "toolkit lacks cusparse.h, cusolverDn.h")
    assert "ATen/cuda/CUDAContext.h" in compile_cuda.reason and "c10/cuda/CUDAStream.h" in compile_cuda.reason


def test_no_gpu_no_nvcc_no_triton_is_broken():
    probes = make_probes(
        gpu=False,
        nvcc=NvccProbe(name="nvcc", found=False, error="nvcc is not on PATH"),
        triton=PackageProbe("triton", "triton", installed=False, error="`import triton` finds no module"),
    )
    report = assessment.check_environment(probes)
    steps = by_step(report.capabilities)
    assert report.verdict == "broken"
    assert not any(item.can_run for item in report.capabilities if item.step != "sass_analysis")
    assert steps["compile_cuda"].how_to_fix == assessment.INSTALL_CUDA_TOOLKIT
    assert steps["triton_correctness"].how_to_fix == "pip install triton"


def test_faked_h100_environment_runs_every_step():
    report = assessment.check_environment(make_probes(gpu=True))
    assert report.verdict == "ok"
    assert report.headline == "The GPU path works: NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.19 GiB)."
    assert all(item.can_run for item in report.capabilities), [item for item in report.capabilities if not item.can_run]
    steps = by_step(report.capabilities)
    assert "nsight-python 0.9.6" in steps["ncu_profile"].reason
    assert steps["size_sweep"].reason == "nsight-python 0.9.6 (the pinned version) with ncu 2025.3.1.0"
    assert "CUDA and Triton kernels" in steps["sass_analysis"].reason
    assert steps["sanitizer"].reason == "compute-sanitizer 2025.3.1.0 at /usr/local/cuda/bin/compute-sanitizer"
    assert report.warnings == []


def test_a_gpu_without_compute_sanitizer_says_where_it_looked_and_how_to_go_on():
    where = ("compute-sanitizer is not on PATH nor in /usr/local/cuda/bin, /usr/local/cuda/compute-sanitizer "
             "(CUDA_HOME is not set)")
    missing = ToolProbe(name="compute-sanitizer", found=False, error=where)
    report = assessment.check_environment(make_probes(gpu=True, compute_sanitizer=missing))
    sanitizer = report.capability("sanitizer")
    assert not sanitizer.can_run and report.verdict == "ok"  # the loop still runs, with --no-sanitize
    assert sanitizer.reason == where
    assert "--no-sanitize" in sanitizer.how_to_fix
    assert environment.compute_sanitizer_search_globs({"CUDA_HOME": "/opt/cuda-13"})[0] == "/opt/cuda-13/bin"


def test_nsight_python_1x_with_ncu_older_than_2026_2_1_is_refused_with_the_pin_to_install():
    compatibility = assessment.nsight_python_compatibility("1.1.0", "2025.3.1.0")
    assert not compatibility.usable
    assert compatibility.message == (
        "nsight-python 1.1.0 refuses ncu 2025.3.1.0 (1.x needs ncu 2026.2.1 or newer); install "
        "`pip install nsight-python==0.9.6`, which works with ncu 2025.3.1, or upgrade Nsight Compute to "
        "2026.2.1 or newer"
    )
    assert assessment.nsight_python_compatibility("1.1.0", "2026.2.1.0").usable
    assert assessment.nsight_python_compatibility("0.9.6", "2025.3.1.0").usable
    assert not assessment.nsight_python_compatibility("0.8.0", "2025.3.1.0").usable


def test_ncu_profile_blocked_by_nsight_python_1x_unless_ncu_report_can_read_the_reports():
    nsight_1x = PackageProbe("nsight-python", "nsight", installed=True, version="1.1.0")
    blocked = by_step(assessment.assess_capabilities(make_probes(gpu=True, nsight_python=nsight_1x)))["ncu_profile"]
    assert not blocked.can_run
    assert "refuses ncu 2025.3.1.0" in blocked.reason
    assert "nsight-python==0.9.6" in blocked.how_to_fix

    reader = NcuReportProbe(available=True, source="ncu extras/python",
                            path="/opt/nvidia/nsight-compute/2025.3.1/extras/python/ncu_report.py")
    report = assessment.check_environment(make_probes(gpu=True, nsight_python=nsight_1x, ncu_report=reader))
    fallback = report.capability("ncu_profile")
    assert fallback.can_run and "ncu_report from ncu extras/python" in fallback.reason
    assert any("refuses ncu" in warning for warning in report.warnings)


def test_a_package_that_prints_on_import_leaves_stdout_alone(tmp_path, monkeypatch, capsys):
    (tmp_path / "chatty_package.py").write_text("print('Warning: Cannot import pynvml')\n__version__ = '1.0'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = environment.probe_package("chatty-package", "chatty_package")
    assert probe.installed and probe.version == "1.0"
    assert capsys.readouterr().out == ""  # env_check --json prints one JSON object, nothing else


@pytest.mark.parametrize("version, ncu, usable, says", [
    ("0.9.6", "2025.3.1.0", True, "nsight-python 0.9.6 (the pinned version) with ncu 2025.3.1.0"),
    (None, "2025.3.1.0", False, "nsight-python is not installed"),
    ("1.1.0", "2025.3.1.0", False, "nsight-python 1.1.0 refuses ncu 2025.3.1.0"),
    ("1.1.0", "2026.2.1.0", False, "the size sweep is written against nsight-python 0.9.6"),
    ("0.9.5", "2025.3.1.0", False, "nsight-python 0.9.5 is installed, but the size sweep is written against"),
])
def test_the_size_sweep_asks_for_the_pinned_nsight_python_that_takes_this_ncu(version, ncu, usable, says):
    rule = assessment.sweep_nsight_python(version, ncu)
    assert rule.usable is usable and says in rule.message


def test_size_sweep_capability_names_the_install_line_when_nsight_python_is_missing_unsuitable_or_broken():
    missing = PackageProbe("nsight-python", "nsight", installed=False, error="`import nsight` finds no module")
    one_x = PackageProbe("nsight-python", "nsight", installed=True, version="1.1.0")
    broken = PackageProbe("nsight-python", "nsight", installed=False, version="0.9.6",
                          error="ModuleNotFoundError: No module named 'cachebox'")
    rows = {name: by_step(assessment.assess_capabilities(make_probes(gpu=True, nsight_python=probe)))["size_sweep"]
            for name, probe in (("missing", missing), ("1.x", one_x), ("broken", broken))}
    assert not any(row.can_run for row in rows.values())
    assert all(row.how_to_fix == assessment.INSTALL_NSIGHT_PYTHON for row in rows.values())
    assert "pip install nsight-python==0.9.6" in assessment.INSTALL_NSIGHT_PYTHON
    assert rows["missing"].reason == "nsight-python is not installed"
    assert "refuses ncu 2025.3.1.0" in rows["1.x"].reason
    assert rows["broken"].reason == ("nsight-python 0.9.6 is installed but does not import: "
                                     "ModuleNotFoundError: No module named 'cachebox'")
    # the environment's verdict does not hang on the sweep: the GPU path still works
    assert assessment.check_environment(make_probes(gpu=True, nsight_python=missing)).verdict == "ok"


def test_nsight_python_that_lacks_only_ncu_report_is_pointed_at_ncu_s_own_copy_never_told_to_reinstall():
    """nsight-python 0.9.6 installed, `import nsight` failing for ncu_report: ncu's extras/python is the fix, and
    the sweep puts it on its child's PYTHONPATH itself."""
    lacks_reader = PackageProbe("nsight-python", "nsight", installed=False, version="0.9.6",
                                error="ModuleNotFoundError: No module named 'ncu_report'")
    folder = "/opt/nvidia/nsight-compute/2025.3.1/extras/python"
    beside_ncu = NcuReportProbe(available=True, source="ncu extras/python", path=f"{folder}/ncu_report.py",
                                sys_path_entry=folder)
    row = by_step(assessment.assess_capabilities(
        make_probes(gpu=True, nsight_python=lacks_reader, ncu_report=beside_ncu)))["size_sweep"]
    assert row.can_run
    assert row.reason == (
        "nsight-python 0.9.6 (the pinned version) with ncu 2025.3.1.0; it imports ncu_report, which is not on this "
        f"Python's path but ships with ncu in {folder}: the sweep puts that folder on its PYTHONPATH (to import "
        f"nsight yourself: export PYTHONPATH={folder}:$PYTHONPATH)")
    nowhere = NcuReportProbe(available=False, error="ncu_report is neither importable nor beside an Nsight Compute")
    row = by_step(assessment.assess_capabilities(
        make_probes(gpu=True, nsight_python=lacks_reader, ncu_report=nowhere)))["size_sweep"]
    assert not row.can_run and "cannot import ncu_report" in row.reason
    assert row.how_to_fix.startswith("add the extras/python folder of your Nsight Compute install")
    assert "pip install ncu-report" in row.how_to_fix and "pip install nsight-python" not in row.how_to_fix


def test_ncu_profile_needs_counter_permission_when_the_driver_restricts_it():
    probes = make_probes(gpu=True, profiling_admin_only=True, is_root=False)
    capability = by_step(assessment.assess_capabilities(probes))["ncu_profile"]
    assert not capability.can_run and "ERR_NVGPUCTRPERM" in capability.reason
    assert "ERR_NVGPUCTRPERM" in by_step(assessment.assess_capabilities(probes))["size_sweep"].reason
    as_root = make_probes(gpu=True, profiling_admin_only=True, is_root=True)
    assert by_step(assessment.assess_capabilities(as_root))["ncu_profile"].can_run


def test_cuda_correctness_refuses_a_driver_older_than_nvcc_needs():
    old_driver = NvidiaSmiProbe(found=True, path="/usr/bin/nvidia-smi",
                                gpus=tool_output.parse_nvidia_smi_csv(H100_SMI_LINE.replace("580.82.07", "535.104.05")))
    report = assessment.check_environment(make_probes(gpu=True, nvidia_smi=old_driver))
    capability = report.capability("cuda_correctness")
    assert not capability.can_run
    assert capability.reason == (
        "driver 535.104.05 is too old for code built by nvcc 13.0.88 (CUDA 13.0 needs driver 580.65.06 or newer)"
    )
    assert report.verdict == "ok"  # Triton still runs on the GPU


def test_cuda_correctness_refuses_an_arch_nvcc_cannot_target():
    v100 = TorchGpu(index=0, name="Tesla V100-SXM2-16GB", compute_capability="7.0", arch="sm_70", sm_count=80,
                    memory_gib=15.77)
    torch = TorchProbe(installed=True, version="2.13.0+cu130", cuda_build_version="13.0", cuda_available=True,
                       gpus=[v100], gpu_smoke_test_passed=True)
    capability = by_step(assessment.assess_capabilities(make_probes(gpu=True, torch=torch)))["cuda_correctness"]
    assert not capability.can_run and "cannot target this GPU's sm_70" in capability.reason


def test_gpu_seen_by_driver_but_cpu_torch_says_install_a_cuda_torch():
    smi = NvidiaSmiProbe(found=True, path="/usr/bin/nvidia-smi", gpus=tool_output.parse_nvidia_smi_csv(H100_SMI_LINE))
    report = assessment.check_environment(make_probes(gpu=False, nvidia_smi=smi))
    assert report.verdict == "cpu_only"
    benchmark = report.capability("benchmark")
    assert benchmark.reason == (
        "nvidia-smi sees 1 GPU(s) (NVIDIA H100 80GB HBM3) but torch 2.13.0+cpu is a CPU-only build, "
        "so it cannot use them"
    )
    assert benchmark.how_to_fix == assessment.INSTALL_CUDA_TORCH


def test_failed_gpu_smoke_test_is_not_ok():
    torch = TorchProbe(installed=True, version="2.13.0+cu130", cuda_build_version="13.0", cuda_available=True,
                       gpus=[H100], gpu_smoke_test_passed=False,
                       error="RuntimeError: CUDA error: no kernel image is available for execution on the device")
    report = assessment.check_environment(make_probes(gpu=True, torch=torch))
    assert report.verdict != "ok"
    assert "no kernel image" in report.capability("benchmark").reason


# --- probes against fakes --------------------------------------------------------------------


def _write_executable(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def test_probe_ncu_reads_the_version_of_an_ncu_on_path(tmp_path, monkeypatch):
    _write_executable(tmp_path / "bin" / "ncu", f"cat <<'EOF'\n{NCU_OUTPUT}EOF\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    probe = environment.probe_ncu()
    assert probe.found and probe.version == "2025.3.1.0" and probe.source == "PATH"
    assert probe.path == str(tmp_path / "bin" / "ncu")


def test_find_tool_falls_back_to_the_newest_install_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    for version in ("2024.3.0", "2025.3.1", "2025.10.0"):
        _write_executable(tmp_path / "nsight-compute" / version / "ncu", "exit 0\n")
    found = environment.find_tool("ncu", [str(tmp_path / "nsight-compute" / "*")])
    assert found == (str(tmp_path / "nsight-compute" / "2025.10.0" / "ncu"),
                     str(tmp_path / "nsight-compute" / "2025.10.0"))
    assert environment.find_tool("ncu", [str(tmp_path / "nowhere" / "*")]) is None


def test_ncu_report_is_found_in_extras_python_beside_ncu(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "ncu_report" else real_find_spec(name, *args))
    install = tmp_path / "nsight-compute" / "2025.3.1"
    ncu = _write_executable(install / "ncu", "exit 0\n")
    (install / "extras" / "python").mkdir(parents=True)
    (install / "extras" / "python" / "ncu_report.py").write_text("# stub\n")
    probe = environment.probe_ncu_report(str(ncu), search_globs=[])
    assert probe.available and probe.source == "ncu extras/python"
    assert probe.sys_path_entry == str(install / "extras" / "python")
    assert not environment.probe_ncu_report(None, search_globs=[]).available


def test_profiling_admin_only_is_read_from_the_driver_params(tmp_path):
    params = tmp_path / "params"
    params.write_text("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    assert environment.probe_profiling_admin_only(params) is True
    params.write_text("RmProfilingAdminOnly: 0\n")
    assert environment.probe_profiling_admin_only(params) is False
    assert environment.probe_profiling_admin_only(tmp_path / "absent") is None


# --- the CLI on this machine -----------------------------------------------------------------


def _run_wrapper(scripts_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(scripts_dir / "env_check.py"), *args],
                          capture_output=True, text=True, timeout=120)


def _run_cli(capsys, *args: str) -> tuple[int, str]:
    """The command in this process, probing this machine as the wrapper does (test_cli_help_shows_real_usage and
    tests/integration/test_exit_codes.py run the wrapper itself): the exit code and what it printed."""
    capsys.readouterr()
    code = env_check.main(list(args))
    return code, capsys.readouterr().out


def test_cli_json_writes_both_reports_and_exits_by_verdict(tmp_path, capsys):
    code, stdout = _run_cli(capsys, "--output-dir", str(tmp_path), "--json")
    payload = json.loads(stdout)
    on_disk = json.loads((tmp_path / "env_check.json").read_text())
    assert on_disk == payload
    expected = 0 if payload["verdict"] == "ok" else 4
    assert code == expected == payload["exit_code"]
    if not environment.probe_torch().cuda_available:  # this CPU machine (and CI)
        assert code == 4 and payload["ok"] is False
        assert payload["verdict"] in ("cpu_only", "broken")
        assert payload["error"]["kind"] == "environment" and payload["error"]["message"] == payload["headline"]
        assert {item["step"]: item["can_run"] for item in payload["capabilities"]}["benchmark"] is False
    markdown = (tmp_path / "env_check.md").read_text()
    assert f"**Verdict: {payload['verdict']}.**" in markdown
    assert "| compile CUDA (nvcc)" in markdown and "## GPU clocks" in markdown
    assert not list(tmp_path.glob(".*.tmp"))  # atomic writes leave no temporaries behind


def test_cli_human_summary_names_the_next_step(tmp_path, capsys):
    code, stdout = _run_cli(capsys, "--output-dir", str(tmp_path))
    lines = stdout.splitlines()
    assert lines[0].startswith("env_check: ")
    assert any(line.startswith("next: ") for line in lines)
    if code == 4 and shutil.which("nvcc"):
        assert any("correctness_check.py SOLUTION.cu" in line and "--compile-only" in line for line in lines)
    assert (tmp_path / "env_check.md").is_file() and (tmp_path / "env_check.json").is_file()


def test_cli_help_shows_real_usage(scripts_dir):
    completed = _run_wrapper(scripts_dir, "--help")
    assert completed.returncode == 0
    assert "python skills/kernel-opt-skill/scripts/env_check.py --output-dir work/" in completed.stdout
    assert "--lock-clocks" in completed.stdout


# --- opt-in clock locking, against a fake nvidia-smi only ------------------------------------


@pytest.fixture
def fake_nvidia_smi(tmp_path, monkeypatch):
    """A fake nvidia-smi first on PATH: it logs each call's arguments and answers the GPU query."""
    log = tmp_path / "nvidia-smi.calls"
    script = _write_executable(
        tmp_path / "fakebin" / "nvidia-smi",
        f'echo "$*" >> "{log}"\n'
        'case "$1" in --query-gpu=*) echo "' + H100_SMI_LINE + '";; esac\n',
    )
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")

    def calls() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    return script, calls


QUERY_CALL = f"--query-gpu={environment.NVIDIA_SMI_QUERY_FIELDS} --format=csv,noheader,nounits"


def test_lock_clocks_as_root_runs_and_prints_the_exact_command(fake_nvidia_smi, tmp_path, monkeypatch, capsys):
    script, calls = fake_nvidia_smi
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    exit_code = env_check.main(["--lock-clocks", "--output-dir", str(tmp_path / "out")])
    output = capsys.readouterr().out
    assert f"running: {script} --lock-gpu-clocks=1980,1980" in output.splitlines()
    assert "--lock-gpu-clocks=1980,1980" in calls()
    assert calls()[0] == QUERY_CALL  # the max clock came from the query
    payload = json.loads((tmp_path / "out" / "env_check.json").read_text())
    assert payload["clock_change"]["action"] == "lock"
    assert payload["clock_change"]["results"][0]["command"] == [str(script), "--lock-gpu-clocks=1980,1980"]
    assert exit_code in (0, 4)


def test_lock_clocks_without_root_refuses_and_changes_nothing(fake_nvidia_smi, tmp_path, monkeypatch, capsys):
    script, calls = fake_nvidia_smi
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    exit_code = env_check.main(["--lock-clocks", "--output-dir", str(tmp_path / "out")])
    error = capsys.readouterr().err
    assert exit_code == 4
    assert "needs root" in error and "nothing was changed" in error
    assert f"{script} --lock-gpu-clocks=1980,1980" in error  # says what it would have run
    assert all(call == QUERY_CALL for call in calls())
    assert not (tmp_path / "out").exists()


def test_default_run_only_queries_nvidia_smi(fake_nvidia_smi, tmp_path, monkeypatch):
    _, calls = fake_nvidia_smi
    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # and needs no root
    env_check.main(["--output-dir", str(tmp_path / "out"), "--json"])
    assert calls() == [QUERY_CALL]
    payload = json.loads((tmp_path / "out" / "env_check.json").read_text())
    assert payload["probes"]["nvidia_smi"]["gpus"][0]["max_sm_clock_mhz"] == 1980
    assert payload["clock_change"] == {"action": None, "results": []}


def test_unlock_clocks_resets_and_mixed_gpus_are_locked_one_by_one(fake_nvidia_smi, monkeypatch):
    script, calls = fake_nvidia_smi
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    smi = environment.probe_nvidia_smi()
    assert clocks.plan_clock_change("unlock", smi) == [[str(script), "--reset-gpu-clocks"]]
    result = clocks.run_clock_command([str(script), "--reset-gpu-clocks"])
    assert result.returncode == 0 and calls()[-1] == "--reset-gpu-clocks"

    mixed = tool_output.parse_nvidia_smi_csv(H100_SMI_LINE + "\n" + H100_SMI_LINE.replace("1980", "1755"))
    assert clocks.clock_lock_commands("nvidia-smi", mixed) == [
        ["nvidia-smi", "-i", "0", "--lock-gpu-clocks=1980,1980"],
        ["nvidia-smi", "-i", "1", "--lock-gpu-clocks=1755,1755"],
    ]
    with pytest.raises(EnvironmentFault, match="maximum SM clock"):
        clocks.clock_lock_commands("nvidia-smi", tool_output.parse_nvidia_smi_csv(SMI_CSV))


def test_cuda_torch_that_cannot_init_passes_on_torchs_own_explanation():
    smi = NvidiaSmiProbe(found=True, path="/usr/bin/nvidia-smi", gpus=tool_output.parse_nvidia_smi_csv(H100_SMI_LINE))
    torch = TorchProbe(installed=True, version="2.13.0+cu130", cuda_build_version="13.0", cuda_available=False,
                       error="CUDA initialization: The NVIDIA driver on your system is too old (found version 12020).")
    report = assessment.check_environment(make_probes(gpu=False, torch=torch, nvidia_smi=smi))
    assert report.verdict == "cpu_only"
    assert report.capability("benchmark").reason == (
        "nvidia-smi sees NVIDIA H100 80GB HBM3 but torch 2.13.0+cu130 reports no usable CUDA device: "
        "CUDA initialization: The NVIDIA driver on your system is too old (found version 12020)."
    )
