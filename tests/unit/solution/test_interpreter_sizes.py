"""solution/interpreter_sizes.py: a problem shipped at GPU sizes is checked on the CPU at sizes the
interpreter takes."""

from __future__ import annotations

import textwrap

from conftest import REPO_ROOT

from kernel_opt.solution.interpreter_sizes import interpreter_sizes, largest_input
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


def test_the_largest_size_is_halved_first_until_the_largest_input_fits(tmp_path):
    path = write(tmp_path, "l1norm.py", L1NORM_AT_STOCK_SIZE)
    dims, note = interpreter_sizes(path, {"batch_size": 32768, "dim": 65535})
    assert dims == {"batch_size": 1024, "dim": 1023}  # 65535 -> 32767 -> ... -> 1023 alternating with the batch
    assert largest_input(problem_for(path), dims) == 1024 * 1023 <= 1 << 20
    assert note == ("checked under the interpreter at batch_size=1024, dim=1023, not the run's batch_size=32768, "
                    "dim=65535 (get_inputs()'s largest tensor: 1,047,552 elements here, 2,147,450,880 there); "
                    "evaluate on a GPU checks the run's sizes")
    assert interpreter_sizes(path, {})[0] == {"batch_size": 1024, "dim": 1023}  # the file's own sizes, the same


def test_sizes_that_fit_are_kept_and_a_ref_py_is_left_alone(tmp_path):
    path = write(tmp_path, "l1norm.py", L1NORM_AT_STOCK_SIZE)
    assert interpreter_sizes(path, {"batch_size": 16, "dim": 300}) == ({"batch_size": 16, "dim": 300}, None)
    vector_add = REPO_ROOT / "reference" / "vector_add" / "ref.py"
    assert interpreter_sizes(vector_add, {"N": 1 << 30}) == ({"N": 1 << 30}, None)


def test_a_size_the_model_rejects_is_never_chosen(tmp_path):
    path = write(tmp_path, "linear.py", STRICT_LINEAR)
    dims, note = interpreter_sizes(path, {}, limit=16)
    assert dims == {"batch_size": 2, "in_features": 8}  # 8x16 -> 8x8 -> 4x8 -> 2x8 (=16); in_features 4 is refused
    assert note.startswith("checked under the interpreter at batch_size=2, in_features=8, not the run's batch_size=8, "
                           "in_features=16")
