"""Kernel families: kernels whose bottlenecks and winning strategies tend to be alike.

A softmax lesson is often worth trying on a layernorm (both reduce along a row and are
memory-bound at large sizes), rarely on a GEMM; tiling advice fits a GEMM, never a GELU. The
table below is the only place that knows which kernel belongs where; names are matched after
`normalize_kernel`. A problem's family is read from its name (`kernel_family`) or from the
operations its reference computes (`reference_family`: ref.py's reference(), a KernelBench
Model), which the experience log and the profile's advice both use.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from kernel_opt.core.errors import UsageError

# family -> (what its members share, member kernel names). Order is priority: a fused name
# such as "gemm_relu" or "softmax_dropout" takes the family of its heaviest part.
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "matmul_like": (
        "Dense products that can run on tensor cores: tiling, data reuse and pipelining decide speed",
        (
            "gemm", "matmul", "mm", "bmm", "batched_gemm", "grouped_gemm", "gemv", "linear",
            "addmm", "baddbmm", "attention", "mha", "gqa", "mqa", "sdpa", "flash_attention",
            "conv", "conv1d", "conv2d", "conv3d", "implicit_gemm", "einsum",
            "convtranspose", "convtranspose1d", "convtranspose2d", "convtranspose3d", "conv_transpose",
            "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "deconv", "deconvolution",
        ),
    ),
    "row_reduction": (
        (
            "One reduction per row (or per token), then a pass over the row: "
            "memory traffic and reduction depth decide speed"
        ),
        (
            "softmax", "log_softmax", "online_softmax", "layernorm", "rmsnorm", "groupnorm",
            "batchnorm", "instancenorm", "logsumexp", "cross_entropy", "l2norm", "normalize",
            "row_sum", "row_max", "row_mean", "argmax_row", "kl_div", "kl_divergence", "kl_loss",
        ),
    ),
    "scan": (
        "Prefix operations: the carry between blocks decides the algorithm",
        (
            "scan", "cumsum", "cumprod", "prefix_sum", "inclusive_scan", "exclusive_scan", "selective_scan",
            "associative_scan",
        ),
    ),
    "reduction": (
        "A whole tensor (or a long axis) reduced to a few values: grid-level combining decides speed",
        ("reduce", "reduction", "sum", "mean", "max", "min", "argmax", "argmin", "norm", "dot", "histogram", "count",
         "loss"),  # an elementwise loss reduced to its mean (mse_loss, smooth_l1_loss); row-wise losses come first
    ),
    "sort_select": (
        "Data-dependent ordering: radix passes, bitonic networks, selection",
        ("sort", "argsort", "radix_sort", "topk", "top_k", "bitonic_sort", "merge_sort", "unique"),
    ),
    "sparse": (
        "Irregular indices: load balance and gather efficiency decide speed",
        ("spmv", "spmm", "sddmm", "sparse", "csr", "coo", "segment_sum", "embedding_bag"),
    ),
    "data_movement": (
        "Reorders or copies data: coalescing on both the read and the write side decides speed",
        (
            "transpose", "permute", "copy", "memcpy", "gather", "scatter", "index_select", "embedding",
            "concat", "cat", "pad", "roll", "rope", "rotary",
        ),
    ),
    "stencil": (
        "Each output reads a neighbourhood of inputs: halo reuse in shared memory decides speed",
        (
            "stencil", "jacobi", "depthwise_conv", "depthwise_conv2d", "conv_depthwise", "conv_depthwise2d",
            "depthwise", "laplacian", "blur", "convolution_stencil",
            "pooling", "maxpool", "avgpool", "max_pool", "avg_pool", "max_pool1d", "max_pool2d", "max_pool3d",
            "avg_pool1d", "avg_pool2d", "avg_pool3d", "upsample", "interpolate",
        ),
    ),
    "elementwise": (
        "One output per input element, no reuse: pure bandwidth",
        (
            "elementwise", "vector_add", "vectoradd", "add", "sub", "mul", "div", "axpy", "saxpy",
            "relu", "gelu", "silu", "swiglu", "geglu", "sigmoid", "tanh", "exp", "leaky_relu",
            "bias_add", "dropout", "cast", "fill", "scale", "clamp", "where", "quantize", "dequantize",
            # torch's pointwise functions, as a reference calls them
            "pow", "sqrt", "rsqrt", "abs", "neg", "log", "log1p", "expm1", "erf", "square", "reciprocal", "sign",
            "sin", "cos", "elu", "selu", "celu", "softplus", "softsign", "mish", "hardtanh", "hardswish",
            "hardsigmoid", "relu6", "logsigmoid", "maximum", "minimum", "lerp", "addcmul", "addcdiv",
        ),
    ),
}

OTHER_FAMILY = "other"

# Spellings of one kernel that should count as an exact name match.
KERNEL_ALIASES: dict[str, str] = {
    "layer_norm": "layernorm",
    "rms_norm": "rmsnorm",
    "group_norm": "groupnorm",
    "batch_norm": "batchnorm",
    "logsoftmax": "log_softmax",
    "log_sum_exp": "logsumexp",
    "matrix_multiply": "matmul",
    "matrix_multiplication": "matmul",
    "sgemm": "gemm",
    "hgemm": "gemm",
    "multi_head_attention": "mha",
    "multihead_attention": "mha",
    "flash_attn": "flash_attention",
    "scaled_dot_product_attention": "sdpa",
    "vec_add": "vector_add",
    "vectoradd": "vector_add",
    "prefixsum": "prefix_sum",
    "crossentropy": "cross_entropy",
    "l2_norm": "l2norm",
    "leakyrelu": "leaky_relu",
}

# Within matmul_like, attention (two products around a softmax) shares tiling and pipelining lessons with the plain
# products (GEMM, convolution) but not its softmax's (key masks, exp2, online rescaling): a kind of its own.
ATTENTION_MEMBERS = frozenset({"attention", "mha", "gqa", "mqa", "sdpa", "flash_attention"})

_MEMBER_TO_FAMILY: dict[str, str] = {
    member: family for family, (_, members) in FAMILIES.items() for member in members
}


def normalize_kernel(text: str) -> str:
    """'Layer-Norm' -> 'layernorm', 'Fused Softmax' -> 'fused_softmax': lower case, '_' separators."""
    if not isinstance(text, str):
        raise UsageError(f"kernel must be a name such as 'softmax', got {text!r}")
    name = re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")
    if not name:
        raise UsageError("kernel name is empty", hint="name the operation, e.g. --kernel softmax or --kernel gemm")
    return KERNEL_ALIASES.get(name, name)


def _camel_words(text: str) -> str:
    """'MinGPTNewGelu' -> 'Min_GPT_New_Gelu', 'MaxPool2d' -> 'Max_Pool2d': the words a CamelCase name runs together."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", text)


