"""A ModelNew's strategy advice: the guide of the kernels it defines (Triton's for Triton kernels, else CUDA's).

KernelBench's solutions are mostly CUDA through load_inline, or library calls; their profiles are
advised from the CUDA guide and filed with CUDA's experience records, a Triton ModelNew's from
Triton's.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernel_opt.backends.modelnew.backend import BUILDS_CUDA
from kernel_opt.profile.advice import StrategyAdvice

_TRITON_KERNEL = re.compile(r"\btriton\.jit\b|^\s*@\s*jit\b", re.MULTILINE)


class ModelNewAdvice(StrategyAdvice):
    strategies_from = "cuda"

    def guide_for(self, solution: Path) -> str:
        """Triton's guide for a ModelNew whose kernels are Triton's, else CUDA's (load_inline kernels, libraries)."""
        try:
            source = solution.read_text(errors="replace")
        except OSError:
            return "cuda"
        return "triton" if _TRITON_KERNEL.search(source) and not BUILDS_CUDA.search(source) else "cuda"


ADVICE = ModelNewAdvice()
