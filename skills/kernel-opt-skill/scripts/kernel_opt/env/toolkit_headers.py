"""Where a CUDA toolkit keeps its headers, and which of the math libraries' headers it holds.

A full toolkit (and the one on a GPU machine built for torch) holds cuBLAS's, cuSPARSE's and
cuSOLVER's headers; a minimal one, as in a CPU sandbox, holds the runtime's only. torch's
`ATen/cuda/CUDAContext.h` includes the libraries' headers, so where they are absent a load_inline
source that includes it cannot be compiled without a GPU machine.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

# Prefixes of the CUDA math libraries' headers (and NVTX's), as an #include names them.
CUDA_LIBRARY_HEADER_PREFIXES = ("cublas", "cusparse", "cufft", "curand", "cusolver", "nvtx3/")
# The ones torch's ATen/cuda/CUDAContext.h includes.
CONTEXT_HEADERS = ("cublas_v2.h", "cublasLt.h", "cusparse.h", "cusolverDn.h")


def toolkit_include_flags(nvcc: str) -> list[str]:
    """The include flags nvcc itself uses for the toolkit's headers (it may be a wrapper far from the toolkit)."""
    try:
        shown = subprocess.run([nvcc, "--dryrun", "-x", "cu", "-c", "/dev/null", "-o", "/dev/null"],
                               capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    flags = []
    for line in (shown.stdout + shown.stderr).splitlines():
        for key in ("INCLUDES=", "SYSTEM_INCLUDES="):
            if key in line:
                words = shlex.split(line.split(key, 1)[1])
                flags += [f"-I{word.removeprefix('-I')}" for word in words if word not in ("-isystem", "")]
    return list(dict.fromkeys(flags))


def missing_context_headers(include_flags: list[str]) -> list[str]:
    """CONTEXT_HEADERS found in none of the folders the flags name (all of them where no flag names a folder)."""
    folders = [Path(flag.removeprefix("-I")) for flag in include_flags]
    return [header for header in CONTEXT_HEADERS if not any((folder / header).is_file() for folder in folders)]
