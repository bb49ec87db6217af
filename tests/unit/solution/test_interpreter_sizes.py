"""solution/interpreter_sizes.py: a problem shipped at GPU sizes is checked on the CPU at sizes the
interpreter takes."""

from __future__ import annotations

import textwrap

import pytest
from conftest import REPO_ROOT

from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.solution.interpreter_sizes import (
    INIT_SIZE_FLOOR,
    INPUT_SIZE_FLOOR,
    OUT_OF_REACH_FACTOR,
    Work,
    forward_work,
    interpreter_sizes,
)
from kernel_opt.solution.kernelbench_problem import problem_for

L1NORM_AT_STOCK_SIZE = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x / torch.mean(torch.abs(x), dim=1, keepdim=True)

batch_size = 32768
dim = 65535

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
"""

# A Linear whose in_features must stay a multiple of 8 (the Model refuses others): halving stops where it would break.
STRICT_LINEAR = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        assert in_features % 8 == 0, "in_features must be a multiple of 8"
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)

batch_size = 8
in_features = 16
out_features = 4

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features]
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


# The level-2 Gemm_BatchNorm problem's shape: the Linear above at 16384 x 4096 x 4096, with a BatchNorm after it.
GEMM_BATCHNORM_AT_STOCK_SIZE = (
    STRICT_LINEAR.replace('        assert in_features % 8 == 0, "in_features must be a multiple of 8"\n', "")
    .replace("self.linear = nn.Linear(in_features, out_features)",
             "self.gemm = nn.Linear(in_features, out_features)\n        self.batch_norm = nn.BatchNorm1d(out_features)")
    .replace("return self.linear(x)", "return torch.relu(self.batch_norm(self.gemm(x)))")
    .replace("batch_size = 8\nin_features = 16\nout_features = 4",
             "batch_size = 16384\nin_features = 4096\nout_features = 4096"))


def test_a_matmul_is_made_small_in_its_flops_and_in_the_size_only_its_weight_and_output_have(tmp_path):
    """At 1024 x 1024 inputs a 1024 x 1024 x 4096 matmul took the interpreter 30-105 s a call: out_features counts."""
    path = write(tmp_path, "gemm_bn.py", GEMM_BATCHNORM_AT_STOCK_SIZE)
    problem = problem_for(path)
    assert problem.outline.input_sizes == ("batch_size", "in_features")
    assert problem.outline.shape_sizes == ("batch_size", "in_features", "out_features")
    dims, note = interpreter_sizes(path, {})
    # each size halved in turn: the batch stays the largest, as in the run (16384 against 4096)
    assert dims == {"batch_size": 1024, "in_features": 256, "out_features": 512}
    assert forward_work(problem, dims) == Work(1024 * 512, 2 * 1024 * 256 * 512) == Work(1 << 19, 1 << 28)
    assert forward_work(problem, {"batch_size": 1024, "in_features": 512, "out_features": 512}).flops == 1 << 29
    assert note.startswith("checked under the interpreter at batch_size=1024, in_features=256, out_features=512, not "
                           "the run's batch_size=16384, in_features=4096, out_features=4096 (one forward: largest "
                           "tensor 524,288 elements, 268 MFLOP here, largest tensor 67,108,864 elements, "
                           "550 GFLOP there)")


def test_each_size_is_halved_in_turn_until_the_largest_input_fits(tmp_path):
    path = write(tmp_path, "l1norm.py", L1NORM_AT_STOCK_SIZE)
    dims, note = interpreter_sizes(path, {"batch_size": 32768, "dim": 65535})
    assert dims == {"batch_size": 1024, "dim": 1023}  # 65535 -> 32767 -> ... -> 1023 in turn with the batch
    assert forward_work(problem_for(path), dims) == Work(1024 * 1023, 0)  # input and output alike; no matmul
    assert note == ("checked under the interpreter at batch_size=1024, dim=1023, not the run's batch_size=32768, "
                    "dim=65535 (one forward: largest tensor 1,047,552 elements here, largest tensor 2,147,450,880 "
                    "elements there); on a GPU the check runs the run's own sizes")
    assert interpreter_sizes(path, {})[0] == {"batch_size": 1024, "dim": 1023}  # the file's own sizes, the same


AVG_POOL_1D_AT_STOCK_SIZE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size, stride, padding):
        super().__init__()
        self.pool = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return self.pool(x)


batch_size = 64
in_channels = 128
input_length = 65536
kernel_size = 8
stride = 1
padding = 4


def get_inputs():
    return [torch.rand(batch_size, in_channels, input_length)]


def get_init_inputs():
    return [kernel_size, stride, padding]
"""


