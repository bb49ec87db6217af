"""KernelBench ModelNew solutions (backends/modelnew): detection, returned outputs, weights, and the real check.

The solutions under tests/fixtures/kernelbench/solutions/ answer the problems of the same name
in tests/fixtures/kernelbench/problems/; the cheating ones are in adversarial/ (the eval tests
run them). On the CPU a ModelNew runs under the Triton interpreter; one that builds CUDA with
load_inline is refused there (exit 4) and checked by tests/gpu/test_kernelbench_gpu.py.
"""

from __future__ import annotations

import json
import os
import re
import weakref
from pathlib import Path

import pytest
import torch
from conftest import FIXTURES_DIR, REPO_ROOT

from kernel_opt.backends.modelnew import inline_build
from kernel_opt.backends.modelnew.backend import BACKEND, arch_list
from kernel_opt.backends.modelnew.launcher import copy_weights
from kernel_opt.check.correctness import CheckOptions, check_correctness
from kernel_opt.core.errors import EnvironmentFault, SolutionError, UsageError
from kernel_opt.solution import registry
from kernel_opt.solution.backend import BuildOptions
from kernel_opt.solution.returning_call import ReturningCall, deliver_outputs

FIXTURES = FIXTURES_DIR / "kernelbench"
PROBLEMS, SOLUTIONS, ADVERSARIAL = FIXTURES / "problems", FIXTURES / "solutions", FIXTURES / "adversarial"
VECTOR_ADD = REPO_ROOT / "reference" / "vector_add"


def check(name: str, tmp_path: Path, **options):
    return check_correctness(SOLUTIONS / f"{name}.py", PROBLEMS / f"{name}.py", "modelnew", "cpu", {},
                             CheckOptions(seeds=2, **options), BuildOptions(), tmp_path / "build", "test")


# --- detection and what the backend reads from the source ---------------------------------------------


def test_a_model_new_file_is_claimed_by_content():
    for path in sorted(SOLUTIONS.glob("*.py")) + sorted(ADVERSARIAL.glob("*.py")):
        assert registry.detect(path) == "modelnew", path.name
    assert registry.detect(FIXTURES / "contract" / "2_Gemm_Multiply_ReLU.py") == "triton"  # run_kernel
    with pytest.raises(UsageError, match="no backend claims it"):
        registry.detect(PROBLEMS / "2_Gemm_Multiply_ReLU.py")  # the problem: Model, not ModelNew


def test_own_kernels_are_read_from_the_source():
    assert BACKEND.defines_own_kernels(SOLUTIONS / "2_Gemm_Multiply_ReLU.py") is True  # @triton.jit
    assert BACKEND.defines_own_kernels(ADVERSARIAL / "build_error.py") is True  # load_inline
    assert BACKEND.defines_own_kernels(SOLUTIONS / "3_Sum_reduction.py") is False  # torch.sum: library only
    assert registry.get("triton").defines_own_kernels(FIXTURES / "contract" / "2_Gemm_Multiply_ReLU.py") is True
    assert registry.get("cuda").defines_own_kernels(VECTOR_ADD / "good" / "vector_add.cu") is True


def test_arch_names_become_torch_s_arch_list_entries():
    assert [arch_list(a) for a in ("sm_90a", "sm_90", "90", "sm_100a", "compute_80")] == [
        "9.0a", "9.0", "9.0", "10.0a", "8.0"]
    with pytest.raises(UsageError, match="not a CUDA architecture"):
        arch_list("hopper")


INLINE = FIXTURES / "inline"


@pytest.mark.nvcc
def test_without_a_gpu_a_cuda_extension_is_compiled_and_what_runs_it_needs_a_gpu(tmp_path):
    with pytest.raises(EnvironmentFault, match="builds CUDA code") as caught:
        BACKEND.prepare(INLINE / "compiles.py", "cpu", tmp_path, BuildOptions(), [])
    assert caught.value.exit_code == 4 and caught.value.kind == "no_gpu"
    assert ("its extension(s) 'kernel_opt_inline_compiles' compiled here for sm_90 with nvcc and the host compiler "
            "(not linked, not run)") in str(caught.value)
    assert (tmp_path / "inline_compile" / "kernel_opt_inline_compiles" / "cuda.cu").is_file()  # as torch wrote it


