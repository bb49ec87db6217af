"""Static analysis of a CUDA solution: build it with nvcc (no GPU needed) and read every kernel's SASS.

ptxas reports registers, shared memory, stack and spills per kernel; cuobjdump (the toolkit's,
or the copy the triton wheel ships) gives the instructions. The parsing is sass/cuobjdump.py's.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kernel_opt.sass.cuobjdump import ResourceUsage, find_cuobjdump, kernels_from_binary
from kernel_opt.sass.instruction_mix import instruction_mix
from kernel_opt.sass.report import KernelStaticAnalysis, StaticReport, static_findings

if TYPE_CHECKING:  # annotations only
    from kernel_opt.backends.cuda.build import KernelResources


def analyze_cuda(source: Path, build_dir: Path, arch: str, nvcc_flags: Sequence[str] = ()) -> StaticReport:
    """Build a CUDA solution (no GPU needed) and analyse every kernel in it."""
    from kernel_opt.backends.cuda.build import build_shared_library

    cuobjdump, disassembler = find_cuobjdump()
    build = build_shared_library(source, build_dir, arch, list(nvcc_flags))
    kernels = binary_kernels(cuobjdump, build.library, build.kernels, build.arch)
    notes = []
    if not kernels:
        notes.append("the library holds no kernel (a solve that only calls libraries such as cuBLAS has none of its "
                     "own)")
    return StaticReport(str(source), "cuda", build.arch, disassembler, shlex.join(build.command), kernels, notes)


def binary_kernels(cuobjdump: str, binary: Path, ptxas_report: Sequence[KernelResources],
                   arch: str) -> list[KernelStaticAnalysis]:
    """Every kernel in a compiled binary (a library or an object), with ptxas's figures where it reported them."""
    from kernel_opt.backends.cuda.build import demangle

    functions, usage = kernels_from_binary(cuobjdump, binary)
    resources = {kernel.mangled_name: kernel for kernel in ptxas_report}
    kernels: list[KernelStaticAnalysis] = []
    for function in functions:
        ptxas = resources.get(function.mangled_name)
        used = usage.get(function.mangled_name, ResourceUsage())
        kernel = KernelStaticAnalysis(
            name=ptxas.name if ptxas else demangle(function.mangled_name),
            mangled_name=function.mangled_name,
            arch=function.arch or arch,
            registers_per_thread=ptxas.registers if ptxas else used.registers,
            shared_memory_per_block_bytes=ptxas.shared_memory_bytes if ptxas else used.shared_bytes,
            stack_frame_bytes=ptxas.stack_frame_bytes if ptxas else used.stack_bytes,
            spill_stores_bytes=ptxas.spill_stores_bytes if ptxas else None,
            spill_loads_bytes=ptxas.spill_loads_bytes if ptxas else None,
            local_memory_bytes=used.local_bytes,
            mix=instruction_mix(function.opcodes),
        )
        kernel.findings = static_findings(kernel)
        kernels.append(kernel)
    return kernels
