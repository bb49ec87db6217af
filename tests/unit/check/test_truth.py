"""The float64 truth as the memory plan fits it (check/truth.py), on the CPU with made-up free memory.

A truth computed in row chunks equals the one computed in one run; the probe refuses a reference
whose rows depend on each other (and the truth is then missing, with the reason); a sample of
rows is judged as a sample; a KernelBench problem file offers its forward inputs as rows, and its
weights are never cut.
"""

import pytest
import torch

from kernel_opt.check import memory_plan, truth
from kernel_opt.check.chunked import SampledTruth
from kernel_opt.check.memory_plan import Budget
from kernel_opt.check.tolerance import Expectation, TolerancePolicy, expect, judge
from kernel_opt.solution.contract import load_reference


def linear_softmax(x, w, output, **_):
    """Rows of x are independent: output row i reads x row i and all of w."""
    output.copy_(torch.softmax(x @ w, dim=1))


def batch_centred(x, output, **_):
    """Every row depends on every other one (the column means)."""
    output.copy_(x - x.mean(dim=0, keepdim=True))


def case(rows=64, columns=24, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, columns, generator=generator)
    w = torch.randn(columns, columns, generator=generator)
    return {"x": x, "w": w, "output": torch.empty(rows, columns)}


def free_memory(monkeypatch, device_bytes: int, host_bytes: int | None = None, on_gpu: bool = False):
    """What memory_budget reports from now on; no headroom, so the made-up numbers are the plan's to use."""
    monkeypatch.setattr(memory_plan, "headroom", lambda total: 0)
    budget = Budget(device_bytes, device_bytes, host_bytes, on_gpu=on_gpu)
    monkeypatch.setattr(truth, "memory_budget", lambda device: budget)


def sizes_of(values, outputs, row_names):
    rows, sliced = truth.output_rows(values, outputs, row_names)
    return truth.truth_sizes(values, outputs, sliced, rows, None)


def test_a_truth_in_row_chunks_equals_the_truth_in_one_run(monkeypatch):
    values = case()
    whole = truth.float64_truth(linear_softmax, {}, values, ["output"], {}, ("x",))
    assert whole.plan is None  # one run, kept where it ran
    sizes = sizes_of(values, ["output"], ("x",))
    free_memory(monkeypatch, sizes.outputs_float64 + sizes.rows_run(20))  # 20 rows of 64 at a time
    expected = {"output": torch.empty_like(values["output"])}
    linear_softmax(values["x"], values["w"], expected["output"])
    chunked = truth.float64_truth(linear_softmax, {}, values, ["output"], expected, ("x",))
    assert chunked.plan.startswith("the float64 truth in 4 row chunks of 20 of 64 rows (")
    assert chunked.values["output"].dtype == torch.float64
    torch.testing.assert_close(chunked.values["output"], whole.values["output"], rtol=1e-14, atol=0)


def test_the_weights_are_never_cut_even_when_a_dimension_matches_the_rows(monkeypatch):
    values = case(rows=24, columns=24)  # w is 24 x 24 too: only the named row arguments are sliced
    assert truth.output_rows(values, ["output"], ("x",)) == (24, ["x"])
    sizes = sizes_of(values, ["output"], ("x",))
    free_memory(monkeypatch, sizes.outputs_float64 + sizes.rows_run(5))
    expected = {"output": torch.empty(24, 24)}
    linear_softmax(values["x"], values["w"], expected["output"])
    chunked = truth.float64_truth(linear_softmax, {}, values, ["output"], expected, ("x",))
    assert "row chunks of 5 of 24 rows" in chunked.plan
    reference = torch.softmax(values["x"].double() @ values["w"].double(), dim=1)
    torch.testing.assert_close(chunked.values["output"], reference, rtol=1e-14, atol=0)


def test_rows_that_depend_on_each_other_are_never_chunked(monkeypatch):
    values = {"x": torch.randn(64, 8), "output": torch.empty(64, 8)}
    sizes = sizes_of(values, ["output"], ("x",))
    free_memory(monkeypatch, sizes.outputs_float64 + sizes.rows_run(20))
    expected = {"output": torch.empty(64, 8)}
    batch_centred(values["x"], expected["output"])
    with pytest.raises(truth.TruthUnavailable, match="rows 0-19 computed alone differ from the same rows of the "
                                                     "whole run .* depend on each other"):
        truth.float64_truth(batch_centred, {}, values, ["output"], expected, ("x",))