@pytest.mark.nvcc
def test_a_cuda_extension_s_kernels_are_analysed_from_the_compile_check_s_objects(tmp_path, monkeypatch):
    """Static analysis of a load_inline ModelNew compiles its sources as the compile check does (an object beside
    each, ptxas's report kept) and reuses that check's objects while they are newer than the file."""
    from kernel_opt.backends.modelnew.inline_static import analyze_inline_model_new

    solution = tmp_path / "compiles.py"
    solution.write_text((INLINE / "compiles.py").read_text())
    build = tmp_path / "build"
    with pytest.raises(EnvironmentFault, match="compiled here"):  # the compile check, as evaluate runs it on a CPU
        BACKEND.prepare(solution, "cpu", build, BuildOptions(), [])
    assert (build / "inline_compile" / "kernel_opt_inline_compiles" / "cuda.o").is_file()

    def no_second_compile(*_):
        raise AssertionError("compiled again although the compile check's objects were fresh")

    monkeypatch.setattr(inline_build, "compile_inline_extensions", no_second_compile)
    report = analyze_inline_model_new(solution, build, "sm_90")
    (kernel,) = report.kernels
    assert (report.backend, report.arch, kernel.name.split("(")[0]) == ("modelnew", "sm_90", "softsign")
    assert kernel.registers_per_thread > 0 and kernel.spill_stores_bytes == 0  # ptxas's figures, not cuobjdump's
    assert kernel.mix.global_loads >= 1 and kernel.mix.shared_loads == 0
    assert "-Xptxas -v" in report.compiler and "cuda.o" in report.compiler
    monkeypatch.undo()
    later = build.stat().st_mtime + 5  # the file edited after the check: its objects are stale
    os.utime(solution, (later, later))
    assert analyze_inline_model_new(solution, build, "sm_90").kernels[0].registers_per_thread > 0


@pytest.mark.nvcc
def test_without_a_gpu_a_cuda_extension_that_does_not_compile_is_the_solution_s_compile_error(tmp_path):
    with pytest.raises(SolutionError, match="does not compile") as caught:
        BACKEND.prepare(INLINE / "does_not_compile.py", "cpu", tmp_path, BuildOptions(arch="sm_90a"), [])
    assert caught.value.exit_code == 3 and caught.value.kind == "compile_error"
    assert 'cuda.cu(4): error: identifier "j" is undefined' in str(caught.value)
    assert "does_not_compile.py's CUDA extension 'kernel_opt_inline_does_not_compile' does not compile" in str(
        caught.value)
    assert "compute_90a" in caught.value.hint  # the architecture asked for


@pytest.mark.nvcc
def test_without_a_gpu_a_torch_header_this_torch_lacks_is_not_blamed_on_the_solution(tmp_path):
    with pytest.raises(EnvironmentFault, match="which this machine's torch does not ship") as caught:
        BACKEND.prepare(INLINE / "missing_torch_header.py", "cpu", tmp_path, BuildOptions(), [])
    assert caught.value.exit_code == 4 and caught.value.kind == "missing_headers"
    assert "ATen/cuda/kernel_opt_no_such_header.h" in str(caught.value)


@pytest.mark.nvcc
def test_without_a_gpu_a_header_the_solution_names_and_nothing_holds_is_its_compile_error(tmp_path):
    with pytest.raises(SolutionError, match="kernel_opt_vendor_header.h") as caught:
        BACKEND.prepare(INLINE / "includes_a_header.py", "cpu", tmp_path, BuildOptions(), [])
    assert caught.value.exit_code == 3 and caught.value.kind == "compile_error"


