"""nvcc command line, architecture names, ptxas resource parsing, and a real compile."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kernel_opt.backends.cuda.build import (
    auto_target,
    build_shared_library,
    gencode_flags,
    normalize_arch,
    nvcc_command,
    parse_ptxas_output,
)
from kernel_opt.core.errors import EnvironmentFault, SolutionError, UsageError

# Recorded from `nvcc -Xptxas -v` 13.0 on this project's CPU machine (two kernels, one using
# shared memory); note the missing newline after "Compile time", which ptxas really prints.
PTXAS_OUTPUT = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z6kernelPKfS0_Pfi' for 'sm_90'
ptxas info    : Function properties for _Z6kernelPKfS0_Pfi
    256 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 256 bytes cumulative stack size
ptxas info    : Compile time = 63.424 msptxas info    : Compiling entry function '_Z7reduce2PKfPfi' for 'sm_90'
ptxas info    : Function properties for _Z7reduce2PKfPfi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]
ptxas info    : Compile time = 1.2 ms
"""


def test_parse_ptxas_output():
    first, second = parse_ptxas_output(PTXAS_OUTPUT)
    assert first.mangled_name == "_Z6kernelPKfS0_Pfi"
    assert first.arch == "sm_90"
    assert (first.registers, first.stack_frame_bytes, first.spill_stores_bytes, first.spill_loads_bytes) == (
        32, 256, 8, 12
    )
    assert first.shared_memory_bytes == 0
    assert (second.registers, second.barriers, second.shared_memory_bytes, second.constant_memory_bytes) == (
        18, 1, 4096, 380
    )
    assert second.name.startswith("reduce2")  # demangled where c++filt exists, else mangled
    assert parse_ptxas_output("no ptxas here") == []


@pytest.mark.parametrize(
    "text, expected",
    [("sm_90", "sm_90"), ("sm_90a", "sm_90a"), ("90", "sm_90"), ("9.0", "sm_90"), ("compute_80", "sm_80"),
     ("SM_89", "sm_89"), ("sm_100a", "sm_100a"), ("8.6", "sm_86")],
)
def test_normalize_arch(text, expected):
    assert normalize_arch(text) == expected


def test_normalize_arch_rejects_garbage():
    with pytest.raises(UsageError):
        normalize_arch("hopper")


def test_gencode_uses_exact_target():
    assert gencode_flags("sm_90a") == ["-gencode=arch=compute_90a,code=sm_90a"]
    assert gencode_flags("sm_80") == ["-gencode=arch=compute_80,code=sm_80"]


def test_nvcc_command_is_exact():
    command = nvcc_command("nvcc", Path("/b/k.entry.cu"), Path("/b/libk.so"), "sm_90", Path("/src"), ["-lcublas"])
    assert command == [
        "nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-lineinfo", "-Xptxas", "-v",
        "-gencode=arch=compute_90,code=sm_90", "-I", "/src", "-lcublas", "-o", "/b/libk.so", "/b/k.entry.cu",
    ]


def test_missing_nvcc_is_an_environment_fault(tmp_path, monkeypatch):
    source = tmp_path / "k.cu"
    source.write_text('extern "C" void solve(float* x) {}')
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("kernel_opt.backends.cuda.build.Path.exists", lambda self: False)
    with pytest.raises(EnvironmentFault) as caught:
        build_shared_library(source, tmp_path / "build", "sm_90")
    assert caught.value.exit_code == 4
    assert "nvcc" in caught.value.message


@pytest.mark.nvcc
def test_real_compile_reports_resources_and_caches(tmp_path, reference_dir):
    source = reference_dir / "vector_add" / "good" / "vector_add.cu"
    result = build_shared_library(source, tmp_path / "build", "sm_90")
    assert result.library.exists() and not result.cached
    assert result.kernels and all(k.registers > 0 and k.arch == "sm_90" for k in result.kernels)
    assert all(k.spill_stores_bytes == 0 for k in result.kernels)
    again = build_shared_library(source, tmp_path / "build", "sm_90")
    assert again.cached and again.library == result.library
    assert [k.registers for k in again.kernels] == [k.registers for k in result.kernels]


@pytest.mark.slow
@pytest.mark.nvcc
def test_builds_of_one_source_at_once_each_get_a_whole_library(tmp_path, reference_dir):
    """evaluate runs correctness and compute-sanitizer side by side: each process may build the same file."""
    source = reference_dir / "vector_add" / "good" / "vector_add.cu"
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda _: build_shared_library(source, tmp_path / "build", "sm_90"), range(3)))
    assert len({result.library for result in results}) == 1 and results[0].library.is_file()
    assert all(result.kernels == results[0].kernels for result in results)
    assert sorted(path.suffix for path in (tmp_path / "build").iterdir()) == [".cu", ".log", ".so"]  # no leftovers
    assert build_shared_library(source, tmp_path / "build", "sm_90").cached


@pytest.mark.nvcc
def test_compile_error_is_a_solution_fault_with_the_compiler_message(tmp_path, reference_dir):
    with pytest.raises(SolutionError) as caught:
        build_shared_library(reference_dir / "vector_add" / "wrong" / "compile_error.cu", tmp_path / "build", "sm_90")
    assert caught.value.kind == "compile_error"
    assert "error" in caught.value.message
    assert caught.value.exit_code == 3


@pytest.mark.nvcc
def test_sm90a_build_of_wgmma_fence(tmp_path):
    """An sm_90a-only instruction assembles with the -gencode form (HOPPER.md's finding)."""
    source = tmp_path / "fence.cu"
    source.write_text(
        '__global__ void k(float* x) { asm volatile("wgmma.fence.sync.aligned;"); x[0] = 1.f; }\n'
        'extern "C" void solve(float* x) { k<<<1, 128>>>(x); }\n'
    )
    result = build_shared_library(source, tmp_path / "build", "sm_90a")
    assert [k.arch for k in result.kernels] == ["sm_90a"]


def test_auto_targets_hopper_as_sm_90a_and_leaves_other_chips_alone():
    assert [auto_target(arch) for arch in ("sm_90", "sm_90a", "sm_80", "sm_89", "sm_100")] == [
        "sm_90a", "sm_90a", "sm_80", "sm_89", "sm_100"]