def kernel_family(kernel: str) -> str:
    """The family of a kernel name: exact member first, then its highest-priority word (CamelCase split too)."""
    name = normalize_kernel(kernel)
    if name in _MEMBER_TO_FAMILY:
        return _MEMBER_TO_FAMILY[name]
    split = normalize_kernel(_camel_words(kernel))
    if split in _MEMBER_TO_FAMILY:
        return _MEMBER_TO_FAMILY[split]
    # A short word that only CamelCase splitting reveals is more often part of a proper name ("MinGPT") than an
    # operation; the operations such names hold are longer ("Gelu") or come in pairs ("MaxPool2d").
    words = list(dict.fromkeys(name.split("_") + [word for word in split.split("_") if len(word) >= 4]))
    # Two-word members inside a longer name ("fused_layer_norm" holds "layer_norm") are more
    # specific than single words, so they are tried first.
    pairs = {KERNEL_ALIASES.get(f"{a}_{b}", f"{a}_{b}") for part in (name, split)
             for a, b in zip(part.split("_"), part.split("_")[1:], strict=False)}
    singles = {KERNEL_ALIASES.get(word, word) for word in words}
    for candidates in (pairs, singles):
        for family, (_, members) in FAMILIES.items():
            if candidates.intersection(members):
                return family
    return OTHER_FAMILY