@pytest.mark.nvcc
def test_without_a_gpu_a_header_an_installed_header_includes_is_the_machine_s_gap(tmp_path, monkeypatch):
    installed = tmp_path / "installed"  # stands for torch's or the toolkit's include folder
    installed.mkdir()
    (installed / "kernel_opt_vendor_header.h").write_text("#pragma once\n#include <kernel_opt_vendor_dependency.h>\n")
    own_includes = inline_build._includes
    monkeypatch.setattr(inline_build, "_includes", lambda nvcc, build: [*own_includes(nvcc, build), f"-I{installed}"])
    with pytest.raises(EnvironmentFault, match="cannot be compiled on this machine") as caught:
        BACKEND.prepare(INLINE / "includes_a_header.py", "cpu", tmp_path / "build", BuildOptions(), [])
    assert caught.value.exit_code == 4 and caught.value.kind == "missing_headers"
    assert (f"kernel_opt_vendor_dependency.h, which the installed header {installed}/kernel_opt_vendor_header.h "
            "includes, is not on this machine") in str(caught.value)


@pytest.mark.parametrize(("output", "own", "gap"), [
    ("/opt/torch/include/ATen/cuda/CUDAContextLight.h:10:10: fatal error: cusparse.h: No such file or directory",
     ["/tmp/b/cuda.cu"], "cusparse.h, which the installed header /opt/torch/include/ATen/cuda/CUDAContextLight.h"),
    ("/tmp/b/cuda.cu:2:10: fatal error: cublas_v2.h: No such file or directory", ["/tmp/b/cuda.cu"],
     "it includes cublas_v2.h, a CUDA library header"),
    ('/tmp/b/cuda.cu(2): catastrophic error: cannot open source file "c10/cuda/nope.h"', ["/tmp/b/cuda.cu"],
     "it includes c10/cuda/nope.h, which this machine's torch does not ship"),
    ("/tmp/b/cuda.cu:2:10: fatal error: my_typo.cuh: No such file or directory", ["/tmp/b/cuda.cu"], None),
    ("/work/mine/inc/helpers.cuh:3:10: fatal error: gone.h: No such file or directory",
     ["/tmp/b/cuda.cu", "/work/mine/inc"], None),  # the solution's own include folder: its own fault
    ("/tmp/b/cuda.cu(4): error: identifier \"j\" is undefined", ["/tmp/b/cuda.cu"], None)])
def test_whose_missing_header_it_is(output, own, gap):
    found = inline_build.machine_gap(inline_build.missing_includes(output), own)
    assert found == gap if gap is None else found.startswith(gap)


def test_prepare_refuses_nvcc_flags_and_leaves_the_build_to_the_child(tmp_path):
    with pytest.raises(UsageError, match="--nvcc-flags applies to .cu solutions"):
        BACKEND.prepare(SOLUTIONS / "3_Sum_reduction.py", "cuda", tmp_path, BuildOptions(compiler_flags="-O3"), [])
    prepared = BACKEND.prepare(SOLUTIONS / "3_Sum_reduction.py", "cuda", tmp_path, BuildOptions(arch="sm_90a"), [])
    assert prepared.request == {"extensions_dir": str((tmp_path / "torch_extensions").resolve()),
                                "cuda_arch_list": "9.0a"}
    assert prepared.build is None  # load_inline builds in the child, when the file is imported


# --- returned outputs ------------------------------------------------------------------------------------


def returning(function, **values):
    values = {"x": torch.rand(4), "out": torch.full((4,), float("nan")), **values}
    return ReturningCall(function, values, ["out"]), values


def test_a_returned_output_is_checked_and_copied_into_the_buffer_once():
    result = torch.arange(4.0)
    call, values = returning(lambda: result)
    call()
    assert torch.isnan(values["out"]).all()  # the call itself copies nothing
    deliver_outputs(call)
    assert torch.equal(values["out"], result)
    values["out"].fill_(float("nan"))
    deliver_outputs(call)  # no call since: nothing to deliver again
    assert torch.isnan(values["out"]).all()
    deliver_outputs(lambda: None)  # a call that writes its own buffers: nothing to do


