"""A problem's kernel family, from its name or from the operations its reference computes (read, never run)."""

import pytest
from conftest import FIXTURES_DIR, REFERENCE_DIR, REPO_ROOT

from kernel_opt.solution.families import kernel_family, reference_family

KERNELBENCH_DEMO = REPO_ROOT / "demo" / "kernelbench" / "problems"


@pytest.mark.parametrize("path, family, operations", [
    (REFERENCE_DIR / "vector_add" / "ref.py", "elementwise", ("add",)),
    (REFERENCE_DIR / "softmax" / "ref.py", "row_reduction", ("softmax",)),
    (REFERENCE_DIR / "layernorm" / "ref.py", "row_reduction", ("layer_norm",)),
    (REFERENCE_DIR / "matmul" / "ref.py", "matmul_like", ("matmul",)),
    (REFERENCE_DIR / "kernelbench" / "problems" / "19_ReLU.py", "elementwise", ("relu",)),
    (REFERENCE_DIR / "kernelbench" / "problems" / "12_Gemm_Multiply_LeakyReLU.py", "matmul_like", ("Linear", "gemm")),
    (KERNELBENCH_DEMO / "L2_04_silu_gate_clamp.py", "elementwise", ("clamp", "silu")),
    (KERNELBENCH_DEMO / "L1_01_rms_norm.py", "row_reduction", ("mean",)),  # x.pow(2).mean(dim=-1): per row
    (KERNELBENCH_DEMO / "L1_05_max_pool2d_large_window.py", "stencil", ("MaxPool2d",)),
    (KERNELBENCH_DEMO / "L1_06_reverse_cumsum.py", "scan", ("cumsum",)),
    (KERNELBENCH_DEMO / "L2_03_causal_attention_fp16.py", "matmul_like", ("matmul",)),
    (FIXTURES_DIR / "kernelbench" / "problems" / "3_Sum_reduction.py", "row_reduction", ("sum",)),
])
def test_the_family_of_what_a_reference_computes(path, family, operations):
    evidence = reference_family(path)
    assert (evidence.family, evidence.operations) == (family, operations)
    assert evidence.source == f"the reference calls {', '.join(operations)}"


MIN_GPT_NEW_GELU = '''
import math
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


batch_size = 8192
dim = 8192


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
'''


def test_kernelbench_88_min_gpt_new_gelu_is_elementwise(tmp_path):
    """The agent trial's problem: its reference is a tanh and a pow; its name's "Min" belongs to "MinGPT"."""
    path = tmp_path / "88_MinGPTNewGelu.py"
    path.write_text(MIN_GPT_NEW_GELU)
    evidence = reference_family(path)
    assert (evidence.family, evidence.operations) == ("elementwise", ("tanh", "sqrt", "pow"))
    assert kernel_family("88_MinGPTNewGelu") == "elementwise"


def test_plain_arithmetic_is_elementwise_and_matmul_operators_are_products(tmp_path):
    axpy = tmp_path / "axpy.py"
    axpy.write_text("def setup(n=4):\n    return torch.randn(n)\n\n\n"
                    "def reference(a, x, y, **_):\n    return a * x + y\n")
    assert reference_family(axpy).family == "elementwise"
    assert reference_family(axpy).source.startswith("the reference is arithmetic on tensors only")
    product = tmp_path / "product.py"
    product.write_text("def reference(a, b, **_):\n    return (a @ b).relu()\n")
    assert (reference_family(product).family, reference_family(product).operations) == ("matmul_like", ("@",))


def test_nothing_to_read_gives_no_family(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def reference(:\n")
    assert reference_family(broken) is None
    assert reference_family(tmp_path / "absent.py") is None
    inputs_only = tmp_path / "inputs_only.py"
    inputs_only.write_text("def setup(n=4):\n    return torch.randn(n) * 2\n\n\ndef reference(x, **_):\n    return x\n")
    assert reference_family(inputs_only) is None  # setup's arithmetic makes inputs, it computes nothing


@pytest.mark.parametrize("name, family", [
    ("MaxPool2d", "stencil"), ("LayerNorm", "row_reduction"), ("LeakyReLU", "elementwise"),
    ("CrossEntropyLoss", "row_reduction"), ("Conv2d", "matmul_like"), ("GELU", "elementwise"),
    ("MinGPTNewGelu", "elementwise"), ("row_max", "row_reduction"), ("max", "reduction"),
    ("convtranspose3d_clamp_min_divide", "matmul_like"), ("ConvTranspose3d_Clamp_Min_Divide", "matmul_like"),
    ("conv_transpose2d_gelu", "matmul_like"),  # a transposed convolution's name, not its epilogue's min
    ("conv_depthwise_2d", "stencil"), ("82_conv_depthwise_2D_square_input_square_kernel", "stencil"),
    ("DepthwiseConv2d", "stencil"),  # one filter per channel: a neighbourhood per output, no channel reduction
])
def test_camel_case_operation_names_split_into_their_words(name, family):
    assert kernel_family(name) == family


@pytest.mark.parametrize("name, attention", [
    ("flash_attention", True), ("causal_attention_fp16", True), ("ScaledDotProductAttention", True), ("sdpa", True),
    ("gqa_decode", True), ("matmul_symmetric", False), ("gemm", False), ("conv2d_relu", False), ("softmax", False),
])
def test_attention_is_told_from_a_plain_product_by_its_name(name, attention):
    from kernel_opt.solution.families import is_attention

    assert is_attention(name) is attention
