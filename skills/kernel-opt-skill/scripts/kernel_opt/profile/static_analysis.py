"""Static analysis of a solution as static_analysis.py runs it: typed options in, the StaticReport out.

No GPU is needed: each backend compiles (never runs) its solution and disassembles it: CUDA
solutions are built with nvcc; Triton solutions are compiled for a target architecture from
the inputs ref.py's setup() makes (backends/<name>/static_analysis.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.cli import dim_arguments
from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import markdown_table, render
from kernel_opt.sass.report import StaticReport
from kernel_opt.solution import registry
from kernel_opt.solution.backend import AnalysisInputs, BuildOptions

PROG = "static_analysis.py"
STATIC_ANALYSIS_FILE = "static_analysis.json"


@dataclass
class StaticAnalysisRequest:
    """What static_analysis.py is asked to do, as typed options."""

    solution: Path
    output_dir: Path
    reference: Path | None = None  # Triton: its setup() makes the inputs the kernel is specialised on
    dims: dict[str, Any] = field(default_factory=dict)
    backend: str = "auto"
    build: BuildOptions = field(default_factory=BuildOptions)

    def argv(self) -> list[str]:
        """The same request as static_analysis.py's arguments (defaults left out)."""
        arguments = [str(self.solution), "--output-dir", str(self.output_dir), *self.build.arguments()]
        arguments += [] if self.backend == "auto" else ["--backend", self.backend]
        arguments += [] if self.reference is None else ["--ref", str(self.reference)]
        return arguments + dim_arguments(self.dims)


def analyze_solution(request: StaticAnalysisRequest) -> StaticReport:
    """Analyse as static_analysis.py does; write DIR/static_analysis.json and .md; return the report."""
    solution = request.solution.resolve()
    if not solution.is_file():
        raise UsageError(f"solution file not found: {request.solution}")
    if request.reference is not None and not request.reference.is_file():
        raise UsageError(f"reference file not found: {request.reference}")
    backend = registry.get(registry.detect(solution, request.backend))
    report = backend.analyze(AnalysisInputs(
        solution=solution, reference=request.reference.resolve() if request.reference else None, dims=request.dims,
        build_dir=request.output_dir / "build", options=request.build,
    ))
    write_json_atomic(request.output_dir / STATIC_ANALYSIS_FILE, report.to_dict())
    write_text_atomic(request.output_dir / "static_analysis.md",
                      render("static_analysis.md.j2", report=report, tables=_tables(report)))
    return report


def _widths(widths: dict) -> str:
    return ", ".join(f"{count} x {bits}-bit" for bits, count in widths.items()) or "none"


def _global_loads(mix) -> str:
    """LDG widths; where there are none but global memory is read by asynchronous copies, it says so."""
    widths = _widths(mix.global_loads_by_width_bits)
    copies = mix.async_copies + mix.tma_loads + mix.bulk_copies
    if widths == "none" and copies:
        return f"none (global reads by {copies} asynchronous copies)"
    return widths


def _tables(report: StaticReport) -> dict:
    """Formatting only: every number is already in the report record."""
    def value(number) -> str:
        return "n/a" if number is None else str(number)

    resources = markdown_table(
        [[kernel.name, kernel.arch or "?", value(kernel.registers_per_thread),
          value(kernel.shared_memory_per_block_bytes), value(kernel.stack_frame_bytes),
          value(kernel.spill_stores_bytes), value(kernel.spill_loads_bytes),
          value(kernel.local_memory_bytes)] for kernel in report.kernels],
        ["kernel", "arch", "registers/thread", "shared B/block", "stack B/thread", "spill stores B", "spill loads B",
         "local B/thread"],
    )
    mix = markdown_table(
        [[kernel.name + (f" ({kernel.variant})" if kernel.variant else ""), kernel.mix.total_instructions,
          _global_loads(kernel.mix), _widths(kernel.mix.global_stores_by_width_bits),
          f"{kernel.mix.local_loads} / {kernel.mix.local_stores}",
          f"{kernel.mix.shared_loads} / {kernel.mix.shared_stores}",
          f"{kernel.mix.shared_matrix_loads} / {kernel.mix.shared_matrix_stores}",
          f"{kernel.mix.async_copies} / {kernel.mix.tma_loads} / {kernel.mix.bulk_copies}",
          ", ".join(f"{op} x{n}" for op, n in kernel.mix.tensor_by_opcode.items()) or "none",
          ", ".join(f"{op} x{n}" for op, n in kernel.mix.barriers_by_opcode.items()) or "none",
          kernel.mix.ffma] for kernel in report.kernels],
        ["kernel", "SASS instructions", "global loads (LDG)", "global stores (STG)", "local LDL / STL",
         "shared LDS / STS", "LDSM / STSM", "LDGSTS / UTMALDG / UBLKCP", "tensor", "barriers", "FFMA"],
    )
    opcodes = {
        kernel.name + (f" ({kernel.variant})" if kernel.variant else ""): ", ".join(
            f"{op} {n}" for op, n in list(kernel.mix.opcode_counts.items())[:20])
        for kernel in report.kernels
    }
    return {"resources": resources, "mix": mix, "opcodes": opcodes}


def static_analysis_summary(report: StaticReport, output_dir: Path) -> str:
    """What static_analysis.py prints: per kernel its resources, load widths, tensor ops and findings."""
    lines = [f"{len(report.kernels)} kernel(s) analysed for {report.arch} ({report.disassembler})"]
    for kernel in report.kernels:
        lines.append(f"  {kernel.name}: {kernel.registers_per_thread} registers/thread, loads "
                     f"{_global_loads(kernel.mix)}, "
                     f"tensor {', '.join(kernel.mix.tensor_by_opcode) or 'none'}, "
                     f"{kernel.mix.local_loads + kernel.mix.local_stores} local-memory instructions")
        for finding in kernel.findings:
            lines.append(f"    - {finding.key}: {finding.text}")
    lines.append(f"report: {output_dir / 'static_analysis.md'}")
    lines.append("next: compare with the previous version's static_analysis.md; profile with ncu_profile.py on a GPU")
    return "\n".join(lines)
