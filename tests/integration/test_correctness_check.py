"""correctness_check end to end on the CPU: the fixture corpus under the Triton interpreter,
CUDA compile-only, and the bad inputs that must get a clear message and a specific exit code."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
from conftest import FIXTURES_DIR, REPO_ROOT

from kernel_opt.commands.correctness_check import main

VECTOR_ADD = "vector_add"
FAST = ["--n=4096", "--seeds", "2", "--device", "cpu"]  # 4096: a multiple of every fixture's block size


def check(reference_dir, solution, output_dir, *extra, problem=VECTOR_ADD, ref=None):
    """Run the CLI in-process (the solution still runs in a child) and load its JSON report."""
    path = solution if os.path.isabs(str(solution)) else reference_dir / problem / solution
    ref_path = ref or reference_dir / problem / "ref.py"
    code = main([str(path), "--ref", str(ref_path), "--output-dir", str(output_dir), *extra])
    report = json.loads((output_dir / "correctness.json").read_text())
    return code, report


def outputs(report):
    return [output for case in report["cases"] for output in case["outputs"]]


@pytest.mark.slow
@pytest.mark.parametrize("solution", ["good/vector_add.py", "good/rounding_noise.py"])
def test_correct_kernels_pass_every_shape_and_seed(reference_dir, tmp_path, solution):
    code, report = check(reference_dir, solution, tmp_path, *FAST)
    assert code == 0 and report["passed"] is True and report["verdict"] == "pass"
    shapes = {json.dumps(case["dims"], sort_keys=True) for case in report["cases"]}
    assert len(shapes) == 6 and len(report["cases"]) == 12 == report["planned_cases"]
    assert report["interpreter"] is True and report["device"]["type"] == "cpu"
    assert report["backend"] == "triton" and report["dims"] == {"n": 4096}
    assert "# Correctness: PASS" in (tmp_path / "correctness.md").read_text()


@pytest.mark.slow
def test_unwritten_element_fails_in_every_case(reference_dir, tmp_path):
    code, report = check(reference_dir, "wrong/unwritten_element.py", tmp_path, *FAST)
    assert code == 1 and report["passed"] is False and report["verdict"] == "fail"
    assert all(o["nan_unexpected"] == 1 and o["mismatches"] == 1 for o in outputs(report))
    first = report["cases"][0]["outputs"][0]["first_mismatches"][0]
    assert first["index"] == [4095] and first["actual"] == "nan"
    assert "still NaN" in (tmp_path / "correctness.md").read_text()


@pytest.mark.slow
def test_input_mutation_fails(reference_dir, tmp_path):
    code, report = check(reference_dir, "wrong/mutates_input.py", tmp_path, *FAST)
    assert code == 1
    assert all(case["modified_inputs"] == ["x"] and not case["passed"] for case in report["cases"])
    assert all(o["passed"] for o in outputs(report))  # the output itself is right: only the mutation fails it


@pytest.mark.slow
def test_kernel_correct_only_at_the_cli_shape_fails_on_shapes(reference_dir, tmp_path):
    code, report = check(reference_dir, "wrong/cli_shape_only.py", tmp_path, *FAST)
    assert code == 1
    by_n = {}
    for case in report["cases"]:
        by_n.setdefault(case["dims"]["n"], []).append(case["passed"])
    assert by_n[4096] == [True, True]
    assert by_n[128] == [True, True] or by_n[128] == [False, False]  # depends on the fixture's block size
    assert not any(by_n[127]) and not any(by_n[129]) and not any(by_n[4097])


@pytest.mark.slow
def test_result_just_outside_tolerance_fails_with_its_error_size(reference_dir, tmp_path):
    code, report = check(reference_dir, "wrong/tolerance_edge.py", tmp_path, *FAST)
    assert code == 1
    worst = max(o["max_rel_error"] for o in outputs(report))
    assert worst == pytest.approx(4e-5, rel=0.05)
    assert all(o["solution_error"] == pytest.approx(4e-5, rel=0.05) for o in outputs(report))
    assert all(o["allowed_error"] == pytest.approx(1e-5, rel=0.01) for o in outputs(report))
    tolerance = report["tolerances"][0]
    assert (tolerance["rule"], tolerance["multiple"], tolerance["floor"]) == ("reference error", 8.0, 1e-5)


def test_crash_is_a_solution_fault_and_the_checker_survives(reference_dir, tmp_path):
    code, report = check(reference_dir, "wrong/crash.py", tmp_path, *FAST)
    assert code == 3 and report["verdict"] == "solution_error"
    assert report["error"]["kind"] == "crash"
    assert "SIGSEGV" in report["error"]["message"] and "in the solution's call" in report["error"]["message"]


CHUNKED_LOOP_SOFTMAX = textwrap.dedent("""
    import triton
    import triton.language as tl


    @triton.jit
    def softmax_kernel(x_ptr, out_ptr, D, BLOCK: tl.constexpr):
        row_start = tl.program_id(0).to(tl.int64) * D
        columns = tl.arange(0, BLOCK)
        lane_max = tl.full([BLOCK], -float("inf"), tl.float32)
        for start in range(0, D, BLOCK):  # a runtime loop bound
            x = tl.load(x_ptr + row_start + start + columns, mask=start + columns < D, other=-float("inf"))
            lane_max = tl.maximum(lane_max, x)
        row_max = tl.max(lane_max, axis=0)
        lane_sum = tl.zeros([BLOCK], tl.float32)
        for start in range(0, D, BLOCK):
            x = tl.load(x_ptr + row_start + start + columns, mask=start + columns < D, other=-float("inf"))
            lane_sum += tl.exp(x - row_max)
        row_sum = tl.sum(lane_sum, axis=0)
        for start in range(0, D, BLOCK):
            mask = start + columns < D
            x = tl.load(x_ptr + row_start + start + columns, mask=mask, other=-float("inf"))
            tl.store(out_ptr + row_start + start + columns, tl.exp(x - row_max) / row_sum, mask=mask)


    def run_kernel(x, out, N, D, **_):
        softmax_kernel[(N,)](x, out, D, BLOCK=64)