@pytest.mark.parametrize("returned, kind, message", [
    (lambda v: torch.zeros(5), "wrong_output", "returned shape [5], the reference [4]"),
    (lambda v: torch.zeros(4, dtype=torch.float64), "wrong_output", "returned dtype torch.float64"),
    (lambda v: (torch.zeros(4), torch.zeros(4)), "wrong_output", "returned 2 value(s) (Tensor, Tensor)"),
    (lambda v: 3.0, "wrong_output", "returned 1 value(s) (float)"),
    (lambda v: v["x"][:], "output_aliases_input", "returned memory of its input 'x'"),
])
def test_what_a_returned_output_must_be(returned, kind, message):
    holder = {}
    call, values = returning(lambda: returned(holder["values"]))
    holder["values"] = values
    call()
    with pytest.raises(SolutionError, match=re.escape(message)) as caught:
        deliver_outputs(call)
    assert caught.value.kind == kind and caught.value.exit_code == 3


class CachingAllocator:
    """Hands back its one block whenever nothing holds the tensor it last handed out, as CUDA's caching allocator
    gives a freed block to the next allocation of its size; a fresh block while that tensor is alive."""

    def __init__(self):
        self.block = torch.zeros(4)
        self.handed_out = None

    def allocate(self):
        if self.handed_out is not None and self.handed_out() is not None:
            return torch.zeros(4)
        tensor = self.block.view(4)
        self.handed_out = weakref.ref(tensor)
        return tensor


def calls_noted(function, calls=3):
    noted = []
    call = ReturningCall(function, {"x": torch.rand(4), "out": torch.empty(4)}, ["out"], lambda: noted.append(True))
    for _ in range(calls):
        call()
        deliver_outputs(call)
    return call, noted


def test_returning_a_kept_buffer_is_noted_not_failed():
    kept = torch.zeros(4)
    call, noted = calls_noted(lambda: kept.add_(1))
    assert torch.equal(call.values["out"], torch.full((4,), 3.0)) and noted == [True]


def test_a_fresh_output_the_allocator_hands_back_at_the_same_address_is_not_a_kept_buffer():
    allocator = CachingAllocator()
    first = allocator.allocate().data_ptr()
    second = allocator.allocate().data_ptr()  # the first was dropped: the allocator hands its block back
    assert first == second == allocator.block.data_ptr()
    call, noted = calls_noted(lambda: allocator.allocate().fill_(2.0))
    assert noted == [] and torch.equal(call.values["out"], torch.full((4,), 2.0))
    later = allocator.allocate()  # after the one comparison nothing is held any more: the block comes back
    assert later.data_ptr() == allocator.block.data_ptr()


# --- weights ---------------------------------------------------------------------------------------------


def test_weights_are_copied_by_name_where_the_shapes_agree():
    class Renamed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gemm = torch.nn.Linear(3, 2)
            self.scale = torch.nn.Parameter(torch.zeros(7))
            self.bias = torch.nn.Parameter(torch.zeros(5))

    model = Renamed()
    weights = {"gemm.weight": torch.ones(2, 3), "gemm.bias": torch.ones(2), "bias": torch.ones(2),
               "conv.weight": torch.ones(1)}
    note = copy_weights(model, weights)
    assert torch.equal(model.gemm.weight.detach(), torch.ones(2, 3)) and torch.equal(model.bias.detach(),
                                                                                      torch.zeros(5))
    assert note == ("ModelNew got 2 of the Model's 4 weights by name (load_state_dict, strict=False): gemm.weight, "
                    "gemm.bias; its own, initialised from seed 42 as in KernelBench: scale, bias; same name, other "
                    "shape (not copied): bias; Model weights it has no place for: conv.weight")