def is_attention(kernel: str) -> bool:
    """Whether a kernel name names attention (flash_attention, causal_attention_fp16, sdpa, gqa_decode)."""
    words = set(normalize_kernel(kernel).split("_")) | set(normalize_kernel(_camel_words(kernel)).split("_"))
    return bool(words & ATTENTION_MEMBERS)  # flash_attention holds the word "attention"


# --- a problem's family from the operations its reference computes ----------------------------------

# ref.py's and a KernelBench problem's functions that make inputs or describe the problem: not the computation.
NOT_COMPUTATION = frozenset({"setup", "get_inputs", "get_init_inputs", "flops", "bytes"})
# Calls that write a result into the output a reference is given, or only convert: not an operation of the problem.
NOT_OPERATIONS = frozenset({"copy_", "to", "float", "half", "bfloat16", "contiguous", "view", "reshape"})
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.FloorDiv, ast.Mod)
_ROW_ARGUMENTS = frozenset({"dim", "axis", "keepdim"})


@dataclass(frozen=True)
class FamilyEvidence:
    """A problem's family and what it was read from."""

    family: str  # a key of FAMILIES, or OTHER_FAMILY
    source: str  # "the reference's torch.tanh, torch.pow", "kernel name softmax", ...
    operations: tuple[str, ...] = ()  # the reference's operations of that family, in source order


def operation_family(name: str, call: ast.Call | None = None) -> str:
    """The family of one operation a reference calls; a reduction over a named axis (`x.sum(dim=-1)`) is row-wise."""
    if not re.search(r"[A-Za-z0-9]", name):
        return OTHER_FAMILY
    family = kernel_family(name)
    if family == "reduction" and call is not None and _over_an_axis(call):
        return "row_reduction"
    return family


def _over_an_axis(call: ast.Call) -> bool:
    keywords = {keyword.arg for keyword in call.keywords}
    positional_axis = any(isinstance(arg, ast.Constant) and isinstance(arg.value, int) and not isinstance(
        arg.value, bool) for arg in call.args)
    return bool(keywords & _ROW_ARGUMENTS) or positional_axis


def _computation(tree: ast.Module) -> list[ast.AST]:
    """The reference's computing code: its classes (a KernelBench Model) and functions but the input makers."""
    return [node for node in tree.body
            if isinstance(node, ast.ClassDef)
            or (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in NOT_COMPUTATION)]


def _operations(nodes: list[ast.AST]) -> tuple[list[tuple[str, str]], bool]:
    """((operation as written, its family) for each call and `@`, in source order; whether plain arithmetic is used)."""
    found: list[tuple[str, str]] = []
    arithmetic = False
    for node in (inner for top in nodes for inner in ast.walk(top)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            found.append(("@", "matmul_like"))
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, _ARITHMETIC):
            arithmetic = True
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name and name not in NOT_OPERATIONS and not name.startswith("__"):
                family = operation_family(name.rstrip("_"), node)
                if family != OTHER_FAMILY:
                    found.append((name, family))
    return found, arithmetic


def reference_family(path: Path) -> FamilyEvidence | None:
    """The family of the problem a reference computes, from its syntax tree; None where it cannot be read.

    Each operation its computing code calls (torch.tanh, F.layer_norm, nn.Linear, `@`) has a family; the
    problem takes the highest-priority one (FAMILIES' order: a Linear followed by a GELU is matmul-like).
    Code of plain arithmetic with no call of a known family is elementwise (`x * y + z`). Nothing runs.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return None
    found, arithmetic = _operations(_computation(tree))
    for family in FAMILIES:
        names = list(dict.fromkeys(name for name, of in found if of == family))
        if names:
            return FamilyEvidence(family, f"the reference calls {', '.join(names[:4])}", tuple(names))
    if arithmetic:
        return FamilyEvidence("elementwise", "the reference is arithmetic on tensors only (no reduction, product or "
                                             "data movement)")
    return None