""")


@pytest.mark.slow
def test_a_runtime_loop_bound_under_the_interpreter_is_checked_or_blamed_on_numpy(reference_dir, tmp_path):
    """triton-lang/triton#9171: Triton 3.6's interpreter calls int() on a 1-element array, which NumPy 2.4
    made an error. Whichever Triton and NumPy are installed, the kernel (which is correct) is never blamed:
    it passes, or the failure is named an environment fault with the fix."""
    import numpy

    solution = tmp_path / "chunked.py"
    solution.write_text(CHUNKED_LOOP_SOFTMAX)
    code, report = check(reference_dir, solution, tmp_path / "out", "--N=3", "--D=100", "--seeds", "1",
                         "--device", "cpu", problem="softmax")
    if code == 0:
        assert report["verdict"] == "pass"
    else:
        assert code == 4 and report["error"]["kind"] == "interpreter_numpy", report["error"]
        assert "numpy<2.4" in report["error"]["hint"]
        assert tuple(int(part) for part in numpy.__version__.split(".")[:2]) >= (2, 4)


def libdevice_vector_add(reference_dir) -> str:
    """The known-good vector add with a libdevice call that changes nothing (x + tanh(y) * 0 + y)."""
    source = (reference_dir / VECTOR_ADD / "good" / "vector_add.py").read_text()
    source = source.replace("import triton.language as tl\n",
                            "import triton.language as tl\nfrom triton.language.extra import libdevice\n")
    return source.replace("x + y, mask=mask)", "x + libdevice.tanh(y) * 0.0 + y, mask=mask)")


@pytest.mark.slow
def test_libdevice_under_the_interpreter_is_this_machines_limit_and_names_the_kernels_line(reference_dir, tmp_path):
    """Triton 3.6's interpreter patches tl's builtins, not libdevice's extern functions, which return None
    there: `x + libdevice.tanh(y)` fails with TypeError ... 'NoneType'. The kernel is correct on a GPU."""
    solution = tmp_path / "tanh_add.py"
    solution.write_text(libdevice_vector_add(reference_dir))
    code, report = check(reference_dir, solution, tmp_path / "out", "--n=4096", "--seeds", "1", "--device", "cpu")
    if code == 0:  # an interpreter that runs libdevice: nothing to explain
        assert report["verdict"] == "pass"
        return
    error = report["error"]
    assert (code, error["kind"]) == (4, "interpreter_limit"), error
    assert error["message"].startswith(
        "the Triton interpreter (TRITON_INTERPRET=1) cannot run this kernel: libdevice functions return None there, "
        "and tanh_add.py line 20 (`tl.store(out_ptr + offsets, x + libdevice.tanh(y) * 0.0 + y, mask=mask)`) failed "
        "on such a None")
    assert "tanh(x) = 2 * tl.sigmoid(2 * x) - 1" in error["hint"] and "TRITON.md" in error["hint"]


@pytest.mark.slow
def test_an_error_in_the_solution_points_at_its_own_line(reference_dir, tmp_path):
    solution = tmp_path / "raises.py"
    solution.write_text("import triton  # noqa: F401\n\n\ndef run_kernel(x, out, n, **_):\n"
                        "    out.copy_(x[: n // 2] + x)\n")
    code, report = check(reference_dir, solution, tmp_path / "out", "--n=4096", "--seeds", "1", "--device", "cpu")
    assert code == 3
    assert report["error"]["hint"].startswith(
        "in the solution's own code: raises.py line 5, in run_kernel: out.copy_(x[: n // 2] + x)\n")


@pytest.mark.slow
def test_hang_is_killed_at_the_timeout(reference_dir, tmp_path):
    started = time.monotonic()
    code, report = check(reference_dir, "wrong/hang.py", tmp_path, *FAST, "--timeout", "3")
    assert code == 3 and report["error"]["kind"] == "timeout"
    assert "no progress for 3 s in the solution's call" in report["error"]["message"]
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_bf16_under_the_interpreter_is_an_environment_fault(reference_dir, tmp_path):
    code, report = check(reference_dir, "good/vector_add.py", tmp_path, *FAST, "--dtype=bfloat16")
    assert code == 4 and report["verdict"] == "environment_error"
    assert report["error"]["kind"] == "interpreter_bf16"
    assert "bfloat16" in report["error"]["message"]


@pytest.mark.nvcc
def test_cuda_without_gpu_compiles_then_exits_4(reference_dir, tmp_path):
    code, report = check(reference_dir, "good/vector_add.cu", tmp_path, *FAST)
    assert code == 4 and report["error"]["kind"] == "no_gpu"
    assert "needs an NVIDIA GPU" in report["error"]["message"]
    assert report["build"]["arch"] == "sm_90a" and report["build"]["kernels"]  # auto without a GPU: Hopper, sm_90a


@pytest.mark.nvcc
def test_cuda_compile_only_reports_resources(reference_dir, tmp_path):
    code, report = check(reference_dir, "good/vector_add.cu", tmp_path, "--compile-only", "--arch", "sm_90a")
    assert code == 0 and report["build"]["arch"] == "sm_90a"
    kernel = report["build"]["kernels"][0]
    assert kernel["registers"] > 0 and kernel["spill_stores_bytes"] == 0
    assert report["build"]["signature"][0].endswith(" x")
    markdown = (tmp_path / "correctness.md").read_text()
    assert "registers/thread" in markdown and "correctness is not established" in markdown


@pytest.mark.nvcc
@pytest.mark.parametrize(
    "solution, kind", [("wrong/compile_error.cu", "compile_error"), ("wrong/no_extern_c.cu", "missing_symbol")]
)
def test_broken_cuda_sources_are_solution_faults(reference_dir, tmp_path, solution, kind):
    code, report = check(reference_dir, solution, tmp_path, "--compile-only")
    assert code == 3 and report["error"]["kind"] == kind


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def test_ref_without_reference_function_is_a_usage_error(reference_dir, tmp_path, capsys):
    ref = write(tmp_path / "ref.py", "def setup(**_):\n    return {}\n")
    code = main([str(reference_dir / VECTOR_ADD / "good/vector_add.py"), "--ref", str(ref),
                 "--output-dir", str(tmp_path / "o")])
    assert code == 2
    # refused in the parent, from ref.py's syntax tree, before anything runs or is written
    assert "has no reference(**kwargs) function" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def _has_gpu():
    import torch

    return torch.cuda.is_available()


@pytest.mark.slow
@pytest.mark.skipif(_has_gpu(), reason="with a GPU present, setup's CUDA tensors are simply moved to the CPU")
def test_original_template_with_cuda_only_setup_says_how_to_fix_it(tmp_path):
    """The original skill's Triton template hard-codes device='cuda' in its setup()."""
    original = FIXTURES_DIR / "original_templates"
    code = main([str(original / "kernel.py"), "--ref", str(original / "ref_triton.py"),
                 "--output-dir", str(tmp_path / "o"), "--device", "cpu"])
    report = json.loads((tmp_path / "o" / "correctness.json").read_text())
    assert code == 2 and report["verdict"] == "usage_error"
    assert "setup() tried to use CUDA" in report["error"]["message"]
    assert "device" in report["error"]["hint"]


