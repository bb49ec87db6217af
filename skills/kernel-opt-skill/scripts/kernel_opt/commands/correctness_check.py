"""Check a CUDA or Triton solution against a PyTorch reference; a wrong kernel cannot pass.

Every shape (the command-line one plus ref.py's SHAPES) runs with several seeds of fresh
random inputs; outputs are NaN-poisoned before each call; inputs must come back unmodified;
the solution runs in a child process, so a crash or hang is reported, not inherited.

Usage:
  correctness_check.py reference/vector_add/good/vector_add.py --ref reference/vector_add/ref.py \\
      --output-dir out/v0 --n=1048576
  correctness_check.py kernel.cu --ref ref.py --output-dir out/v0 --N=4096 --D=4096
  correctness_check.py kernel.cu --ref ref.py --output-dir out/v0 --compile-only --arch sm_90a
  correctness_check.py kernel.py --ref ref.py --output-dir out/v0 --device cpu --seeds 5 --json
  correctness_check.py kernel.cu --ref ref.py --output-dir out/v0 --N=4096 --D=4096 --sanitize memcheck

Writes DIR/correctness.md and DIR/correctness.json ("passed": true|false, per shape and output).
--sanitize TOOL runs one case (the smallest shape: the least product of its integer sizes
among the command line's shape and SHAPES) with one seed in a child under compute-sanitizer
(memcheck: out-of-bounds and misaligned accesses; racecheck: shared-memory races; initcheck:
reads of memory nothing wrote; synccheck: barrier misuse) and writes DIR/correctness_TOOL.md,
DIR/correctness_TOOL.json (its findings: kind, kernel, source line, thread, block, count) and
DIR/sanitizer_TOOL.log; any finding is exit 3.
Exit codes: 0 pass, 1 wrong results, 2 usage error (bad arguments, ref.py broken),
3 the solution is at fault (compile error, bad signature, crash, illegal address, timeout,
a compute-sanitizer finding), 4 this machine cannot run the check (no GPU for CUDA, bf16 under
the Triton interpreter, no compute-sanitizer for --sanitize).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from kernel_opt.check.correctness import (
    DEFAULT_SEEDS,
    DEFAULT_TIMEOUT_S,
    PROG,
    BuildOptions,
    CheckOptions,
    CorrectnessRequest,
    check_solution,
    exit_code_of,
)
from kernel_opt.check.report import correctness_summary
from kernel_opt.check.sanitizer import SANITIZER_TOOLS, SLOWDOWN_ALLOWANCE
from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.solution import registry
from kernel_opt.solution.dims import check_dims


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser(PROG, __doc__)
    parser.add_argument("solution", type=Path,
                        help="the solution: a .cu file with extern \"C\" solve(...), a Triton .py with "
                             "run_kernel(...), or a KernelBench .py with class ModelNew")
    parser.add_argument("--ref", type=Path, required=True,
                        help="ref.py with reference(**kwargs) (and setup, SHAPES, atol, rtol), or a KernelBench "
                             "problem file (class Model, get_inputs, get_init_inputs)")
    parser.add_argument("--output-dir", type=Path, required=True, help="where correctness.md and correctness.json go")
    parser.add_argument("--backend", choices=["auto", *registry.names()], default="auto")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                        help="auto: the GPU when torch sees one, else the CPU "
                             "(Triton interpreter; CUDA compile-check only)")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="random input sets per shape (default 3)")
    parser.add_argument("--atol", type=float, help="absolute tolerance (overrides ref.py and the dtype default)")
    parser.add_argument("--rtol", type=float, help="relative tolerance (overrides ref.py and the dtype default)")
    parser.add_argument("--kernelbench-tolerances", action="store_true",
                        help="judge floating-point outputs at KernelBench's atol = rtol = 1e-2 (figures comparable "
                             "with theirs); the float64 truth is still measured and precision downgrades flagged")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help="seconds without progress before the solution counts as hung "
                             f"(default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--compile-only", action="store_true", help="CUDA: compile and report resources; no GPU needed")
    parser.add_argument("--arch", default="auto",
                        help="CUDA target: auto (this GPU; Hopper as sm_90a), sm_90, sm_90a, sm_80, ...")
    parser.add_argument("--nvcc-flags", default="",
                        help='extra nvcc flags, written with "=" since they start with "-": '
                             '--nvcc-flags="-lcublas --use_fast_math"')
    parser.add_argument("--sanitize", choices=SANITIZER_TOOLS,
                        help="run the smallest case once under compute-sanitizer with this tool (GPU only); "
                             "the --timeout per step is multiplied by "
                             f"{SLOWDOWN_ALLOWANCE} for the tool's slowdown")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    return parser


def parse_request(argv: list[str]) -> tuple[CorrectnessRequest, bool]:
    """The typed request behind a command line, and whether --json was given."""
    args, dims = parse_args_with_dims(build_parser(), argv)
    request = CorrectnessRequest(
        solution=args.solution, reference=args.ref, output_dir=args.output_dir, dims=dims, backend=args.backend,
        device=args.device,
        check=CheckOptions(args.seeds, args.atol, args.rtol, args.timeout, args.compile_only, sanitize=args.sanitize,
                           kernelbench_tolerances=args.kernelbench_tolerances),
        build=BuildOptions(args.arch, args.nvcc_flags),
    )
    return request, args.json


def _main(argv: list[str]) -> int:
    request, wants_json = parse_request(argv)
    request.dims = check_dims(request.reference, request.dims, request.solution, request.backend)
    report = check_solution(request, command=f"{PROG} {shlex.join(argv)}")
    exit_code = exit_code_of(report)
    if wants_json:
        print_json({"ok": exit_code == 0, "exit_code": exit_code,
                    "report": str(request.output_dir / f"{report.file_stem}.md"), **report.to_dict()})
    else:
        print(correctness_summary(report, request.output_dir))
    return exit_code
