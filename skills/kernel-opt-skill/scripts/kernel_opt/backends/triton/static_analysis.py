"""Static analysis of a Triton solution: compile its kernels (never run them) and read their SASS.

Registers, stack and local memory come from `cuobjdump -res-usage` on each cubin Triton
produced; spill counts need the GPU (the driver reports them when it loads the kernel), so
without one spills show as local memory. The parsing is sass/cuobjdump.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_opt.backends.triton.compile_only import compile_triton_solution
from kernel_opt.core.dependencies import require
from kernel_opt.sass.cuobjdump import ResourceUsage, find_cuobjdump, kernels_from_binary
from kernel_opt.sass.instruction_mix import instruction_mix
from kernel_opt.sass.report import KernelStaticAnalysis, StaticReport, static_findings


def analyze_triton(solution: Path, reference: Path | None, dims: dict[str, Any], build_dir: Path,
                   target_arch: str | None) -> StaticReport:
    """Compile a Triton solution's kernels and analyse their SASS (target_arch None: this GPU)."""
    require("triton", "static analysis of a Triton solution")
    find_cuobjdump()  # before compiling: a machine without it cannot finish
    compilations = compile_triton_solution(solution, reference, dims, target_arch)
    return report_from_compilations(compilations, solution, build_dir, target_arch, "triton", "run_kernel")


def report_from_compilations(compilations: list[Any], solution: Path, build_dir: Path, target_arch: str | None,
                             backend: str, launcher: str) -> StaticReport:
    """The SASS of every distinct compiled Triton kernel, read back: resources, instruction mix, findings.

    `launcher` names what launched them (run_kernel, ModelNew.forward) for the note when none did.
    """
    import triton

    cuobjdump, disassembler = find_cuobjdump()
    build_dir.mkdir(parents=True, exist_ok=True)
    kernels: list[KernelStaticAnalysis] = []
    seen: set[str] = set()
    arch = target_arch
    notes: list[str] = []
    for compilation in compilations:
        kernel = compilation.kernel
        if kernel.hash in seen:
            continue
        seen.add(kernel.hash)
        cubin = build_dir / f"{kernel.metadata.name}.{kernel.hash[:16]}.cubin"
        cubin.write_bytes(kernel.asm["cubin"])
        functions, usage = kernels_from_binary(cuobjdump, cubin)
        target = kernel.metadata.target
        arch = f"sm_{target.arch}" if hasattr(target, "arch") else arch
        for function in functions:
            used = usage.get(function.mangled_name, ResourceUsage())
            analysis = KernelStaticAnalysis(
                name=function.mangled_name,
                mangled_name=function.mangled_name,
                arch=function.arch or arch,
                registers_per_thread=used.registers,
                shared_memory_per_block_bytes=int(getattr(kernel.metadata, "shared", 0) or 0) or used.shared_bytes,
                stack_frame_bytes=used.stack_bytes,
                spill_stores_bytes=None,  # Triton keeps no ptxas report; local_memory_bytes covers spills
                spill_loads_bytes=None,
                local_memory_bytes=used.local_bytes,
                mix=instruction_mix(function.opcodes),
                variant=compilation.variant,
            )
            analysis.findings = static_findings(analysis)
            kernels.append(analysis)
    how = (f"compiled for {target_arch} without a GPU (a stand-in driver names the target)" if target_arch is not None
           else "compiled on this GPU")
    notes.append(f"{how}; Triton keeps no ptxas report, so spills show as local memory per thread "
                 "(cuobjdump -res-usage LOCAL: spilled registers and local arrays together)")
    if not kernels:
        notes.append(f"{launcher} launched no Triton kernel")
    return StaticReport(str(solution), backend, arch or "unknown", disassembler,
                        f"triton {triton.__version__}, {how}", kernels, notes)
