"""Kernel families: kernels whose bottlenecks and winning strategies tend to be alike.

A softmax lesson is often worth trying on a layernorm (both reduce along a row and are
memory-bound at large sizes), rarely on a GEMM. The table below is the only place that knows
which kernel belongs where; names are matched after `normalize_kernel`.
"""

from __future__ import annotations

import re

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
            "stencil", "jacobi", "depthwise_conv", "depthwise_conv2d", "laplacian", "blur", "convolution_stencil",
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
}

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


def kernel_family(kernel: str) -> str:
    """The family of a kernel name: exact member first, then its highest-priority word."""
    name = normalize_kernel(kernel)
    if name in _MEMBER_TO_FAMILY:
        return _MEMBER_TO_FAMILY[name]
    words = name.split("_")
    # Two-word members inside a longer name ("fused_layer_norm" holds "layer_norm") are more
    # specific than single words, so they are tried first.
    pairs = {KERNEL_ALIASES.get(f"{a}_{b}", f"{a}_{b}") for a, b in zip(words, words[1:], strict=False)}
    singles = {KERNEL_ALIASES.get(word, word) for word in words}
    for candidates in (pairs, singles):
        for family, (_, members) in FAMILIES.items():
            if candidates.intersection(members):
                return family
    return OTHER_FAMILY