@pytest.mark.slow
def test_weak_problem_definitions_are_warned_about(reference_dir, tmp_path):
    """No SHAPES, a setup that ignores its seed with a zero input, and outputs too small for its atol."""
    ref = write(
        tmp_path / "ref.py",
        '''
        import torch

        atol = 1e-5  # an explicit atol far above the outputs: the check cannot see a zero output

        def setup(n=256, seed=0, device="cpu"):
            g = torch.Generator(device=device).manual_seed(1234)  # ignores seed
            x = torch.randn(n, generator=g, device=device) * 1e-8
            zero = torch.zeros(n, device=device)
            return {"inputs": {"x": x, "y": zero, "out": torch.empty(n, device=device), "n": n}, "outputs": ["out"]}

        def reference(x, y, out, **_):
            torch.add(x, y, out=out)
        ''',
    )
    code = main([str(reference_dir / VECTOR_ADD / "good/vector_add.py"), "--ref", str(ref),
                 "--output-dir", str(tmp_path / "o"), "--device", "cpu"])
    report = json.loads((tmp_path / "o" / "correctness.json").read_text())
    assert code == 0
    warnings = "\n".join(report["warnings"])
    assert "no SHAPES" in warnings
    assert "same inputs for every seed" in warnings
    assert "input 'y' is all zeros" in warnings
    assert "an all-zero output would pass" in warnings
    assert "**WARNING:**" in (tmp_path / "o" / "correctness.md").read_text()