def test_a_long_row_stays_long_against_the_batch_and_channels(tmp_path):
    """Halving the largest size first made this 64 x 64 x 128: one 1024-wide block a row, where the run has 64."""
    dims, note = interpreter_sizes(write(tmp_path, "avg_pool_1d.py", AVG_POOL_1D_AT_STOCK_SIZE), {})
    assert (dims["batch_size"], dims["in_channels"], dims["input_length"]) == (8, 16, 4096)  # each halved 3-4 times
    assert (dims["kernel_size"], dims["padding"]) == (8, 4)  # the operation's own arguments stay
    assert note.startswith("checked under the interpreter at batch_size=8, in_channels=16, input_length=4096, not "
                           "the run's batch_size=64, in_channels=128, input_length=65536")


def test_correctness_check_on_the_cpu_runs_a_gpu_sized_problem_at_the_interpreter_s_sizes(tmp_path, capsys):
    """By hand as in evaluate: not an hour under the interpreter ending in a timeout blamed on the solution."""
    import json

    from kernel_opt.commands.correctness_check import main

    problem = write(tmp_path, "avg_pool_1d.py", AVG_POOL_1D_AT_STOCK_SIZE)
    solution = write(tmp_path, "identity.py", AVG_POOL_1D_AT_STOCK_SIZE + "\n\nclass ModelNew(Model):\n    pass\n")
    code = main([str(solution), "--ref", str(problem), "--output-dir", str(tmp_path / "out"), "--device", "cpu",
                 "--seeds", "1"])
    record = json.loads((tmp_path / "out" / "correctness.json").read_text())
    assert code == 0 and record["sizes_note"].startswith("checked under the interpreter at batch_size=8, ")
    assert record["cases"][0]["dims"]["input_length"] == 4096
    assert "\nsizes: checked under the interpreter at batch_size=8," in capsys.readouterr().out
    assert "| sizes | checked under the interpreter at" in (tmp_path / "out" / "correctness.md").read_text()


def test_sizes_that_fit_are_kept_and_a_ref_py_is_left_alone(tmp_path):
    path = write(tmp_path, "l1norm.py", L1NORM_AT_STOCK_SIZE)
    assert interpreter_sizes(path, {"batch_size": 16, "dim": 300}) == ({"batch_size": 16, "dim": 300}, None)
    vector_add = REPO_ROOT / "reference" / "vector_add" / "ref.py"
    assert interpreter_sizes(vector_add, {"N": 1 << 30}) == ({"N": 1 << 30}, None)


def test_sizes_none_of_which_can_be_halved_are_kept_and_said_so(tmp_path):
    path = write(tmp_path, "linear.py", STRICT_LINEAR.replace("batch_size = 8", "batch_size = 1")
                 .replace("in_features = 16", "in_features = 8"))
    dims, note = interpreter_sizes(path, {}, limit=16)
    assert dims == {}
    assert note == ("checked under the interpreter at the run's own sizes (largest tensor 32 elements, 64 FLOP): "
                    "the Model accepts none of them halved")


def test_a_size_the_model_rejects_is_never_chosen(tmp_path):
    path = write(tmp_path, "linear.py", STRICT_LINEAR)
    dims, note = interpreter_sizes(path, {}, limit=16)
    # 8x16 input -> 8x8 -> 4x8 -> 2x8; in_features 4 is refused, out_features 4 is under the floor, and an input size
    # stops at 2 (INPUT_SIZE_FLOOR: a batch of 1 leaves nothing across it to check)
    assert dims == {"batch_size": INPUT_SIZE_FLOOR, "in_features": 8, "out_features": 4}
    assert note.startswith("checked under the interpreter at batch_size=2, in_features=8, not the run's batch_size=8, "
                           "in_features=16 (one forward: largest tensor 32 elements")


CONV_AT_STOCK_SIZE = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride)

    def forward(self, x):
        return torch.relu(self.conv(x))

batch_size = 64
in_channels = 64
out_channels = 128
kernel_size = 3
stride = 2
height = width = 256

def get_inputs():
    return [torch.rand(batch_size, in_channels, 256, 256)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride]
"""


def test_a_models_small_arguments_are_kept_so_the_check_keeps_its_operation(tmp_path):
    """kernel_size 3 and stride 2 stay; out_channels, which sets the output's size, comes down to the floor at most."""
    path = write(tmp_path, "conv.py", CONV_AT_STOCK_SIZE)
    dims, _ = interpreter_sizes(path, {})
    assert dims["kernel_size"] == 3 and dims["stride"] == 2
    assert dims["out_channels"] >= INIT_SIZE_FLOOR and dims["batch_size"] < 64
    assert forward_work(problem_for(path), dims).fits(1 << 20, 1 << 28)