def test_a_model_new_built_on_unfilled_buffers_still_gets_the_model_s_weights(tmp_path):
    """The benchmark builds an --against version on fresh buffer sets whose weights hold no values yet (NaN here):
    ModelNew's weights come from the problem's Model, so its outputs are the reference's."""
    from kernel_opt.backends.modelnew.launcher import ModelNewLauncher
    from kernel_opt.solution.kernelbench_problem import problem_for

    name = "2_Gemm_Multiply_ReLU"
    solution = tmp_path / f"{name}.py"  # plain torch: the weights are the question, not the kernel
    solution.write_text("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                        "    def __init__(self, in_features, out_features, multiplier):\n"
                        "        super().__init__()\n        self.gemm = nn.Linear(in_features, out_features)\n"
                        "        self.multiplier = multiplier\n\n    def forward(self, x):\n"
                        "        return torch.relu(self.gemm(x) * self.multiplier)\n")
    problem = problem_for(PROBLEMS / f"{name}.py")
    values = problem.setup(0, "cpu", {})["inputs"]
    expected = {key: value.clone() for key, value in values.items()}
    problem.reference(**expected)
    weights = set(problem.arguments(problem.sizes({}), "cpu").weights)
    assert weights == {"gemm_weight", "gemm_bias"}
    unfilled = {key: torch.full_like(value, float("nan")) if key in weights or key == "output" else value
                for key, value in values.items()}
    launcher = ModelNewLauncher(solution, str(PROBLEMS / f"{name}.py"))
    call = launcher.prepared(unfilled, {}, ["output"])
    call()
    deliver_outputs(call)
    assert torch.allclose(unfilled["output"], expected["output"], atol=1e-6) and unfilled["output"].abs().sum() > 0


# --- through the real check (child process, CPU) -----------------------------------------------------


@pytest.mark.slow
def test_an_honest_triton_model_new_passes_with_the_model_s_weights(tmp_path):
    report = check("2_Gemm_Multiply_ReLU", tmp_path)
    assert report.error is None, report.error
    assert report.passed and report.backend == "modelnew" and len(report.cases) == 8
    assert "ModelNew got 2 of the Model's 2 weights by name (load_state_dict, strict=False): gemm.weight, " \
           "gemm.bias" in report.notes


@pytest.mark.slow
def test_a_wrong_model_new_fails(tmp_path):
    report = check("4_Conv2d_ReLU_BiasAdd", tmp_path)
    assert report.error is None and report.verdict == "fail"
    assert not any(output.precision_downgrade for case in report.cases for output in case.outputs)


@pytest.mark.slow
def test_a_precision_downgrade_fails_by_default_and_passes_flagged_at_kernelbench_s_tolerance(tmp_path):
    strict = check("1_Square_matmul", tmp_path / "strict")
    assert strict.verdict == "fail" and strict.precision_downgrades == ["output"]
    assert not strict.kernelbench_tolerances
    from kernel_opt.check.integrity.verdict import summarize_failures

    # the probe ran on the failing cases and showed the inputs rounded: only then is it called a downgrade
    assert strict.integrity["rounding_probe"]["downgraded_outputs"] == ["output"]
    assert "a precision downgrade: within KernelBench's atol = rtol = 1e-2" in \
        summarize_failures(strict.cases, set(strict.rounding_downgrades))[0]
    assert "a precision downgrade" not in summarize_failures(strict.cases)[0]
    loose = check("1_Square_matmul", tmp_path / "loose", kernelbench_tolerances=True)
    assert loose.verdict == "pass" and loose.kernelbench_tolerances and loose.precision_downgrades == ["output"]
    output = loose.cases[0].outputs[0]
    assert (output.atol, output.rtol) == (1e-2, 1e-2)
    # the strict rule's numbers, measured all the same: TF32-rounded inputs are hundreds of times off
    assert output.solution_error > 100 * output.reference_error and output.solution_error > output.allowed_error
    assert loose.to_dict()["kernelbench_tolerances"] is True and "kernelbench_tolerances" not in strict.to_dict()
    assert loose.tolerances[0].source == "KernelBench's atol = rtol = 1e-2 (--kernelbench-tolerances)"


