"""KernelBench problem files as references: recognised by content, sizes from module constants, KernelBench's weights.

The problems under tests/fixtures/kernelbench/problems/ follow ScalingIntelligence/KernelBench's
level 1 and level 2 files at sizes the CPU runs in milliseconds.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from conftest import FIXTURES_DIR, REPO_ROOT

from kernel_opt.core.errors import UsageError
from kernel_opt.solution import kernelbench
from kernel_opt.solution.contract import load_reference, plan_cases
from kernel_opt.solution.dims import check_dims
from kernel_opt.solution.inputs import build_instance
from kernel_opt.solution.kernelbench_problem import WEIGHT_SEED, device_key, problem_for, released_poisoned

FIXTURES = FIXTURES_DIR / "kernelbench"
PROBLEMS = FIXTURES / "problems"
MATMUL = PROBLEMS / "1_Square_matmul.py"
GEMM = PROBLEMS / "2_Gemm_Multiply_ReLU.py"
SUM = PROBLEMS / "3_Sum_reduction.py"
CONV = PROBLEMS / "4_Conv2d_ReLU_BiasAdd.py"
VECTOR_ADD_REF = REPO_ROOT / "reference" / "vector_add" / "ref.py"

# KernelBench level 1 problem 95's shape: a tuple constant built from another, and a class count that is
# both a tensor size (through the tuple) and randint's bound.
CROSS_ENTROPY = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)

batch_size = 64
num_classes = 10
input_shape = (num_classes,)
dim = 1
eps = 1e-5
use_bias = True
mode = "mean"

def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))]

def get_init_inputs():
    return []
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# --- the syntax tree: what a problem is, its sizes, the scaling rule ------------------------------------


def test_a_problem_is_recognised_by_its_content(tmp_path):
    for path in sorted(PROBLEMS.glob("*.py")):
        assert kernelbench.is_problem_file(path), path.name
    assert not kernelbench.is_problem_file(VECTOR_ADD_REF)  # a ref.py: reference() and setup()
    no_init = write(tmp_path, "no_init.py", "class Model: pass\ndef get_inputs(): return []\n")
    assert not kernelbench.is_problem_file(no_init)
    both = write(tmp_path, "both.py", CROSS_ENTROPY + "\ndef reference(**kwargs): pass\n")
    assert not kernelbench.is_problem_file(both)  # a reference() makes it a ref.py, whatever else it holds
    assert not kernelbench.is_problem_file(write(tmp_path, "broken.py", "class Model(:\n"))
    assert not kernelbench.is_problem_file(tmp_path / "missing.py")


@pytest.mark.parametrize("path, sizes, forward", [
    (MATMUL, ("N",), ("A", "B")),
    (GEMM, ("batch_size", "in_features"), ("x",)),  # out_features shapes no input, multiplier is a float
    (SUM, ("batch_size", "dim1", "dim2"), ("x",)),  # reduce_dim = 1 is an index, not a size
    (CONV, ("batch_size", "in_channels", "height", "width"), ("x",)),  # not out_channels, not kernel_size
])
def test_input_sizes_are_the_constants_get_inputs_shapes_depend_on(path, sizes, forward):
    outline = kernelbench.outline_problem(path)
    assert outline.input_sizes == sizes
    assert outline.forward_parameters == forward


def test_sizes_are_followed_through_derived_constants_and_not_taken_from_value_bounds(tmp_path):
    outline = kernelbench.outline_problem(write(tmp_path, "ce.py", CROSS_ENTROPY))
    # num_classes reaches a shape through input_shape; as randint's bound alone it would not count
    assert outline.input_sizes == ("batch_size", "num_classes")
    assert outline.constants == {"batch_size": 64, "num_classes": 10, "dim": 1, "eps": 1e-5, "use_bias": True,
                                 "mode": "mean"}  # not the tuple input_shape
    bound_only = CROSS_ENTROPY.replace("torch.rand(batch_size, *input_shape)", "torch.rand(batch_size, 7)")
    assert kernelbench.outline_problem(write(tmp_path, "bound.py", bound_only)).input_sizes == ("batch_size",)


def test_the_scaling_rule_halves_quarters_and_makes_the_quarter_odd():
    assert kernelbench.scaled_shapes({"N": 4096, "M": 4095, "B": 2}) == [
        {"N": 2048, "M": 2047, "B": 1}, {"N": 1024, "M": 1023, "B": 1}, {"N": 1025, "M": 1023, "B": 1}]
    assert kernelbench.scaled_shapes({"N": 3}) == [{"N": 1}]  # 3//2 = 3//4 -> 1, odd already: one shape
    assert kernelbench.scaled_shapes({}) == []


def test_weights_are_passed_by_their_state_dict_key_with_dots_made_underscores():
    assert kernelbench.weight_argument_name("conv.weight") == "conv_weight"
    assert kernelbench.weight_argument_name("layers.0.bn.running_mean") == "layers_0_bn_running_mean"
    assert kernelbench.weight_argument_name("bias") == "bias"


# --- sizes on the command line -------------------------------------------------------------------------


def test_the_command_line_overrides_module_constants_and_nothing_else(tmp_path):
    assert check_dims(GEMM, {"batch_size": 8.0, "multiplier": 3}) == {"batch_size": 8, "multiplier": 3}
    with pytest.raises(UsageError) as caught:
        check_dims(GEMM, {"out_featurs": 20})
    assert caught.value.message == ("unknown problem size --out_featurs=20: the KernelBench problem "
                                    "2_Gemm_Multiply_ReLU.py takes no 'out_featurs'")
    assert caught.value.hint.startswith("did you mean --out_features")
    with pytest.raises(UsageError, match="batch_size takes an integer"):
        check_dims(GEMM, {"batch_size": "many"})
    problem = write(tmp_path, "ce.py", CROSS_ENTROPY)
    assert check_dims(problem, {"use_bias": "false", "mode": "sum"}) == {"use_bias": False, "mode": "sum"}
    with pytest.raises(UsageError, match="unknown problem size --input_shape"):
        check_dims(problem, {"input_shape": 3})  # a tuple is derived, not a size


# --- running the file: variants, weights, inputs, outputs ----------------------------------------------


def test_other_sizes_execute_the_file_again_so_derived_constants_follow():
    problem = problem_for(CONV)
    assert problem.module({"out_channels": 5}).bias_shape == (5, 1, 1)
    assert problem.module({}).bias_shape == (8, 1, 1)  # the file as written, untouched
    chained = problem.module({"height": 7})  # height = width = 12: only height changes
    assert (chained.height, chained.width) == (7, 12)
    assert problem.module({"height": 7}) is chained  # executed once per set of sizes


def test_inputs_are_seeded_and_the_weights_are_kernelbench_s():
    reference = load_reference(GEMM)
    assert reference.kind == "kernelbench" and reference.shapes == [] and reference.setup is not None
    first, again, other = (build_instance(reference.setup, {}, seed, "cpu") for seed in (0, 0, 1))
    assert first.outputs == ["output"]
    assert set(first.values) == {"x", "gemm_weight", "gemm_bias", "output"}
    assert first.dims == {"batch_size": 24, "in_features": 40, "out_features": 36, "multiplier": 2.0}
    assert torch.equal(first.values["x"], again.values["x"])
    assert not torch.equal(first.values["x"], other.values["x"])
    assert torch.equal(first.values["gemm_weight"], other.values["gemm_weight"])  # weights do not follow the seed
    # KernelBench's eval: set_seed(42); init = get_init_inputs(); set_seed(42); Model(*init)
    module = problem_for(GEMM).module({})
    torch.manual_seed(WEIGHT_SEED)
    init_inputs = module.get_init_inputs()
    torch.manual_seed(WEIGHT_SEED)
    model = module.Model(*init_inputs)
    assert torch.equal(first.values["gemm_weight"], model.gemm.weight.detach())
    assert torch.equal(first.values["gemm_bias"], model.gemm.bias.detach())
    torch.manual_seed(0)
    assert torch.equal(first.values["x"], module.get_inputs()[0])
    assert first.values["output"].shape == (24, 36)


HOST_ONLY_INPUTS = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 2

size = 16
drawn_on = []
loaded_on = torch.empty(1).device.type
HOST_STEP = True

def get_inputs():
    x = torch.rand(size)
    drawn_on.append(x.device.type)
    return [torch.from_numpy(x.numpy()) if HOST_STEP else x]  # numpy: a step only the host can take

def get_init_inputs():
    return []
"""


