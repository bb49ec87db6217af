"""Check a CUDA or Triton solution against a PyTorch reference; a wrong kernel cannot pass.

Every shape (the command-line one plus ref.py's SHAPES) runs with several seeds of fresh
random inputs; outputs are NaN-poisoned before each call; inputs must come back unmodified;
the solution runs in a child process, so a crash or hang is reported, not inherited.

Usage:
  correctness_check.py reference/vector_add/good/vector_add.py --ref reference/vector_add/ref.py --output-dir out/v0 --n=1048576
  correctness_check.py kernel.cu --ref ref.py --output-dir out/v0 --N=4096 --D=4096
  correctness_check.py kernel.cu --ref ref.py --output-dir out/v0 --compile-only --arch sm_90a
  correctness_check.py kernel.py --ref ref.py --output-dir out/v0 --device cpu --seeds 5 --json

Writes DIR/correctness.md and DIR/correctness.json ("passed": true|false, per shape and output).
Exit codes: 0 pass, 1 wrong results, 2 usage error (bad arguments, ref.py broken),
3 the solution is at fault (compile error, bad signature, crash, illegal address, timeout),
4 this machine cannot run the check (no GPU for CUDA, bf16 under the Triton interpreter).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from kernel_opt.backends import registry
from kernel_opt.check.compare import CaseResult, CorrectnessReport, summarize_failures
from kernel_opt.check.correctness import BuildOptions, CheckOptions, check_correctness, exit_code_of
from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import format_number, markdown_table, render
from kernel_opt.env.device import resolve_device

DEFAULT_TIMEOUT_S = 120.0


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser("correctness_check.py", __doc__)
    parser.add_argument("solution", type=Path, help="the solution: a .cu file with extern \"C\" solve(...) or a Triton .py with run_kernel(...)")
    parser.add_argument("--ref", type=Path, required=True, help="ref.py with reference(**kwargs) (and setup, SHAPES, atol, rtol)")
    parser.add_argument("--output-dir", type=Path, required=True, help="where correctness.md and correctness.json go")
    parser.add_argument("--backend", choices=["auto", *registry.names()], default="auto")
    parser.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto",
                        help="auto: the GPU when torch sees one, else the CPU (Triton interpreter; CUDA compile-check only)")
    parser.add_argument("--seeds", type=int, default=3, help="random input sets per shape (default 3)")
    parser.add_argument("--atol", type=float, help="absolute tolerance (overrides ref.py and the dtype default)")
    parser.add_argument("--rtol", type=float, help="relative tolerance (overrides ref.py and the dtype default)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                        help=f"seconds without progress before the solution counts as hung (default {DEFAULT_TIMEOUT_S:g})")
    parser.add_argument("--compile-only", action="store_true", help="CUDA: compile and report resources; no GPU needed")
    parser.add_argument("--arch", default="auto", help="CUDA target: auto (this GPU), sm_90, sm_90a, sm_80, ...")
    parser.add_argument("--nvcc-flags", default="", help='extra nvcc flags, written with "=" since they start with "-": --nvcc-flags="-lcublas --use_fast_math"')
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    return parser


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args, dims = parse_args_with_dims(parser, argv)
    if args.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    solution, reference = args.solution.resolve(), args.ref.resolve()
    if not solution.is_file():
        raise UsageError(f"solution file not found: {args.solution}")
    if not reference.is_file():
        raise UsageError(f"reference file not found: {args.ref}")
    backend = registry.detect(solution, args.backend)
    device = resolve_device(args.device)
    report = check_correctness(
        solution,
        reference,
        backend,
        device,
        dims,
        CheckOptions(args.seeds, args.atol, args.rtol, args.timeout, args.compile_only),
        BuildOptions(args.arch, args.nvcc_flags),
        build_dir=args.output_dir / "build",
        command="correctness_check.py " + shlex.join(argv),
    )
    report.solution, report.reference = str(args.solution), str(args.ref)
    _write_reports(report, args.output_dir)
    exit_code = exit_code_of(report)
    if args.json:
        print_json({"ok": exit_code == 0, "exit_code": exit_code, "report": str(args.output_dir / "correctness.md"), **report.to_dict()})
    else:
        print(_summary(report, args.output_dir))
    return exit_code


def _write_reports(report: CorrectnessReport, output_dir: Path) -> None:
    payload = report.to_dict()
    failures = summarize_failures(report.cases)
    markdown = render(
        "correctness.md.j2",
        report=report,
        failures=failures,
        exit_code=exit_code_of(report),
        tables=_tables(report),
        versions=", ".join(
            f"{key} {report.environment[key]}" for key in ("python", "torch", "triton", "cuda") if report.environment.get(key)
        ),
    )
    write_json_atomic(output_dir / "correctness.json", payload)
    write_text_atomic(output_dir / "correctness.md", markdown)


def _shape_text(dims: dict) -> str:
    return ", ".join(f"{key}={value}" for key, value in dims.items()) or "default"


def _tables(report: CorrectnessReport) -> dict:
    """The report's tables as Markdown (formatting only: every value is already in the record)."""
    tolerances = markdown_table(
        [[t["output"], t["dtype"], format_number(t["atol"]), format_number(t["rtol"]), t["source"]] for t in report.tolerances],
        ["output", "dtype", "atol", "rtol", "from"],
    )
    cases = markdown_table(
        [
            [
                _shape_text(case.dims), case.seed, "pass" if case.passed else "FAIL", o.name,
                f"{o.mismatches} / {o.numel}", o.nan_unexpected, format_number(o.max_abs_error),
                format_number(o.max_rel_error), format_number(o.norm_rel_error),
                ", ".join(case.modified_inputs) or "none",
            ]
            for case in report.cases
            for o in case.outputs
        ],
        ["shape", "seed", "result", "output", "mismatches", "unexpected NaN", "max abs err", "max rel err",
         "norm rel err", "inputs modified"],
    )
    first_failing_seed: dict[str, CaseResult] = {}
    for case in report.cases:
        if not case.passed:
            first_failing_seed.setdefault(_shape_text(case.dims), case)
    mismatches = [
        {
            "output": o.name,
            "dtype": o.dtype,
            "shape": o.shape,
            "where": f"{_shape_text(case.dims)}, seed {case.seed}",
            "table": markdown_table(
                [[m.index, format_number(m.actual, 8), format_number(m.expected, 8)] for m in o.first_mismatches],
                ["index", "actual", "expected"],
            ),
        }
        for case in first_failing_seed.values()
        for o in case.outputs
        if o.first_mismatches
    ][:8]
    kernels = ""
    if report.build:
        kernels = markdown_table(
            [
                [k["name"], k["arch"], k["registers"], k["shared_memory_bytes"], k["stack_frame_bytes"],
                 k["spill_stores_bytes"], k["spill_loads_bytes"]]
                for k in report.build["kernels"]
            ],
            ["kernel", "arch", "registers/thread", "static shared B/block", "stack B/thread", "spill stores B",
             "spill loads B"],
        )
    return {"tolerances": tolerances, "cases": cases, "mismatches": mismatches, "kernels": kernels}