# KernelBench level1 100_HingeLoss: its predictions' row length is a tuple, and the targets broadcast against it, so
# neither batch_size nor input_shape can be halved alone; halved together they keep the Model's operation.
HINGE_AT_STOCK_SIZE = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))

batch_size = 32768
input_shape = (32768,)
dim = 1

def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]

def get_init_inputs():
    return []
"""

# A Model that takes only its own sizes: nothing can be halved, and at those sizes the interpreter cannot check it.
FIXED_SIZE = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        if tuple(x.shape) != (16384, 65536):
            raise ValueError("this model takes one size")
        return x * 2

batch_size = 16384
dim = 65536

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
"""


def test_a_tuple_size_is_halved_and_sizes_that_must_stay_equal_are_halved_together(tmp_path):
    path = write(tmp_path, "hinge.py", HINGE_AT_STOCK_SIZE)
    dims, note = interpreter_sizes(path, {})
    assert dims == {"batch_size": 1024, "input_shape": (1024,)}
    assert note.startswith("checked under the interpreter at batch_size=1024, input_shape=(1024,), not the run's "
                           "batch_size=32768, input_shape=(32768,)")
    problem = problem_for(path)
    assert problem.outline.tuple_sizes == {"input_shape": (32768,)}
    assert problem.sizes({"input_shape": [512]})["input_shape"] == (512,)  # as a record read from JSON gives it


def test_a_problem_no_halving_brings_near_the_interpreter_is_refused(tmp_path):
    path = write(tmp_path, "fixed.py", FIXED_SIZE)
    with pytest.raises(EnvironmentFault) as raised:
        interpreter_sizes(path, {})
    error = raised.value
    assert error.kind == "too_large_for_interpreter" and error.exit_code == 4
    assert error.message == ("too large for the CPU interpreter: at the smallest sizes the Model accepts "
                             "(batch_size=16384, dim=65536) one forward holds largest tensor 1,073,741,824 elements, "
                             f"over {OUT_OF_REACH_FACTOR}x what the interpreter checks in seconds")
    assert "do not edit the run's ref.py" in error.hint


# KernelBench level2 15_ConvTranspose3d_BatchNorm_Subtract writes its spatial sizes in one tuple assignment.
CONV3D_SPATIAL_IN_ONE_LINE = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.batch_norm = nn.BatchNorm3d(out_channels)

    def forward(self, x):
        x = self.batch_norm(self.conv_transpose(x))
        return x - torch.mean(x, dim=(2, 3, 4), keepdim=True)

batch_size = 16
in_channels = 16
out_channels = 32
depth, height, width = 16, 32, 32
kernel_size = 3
stride = 2
padding = 1

def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
"""


def test_sizes_assigned_together_are_sizes_halved_and_set_like_the_others(tmp_path):
    """A fresh agent's CPU check of this problem shrank batch and channels to 1 around spatial sizes it could not
    see, and `--depth=5` was refused."""
    path = write(tmp_path, "conv3d.py", CONV3D_SPATIAL_IN_ONE_LINE)
    problem = problem_for(path)
    assert problem.outline.input_sizes == ("batch_size", "in_channels", "depth", "height", "width")
    assert problem.module(problem.sizes({"depth": 5})).depth == 5
    dims, _ = interpreter_sizes(path, {})
    assert (dims["batch_size"], dims["depth"], dims["height"], dims["width"]) == (8, 8, 8, 16)
    shapes, _ = problem.derived_shapes({})
    assert shapes[0] == {"batch_size": 8, "in_channels": 8, "depth": 8, "height": 16, "width": 16}


# A Model that says where it ran: a size written as a tuple counts toward the real-run limit, so this one, 4 x 2^20
# elements, is tried on PyTorch's meta device (its first check had filled a 32768 x 32768 tensor on the CPU).
WHERE_IT_RAN = """\
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        if x.device.type == "cpu":
            raise ValueError("ran on the CPU")
        return x * 2

batch_size = 4
input_shape = (1048576,)

def get_inputs():
    return [torch.rand(batch_size, *input_shape)]

def get_init_inputs():
    return []
"""


def test_a_size_written_as_a_tuple_counts_toward_running_the_model_for_real(tmp_path):
    problem = problem_for(write(tmp_path, "where.py", WHERE_IT_RAN))
    assert problem.meta_failure(problem.sizes({"input_shape": [1048576]})) is None  # shapes only: nothing was filled
    assert problem.meta_failure(problem.sizes({"input_shape": [2]})) == "ValueError: ran on the CPU"