def test_inputs_for_a_device_are_drawn_there_and_the_file_runs_outside_its_context(tmp_path):
    # torch's meta device stands in for a GPU on a machine without one: any non-host device takes this path
    problem = problem_for(write(tmp_path, "on_device.py", HOST_ONLY_INPUTS.replace("HOST_STEP = True",
                                                                                   "HOST_STEP = False")))
    drawn = problem.inputs({}, 0, "meta")
    assert [value.device.type for value in drawn] == ["meta"]
    assert problem.module({}).drawn_on == ["meta"]
    assert problem.module({}).loaded_on == "cpu"  # module-level tensors are where the file puts them


def test_inputs_fall_back_to_the_host_where_get_inputs_has_a_host_only_step(tmp_path):
    problem = problem_for(write(tmp_path, "host_only.py", HOST_ONLY_INPUTS))
    drawn = problem.inputs({}, 3, "meta")
    assert [value.device.type for value in drawn] == ["meta"]
    assert problem.module({}).drawn_on == ["meta", "cpu"]  # tried on the device, then drawn on the host
    on_host = problem.inputs({}, 3, "cpu")
    torch.manual_seed(3)
    assert torch.equal(on_host[0], torch.rand(16))  # seeded the same way as on the device


def test_the_reference_runs_forward_on_the_weights_it_is_given():
    from kernel_opt.check.tolerance import TolerancePolicy, expect

    reference = load_reference(GEMM)
    instance = build_instance(reference.setup, {"batch_size": 5}, 0, "cpu")
    expectation = expect(reference.reference, TolerancePolicy(), instance.dims, instance.values, instance.outputs)
    values = instance.values
    by_hand = torch.relu((values["x"] @ values["gemm_weight"].T + values["gemm_bias"]) * 2.0)
    assert torch.allclose(expectation.reference["output"], by_hand, rtol=1e-6, atol=1e-6)
    assert expectation.truth["output"].dtype == torch.float64  # the same Model on float64 inputs and weights
    shifted = dict(values, gemm_bias=values["gemm_bias"] + 1.0)
    moved = expect(reference.reference, TolerancePolicy(), instance.dims, shifted, instance.outputs)
    assert not torch.allclose(moved.reference["output"], expectation.reference["output"])
    model, args, kwargs = reference.baseline({**instance.dims, **values})
    assert isinstance(model, torch.nn.Module) and kwargs == {} and args[0] is values["x"]
    assert torch.allclose(model(*args), expectation.reference["output"])  # KernelBench's Model, timed as is


