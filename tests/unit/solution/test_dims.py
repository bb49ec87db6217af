"""--NAME=VALUE problem sizes are checked against ref.py in the parent, before any child runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import REPO_ROOT as REPO

from kernel_opt.commands import benchmark, correctness_check, ncu_profile, static_analysis
from kernel_opt.commands import workspace as workspace_command
from kernel_opt.core.errors import UsageError
from kernel_opt.solution.dims import check_dims
from kernel_opt.solution.outline import outline_module

VECTOR_ADD = REPO / "reference" / "vector_add"
SOFTMAX = REPO / "reference" / "softmax"


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def refused(capsys) -> str:
    return capsys.readouterr().err


# --- the check itself ------------------------------------------------------------------------------


def test_a_misspelt_size_is_refused_with_the_setup_parameter_it_resembles():
    with pytest.raises(UsageError) as caught:
        check_dims(VECTOR_ADD / "ref.py", {"N": 77}, VECTOR_ADD / "good" / "vector_add.py")
    assert "unknown problem size --N=77" in caught.value.message
    assert caught.value.hint.startswith("did you mean --n?")
    assert "n, dtype" in caught.value.hint
    with pytest.raises(UsageError) as caught:
        check_dims(SOFTMAX / "ref.py", {"Scle": 5})
    assert "did you mean --scale?" in caught.value.hint


def test_a_value_that_is_not_a_number_names_the_flag():
    with pytest.raises(UsageError) as caught:
        check_dims(VECTOR_ADD / "ref.py", {"n": "notanumber"})
    assert caught.value.message.startswith("--n=notanumber: n takes an integer (default 1048576)")
    with pytest.raises(UsageError, match="--scale=big: scale takes a number"):
        check_dims(SOFTMAX / "ref.py", {"scale": "big"})


def test_values_come_back_typed_and_text_sizes_stay_text():
    checked = check_dims(VECTOR_ADD / "ref.py", {"n": 1e3, "dtype": "float16"})
    assert checked == {"n": 1000, "dtype": "float16"} and isinstance(checked["n"], int)
    assert check_dims(SOFTMAX / "ref.py", {"N": 4, "D": 129, "scale": 100}) == {"N": 4, "D": 129, "scale": 100}
    assert check_dims(SOFTMAX / "ref.py", {"scale": 2.5}) == {"scale": 2.5}


@pytest.mark.parametrize("value", [1.5, -5, 0])
def test_a_tensor_size_that_is_not_a_positive_integer_is_a_usage_error(value):
    """torch.randn(1.5) or randn(-5) would fail inside setup(), and the run would blame the solution."""
    with pytest.raises(UsageError) as caught:
        check_dims(VECTOR_ADD / "ref.py", {"n": value}, VECTOR_ADD / "good" / "vector_add.py")
    assert caught.value.message == f"--n={value}: n is a tensor size in ref.py's setup() and takes a positive integer"
    assert caught.value.hint == "write it as --n=N with N >= 1, e.g. --n=1048576"
    with pytest.raises(UsageError, match=r"--D=2\.5: D is a tensor size"):
        check_dims(SOFTMAX / "ref.py", {"D": 2.5})
    # scale multiplies the inputs and shapes nothing: any number, negative too
    assert check_dims(SOFTMAX / "ref.py", {"scale": -5}) == {"scale": -5}


def test_a_text_size_takes_only_the_values_of_the_named_set_its_default_belongs_to():
    with pytest.raises(UsageError) as caught:
        check_dims(VECTOR_ADD / "ref.py", {"dtype": "float64"})
    assert caught.value.message == ("--dtype=float64: ref.py's setup() takes dtype as one of bfloat16, float16, "
                                    "float32 (the values of DTYPES in ref.py)")
    assert caught.value.hint == "pass one of them, e.g. --dtype=float32"
    assert check_dims(VECTOR_ADD / "ref.py", {"dtype": "bfloat16"}) == {"dtype": "bfloat16"}


def test_tensor_sizes_are_followed_through_locals_and_kernelbench_input_constants(tmp_path):
    ref = write(tmp_path / "ref.py", """
        import torch
        MODES = ("fast", "exact")
        def setup(seed=0, device="cuda", rows=8, cols=16, dim=1, mode="exact"):
            shape = (rows, cols * 2)
            return {"inputs": {"x": torch.randn(shape, device=device), "dim": dim}, "outputs": ["x"]}
        def reference(x, **_):
            return x
    """)
    outline = outline_module(ref)
    assert outline.functions["setup"].tensor_sizes == frozenset({"rows", "cols"})
    assert outline.string_sets["MODES"] == frozenset({"fast", "exact"})
    assert check_dims(ref, {"dim": -1, "mode": "fast"}) == {"dim": -1, "mode": "fast"}  # dim shapes nothing
    with pytest.raises(UsageError, match="--cols=-3: cols is a tensor size"):
        check_dims(ref, {"cols": -3})
    with pytest.raises(UsageError, match="takes mode as one of exact, fast"):
        check_dims(ref, {"mode": "slow"})
    problem = write(tmp_path / "kb.py", """
        import torch
        batch_size = 16
        dim = 1
        class Model(torch.nn.Module):
            def forward(self, x):
                return x.sum(dim)
        def get_inputs():
            return [torch.randn(batch_size, 32)]
        def get_init_inputs():
            return []
    """)
    assert check_dims(problem, {"dim": -1}) == {"dim": -1}
    with pytest.raises(UsageError, match=r"--batch_size=1\.5: batch_size is a tensor size in the KernelBench problem"):
        check_dims(problem, {"batch_size": 1.5})


def test_bool_sizes_read_true_and_false_and_refuse_anything_else(tmp_path):
    ref = write(tmp_path / "ref.py", """
        def setup(seed=0, device="cuda", n=8, causal=False):
            pass
        def reference(**kwargs):
            pass
    """)
    assert check_dims(ref, {"causal": "true"}) == {"causal": True}
    assert check_dims(ref, {"causal": 0}) == {"causal": False}
    with pytest.raises(UsageError, match="--causal=maybe: causal takes true or false"):
        check_dims(ref, {"causal": "maybe"})


def test_setup_with_kwargs_accepts_any_name_and_shapes_flops_and_run_kernel_names_are_known(tmp_path):
    open_setup = write(tmp_path / "open.py", """
        def setup(n=1024, seed=42, **kwargs):
            pass
        def reference(**kwargs):
            pass
    """)
    assert check_dims(open_setup, {"anything": 3, "n": 8}) == {"anything": 3, "n": 8}
    ref = write(tmp_path / "ref.py", """
        SHAPES = [dict(n=1, extra=2)]
        def setup(seed=0, device="cuda", n=8):
            pass
        def reference(x, out, eps=1e-5, **_):
            pass
        def flops(n, width, **_):
            return n
    """)
    solution = write(tmp_path / "solution.py", "def run_kernel(x, out, n, BLOCK=128, **_):\n    pass\n")
    assert check_dims(ref, {"extra": 3, "eps": 1e-6, "width": 4, "BLOCK": 256}, solution) == {
        "extra": 3, "eps": 1e-6, "width": 4, "BLOCK": 256}
    with pytest.raises(UsageError, match="takes no 'x'"):  # a tensor is not a size
        check_dims(ref, {"x": 3}, solution)


def test_without_setup_cuda_solve_scalars_are_the_sizes_matched_ignoring_case(tmp_path):
    ref = write(tmp_path / "ref.py", "def reference(x, out, **_):\n    out.copy_(x)\n")
    solution = write(tmp_path / "copy.cu",
                     'extern "C" void solve(const float* x, float* out, int N, float alpha) {}\n')
    assert check_dims(ref, {"n": 1000.0, "alpha": 2}, solution) == {"n": 1000, "alpha": 2}
    with pytest.raises(UsageError) as caught:
        check_dims(ref, {"M": 5}, solution)
    assert "the sizes it takes: N, alpha" in caught.value.hint
    with pytest.raises(UsageError, match="--N=big: N takes an integer"):
        check_dims(ref, {"N": "big"}, solution)


def test_a_setup_parameter_without_default_must_be_given(tmp_path):
    ref = write(tmp_path / "ref.py", """
        def setup(N, D=4, seed=0, device="cuda"):
            pass
        def reference(**kwargs):
            pass
    """)
    with pytest.raises(UsageError, match="has no default for N"):
        check_dims(ref, {"D": 8})
    assert check_dims(ref, {"N": 2}) == {"N": 2}


def test_the_ref_must_exist_parse_and_define_reference(tmp_path):
    with pytest.raises(UsageError, match="reference file not found"):
        check_dims(tmp_path / "missing.py", {})
    broken = write(tmp_path / "broken.py", "def setup(:\n")
    with pytest.raises(UsageError, match="is not valid Python"):
        check_dims(broken, {})
    no_reference = write(tmp_path / "no_reference.py", "def setup(n=4):\n    pass\n")
    with pytest.raises(UsageError, match="has no reference"):
        check_dims(no_reference, {})
    imported = write(tmp_path / "imported.py", "try:\n    from mylib import reference\nexcept ImportError:\n    pass\n")
    assert check_dims(imported, {"anything": 1}) == {"anything": 1}  # no setup anywhere: nothing to check against


def test_outline_reads_computed_defaults_and_shapes_without_running_the_file(tmp_path):
    path = write(tmp_path / "ref.py", """
        import torch
        BLOCK = 1024
        SHAPES = [dict(n=1), {"n": 127}]
        raise SystemExit("never run")
        def setup(seed=0, device="cuda", n=1 << 20, m=132 * 8 * BLOCK, eps=-1e-5, dtype="float32", other=len("ab")):
            pass
    """)
    outline = outline_module(path)
    parameters = {p.name: p for p in outline.functions["setup"].parameters}
    assert (parameters["n"].kind, parameters["n"].default) == ("int", 1 << 20)
    assert parameters["m"].default == 132 * 8 * 1024
    assert (parameters["eps"].kind, parameters["eps"].default) == ("float", -1e-5)
    assert parameters["dtype"].kind == "text"
    assert parameters["other"].has_default and parameters["other"].kind is None
    assert outline.shapes == [{"n": 1}, {"n": 127}]
    assert outline.defines("torch") and not outline.defines("reference")


# --- every command checks before it starts anything -----------------------------------------------


@pytest.mark.parametrize("module, extra", [
    (correctness_check, []),
    (benchmark, []),
    (ncu_profile, []),
    (static_analysis, []),
])
def test_each_command_refuses_a_bad_size_before_running(module, extra, tmp_path, capsys):
    out = tmp_path / "out"
    arguments = [str(VECTOR_ADD / "good" / "vector_add.py"), "--ref", str(VECTOR_ADD / "ref.py"),
                 "--output-dir", str(out), *extra]
    assert module.main([*arguments, "--N=77"]) == 2
    assert "did you mean --n?" in refused(capsys)
    assert module.main([*arguments, "--n=notanumber"]) == 2
    assert "--n=notanumber: n takes an integer" in refused(capsys)
    assert module.main([*arguments, "--n=1.5"]) == 2
    assert "--n=1.5: n is a tensor size" in refused(capsys)
    assert module.main([*arguments, "--dtype=float64"]) == 2
    assert "takes dtype as one of bfloat16, float16, float32" in refused(capsys)
    assert not out.exists()


def test_workspace_init_refuses_bad_sizes_and_a_ref_without_reference(tmp_path, capsys):
    kernel = str(VECTOR_ADD / "good" / "vector_add.py")
    out = tmp_path / "run"
    assert workspace_command.main(["init", str(out), "--kernel", kernel, "--ref", str(VECTOR_ADD / "ref.py"),
                                   "--iterations", "1", "--N=77"]) == 2
    assert "did you mean --n?" in refused(capsys)
    no_reference = write(tmp_path / "ref.py", "def setup(seed=0, device='cuda', n=8):\n    pass\n")
    assert workspace_command.main(["init", str(out), "--kernel", kernel, "--ref", str(no_reference),
                                   "--iterations", "1"]) == 2
    assert "has no reference(**kwargs) function" in refused(capsys)
    assert not out.exists()
    assert workspace_command.main(["init", str(out), "--kernel", kernel, "--ref", str(VECTOR_ADD / "ref.py"),
                                   "--iterations", "1", "--n=4e3", "--json"]) == 0
    assert '"n": 4000' in (out / "run.json").read_text()
