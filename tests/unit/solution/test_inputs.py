"""Inputs (setup() checks, signature inference, degenerate-input warnings) and the strict
binding of tensors and scalars to a CUDA solve's parameters."""

import pytest
import torch

from kernel_opt.backends.cuda.inferred_inputs import infer_instance
from kernel_opt.backends.cuda.launch import _pointer, _scalar
from kernel_opt.backends.cuda.signature import parse_solve_signature
from kernel_opt.core.errors import SolutionError, UsageError
from kernel_opt.solution.inputs import build_instance, degenerate_input_warnings, lookup_by_name


def test_lookup_by_name_exact_then_unique_case_insensitive():
    assert lookup_by_name({"N": 1, "n": 2}, "n") == (True, 2)
    assert lookup_by_name({"N": 1}, "n") == (True, 1)
    assert lookup_by_name({"N": 1, "n": 2}, "Nn") == (False, None)
    assert lookup_by_name({"nA": 1, "NA": 2}, "na") == (False, None)  # ambiguous


def test_build_instance_checks_the_contract():
    def setup(seed=0, device="cpu", n=8):
        x = torch.randn(n, device=device)
        return {"inputs": {"x": x, "out": torch.empty_like(x), "n": n}, "outputs": ["out"]}

    instance = build_instance(setup, {"n": 5}, seed=3, device="cpu")
    assert instance.outputs == ["out"] and instance.values["x"].shape == (5,) and instance.dims == {"n": 5}
    with pytest.raises(UsageError, match="must return"):
        build_instance(lambda **_: {"x": 1}, {}, 0, "cpu")
    with pytest.raises(UsageError, match="not a tensor among its inputs"):
        build_instance(lambda **_: {"inputs": {"n": 3}, "outputs": ["n"]}, {}, 0, "cpu")


def cuda_only_setup(seed=0, device="cpu", n=8):
    x = torch.randn(n, device="cuda")  # ignores the device it is given
    return {"inputs": {"x": x, "out": torch.empty_like(x)}, "outputs": ["out"]}


def test_a_setup_that_uses_cuda_without_a_gpu_is_a_usage_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the setup would succeed")
    with pytest.raises(UsageError, match="tried to use CUDA on a machine without a GPU"):
        build_instance(cuda_only_setup, {}, 0, "cpu")


def test_a_cuda_build_without_a_driver_is_recognised_by_the_call_not_the_message(monkeypatch):
    """A CUDA build of torch on a driverless machine says "Found no NVIDIA driver": no "cuda" in it."""

    def no_driver():
        raise RuntimeError("Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU")

    monkeypatch.setattr(torch.cuda, "_lazy_init", no_driver)

    def setup(seed=0, device="cpu"):
        torch.cuda._lazy_init()  # what creating a tensor on "cuda" does first
        return {}

    with pytest.raises(UsageError, match="Found no NVIDIA driver") as raised:
        build_instance(setup, {}, 0, "cpu")
    assert "device` argument" in raised.value.hint
    assert torch.cuda._lazy_init is no_driver  # the watch is removed afterwards


def test_a_setup_bug_mentioning_cuda_is_still_the_setups_own_error():
    def setup(seed=0, device="cpu"):
        raise RuntimeError("my cuda-themed bug")  # never touched CUDA

    with pytest.raises(RuntimeError, match="my cuda-themed bug"):
        build_instance(setup, {}, 0, "cpu")


def test_infer_instance_from_the_original_template_signature():
    signature = parse_solve_signature('extern "C" void solve(float* in0, float* in1, float* out, int n) {}')
    instance = infer_instance(signature, {"n": 10}, seed=0, device="cpu")
    assert instance.outputs == ["out"]
    assert {name: instance.values[name].numel() for name in ("in0", "in1", "out")} == {"in0": 10, "in1": 10, "out": 10}
    assert "inferred from solve's signature" in instance.notes[0]
    with pytest.raises(UsageError, match="pass it as --n=VALUE"):
        infer_instance(signature, {}, seed=0, device="cpu")


def test_degenerate_inputs_are_named():
    from kernel_opt.solution.contract import ProblemInstance

    instance = ProblemInstance(
        values={"z": torch.zeros(4), "c": torch.full((4,), 2.0), "a": torch.arange(6.0), "r": torch.randn(6),
                "out": torch.zeros(4)},
        outputs=["out"], dims={},
    )
    warnings = "\n".join(degenerate_input_warnings(instance))
    assert "'z' is all zeros" in warnings and "'c' holds one value" in warnings and "'a' is an arange" in warnings
    assert "'r'" not in warnings and "'out'" not in warnings


SIGNATURE = parse_solve_signature(
    'extern "C" void solve(const float* x, const float4* v, int n, float alpha, double beta) {}'
)
PARAMETERS = {p.name: p for p in SIGNATURE.parameters}


def test_pointer_dtype_mismatch_is_refused_never_reinterpreted():
    with pytest.raises(SolutionError, match="expects float32 but tensor 'x' is float64") as caught:
        _pointer(PARAMETERS["x"], torch.zeros(4, dtype=torch.float64))
    assert caught.value.kind == "signature_mismatch"


def test_pointer_needs_a_tensor_on_the_gpu():
    with pytest.raises(SolutionError, match="is a pointer but its value is int"):
        _pointer(PARAMETERS["x"], 7)
    with pytest.raises(SolutionError, match="not on the GPU"):
        _pointer(PARAMETERS["x"], torch.zeros(4))


@pytest.mark.parametrize(
    "name, value, expected",
    [("n", 5, 5), ("n", 5.0, 5), ("n", torch.tensor(3), 3), ("alpha", 2, 2.0), ("beta", 0.5, 0.5)],
)
def test_scalars_bind_by_kind(name, value, expected):
    bound = _scalar(PARAMETERS[name], value)
    assert bound == expected and type(bound) is type(expected)


@pytest.mark.parametrize(
    "name, value, fragment",
    [("n", 2.5, "is an integer"), ("n", torch.zeros(3), "tensor of 3 elements"), ("alpha", "x", "got 'x'")],
)
def test_bad_scalars_are_refused(name, value, fragment):
    with pytest.raises(SolutionError, match=fragment):
        _scalar(PARAMETERS[name], value)