def test_the_flop_count_sees_the_model_s_arithmetic_not_the_poisoning():
    from kernel_opt.measure.roofline import count_flops
    from kernel_opt.solution.inputs import cloned_arguments

    reference = load_reference(MATMUL)
    instance = build_instance(reference.setup, {"N": 32}, 0, "cpu")
    count = count_flops(reference.reference, cloned_arguments(instance.dims, instance.values))
    assert count.flops == 2 * 32**3 and count.uncounted_operators == []  # released memory is refilled via set_


def test_cuda_and_cuda_0_name_one_device_so_the_model_is_built_once(monkeypatch):
    """setup() is handed "cuda" and reference() reads "cuda:0" off its tensors: one Model, not two."""
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert device_key("cuda") == device_key("cuda:0") == "cuda:0" and device_key("cpu") == "cpu"
    problem = problem_for(MATMUL)
    built = []
    monkeypatch.setattr(problem, "build_model", lambda dims, device: built.append(device) or object())
    monkeypatch.setattr(problem, "_models", {})
    assert problem.model({}, "cuda") is problem.model({}, "cuda:0") and built == ["cuda"]


def test_derived_shapes_scale_the_run_s_sizes_and_drop_what_the_model_rejects():
    reference = load_reference(CONV)
    cases, notes = plan_cases(reference, {"height": 7}, reference.setup)
    assert [(case["batch_size"], case["in_channels"], case["height"], case["width"]) for case in cases] == [
        (4, 3, 7, 12), (2, 1, 3, 6)]
    assert all(case["out_channels"] == 8 and case["kernel_size"] == 3 for case in cases)  # never scaled
    assert "extra shapes scale its input sizes batch_size=4, in_channels=3, height=7, width=12" in notes[0]
    assert notes[1].startswith("derived shape batch_size=1, in_channels=1, height=1, width=3 dropped: the Model "
                               "rejects it (RuntimeError: Calculated padded input size")
    assert len(plan_cases(load_reference(SUM), {}, None)[0]) == 4  # the sizes and three derived shapes


def test_a_tuple_output_and_star_arguments_get_positional_names(tmp_path):
    path = write(tmp_path, "pair.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def forward(self, *tensors):
                return tensors[0] + tensors[1], tensors[0] * 2

        n = 6

        def get_inputs():
            return [torch.rand(n), torch.rand(n)]

        def get_init_inputs():
            return []
        """)
    instance = build_instance(load_reference(path).setup, {}, 0, "cpu")
    assert instance.outputs == ["output0", "output1"]
    assert set(instance.values) == {"input0", "input1", "output0", "output1"}


def test_a_name_that_would_mean_two_things_is_refused(tmp_path):
    path = write(tmp_path, "clash.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.bias = nn.Parameter(torch.zeros(4))

            def forward(self, bias):
                return bias + self.bias

        def get_inputs():
            return [torch.rand(4)]

        def get_init_inputs():
            return []
        """)
    with pytest.raises(UsageError, match="'bias' is a forward argument and a weight \\(bias\\)"):
        build_instance(load_reference(path).setup, {}, 0, "cpu")


