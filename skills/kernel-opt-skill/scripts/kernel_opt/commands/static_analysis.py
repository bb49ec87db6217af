"""Summarise what the compiler produced: registers, shared memory, stack, spills and the SASS mix.

The disassembly answers questions a profile cannot: are global accesses 16 bytes wide
(LDG.E.128) or 4 (LDG.E), do tensor instructions use Hopper's HGMMA or the older HMMA, did an
array land in local memory (LDL/STL), are copies asynchronous (LDGSTS, TMA)? No GPU is needed:
CUDA solutions are built with nvcc and disassembled with cuobjdump (the toolkit's, or the copy
in the triton wheel); Triton solutions are compiled, never run, for --arch (default: this GPU,
or sm_90 without one) from the inputs ref.py's setup() makes.

Usage:
  static_analysis.py OUT/v1/v1.cu --output-dir OUT/v1
  static_analysis.py OUT/v1/v1.cu --output-dir OUT/v1 --arch sm_90a --nvcc-flags=--use_fast_math
  static_analysis.py OUT/v2/v2.py --ref OUT/ref.py --output-dir OUT/v2 --N=4096 --D=4096
  static_analysis.py reference/vector_add/good/vector_add.cu --output-dir /tmp/ko/sa --json

Writes DIR/static_analysis.md and DIR/static_analysis.json (per kernel: resources, instruction
mix, findings). Exit codes: 0 analysed, 2 usage error, 3 the solution does not compile,
4 this machine cannot do it (no cuobjdump; a Triton run_kernel that needs a GPU for more than
its launches).
"""

from __future__ import annotations

from pathlib import Path

from kernel_opt.backends import registry
from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.core.errors import ExitCode, UsageError


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser("static_analysis.py", __doc__)
    parser.add_argument("solution", type=Path, help="a .cu with extern \"C\" solve(...) or a Triton .py with run_kernel(...)")
    parser.add_argument("--output-dir", type=Path, required=True, help="where static_analysis.md and .json go")
    parser.add_argument("--ref", type=Path, help="ref.py whose setup() makes the inputs a Triton kernel is specialised on")
    parser.add_argument("--backend", choices=["auto", *registry.names()], default="auto")
    parser.add_argument("--arch", default="auto", help="target: auto (this GPU, else sm_90), sm_90, sm_90a, sm_80, ...")
    parser.add_argument("--nvcc-flags", default="", help='extra nvcc flags, written with "=" since they start with "-": --nvcc-flags="-lcublas --use_fast_math"')
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    return parser


def _main(argv: list[str]) -> int:
    from kernel_opt.backends.base import BuildOptions, StaticAnalysisRequest
    from kernel_opt.core.files import write_json_atomic, write_text_atomic
    from kernel_opt.core.render import render

    args, dims = parse_args_with_dims(build_parser(), argv)
    solution = args.solution.resolve()
    if not solution.is_file():
        raise UsageError(f"solution file not found: {args.solution}")
    if args.ref is not None and not args.ref.is_file():
        raise UsageError(f"reference file not found: {args.ref}")
    backend = registry.get(registry.detect(solution, args.backend))
    report = backend.analyze(StaticAnalysisRequest(
        solution=solution, reference=args.ref.resolve() if args.ref else None, dims=dims,
        build_dir=args.output_dir / "build", options=BuildOptions(args.arch, args.nvcc_flags),
    ))
    payload = report.to_dict()
    write_json_atomic(args.output_dir / "static_analysis.json", payload)
    write_text_atomic(args.output_dir / "static_analysis.md", render("static_analysis.md.j2", report=report,
                                                                      tables=_tables(report)))
    if args.json:
        print_json({"ok": True, "exit_code": 0, "report": str(args.output_dir / "static_analysis.md"), **payload})
    else:
        print(_summary(report, args.output_dir))
    return int(ExitCode.OK)


def _widths(widths: dict) -> str:
    return ", ".join(f"{count} x {bits}-bit" for bits, count in widths.items()) or "none"


def _tables(report) -> dict:
    """Formatting only: every number is already in the report record."""
    from kernel_opt.core.render import markdown_table

    def value(number) -> str:
        return "n/a" if number is None else str(number)

    resources = markdown_table(
        [[kernel.name, kernel.arch or "?", value(kernel.registers_per_thread), value(kernel.shared_memory_per_block_bytes),
          value(kernel.stack_frame_bytes), value(kernel.spill_stores_bytes), value(kernel.spill_loads_bytes),
          value(kernel.local_memory_bytes)] for kernel in report.kernels],
        ["kernel", "arch", "registers/thread", "shared B/block", "stack B/thread", "spill stores B", "spill loads B",
         "local B/thread"],
    )
    mix = markdown_table(
        [[kernel.name + (f" ({kernel.variant})" if kernel.variant else ""), kernel.mix.total_instructions,
          _widths(kernel.mix.global_loads_by_width_bits), _widths(kernel.mix.global_stores_by_width_bits),
          f"{kernel.mix.local_loads} / {kernel.mix.local_stores}",
          f"{kernel.mix.shared_loads} / {kernel.mix.shared_stores}",
          f"{kernel.mix.shared_matrix_loads} / {kernel.mix.shared_matrix_stores}",
          f"{kernel.mix.async_copies} / {kernel.mix.tma_loads} / {kernel.mix.bulk_copies}",
          ", ".join(f"{op} x{n}" for op, n in kernel.mix.tensor_by_opcode.items()) or "none",
          ", ".join(f"{op} x{n}" for op, n in kernel.mix.barriers_by_opcode.items()) or "none",
          kernel.mix.ffma] for kernel in report.kernels],
        ["kernel", "SASS instructions", "global loads (LDG)", "global stores (STG)", "local LDL / STL", "shared LDS / STS",
         "LDSM / STSM", "LDGSTS / UTMALDG / UBLKCP", "tensor", "barriers", "FFMA"],
    )
    opcodes = {
        kernel.name + (f" ({kernel.variant})" if kernel.variant else ""): ", ".join(
            f"{op} {n}" for op, n in list(kernel.mix.opcode_counts.items())[:20])
        for kernel in report.kernels
    }
    return {"resources": resources, "mix": mix, "opcodes": opcodes}


def _summary(report, output_dir: Path) -> str:
    lines = [f"{len(report.kernels)} kernel(s) analysed for {report.arch} ({report.disassembler})"]
    for kernel in report.kernels:
        lines.append(f"  {kernel.name}: {kernel.registers_per_thread} registers/thread, loads "
                     f"{_widths(kernel.mix.global_loads_by_width_bits)}, "
                     f"tensor {', '.join(kernel.mix.tensor_by_opcode) or 'none'}, "
                     f"{kernel.mix.local_loads + kernel.mix.local_stores} local-memory instructions")
        for finding in kernel.findings:
            lines.append(f"    - {finding.key}: {finding.text}")
    lines.append(f"report: {output_dir / 'static_analysis.md'}")
    lines.append("next: compare with the previous version's static_analysis.md; profile with ncu_profile.py on a GPU")
    return "\n".join(lines)