def test_an_attempt_that_runs_out_of_memory_gives_way_and_the_last_one_leaves_no_truth(monkeypatch):
    """Nothing is planned to fit, so one run is tried all the same; its allocation fails (a float64 tensor of the
    size asked for): no truth, with the reason, and nobody is blamed."""
    def refuses_float64(x, output, **_):
        if x.dtype == torch.float64:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 12.00 GiB. GPU 0 has a total "
                                         "capacity of 79.19 GiB of which 3.12 GiB is free.")
        output.copy_(x * 2)

    values = {"x": torch.randn(64, 8), "output": torch.empty(64, 8)}
    free_memory(monkeypatch, 100)
    expectation = expect(refuses_float64, TolerancePolicy(), {}, values, ["output"])  # a ref.py: no row arguments
    assert expectation.truth is None
    assert expectation.truth_missing == ("no way of computing it fits in memory: whole: OutOfMemoryError: CUDA out "
                                         "of memory. Tried to allocate 12.00 GiB. GPU 0 has a total capacity of "
                                         "79.19 GiB of which 3.12 GiB is free.")
    comparison, rule = judge("output", values["x"] * 2, expectation, TolerancePolicy())
    assert comparison.passed and rule.source.startswith("dtype default (no float64 truth: no way of computing it")


def test_a_crowded_gpu_without_host_room_takes_a_sample_and_judges_it(monkeypatch):
    values = case(rows=60)
    sizes = sizes_of(values, ["output"], ("x",))
    free_memory(monkeypatch, sizes.rows_run(6) + sizes.outputs_float64 // 10 + sizes.case_reserve, on_gpu=True)
    expected = {"output": torch.empty(60, 24)}
    linear_softmax(values["x"], values["w"], expected["output"])
    planned = truth.float64_truth(linear_softmax, {}, values, ["output"], expected, ("x",),
                                  transient_bytes=sizes.reference_transient)
    sample = planned.values["output"]
    assert isinstance(sample, SampledTruth) and planned.sample and sample.rows_covered < 60
    assert planned.plan.startswith(f"the float64 truth of a sample of {sample.rows_covered} of 60 rows in 3 pieces")
    count = sample.pieces[0][1]
    assert [(first, end) for first, end, _ in sample.pieces] == [(0, count), ((60 - count) // 2, (60 - count) // 2
                                                                  + count), (60 - count, 60)]
    expectation = Expectation(expected, planned.values, truth_plan=planned.plan)
    honest = torch.softmax(values["x"].double() @ values["w"].double(), dim=1).float()
    assert judge("output", honest, expectation, TolerancePolicy())[0].passed
    wrong = honest.clone()
    wrong[count + 1, 0] += 0.01  # a row outside the sample
    assert not judge("output", wrong, expectation, TolerancePolicy())[0].passed


KERNELBENCH_SOFTMAX = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x):
        return torch.softmax(self.linear(x), dim=1)


batch_size = 48
features = 16


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
'''


def test_a_kernelbench_model_offers_its_forward_inputs_as_rows_and_chunks_equal_one_run(tmp_path, monkeypatch):
    path = tmp_path / "linear_softmax.py"
    path.write_text(KERNELBENCH_SOFTMAX)
    reference = load_reference(path)
    instance = reference.setup(seed=0, device="cpu")
    values, outputs = instance["inputs"], instance["outputs"]
    assert reference.row_arguments({}) == ("x",) and set(values) == {"x", "linear_weight", "linear_bias", "output"}
    whole = expect(reference.reference, TolerancePolicy(), {}, values, outputs, reference.row_arguments({}))
    sizes = sizes_of(values, outputs, ("x",))
    free_memory(monkeypatch, sizes.outputs_float64 + sizes.rows_run(10))
    chunked = expect(reference.reference, TolerancePolicy(), {}, values, outputs, reference.row_arguments({}))
    assert whole.truth_plan is None and "5 row chunks of 10 of 48 rows" in chunked.truth_plan
    torch.testing.assert_close(chunked.truth["output"], whole.truth["output"], rtol=1e-14, atol=0)
    assert torch.equal(chunked.reference["output"], whole.reference["output"])
