"""Summarise what the compiler produced: registers, shared memory, stack, spills and the SASS mix.

The disassembly answers questions a profile cannot: are global accesses 16 bytes wide
(LDG.E.128) or 4 (LDG.E), do tensor instructions use Hopper's HGMMA or the older HMMA, did an
array land in local memory (LDL/STL), are copies asynchronous (LDGSTS, TMA)? No GPU is needed:
CUDA solutions are built with nvcc and disassembled with cuobjdump (the toolkit's, or the copy
in the triton wheel) for --arch (default: this GPU, sm_90a without one; a Hopper GPU builds as
sm_90a, so wgmma kernels build); Triton solutions are compiled, never run, for --arch (default: this
GPU, or sm_90 without one) from the inputs ref.py's setup() makes.

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

from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.core.errors import ExitCode
from kernel_opt.profile.static_analysis import (
    PROG,
    StaticAnalysisRequest,
    analyze_solution,
    static_analysis_summary,
)
from kernel_opt.solution import registry
from kernel_opt.solution.backend import BuildOptions
from kernel_opt.solution.dims import check_dims


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser(PROG, __doc__)
    parser.add_argument("solution", type=Path,
                        help="a .cu with extern \"C\" solve(...), a Triton .py with run_kernel(...), or a KernelBench "
                             ".py with class ModelNew (its Triton kernels; give --ref)")
    parser.add_argument("--output-dir", type=Path, required=True, help="where static_analysis.md and .json go")
    parser.add_argument("--ref", type=Path,
                        help="ref.py whose setup() makes the inputs a Triton kernel is specialised on")
    parser.add_argument("--backend", choices=["auto", *registry.names()], default="auto")
    parser.add_argument("--arch", default="auto",
                        help="target: auto (this GPU, else sm_90; CUDA on Hopper: sm_90a), sm_90, sm_90a, sm_80, ...")
    parser.add_argument("--nvcc-flags", default="",
                        help='extra nvcc flags, written with "=" since they start with "-": '
                             '--nvcc-flags="-lcublas --use_fast_math"')
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    return parser


def parse_request(argv: list[str]) -> tuple[StaticAnalysisRequest, bool]:
    """The typed request behind a command line, and whether --json was given."""
    args, dims = parse_args_with_dims(build_parser(), argv)
    request = StaticAnalysisRequest(solution=args.solution, output_dir=args.output_dir, reference=args.ref, dims=dims,
                                    backend=args.backend, build=BuildOptions(args.arch, args.nvcc_flags))
    return request, args.json


def _main(argv: list[str]) -> int:
    request, wants_json = parse_request(argv)
    if request.reference is not None:
        request.dims = check_dims(request.reference, request.dims, request.solution, request.backend)
    report = analyze_solution(request)
    if wants_json:
        print_json({"ok": True, "exit_code": 0, "report": str(request.output_dir / "static_analysis.md"),
                    **report.to_dict()})
    else:
        print(static_analysis_summary(report, request.output_dir))
    return int(ExitCode.OK)