def _summary(report: CorrectnessReport, output_dir: Path) -> str:
    where = output_dir / "correctness.md"
    mode = " (Triton interpreter on the CPU)" if report.interpreter else ""
    if report.error is not None:
        error = report.error
        lines = [f"{report.verdict.upper().replace('_', ' ')} ({error['kind']}): {error['message']}"]
        if error.get("hint") and error["kind"] not in ("crash", "internal_error"):
            lines.append(f"hint: {error['hint'].splitlines()[0] if error['hint'] else ''}")
        lines.append(f"report: {where}")
        return "\n".join(lines)
    if report.passed and report.build and not report.cases:
        return f"COMPILED for {report.build['arch']}: correctness not run (--compile-only). report: {where}"
    total = len(report.cases)
    if report.passed:
        shapes = len({str(case.dims) for case in report.cases})
        text = f"PASS{mode}: all {total} cases ({shapes} shapes x {len(report.seeds)} seeds) match the reference."
        if report.warnings:
            text += f"\n{len(report.warnings)} warning(s), read them in {where}"
        return text + f"\nreport: {where}\nnext: time and profile this version (SKILL.md, the profile step)"
    failed = [case for case in report.cases if not case.passed]
    lines = [f"FAIL{mode}: {len(failed)} of {total} cases differ from the reference."]
    lines += [f"  - {sentence}" for sentence in summarize_failures(report.cases)[:5]]
    lines.append(f"report: {where}")
    lines.append("next: fix the solution and re-run this command")
    return "\n".join(lines)
