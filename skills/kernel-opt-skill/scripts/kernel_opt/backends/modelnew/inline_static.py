"""Static analysis of a ModelNew that builds CUDA with load_inline: its sources compiled without a GPU, their SASS read.

load_inline builds only when the file runs, but its sources are known once the file is imported with
torch's build step recorded (inline_build.py): each CUDA source is compiled to an object for the
architecture torch would build for, and the object's kernels are read as a .cu solution's are
(registers, shared memory, spills from ptxas; the instruction mix from cuobjdump). On a machine
without a GPU the compile check has already made these objects; they are used while newer than
the file.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from kernel_opt.sass.report import StaticReport

INLINE_COMPILE_DIR = "inline_compile"  # under a check's build folder: the compile check's sources and objects


def analyze_inline_model_new(solution: Path, build_dir: Path, arch: str) -> StaticReport:
    """Every kernel of the CUDA extensions `solution` builds, compiled for `arch` (no GPU needed)."""
    from kernel_opt.backends.cuda.build import parse_ptxas_output
    from kernel_opt.backends.cuda.static_analysis import binary_kernels
    from kernel_opt.backends.modelnew.inline_build import compiled_sources
    from kernel_opt.sass.cuobjdump import find_cuobjdump

    cuobjdump, disassembler = find_cuobjdump()
    compiled = compiled_sources(solution, build_dir / INLINE_COMPILE_DIR, arch)
    kernels = [kernel for item in compiled
               for kernel in binary_kernels(cuobjdump, Path(item.object), parse_ptxas_output(item.compiler_output),
                                            arch)]
    notes = [] if kernels else ["its load_inline sources hold no kernel of their own (an extension that only calls "
                                "libraries such as cuBLAS has none)"]
    command = "; ".join(shlex.join(item.command) for item in compiled)
    return StaticReport(str(solution), "modelnew", arch, disassembler, command, kernels, notes)
