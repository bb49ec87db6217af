"""Which kernels a ModelNew defines itself (backends/modelnew/own_kernels.py)."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from kernel_opt.backends.modelnew.own_kernels import (
    cuda_files_beside,
    cuda_kernel_names,
    own_kernel_names,
    solution_modules,
)


def module_from(folder: Path, name: str, text: str) -> types.ModuleType:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    module = types.ModuleType(name)
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102 - the test's own source
    return module


def test_cuda_kernel_names_read_every_way_a_global_function_is_written():
    source = """
        __global__ void add(const float* a, float* b, int n) {}
        template <int BLOCK> __global__ void __launch_bounds__(256) tiled_sum(float* x) {}
        extern "C" __global__ __launch_bounds__(128, 2) void row_max(float *x) {}
        __global__ static void scale_kernel(float* __restrict__ x, float s) {}
        __device__ float helper(float x) { return x; }
        // a kernel is called like this: add<<<grid, block>>>(a, b, n);
    """
    assert cuda_kernel_names(source) == {"add", "tiled_sum", "row_max", "scale_kernel"}


def test_a_model_new_with_inline_cuda_names_its_global_functions(tmp_path):
    module = module_from(tmp_path, "solution", '''
        CUDA = """
        __global__ void fused_gelu(const float* x, float* y, int n) {}
        """
        # torch.utils.cpp_extension.load_inline(name="ext", cpp_sources="", cuda_sources=CUDA) in the real file
    ''')
    assert own_kernel_names([module], []) == {"fused_gelu"}


def test_cuda_built_from_a_file_it_names_is_read_there_and_never_guessed(tmp_path):
    (tmp_path / "kernels.cu").write_text("__global__ void from_file(float* x) {}\n")
    (tmp_path / "other.cu").write_text("__global__ void someone_elses(float* x) {}\n")
    module = module_from(tmp_path, "solution", '''
        # torch.utils.cpp_extension.load(name="ext", sources=["kernels.cu"])
    ''')
    assert own_kernel_names([module], cuda_files_beside(tmp_path / "solution.py")) == {"from_file"}
    unread = module_from(tmp_path, "solution2", '''
        # torch.utils.cpp_extension.load(name="ext", sources=[SOURCES_FROM_ELSEWHERE])
    ''')
    assert own_kernel_names([unread], []) is None  # builds CUDA, but no kernel it can name: cannot tell


def test_library_calls_only_define_no_kernel_and_a_raw_kernel_cannot_be_named(tmp_path):
    plain = module_from(tmp_path, "plain", '''
        import torch
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return torch.relu(x)
    ''')
    assert own_kernel_names([plain], []) == frozenset()
    raw = module_from(tmp_path, "raw", '''
        # cupy.RawKernel(SOURCE, "k") in the real file
    ''')
    assert own_kernel_names([raw], []) is None


def test_triton_kernels_of_the_solution_and_of_a_helper_beside_it(tmp_path):
    pytest.importorskip("triton")
    helper = module_from(tmp_path, "helpers", '''
        import triton
        import triton.language as tl

        @triton.jit
        def helper_kernel(x_ptr):
            pass
    ''')
    solution = module_from(tmp_path, "solution", '''
        import triton
        import triton.language as tl

        @triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=[])
        @triton.jit
        def tuned_kernel(x_ptr, BLOCK: tl.constexpr):
            pass
    ''')
    assert own_kernel_names([solution, helper], []) == {"tuned_kernel", "helper_kernel"}


def test_the_modules_of_the_solutions_folder_are_found_without_the_problem(tmp_path, monkeypatch):
    folder = tmp_path / "project"
    (folder / "kernels").mkdir(parents=True)
    (folder / ".venv" / "lib" / "site-packages").mkdir(parents=True)
    (folder / "env" / "site-packages").mkdir(parents=True)
    helper = module_from(folder, "helpers", "X = 1\n")
    nested = module_from(folder / "kernels", "fast", "W = 0\n")
    problem = module_from(folder, "problem", "Y = 2\n")
    elsewhere = module_from(tmp_path, "elsewhere", "Z = 3\n")
    hidden = module_from(folder / ".venv" / "lib" / "site-packages", "installed", "V = 4\n")
    installed = module_from(folder / "env" / "site-packages", "torchish", "U = 5\n")
    for module in (helper, nested, problem, elsewhere, hidden, installed):
        monkeypatch.setitem(sys.modules, f"test_own_kernels_{module.__name__}", module)
    monkeypatch.setitem(sys.modules, "kernel_opt.fake_in_project", module_from(folder, "harness", "T = 6\n"))
    found = solution_modules(folder / "solution.py", folder / "problem.py")
    assert helper in found and nested in found
    assert all(module not in found for module in (problem, elsewhere, hidden, installed))
    assert all(getattr(module, "T", None) != 6 for module in found)