@pytest.mark.slow
def test_report_is_replaced_whole_and_no_temporary_files_remain(reference_dir, tmp_path):
    (tmp_path / "correctness.md").write_text("old report\n")
    check(reference_dir, "good/vector_add.py", tmp_path, "--n=256", "--seeds", "1", "--device", "cpu")
    assert (tmp_path / "correctness.md").read_text().startswith("# Correctness: PASS")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["correctness.json", "correctness.md"]


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        (["--seeds", "0"], "--seeds must be at least 1"),
        (["--timeout", "0"], "--timeout must be positive"),
        (["--bogus"], "unrecognised argument '--bogus'"),
        (["--backend", "opencl"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(reference_dir, tmp_path, capsys, arguments, fragment):
    solution = reference_dir / VECTOR_ADD / "good/vector_add.py"
    ref = reference_dir / VECTOR_ADD / "ref.py"
    code = main([str(solution), "--ref", str(ref), "--output-dir", str(tmp_path), *arguments])
    assert code == 2
    assert fragment in capsys.readouterr().err
    assert not (tmp_path / "correctness.json").exists()


def test_wrapper_script_runs_from_a_copy_of_the_skill_folder(scripts_dir, reference_dir, tmp_path):
    """`python <copy>/scripts/correctness_check.py` must work without installing the package."""
    import shutil

    copy = tmp_path / "skill"
    shutil.copytree(scripts_dir.parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    completed = subprocess.run(
        [sys.executable, str(copy / "scripts" / "correctness_check.py"),
         str(reference_dir / VECTOR_ADD / "good/vector_add.py"),
         "--ref", str(reference_dir / VECTOR_ADD / "ref.py"), "--output-dir", str(tmp_path / "o"),
         "--n=300", "--seeds", "1", "--json", "--device", "cpu"],
        capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    payload = json.loads(completed.stdout)
    assert payload["passed"] is True and payload["exit_code"] == 0


@pytest.mark.slow
@pytest.mark.nvcc
def test_a_wgmma_kernel_builds_with_arch_auto(tmp_path):
    """`--arch auto` builds Hopper as sm_90a: the CUDA GEMM case's v10 (TMA + wgmma) builds without --arch, and
    its kernel lists HGMMA-capable code; as plain sm_90 nvcc refuses wgmma."""
    demo = REPO_ROOT / "demo" / "cuda" / "gemm"
    code, report = check(None, demo / "v10" / "v10.cu", tmp_path, "--device", "cpu", "--seeds", "1",
                         ref=demo / "ref.py")
    assert code == 4 and report["error"]["kind"] == "no_gpu"  # built; running it needs a GPU
    assert report["build"]["arch"] == "sm_90a" and report["build"]["kernels"]
    code, report = check(None, demo / "v10" / "v10.cu", tmp_path / "plain", "--device", "cpu", "--arch", "sm_90",
                         ref=demo / "ref.py")
    assert code == 3 and "wgmma" in report["error"]["message"].lower()
