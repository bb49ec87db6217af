"""The tampering guard (run/tampering.py): every replaced timing or checking primitive is named, nothing else."""

import time

import pytest
import torch

from kernel_opt.core.errors import ExitCode, SolutionError
from kernel_opt.run.tampering import (
    GUARDED_PRIMITIVES,
    MISSING,
    PRECISION_SETTINGS,
    PrimitiveGuard,
    replaced,
    snapshot,
)


def test_a_snapshot_of_an_untouched_process_is_stable_and_complete():
    before = snapshot()
    assert replaced(before, snapshot()) == []
    # Every primitive exists in this torch (CPU build): a typo would silently guard nothing.
    assert [name for name, value in before.items() if value is MISSING] == []
    assert len(before) == len(GUARDED_PRIMITIVES) + 2 + len(PRECISION_SETTINGS) + 1  # modes, settings, precision


@pytest.mark.parametrize("owner, attribute, name", [
    (torch.cuda.Event, "elapsed_time", "torch.cuda.Event.elapsed_time"),
    (torch.cuda.Event, "record", "torch.cuda.Event.record"),
    (torch.cuda, "synchronize", "torch.cuda.synchronize"),
    (torch.cuda, "Event", "torch.cuda.Event"),
    (torch.cuda.CUDAGraph, "replay", "torch.cuda.CUDAGraph.replay"),
    (time, "perf_counter", "time.perf_counter"),
    (torch, "allclose", "torch.allclose"),
    (torch.Tensor, "fill_", "torch.Tensor.fill_"),
    (torch.Tensor, "__torch_function__", "torch.Tensor.__torch_function__"),
])
def test_a_replaced_primitive_is_named(monkeypatch, owner, attribute, name):
    guard = PrimitiveGuard()
    monkeypatch.setattr(owner, attribute, lambda *args, **kwargs: 0.001)
    with pytest.raises(SolutionError) as caught:
        guard.verify("loading the solution")
    error = caught.value
    assert (error.kind, error.exit_code) == ("tampering", ExitCode.SOLUTION_FAULT)
    assert error.message.startswith(f"the solution replaced {name} (found after loading the solution)")


def test_a_torch_function_mode_left_on_the_stack_is_tampering():
    """A lazy output can hide in a mode that runs the skipped work when the checker first touches a tensor."""
    guard = PrimitiveGuard()
    mode = torch.overrides.TorchFunctionMode()
    mode.__enter__()
    try:
        with pytest.raises(SolutionError, match="^the solution left a torch function mode active \\(found after the "
                                                "solution's call\\)"):
            guard.verify("the solution's call")
    finally:
        mode.__exit__(None, None, None)
    guard.verify("the mode was popped")  # back to the snapshot: nothing to report


def test_turning_tf32_on_for_the_process_is_tampering():
    """It would make the reference itself TF32, and the allowed error with it."""
    guard = PrimitiveGuard()
    before = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = not before[0]
    try:
        with pytest.raises(SolutionError) as caught:
            guard.verify("loading the solution")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before[0]
        torch.set_float32_matmul_precision(before[1])
    assert caught.value.message.startswith("the solution changed torch.backends.cuda.matmul.allow_tf32")
    guard.verify("restoring it")


def test_several_replacements_are_all_named_and_the_culprit_can_be_the_other_version(monkeypatch):
    guard = PrimitiveGuard(runtime_modules=("json", "no_such_module_at_all"))  # a missing one is not an error
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)
    with pytest.raises(SolutionError) as caught:
        guard.verify("loading the --against version", who="the --against version")
    assert caught.value.message.startswith("the --against version replaced time.perf_counter, torch.cuda.synchronize "
                                           "(found after loading the --against version)")


def test_replaced_compares_objects_by_identity_and_depths_by_value():
    same, other = object(), object()
    assert replaced({"a": same, "depth": 0}, {"a": same, "depth": 0}) == []
    assert replaced({"a": same, "depth": 0}, {"a": other, "depth": 1}) == ["a", "depth"]
    assert replaced({"a": same}, {}) == ["a"]  # removed counts as replaced
    assert replaced({"m": same, "m.f": same, "mf": same}, {"m": other, "m.f": other, "mf": other}) == ["m", "mf"]
