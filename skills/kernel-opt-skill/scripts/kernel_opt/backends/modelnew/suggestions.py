"""A ModelNew's strategy advice: the guide of the kernels it defines (Triton's for Triton kernels, else CUDA's).

KernelBench's solutions are mostly CUDA through load_inline, or library calls; their profiles are
advised from the CUDA guide and filed with CUDA's experience records, a Triton ModelNew's from
Triton's.
"""

from __future__ import annotations

from pathlib import Path

from kernel_opt.backends.modelnew.source_signs import BUILDS_CUDA, TRITON_KERNEL
from kernel_opt.profile.advice import StrategyAdvice


class ModelNewAdvice(StrategyAdvice):
    strategies_from = "cuda"

    def guide_for(self, solution: Path) -> str:
        """Triton's guide for a ModelNew whose kernels are Triton's, else CUDA's (load_inline kernels, libraries)."""
        try:
            source = solution.read_text(errors="replace")
        except OSError:
            return "cuda"
        return "triton" if TRITON_KERNEL.search(source) and not BUILDS_CUDA.search(source) else "cuda"


ADVICE = ModelNewAdvice()
