"""What a ModelNew's source text says about its kernels, read without running it."""

from __future__ import annotations

import re

# Source that builds CUDA code of its own: it cannot run without an NVIDIA GPU.
BUILDS_CUDA = re.compile(r"\bcuda_sources\b|\bload_inline\b|\bcpp_extension\b|__global__")
# Source that defines a Triton kernel (@triton.jit, or @jit imported from triton).
TRITON_KERNEL = re.compile(r"\btriton\.jit\b|^\s*@\s*jit\b", re.MULTILINE)