@pytest.mark.slow
def test_an_honest_solution_is_no_downgrade_at_kernelbench_s_tolerance(tmp_path):
    report = check("3_Sum_reduction", tmp_path, kernelbench_tolerances=True)
    assert report.passed and report.precision_downgrades == []


@pytest.mark.slow
def test_a_model_new_needs_a_kernelbench_problem(tmp_path):
    report = check_correctness(SOLUTIONS / "3_Sum_reduction.py", VECTOR_ADD / "ref.py", "modelnew", "cpu", {},
                               CheckOptions(seeds=1), BuildOptions(), tmp_path / "build", "test")
    assert report.verdict == "usage_error"
    assert "is checked against a KernelBench problem file" in report.error.message


def test_the_kernelbench_switch_and_explicit_tolerances_exclude_each_other(tmp_path, capsys):
    from kernel_opt.commands.correctness_check import main

    code = main([str(SOLUTIONS / "3_Sum_reduction.py"), "--ref", str(PROBLEMS / "3_Sum_reduction.py"),
                 "--output-dir", str(tmp_path), "--kernelbench-tolerances", "--atol", "1e-3"])
    assert code == 2
    assert "--kernelbench-tolerances sets atol = rtol = 1e-2: give it or --atol/--rtol, not both" in \
        capsys.readouterr().err


# --- static analysis: a Triton ModelNew's forward compiled, never run ------------------------------------


def analyze(tmp_path: Path, solution: Path, problem: Path | None, *extra: str) -> int:
    from kernel_opt.commands.static_analysis import main

    return main([str(solution), *(["--ref", str(problem)] if problem else []), "--output-dir", str(tmp_path), *extra])


def test_a_triton_model_new_is_compiled_for_sm_90_without_a_gpu_and_its_sass_read(tmp_path):
    assert analyze(tmp_path, SOLUTIONS / "2_Gemm_Multiply_ReLU.py", PROBLEMS / "2_Gemm_Multiply_ReLU.py") == 0
    report = json.loads((tmp_path / "static_analysis.json").read_text())
    assert report["backend"] == "modelnew" and report["arch"] == "sm_90"
    [kernel] = report["kernels"]
    assert kernel["name"] == "gemm_scale_relu_kernel" and kernel["registers_per_thread"] > 0
    assert kernel["mix"]["global_loads"] > 0


def test_a_kernel_only_the_interpreter_accepts_is_a_compile_error(tmp_path, capsys):
    solution = FIXTURES / "gpu_only" / "2_Gemm_Multiply_ReLU_global_float.py"
    assert analyze(tmp_path / "check", solution, PROBLEMS / "2_Gemm_Multiply_ReLU.py") == 3
    assert "the Triton kernel failed to compile" in capsys.readouterr().err  # the interpreter passes it


def test_static_analysis_refuses_a_model_new_with_two_kinds_of_kernels_and_one_without_its_problem(tmp_path, capsys):
    relu = REPO_ROOT / "reference" / "kernelbench"
    mixed = tmp_path / "19_ReLU.py"
    mixed.write_text((relu / "solutions" / "19_ReLU.py").read_text() + "\n\n@triton.jit\ndef other(x_ptr):\n    pass\n")
    assert analyze(tmp_path / "a", mixed, relu / "problems" / "19_ReLU.py") == 2
    assert "not available for a ModelNew with both load_inline CUDA and Triton kernels" in capsys.readouterr().err
    assert analyze(tmp_path / "b", SOLUTIONS / "2_Gemm_Multiply_ReLU.py", None) == 2
    assert "needs its KernelBench problem file" in capsys.readouterr().err