def test_what_the_reference_released_is_poisoned_and_what_it_was_given_is_not():
    given = torch.rand(8)
    counts = torch.arange(8)
    with released_poisoned([given]):
        doubled = given * 2  # released by a real forward; kept here to look at afterwards
        summed = doubled + 1
        indices = counts + 1
        view = given.view(2, 4)
    assert torch.isnan(doubled).all() and torch.isnan(summed).all()
    assert (indices == -1).all()  # 0xFF bytes in an integer
    assert not torch.isnan(given).any() and torch.equal(view.reshape(-1), given)


# --- through the real check (child process, Triton interpreter) ---------------------------------------


@pytest.mark.slow
def test_a_triton_solution_in_the_project_s_contract_binds_the_model_s_weights_by_name(tmp_path):
    from kernel_opt.check.correctness import CheckOptions, check_correctness
    from kernel_opt.solution.backend import BuildOptions

    solution = FIXTURES / "contract" / "2_Gemm_Multiply_ReLU.py"
    dims = check_dims(GEMM, {"out_features": 20}, solution)
    report = check_correctness(solution, GEMM, "triton", "cpu", dims, CheckOptions(seeds=2), BuildOptions(),
                               tmp_path / "build", "test")
    assert report.error is None, report.error
    assert report.passed and len(report.cases) == 8  # the sizes and three derived shapes, two seeds each
    assert {(case.dims["batch_size"], case.dims["in_features"], case.dims["out_features"]) for case in report.cases} \
        == {(24, 40, 20), (12, 20, 20), (6, 10, 20), (7, 11, 20)}
    assert "ref.py has no SHAPES" not in " ".join(report.warnings)  # derived shapes count as shapes
    assert any(note.startswith("2_Gemm_Multiply_ReLU.py has no SHAPES: extra shapes scale") for note in report.notes)
    assert any(note.startswith("inputs from 2_Gemm_Multiply_ReLU.py's get_inputs()") for note in report.notes)


def test_checking_a_small_problem_never_imports_dynamo():
    """torch._dynamo takes about 2 s to import, and nothing here compiles: neither the shape probe (a real CPU run at
    small sizes, not the meta device's decompositions) nor the reference run's poisoning mode may pull it in."""
    import subprocess
    import sys

    script = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(REPO_ROOT / "skills" / "kernel-opt-skill" / "scripts")!r})
        from kernel_opt.solution.contract import load_reference, plan_cases
        from kernel_opt.solution.inputs import build_instance
        reference = load_reference(__import__("pathlib").Path({str(CONV)!r}))
        cases, _ = plan_cases(reference, {{}}, reference.setup)
        instance = build_instance(reference.setup, cases[0], 0, "cpu")
        kwargs = {{**instance.dims, **{{name: value.clone() if hasattr(value, "clone") else value
                                        for name, value in instance.values.items()}}}}
        reference.reference(**kwargs)
        print(len(cases), "torch._dynamo" in sys.modules)
        """)
    finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr[-2000:]
    count, imported = finished.stdout.split()
    assert int(count) >= 2 and imported == "False"


def test_a_size_named_like_a_weight_passes_the_weight(tmp_path):
    # KernelBench's level 2 48_Conv3d_Scaling_Tanh_Multiply_Sigmoid: `scaling_factor = 2` at module level,
    # and `self.scaling_factor = nn.Parameter(...)` in Model.
    path = write(tmp_path, "shared_name.py", """\
        import torch
        import torch.nn as nn

        class Model(nn.Module):
            def __init__(self, scale):
                super().__init__()
                self.scale = nn.Parameter(torch.full((4,), float(scale)))

            def forward(self, x):
                return x * self.scale

        n = 4
        scale = 3

        def get_inputs():
            return [torch.rand(n)]

        def get_init_inputs():
            return [scale]
        """)
    reference = load_reference(path)
    instance = build_instance(reference.setup, {}, 0, "cpu")
    values = instance.values
    assert torch.equal(values["scale"], torch.full((4,), 3.0))
    reference.reference(**{**{"n": 4, "scale": 3}, **values})
    assert torch.equal(values["output"], values["x"] * 3)
    problem = problem_for(path)
    assert problem.sizes(values)["scale"] == 3  # the tensor under the size's name is not a size
    assert problem.overrides(values) == ()
