"""The re-drawn weights check (check/integrity/redrawn_weights.py): what is re-drawn and how, where a ModelNew
holds each weight, and the real check on the CPU.

The known-wrong solutions it exists for live in reference/kernelbench_checks (a LayerNorm ModelNew that
never applies weight and bias, a GEMM epilogue that never adds a zero bias; tests/integration/test_fixture_corpus.py
runs them). The ModelNews here are plain torch, so a whole check takes a few seconds.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from kernel_opt.backends.modelnew.launcher import ModelNewLauncher, find_holders
from kernel_opt.check.correctness import CheckOptions, check_correctness
from kernel_opt.check.integrity import redrawn_weights
from kernel_opt.check.integrity.redrawn_weights import (
    RedrawnWeights,
    plan_draws,
    redraw,
    weight_kinds,
)
from kernel_opt.solution.backend import BuildOptions, WeightHolder

REPO = Path(__file__).resolve().parents[3]
CHECKS = REPO / "reference" / "kernelbench_checks"
LAYER_NORM = CHECKS / "problems" / "L1_layer_norm.py"
LAYER_NORM_DIMS = {"batch_size": 2, "features": 4, "dim1": 8, "dim2": 16}
DEMO = REPO / "demo" / "kernelbench"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def check(solution: Path, problem: Path, tmp_path: Path, dims=None, **options):
    return check_correctness(solution, problem, _backend(solution), "cpu", dims or {},
                             CheckOptions(seeds=1, **options), BuildOptions(), tmp_path / "build", "test")


def _backend(solution: Path) -> str:
    from kernel_opt.solution import registry

    return registry.detect(solution)


# --- how a weight is re-drawn ----------------------------------------------------------------------------


def test_a_constant_becomes_itself_plus_n_0_1_noise_at_its_own_scale():
    generator = torch.Generator().manual_seed(0)
    ones, how = redraw(torch.ones(4096), generator)
    assert how == "1 + N(0, 1)" and abs(float(ones.mean()) - 1) < 0.05 and 0.95 < float(ones.std()) < 1.05
    zeros, how = redraw(torch.zeros(64, 64), generator)
    assert how == "N(0, 1)" and zeros.shape == (64, 64) and 0.9 < float(zeros.std()) < 1.1
    negative, how = redraw(torch.full((4096,), -0.25), generator)
    assert how == "-0.25 + N(0, 1)" and abs(float(negative.mean()) + 0.25) < 0.05
    large, how = redraw(torch.full((4096,), 1000.0), generator)  # 1000 + N(0, 1) would hide within rtol = 1e-2
    assert how == "1000 + 1000 N(0, 1)" and 900 < float(large.std()) < 1100
    scalar, how = redraw(torch.tensor(2.0), generator)  # a one-element parameter is a constant
    assert scalar.shape == () and how == "2 + 2 N(0, 1)" and float(scalar) != 2.0
    half, _ = redraw(torch.ones(8, dtype=torch.float16), generator)
    assert half.dtype == torch.float16


def test_a_variance_stays_positive():
    generator = torch.Generator().manual_seed(0)
    variance, how = redraw(torch.ones(4096), generator, positive=True)
    assert how == "1 + |N(0, 1)|" and float(variance.min()) >= 1 and float(variance.std()) > 0.5
    tiny, how = redraw(torch.full((4096,), 1e-3), generator, positive=True)
    assert how == "0.001 + |N(0, 1)|" and (tiny > 0).all()


def test_a_varied_weight_gets_its_own_values_in_another_order():
    values = torch.rand(1000, generator=torch.Generator().manual_seed(1))
    again, how = redraw(values.reshape(10, 100), torch.Generator().manual_seed(2))
    assert how == "its own values in a random order" and again.shape == (10, 100)
    assert torch.equal(again.reshape(-1).sort().values, values.sort().values)  # same values: same range, same sign
    assert not torch.equal(again.reshape(-1), values)
    pair = torch.tensor([1.0, 2.0])
    for seed in range(4):  # a permutation that happens to keep the order is rolled
        assert torch.equal(redraw(pair, torch.Generator().manual_seed(seed))[0], torch.tensor([2.0, 1.0]))


def test_a_large_weight_is_re_drawn_in_blocks_on_its_device(monkeypatch):
    # Above WHOLE_DRAW_ELEMENTS the order is drawn per block (no host permutation as large as the weight);
    # here the limits are shrunk so that 1000 elements count as large: 15 blocks of 64 and a tail of 40.
    monkeypatch.setattr(redrawn_weights, "WHOLE_DRAW_ELEMENTS", 100)
    monkeypatch.setattr(redrawn_weights, "BLOCK_ELEMENTS", 64)
    values = torch.rand(1000, generator=torch.Generator().manual_seed(1))
    again, how = redraw(values.reshape(8, 125), torch.Generator().manual_seed(2))
    assert how == "its own values in a random order" and again.shape == (8, 125)
    assert torch.equal(again.reshape(-1).sort().values, values.sort().values)
    flat = again.reshape(-1)
    assert not torch.equal(flat[:960], values[:960]) and not torch.equal(flat[960:], values[960:])
    same, _ = redraw(values.reshape(8, 125), torch.Generator().manual_seed(2))
    assert torch.equal(same, again)  # every run draws the same order
    zeros, how = redraw(torch.zeros(1000), torch.Generator().manual_seed(3))
    assert how == "N(0, 1)" and zeros.dtype == torch.float32 and 0.9 < float(zeros.std()) < 1.1
    assert torch.equal(zeros, redraw(torch.zeros(1000), torch.Generator().manual_seed(3))[0])


def test_parameters_statistics_and_constant_buffers_are_re_drawn_and_structure_kept():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm1d(6)
            self.register_buffer("mask", torch.tril(torch.ones(6, 6)))
            self.register_buffer("shift", torch.zeros(6))
            self.scale = torch.nn.Parameter(torch.tensor(0.5))

    net = Net()
    kinds = weight_kinds(net)
    assert kinds == {"bn.weight": ("parameter", "BatchNorm1d"), "bn.bias": ("parameter", "BatchNorm1d"),
                     "bn.running_mean": ("statistic", "BatchNorm1d"), "bn.running_var": ("statistic", "BatchNorm1d"),
                     "bn.num_batches_tracked": ("buffer", "BatchNorm1d"), "mask": ("buffer", "Net"),
                     "shift": ("buffer", "Net"), "scale": ("parameter", "Net")}
    state = net.state_dict()
    weights = {key.replace(".", "_"): key for key in state}
    values = {key.replace(".", "_"): value for key, value in state.items()}
    draws, redrawn = plan_draws(values, weights, kinds, frozenset(), {})
    kept = {draw.key: draw.how for draw in draws if not draw.redrawn}
    assert set(redrawn) == {"bn_weight", "bn_bias", "bn_running_mean", "bn_running_var", "shift", "scale"}
    assert kept == {"bn.num_batches_tracked": "integer or empty: left as it is",
                    "mask": "a varied buffer that is no running statistic: fixed structure (a mask, an index table) a "
                            "solution may build in"}
    hows = {draw.key: draw.how for draw in draws if draw.redrawn}
    assert hows == {"bn.weight": "1 + N(0, 1)", "bn.bias": "N(0, 1)", "bn.running_mean": "N(0, 1)",
                    "bn.running_var": "1 + |N(0, 1)|", "shift": "N(0, 1)", "scale": "0.5 + N(0, 1)"}
    assert (redrawn["bn_running_var"] >= 1).all()  # a variance stays a variance
    assert (redrawn["bn_weight"] < 1).any() and (redrawn["bn_weight"] > 1).any()
    _, again = plan_draws(values, weights, kinds, frozenset(), {})
    assert all(torch.equal(redrawn[name], again[name]) for name in redrawn)  # the same values every run
    assert {draw.reaches for draw in draws if draw.redrawn} == {f"passed as {name!r} on each call"
                                                                 for name in redrawn}


def test_what_a_model_new_does_not_hold_is_re_drawn_only_where_it_is_a_constant():
    kinds = {"ln.weight": ("parameter", "LayerNorm"), "proj.weight": ("parameter", "Linear"),
             "gate": ("parameter", "Model")}
    values = {"ln_weight": torch.ones(8), "proj_weight": torch.randn(4, 8), "gate": torch.zeros(8)}
    weights = {"ln_weight": "ln.weight", "proj_weight": "proj.weight", "gate": "gate"}
    holders = {"ln_weight": WeightHolder("none"), "proj_weight": WeightHolder("none"),
               "gate": WeightHolder("ambiguous")}
    draws, redrawn = plan_draws(values, weights, kinds, frozenset(weights), holders)
    by_key = {draw.key: draw for draw in draws}
    assert set(redrawn) == {"ln_weight"}  # held nowhere, yet a constant: a ModelNew can only have built it in
    assert by_key["ln.weight"].reaches.startswith("nowhere: no tensor of ModelNew has its name")
    assert by_key["proj.weight"].how.startswith("kept: no tensor of ModelNew has its name or its seed-42 values")
    assert by_key["gate"].how == "kept: several tensors of ModelNew hold its seed-42 values and none has its name"


RENAMED_LAYER_NORM = """\
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        \"\"\"Honest: the weight and bias under names of its own, applied.\"\"\"

        def __init__(self, normalized_shape):
            super().__init__()
            self.shape = tuple(normalized_shape)
            self.gamma = nn.Parameter(torch.ones(self.shape))
            self.beta = nn.Parameter(torch.zeros(self.shape))

        def forward(self, x):
            return torch.nn.functional.layer_norm(x, self.shape, self.gamma, self.beta)
    """

# --- which tensor of a ModelNew holds which weight --------------------------------------------------------


def _built(module_class, *args):
    torch.manual_seed(42)
    return module_class(*args)


def test_holders_by_name_by_value_ambiguous_and_none():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = torch.nn.LayerNorm(8)
            self.proj = torch.nn.Linear(8, 4)
            self.bn1, self.bn2 = torch.nn.BatchNorm1d(4), torch.nn.BatchNorm1d(4)

    class Renamed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(8))  # ln.weight by value
            self.b = torch.nn.Parameter(torch.zeros(1, 8))  # ln.bias by value, another shape of the same numel
            self.proj = torch.nn.Linear(8, 4)  # by name
            self.g1, self.g2 = torch.nn.Parameter(torch.ones(4)), torch.nn.Parameter(torch.ones(4))  # which BN?

    model, renamed = _built(Model), _built(Renamed)
    keys = [key for key in model.state_dict() if not key.endswith("num_batches_tracked")]
    holders = find_holders(renamed, model, keys)
    assert holders["ln.weight"] == WeightHolder("by value", "w")
    assert holders["ln.bias"] == WeightHolder("by value", "b")
    assert holders["proj.weight"] == WeightHolder("by name", "proj.weight")
    assert holders["bn1.weight"] == holders["bn2.weight"] == WeightHolder("ambiguous")
    # running_var (ones) is a buffer: the two parameters of ones are no candidates once kinds are paired
    assert holders["bn1.running_var"] == WeightHolder("ambiguous")  # g1, g2 by value; none is a buffer
    assert holders["bn1.bias"] == WeightHolder("none")  # no tensor of zeros with 4 elements


def test_a_parameter_and_a_buffer_of_the_same_values_are_told_apart_by_kind():
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = torch.nn.BatchNorm1d(4)

    class Renamed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gamma = torch.nn.Parameter(torch.ones(4))
            self.register_buffer("var", torch.ones(4))

    holders = find_holders(_built(Renamed), _built(Model), ["bn.weight", "bn.running_var"])
    assert holders == {"bn.weight": WeightHolder("by value", "gamma"),
                       "bn.running_var": WeightHolder("by value", "var")}


def test_a_model_new_takes_re_drawn_weights_where_it_holds_them_and_gives_them_back(tmp_path):
    solution = write(tmp_path, "renamed.py", RENAMED_LAYER_NORM)
    launcher = ModelNewLauncher(solution, str(LAYER_NORM))
    holders = launcher.weight_holders(LAYER_NORM_DIMS, "cpu")
    assert holders == {"ln_weight": WeightHolder("by value", "gamma"), "ln_bias": WeightHolder("by value", "beta")}
    x = torch.randn(2, 4, 8, 16)
    values = {"x": x, "output": torch.empty_like(x)}

    def run() -> torch.Tensor:
        call = launcher.prepared(values, LAYER_NORM_DIMS, ["output"])
        call()
        call.deliver()
        return values["output"].clone()

    plain = run()
    weight = torch.full((4, 8, 16), 2.0)
    launcher.use_weights(LAYER_NORM_DIMS, "cpu", {"ln_weight": weight})
    assert torch.allclose(run(), 2 * plain, atol=1e-6)
    launcher.use_weights(LAYER_NORM_DIMS, "cpu", None)
    assert torch.equal(run(), plain)


# --- the real check (child process, CPU) -----------------------------------------------------------------

NO_AFFINE_LAYER_NORM = """\
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        \"\"\"Wrong: no place for the weight and bias at all; it normalises and stops.\"\"\"

        def __init__(self, normalized_shape):
            super().__init__()
            self.shape = tuple(normalized_shape)

        def forward(self, x):
            return torch.nn.functional.layer_norm(x, self.shape)
    """


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_an_honest_model_new_that_renames_its_weights_passes(tmp_path):
    report = check(write(tmp_path, "renamed.py", RENAMED_LAYER_NORM), LAYER_NORM, tmp_path, LAYER_NORM_DIMS)
    assert report.error is None and report.passed, report.cases
    result = RedrawnWeights.from_dict(report.integrity["redrawn_weights"])
    assert result.ran and [draw.reaches for draw in result.weights] == [
        "held by ModelNew's 'gamma', by value", "held by ModelNew's 'beta', by value"]
    assert all(output.passed for output in result.outputs) and result.alone == []
    # LayerNorm's ones and zeros are no blind spot here: the re-draw tests them, so no warning says they are
    assert not any("ln_weight" in warning or "ln_bias" in warning for warning in report.warnings), report.warnings


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_a_model_new_with_no_place_for_a_constant_weight_fails_naming_it(tmp_path):
    report = check(write(tmp_path, "no_affine.py", NO_AFFINE_LAYER_NORM), LAYER_NORM, tmp_path, LAYER_NORM_DIMS)
    assert report.error is None and report.verdict == "fail" and all(case.passed for case in report.cases)
    from kernel_opt.check.integrity.verdict import correctness_failures

    failures = correctness_failures(report)
    assert failures[0].startswith("output 'output' does not follow weight 'ln.weight' (LayerNorm parameter, "
                                  "1 everywhere at seed 42; nowhere: no tensor of ModelNew has its name")
    assert "re-drawn alone as 1 + N(0, 1)" in failures[0] and "normwise error" in failures[0]
    assert failures[1].startswith("output 'output' does not follow weight 'ln.bias'")
    assert report.to_dict()["redrawn_weights"]["redrawn"] == ["ln.weight", "ln.bias"]


BATCH_NORM_EVAL = """\
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        \"\"\"BatchNorm in inference mode: it reads its running statistics.\"\"\"

        def __init__(self, features):
            super().__init__()
            self.bn = nn.BatchNorm1d(features)
            self.bn.eval()

        def forward(self, x):
            return self.bn(x)

    batch_size = 16
    features = 12

    def get_inputs():
        return [torch.randn(batch_size, features)]

    def get_init_inputs():
        return [features]
    """

IGNORES_STATISTICS = """\
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        \"\"\"Wrong: applies weight and bias as if the running mean were 0 and the variance 1 (their start).\"\"\"

        def __init__(self, features):
            super().__init__()
            self.bn = nn.BatchNorm1d(features)

        def forward(self, x):
            return x / (1 + self.bn.eps) ** 0.5 * self.bn.weight + self.bn.bias
    """


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_a_running_statistic_the_solution_ignores_is_named(tmp_path):
    problem = write(tmp_path, "bn_eval.py", BATCH_NORM_EVAL)
    honest = write(tmp_path, "honest.py", BATCH_NORM_EVAL.split("    batch_size")[0].replace("class Model(",
                                                                                             "class ModelNew("))
    assert check(honest, problem, tmp_path / "honest").passed
    report = check(write(tmp_path, "wrong.py", IGNORES_STATISTICS), problem, tmp_path / "wrong")
    assert report.verdict == "fail" and all(case.passed for case in report.cases)
    result = RedrawnWeights.from_dict(report.integrity["redrawn_weights"])
    assert {item.key for item in result.alone} == {"bn.running_mean", "bn.running_var"}
    from kernel_opt.check.integrity.verdict import correctness_failures

    failures = correctness_failures(report)
    assert [sentence.split(" (")[0] for sentence in failures] == [
        "output 'output' does not follow weight 'bn.running_mean'",
        "output 'output' does not follow weight 'bn.running_var'"]
    assert "(BatchNorm1d statistic, 1 everywhere at seed 42; held by ModelNew's 'bn.running_var', by name): with it " \
           "re-drawn alone as 1 + |N(0, 1)|" in failures[1]
    assert {draw.key: draw.kind for draw in result.weights if draw.redrawn} == {
        "bn.weight": "parameter", "bn.bias": "parameter", "bn.running_mean": "statistic",
        "bn.running_var": "statistic"}


OFFSET_PROBLEM = """\
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        \"\"\"Linear with its bias started at zeros, then a per-feature offset kept as a buffer of zeros.\"\"\"

        def __init__(self, features):
            super().__init__()
            self.linear = nn.Linear(features, features)
            nn.init.zeros_(self.linear.bias)
            self.register_buffer("offset", torch.zeros(features))

        def forward(self, x):
            return self.linear(x) + self.offset

    batch_size = 8
    features = 16

    def get_inputs():
        return [torch.rand(batch_size, features)]

    def get_init_inputs():
        return [features]
    """

IGNORES_OFFSET_AND_BIAS = """\
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        \"\"\"Wrong: never adds the zero buffer, and drops the Linear's bias.\"\"\"

        def __init__(self, features):
            super().__init__()
            self.linear = nn.Linear(features, features)
            self.register_buffer("offset", torch.zeros(features))

        def forward(self, x):
            return x @ self.linear.weight.t()
    """


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_a_constant_buffer_and_a_linear_bias_the_solution_ignores_are_named(tmp_path):
    problem = write(tmp_path, "offset.py", OFFSET_PROBLEM)
    honest = write(tmp_path, "honest.py", OFFSET_PROBLEM.split("    batch_size")[0].replace("class Model(",
                                                                                          "class ModelNew("))
    passed = check(honest, problem, tmp_path / "honest")
    assert passed.passed and sorted(passed.integrity["redrawn_weights"]["redrawn"]) == ["linear.bias",
                                                                                        "linear.weight", "offset"]
    report = check(write(tmp_path, "wrong.py", IGNORES_OFFSET_AND_BIAS), problem, tmp_path / "wrong")
    assert report.verdict == "fail" and all(case.passed for case in report.cases)  # at seed 42 both are zeros
    from kernel_opt.check.integrity.verdict import correctness_failures

    failures = {sentence.split(" (")[0]: sentence for sentence in correctness_failures(report)}
    assert sorted(failures) == ["output 'output' does not follow weight 'linear.bias'",
                                "output 'output' does not follow weight 'offset'"]
    assert "(Model buffer, 0 everywhere at seed 42; held by ModelNew's 'offset', by name): with it re-drawn alone " \
           "as N(0, 1)" in failures["output 'output' does not follow weight 'offset'"]


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_a_plain_ref_py_is_not_re_drawn(tmp_path):
    vector_add = REPO / "reference" / "vector_add"
    report = check_correctness(vector_add / "good" / "vector_add.py", vector_add / "ref.py", "triton", "cpu",
                               {"n": 256}, CheckOptions(seeds=1), BuildOptions(), tmp_path / "build", "test")
    assert report.passed and "redrawn_weights" not in report.to_dict()


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_a_model_without_weights_says_there_is_nothing_to_re_draw(tmp_path):
    problems = REPO / "tests" / "fixtures" / "kernelbench"
    report = check(problems / "solutions" / "3_Sum_reduction.py", problems / "problems" / "3_Sum_reduction.py",
                   tmp_path, {"batch_size": 4})
    assert report.passed
    assert report.integrity["redrawn_weights"] == {
        "ran": False, "note": "not run: the Model has no floating-point parameter or buffer to re-draw",
        "dims": report.integrity["redrawn_weights"]["dims"], "seed": 2, "weights": [], "redrawn": [], "outputs": [],
        "alone": []}


@pytest.mark.slow  # the correctness check end to end, in its child process
@pytest.mark.parametrize("name, dims", [
    ("L2_06_group_norm_silu", {"batch_size": 2, "channels": 8, "height": 4, "width": 4, "num_groups": 2}),
    ("L2_05_residual_add_layer_norm", {"batch_size": 4, "features": 64}),
])
def test_the_demo_s_honest_triton_model_news_follow_their_re_drawn_weights(name, dims, tmp_path):
    report = check(DEMO / "v0" / f"{name}.py", DEMO / "problems" / f"{name}.py", tmp_path, dims)
    assert report.error is None and report.passed, report.cases
    result = RedrawnWeights.from_dict(report.integrity["redrawn_weights"])
    assert result.ran and all(draw.redrawn and draw.how == "its own values in a random order"
                              for draw in result.weights)
