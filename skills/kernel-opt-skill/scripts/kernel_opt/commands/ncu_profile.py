"""Profile a solution with Nsight Compute and classify its bottleneck from the numbers.

Only the solution's own launches are profiled: warm-up calls (JIT, autotuning) run first, then
the measured calls run inside the NVTX range `kernel_opt_solution`, the only range ncu looks
at; the reference never runs. Clocks are not locked (--clock-control none), so ncu durations
are never comparable with benchmark timings. The verdict (memory_bound, compute_bound,
latency_bound, occupancy_bound, overlap_bound, plus small_grid) is computed by kernel_opt.profile.classify from the
metrics shown beside it. `--from-report` reads an existing .ncu-rep and needs no GPU.

Usage:
  ncu_profile.py OUT/v1/v1.cu --ref OUT/ref.py --output-dir OUT/v1 --N=4096 --D=4096
  ncu_profile.py OUT/v2/v2.py --ref OUT/ref.py --output-dir OUT/v2 --baseline OUT/v1 --N=4096 --D=4096
  ncu_profile.py OUT/v1/v1.cu --ref OUT/ref.py --output-dir OUT/v1 --set full --N=4096 --D=4096
  ncu_profile.py --from-report OUT/v1/profile.ncu-rep --output-dir OUT/v1 --json

Writes DIR/ncu_summary.md (verdict, evidence, what to try, what moved since --baseline),
DIR/ncu_details.md (every metric with its unit), DIR/ncu_summary.json ("bottleneck": the label),
and, when profiling, DIR/profile.ncu-rep (ncu's report) and DIR/ncu.log (ncu's own output).
Exit codes: 0 profiled and classified, 2 usage error (bad arguments, missing or unreadable
report), 3 the solution is at fault (compile error, crash, no kernel launched), 4 this machine
cannot profile (no GPU, no ncu, no ncu_report, no permission to read GPU counters).
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.cli import make_parser, parse_args_with_dims, print_json, run_command
from kernel_opt.core.errors import EnvironmentFault, ExitCode, SolutionError, UsageError

SUMMARY_JSON = "ncu_summary.json"
SUMMARY_MD = "ncu_summary.md"
STATIC_ANALYSIS_JSON = "static_analysis.json"  # static_analysis.py's output in the same folder: SASS for the verdict
DETAILS_MD = "ncu_details.md"
REPORT_BASE = "profile"  # ncu writes DIR/profile.ncu-rep
DEFAULT_WARMUP_CALLS = 3
DEFAULT_PROFILED_CALLS = 1
SUMMARY_RULES_SHOWN = 4
CLOCK_NOTE = (
    "ncu ran with --clock-control none: GPU clocks were not locked, so these durations describe this profile only "
    "and are never compared with benchmark timings (ncu also replays each kernel many times, flushing caches)"
)


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser("ncu_profile.py", __doc__)
    parser.add_argument("solution", type=Path, nargs="?", help="the solution: a .cu with extern \"C\" solve(...) or a Triton .py")
    parser.add_argument("--ref", type=Path, help="ref.py (its setup() makes the inputs); required unless --from-report")
    parser.add_argument("--output-dir", type=Path, required=True, help="where the reports (and profile.ncu-rep) go")
    parser.add_argument("--from-report", type=Path, help="read this .ncu-rep instead of profiling (no GPU needed)")
    parser.add_argument("--set", dest="section_set", choices=["targeted", "full"], default="targeted",
                        help="targeted: the sections the classifier reads (default); full: ncu's full set (slower)")
    parser.add_argument("--baseline", type=Path, help="a previous version's folder (with ncu_summary.json): report what moved")
    parser.add_argument("--backend", choices=["auto", "cuda", "triton"], default="auto",
                        help="auto: from the suffix; with --from-report, auto links both guides")
    parser.add_argument("--calls", type=int, default=DEFAULT_PROFILED_CALLS,
                        help=f"solution calls inside the profiled range (default {DEFAULT_PROFILED_CALLS})")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP_CALLS,
                        help=f"solution calls before the profiled range (default {DEFAULT_WARMUP_CALLS})")
    parser.add_argument("--max-launches", type=int, default=None,
                        help="stop profiling after this many kernel launches (ncu --launch-count; default 100)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds ncu may take (default 600)")
    parser.add_argument("--arch", default="auto", help="CUDA target: auto (this GPU), sm_90, sm_90a, ...")
    parser.add_argument("--nvcc-flags", default="", help='extra nvcc flags, written with "=" since they start with "-": --nvcc-flags="-lcublas --use_fast_math"')
    parser.add_argument("--json", action="store_true", help="print one JSON object (ncu_summary.json plus paths)")
    return parser


@dataclass
class Collection:
    """How the report was obtained, for the report's last section."""

    mode: str  # "profiled" or "from_report"
    report: str
    reader: str
    command: str | None = None
    ncu: str | None = None
    ncu_version: str | None = None
    clock_control: str = "unknown (read from an existing report)"
    section_set: str | None = None
    nvtx_range: str | None = None
    warmup_calls: int | None = None
    profiled_calls: int | None = None
    max_launches: int | None = None
    dims: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _main(argv: list[str]) -> int:
    from kernel_opt.profile.ncu.reading import locate_report_reader, read_profile

    parser = build_parser()
    args, dims = parse_args_with_dims(parser, argv)
    output_dir: Path = args.output_dir
    if args.from_report is not None:
        if args.solution is not None or args.ref is not None:
            raise UsageError("--from-report reads an existing report: pass no solution and no --ref with it")
        if dims:
            raise UsageError(f"--from-report takes no problem sizes (got {', '.join('--' + k for k in dims)})")
        if not args.from_report.is_file():
            raise UsageError(f"--from-report {args.from_report}: no such file",
                             hint="pass the .ncu-rep that ncu_profile.py wrote (DIR/profile.ncu-rep)")
        baseline = _read_baseline(args.baseline)
        location = locate_report_reader()  # exit 4 at once where no report can be read
        collection = Collection(mode="from_report", report=str(args.from_report), reader=location.source)
        report_path, ncu_path = args.from_report, None
        backends = ("cuda", "triton") if args.backend == "auto" else (args.backend,)
    else:
        if args.solution is None or args.ref is None:
            raise UsageError("give a solution and --ref ref.py to profile, or --from-report FILE.ncu-rep to read a report")
        solution, reference = args.solution.resolve(), args.ref.resolve()
        if not solution.is_file():
            raise UsageError(f"solution file not found: {args.solution}")
        if not reference.is_file():
            raise UsageError(f"reference file not found: {args.ref}")
        if args.calls < 1:
            raise UsageError("--calls must be at least 1: something has to be profiled")
        if args.warmup < 0:
            raise UsageError("--warmup cannot be negative")
        from kernel_opt.solution.contract import detect_backend

        backend = detect_backend(solution, args.backend)
        baseline = _read_baseline(args.baseline)
        report_path, ncu_path, collection = _profile(args, dims, backend, solution, reference, output_dir)
        backends = (backend,)
    profile = read_profile(report_path, ncu_path)
    collection.reader = profile.reader
    payload, markdown = _reports(profile, collection, backends, baseline, output_dir)
    from kernel_opt.core.files import write_json_atomic, write_text_atomic

    write_json_atomic(output_dir / SUMMARY_JSON, payload)
    write_text_atomic(output_dir / SUMMARY_MD, markdown["summary"])
    write_text_atomic(output_dir / DETAILS_MD, markdown["details"])
    if args.json:
        print_json({"ok": True, "exit_code": 0, "summary": str(output_dir / SUMMARY_MD),
                    "details": str(output_dir / DETAILS_MD), **payload})
    else:
        print(_console_summary(payload, output_dir))
    return int(ExitCode.OK)


# --- profiling -------------------------------------------------------------------------------


def _gpu_problem() -> str | None:
    try:
        import torch
    except Exception as error:  # no torch at all
        return f"torch is not importable ({type(error).__name__})"
    if not torch.cuda.is_available():
        return "torch sees no NVIDIA GPU on this machine"
    return None


def _profile(args, dims, backend, solution: Path, reference: Path, output_dir: Path):
    """Build, run the solution under ncu, and return (report path, ncu path, collection info)."""
    from kernel_opt.env.probes import probe_ncu
    from kernel_opt.profile.ncu import collection as ncu
    from kernel_opt.profile.ncu.reading import locate_report_reader

    gpu_problem = _gpu_problem()
    ncu_probe = probe_ncu()
    problems = ([gpu_problem] if gpu_problem else []) + (
        [] if ncu_probe.found else ["Nsight Compute (ncu) is not installed (not on PATH, /usr/local/cuda/bin or "
                                    "/opt/nvidia/nsight-compute)"])
    if problems:
        raise EnvironmentFault(
            "this machine cannot profile: " + "; ".join(problems),
            hint="run ncu_profile.py on a machine with an NVIDIA GPU and Nsight Compute; to read an existing report "
            "here, use --from-report FILE.ncu-rep",
            kind="no_gpu" if gpu_problem else "no_ncu",
        )
    try:
        location, reader_error = locate_report_reader(ncu_probe.path), None
    except EnvironmentFault as error:  # profile anyway: the kept .ncu-rep can be read elsewhere
        location, reader_error = None, error
    output_dir.mkdir(parents=True, exist_ok=True)
    request: dict[str, Any] = {
        "backend": backend,
        "solution": str(solution),
        "reference": str(reference),
        "device": "cuda",
        "cli_dims": dims,
        "warmup_calls": args.warmup,
        "profiled_calls": args.calls,
        "nvtx_range": ncu.NVTX_RANGE,
        "events": str(output_dir / "profile_events.jsonl"),
    }
    notes = [ncu.nsight_python_note(ncu_probe.version)]
    if backend == "cuda":
        from kernel_opt.backends.cuda.build import build_shared_library
        from kernel_opt.backends.cuda.signature import parse_solve_signature

        signature = parse_solve_signature(solution.read_text(errors="replace"))
        arch = args.arch if args.arch != "auto" else _gpu_arch()
        build = build_shared_library(solution, output_dir / "build", arch, shlex.split(args.nvcc_flags))
        request.update(library=build.library.as_posix(), signature=signature.to_dict())
        notes.append(f"built for {build.arch}: {shlex.join(build.command)}")
    events_path = Path(request["events"])
    events_path.write_text("")
    request_path = output_dir / "profile_request.json"
    request_path.write_text(json.dumps(request, indent=2))
    options = ncu.NcuCommandOptions(
        export_base=output_dir / REPORT_BASE,
        section_set=args.section_set,
        max_launches=args.max_launches if args.max_launches is not None else ncu.DEFAULT_MAX_LAUNCHES,
        extra_metrics=ncu.extra_metrics_for(_gpu_capability()),
    )
    program = [sys.executable, "-m", "kernel_opt.profile.target", str(request_path)]
    command = ncu.build_ncu_command(ncu_probe.path, program, options)
    options.report_path.unlink(missing_ok=True)  # a stale report must never be read as this run's
    run = ncu.run_ncu(command, env=ncu.environment_for_child(),
                      timeout_s=args.timeout if args.timeout is not None else ncu.DEFAULT_NCU_TIMEOUT_S)
    (output_dir / "ncu.log").write_text(f"$ {shlex.join(command)}\n{run.output}")
    _raise_for_child_error(events_path)
    died_in = _unfinished_phase(events_path)
    if run.timed_out or not options.report_path.is_file():
        message, hint, kind = ncu.ncu_failure_message(run)
        if kind == "ncu_failed" and died_in and not ncu.ncu_own_errors(run.output):
            raise SolutionError(f"the profiled program died during {died_in} without reporting an error (see ncu.log)",
                                kind="crash")
        error_class = SolutionError if kind == "no_kernels" else EnvironmentFault
        raise error_class(message, hint=hint, kind=kind)
    if died_in:
        raise SolutionError(f"the profiled program died during {died_in} (the report is partial; see ncu.log)",
                            kind="crash")
    if location is None:
        raise EnvironmentFault(
            f"ncu wrote {options.report_path}, but it cannot be read here: {reader_error.message}",
            hint=f"{reader_error.hint}; or copy the report to a machine that has ncu_report and run "
            f"ncu_profile.py --from-report {options.report_path.name} --output-dir DIR there",
            kind="no_ncu_report",
        )
    if run.returncode not in (0, None):
        notes.append(f"ncu exited with code {run.returncode} but wrote a report: {'; '.join(run.messages[:3])}")
    collection = Collection(
        mode="profiled", report=str(options.report_path), reader=location.source, command=shlex.join(command),
        ncu=ncu_probe.path, ncu_version=ncu_probe.version, clock_control=options.clock_control,
        section_set=options.section_set, nvtx_range=options.nvtx_range, warmup_calls=args.warmup,
        profiled_calls=args.calls, max_launches=options.max_launches, dims=_profiled_dims(events_path) or dims,
        notes=notes,
    )
    return options.report_path, ncu_probe.path, collection


def _gpu_capability() -> str | None:
    """This GPU's compute capability ("9.0"), which decides the chip-specific metrics ncu is asked for."""
    try:
        import torch

        major, minor = torch.cuda.get_device_capability(0)
    except Exception:  # no usable GPU: only the metrics every chip has
        return None
    return f"{major}.{minor}"


def _gpu_arch() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability(0)
    return f"sm_{major}{minor}"


def _events(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _unfinished_phase(events_path: Path) -> str | None:
    """The phase the profiled program was in when it stopped without finishing; None when it finished or never ran."""
    events = _events(events_path)
    if not events or any(event["event"] in ("done", "error") for event in events):
        return None
    phases = [event for event in events if event["event"] == "phase"]
    return phases[-1]["phase"] if phases else "start-up"


def _raise_for_child_error(events_path: Path) -> None:
    """Turn the profiled program's own error event into the matching exit code."""
    error = next((event for event in _events(events_path) if event["event"] == "error"), None)
    if error is None:
        return
    code = int(error.get("exit_code", ExitCode.SOLUTION_FAULT))
    error_class = {int(ExitCode.USAGE): UsageError, int(ExitCode.ENVIRONMENT_FAULT): EnvironmentFault}.get(code, SolutionError)
    raise error_class(f"the profiled program failed: {error.get('message')}", hint=error.get("hint"),
                      kind=error.get("kind") or "solution_error")


def _profiled_dims(events_path: Path) -> dict[str, Any]:
    done = next((event for event in _events(events_path) if event["event"] == "done"), None)
    return dict(done.get("dims") or {}) if done else {}


# --- reports ---------------------------------------------------------------------------------


def _read_baseline(baseline_dir: Path | None) -> dict | None:
    if baseline_dir is None:
        return None
    path = baseline_dir / SUMMARY_JSON
    if not path.is_file():
        raise UsageError(f"--baseline {baseline_dir}: no {SUMMARY_JSON} there",
                         hint="profile the baseline version first, with the same --output-dir it was checked in")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise UsageError(f"{path} is not valid JSON: {error}") from error
    data["_dir"] = str(baseline_dir)
    return data


def _reports(profile, collection: Collection, backends, baseline: dict | None, output_dir: Path):
    """The JSON payload and both Markdown reports (every value computed before rendering)."""
    from kernel_opt.profile.classify import compare_with_baseline, summarize
    from kernel_opt.profile.design import load_static_opcodes
    from kernel_opt.profile.evidence import classification_details
    from kernel_opt.profile.suggestions import suggest
    from kernel_opt.profile.thresholds import THRESHOLDS

    verdict = summarize([(k.name, k.launches, k.launch_configuration, k.total_duration_us, k.metrics)
                         for k in profile.kernels], load_static_opcodes(output_dir / STATIC_ANALYSIS_JSON))
    dominant = next(v for v in verdict.kernels if v.name == verdict.dominant_kernel)
    suggestions = suggest(dominant.classification, dominant.metrics, backends, profile.compute_capability)
    notes = list(collection.notes)
    if collection.max_launches and profile.launches >= collection.max_launches:
        notes.append(f"ncu stopped at {collection.max_launches} launches (--max-launches): later launches are missing")
    if profile.launches_outside_range:
        notes.append(f"{profile.launches_outside_range} profiled launch(es) were outside the NVTX range "
                     f"{collection.nvtx_range or 'kernel_opt_solution'}: the report holds more than the solution's calls")
    kernels_payload = []
    for kernel_profile, kernel_verdict in zip(profile.kernels, verdict.kernels):
        classification = kernel_verdict.classification
        kernels_payload.append({
            "name": kernel_profile.name,
            "demangled_name": kernel_profile.demangled_name,
            "launches": kernel_profile.launches,
            "launch_configuration": kernel_profile.launch_configuration,
            "total_duration_us": kernel_profile.total_duration_us,
            "share_pct": kernel_verdict.share_pct,
            "inside_nvtx_range": kernel_profile.inside_range,
            "label": classification.label,
            "small_grid": classification.small_grid,
            "reason": classification.reason,
            "memory_limiter": classification.memory_limiter,
            "occupancy": asdict(classification.occupancy),
            **classification_details(classification),
            "top_stalls": [asdict(share) for share in classification.top_stalls],
            "findings": [asdict(finding) for finding in classification.findings],
            "metrics": kernel_profile.metrics.to_dict(),
            "metric_sources": kernel_profile.metrics.sources,
            "rules": [asdict(rule) for rule in kernel_profile.rules],
        })
    payload: dict[str, Any] = {
        "schema": "kernel_opt.ncu_summary/1",
        "bottleneck": verdict.bottleneck,
        "small_grid": verdict.small_grid,
        "top_stall": verdict.top_stall,
        "memory_limiter": verdict.memory_limiter,
        "occupancy_limiters": dominant.classification.occupancy.limiters,
        "busiest_pipe": dominant.classification.pipes.busiest,
        "unverified": dominant.classification.unverified,
        "reason": dominant.classification.reason,
        "dominant_kernel": {"name": verdict.dominant_kernel, "share_pct": verdict.dominant_share_pct},
        "metrics": verdict.metrics,
        "findings": [asdict(finding) for finding in dominant.classification.findings],
        "read_next": [asdict(suggestion) for suggestion in suggestions],
        "kernels": kernels_payload,
        "device": {"name": profile.device_name, "compute_capability": profile.compute_capability},
        "launches_profiled": profile.launches,
        "baseline": None,
        "collection": asdict(collection) | {"notes": notes},
        "thresholds": {name: item.value for name, item in THRESHOLDS.items()},
    }
    if baseline is not None:
        changes = compare_with_baseline(baseline, payload)
        payload["baseline"] = {"dir": baseline.get("_dir"), "changes": [asdict(change) for change in changes]}
    from kernel_opt.core.render import render

    context = _render_context(payload, profile, verdict, collection, notes)
    return payload, {
        "summary": render("ncu_summary.md.j2", **context),
        "details": render("ncu_details.md.j2", **context),
    }


def _console_summary(payload: dict, output_dir: Path) -> str:
    metrics = payload["metrics"]
    label = payload["bottleneck"] + (" + small_grid" if payload["small_grid"] else "")
    unit = f" ({payload['memory_limiter']})" if payload.get("memory_limiter") else ""
    memory = metrics.get("memory_sol_pct")
    sm = metrics.get("sm_sol_pct")
    lines = [
        f"{label.upper()}: memory SOL {_fmt(memory)}{unit}, SM SOL {_fmt(sm)}, achieved occupancy "
        f"{_fmt(metrics.get('achieved_occupancy_pct'))}; dominant kernel {payload['dominant_kernel']['name']} "
        f"({payload['dominant_kernel']['share_pct']:.0f}% of the profiled time)",
        f"why: {payload['reason']}",
        f"report: {output_dir / SUMMARY_MD} (every metric: {output_dir / DETAILS_MD})",
    ]
    first = payload["read_next"][0] if payload["read_next"] else None
    if first:
        lines.append(f"next: read {first['link']} ({first['why']}), then write the hypothesis for the next version")
    return "\n".join(lines)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


# --- formatting for the templates (formatting only: every value is already computed) --------


def _number(value: Any) -> str:
    """Counts print whole (65536 blocks, not 6.554e+04); other numbers with significant digits."""
    from kernel_opt.core.render import format_number

    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return format_number(value)


def _cell(value: Any) -> str:
    """A table cell: numbers formatted, pipes escaped so a description cannot break a row."""
    text = _number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else (
        "—" if value is None else str(value))
    return text.replace("|", "\\|").replace("\n", " ")


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}%"


def _evidence_rows(classification, metrics) -> list[list[str]]:
    """The dominant kernel's key numbers, each with its real unit (a 0-32 ratio stays a ratio)."""
    from kernel_opt.profile.evidence import design_rows

    rows: list[list[str]] = []

    def row(label: str, value: str | None) -> None:
        if value not in (None, "—"):
            rows.append([label, value])

    limiter = f" ({classification.memory_limiter})" if classification.memory_limiter else ""
    row("memory SOL: busiest of DRAM, L2, L1/shared", f"{_pct(classification.memory_sol_pct)}{limiter}")
    units = [(name, getattr(metrics, field)) for name, field in (("DRAM", "dram_throughput_pct"),
             ("L2", "l2_throughput_pct"), ("L1/shared", "l1_throughput_pct"))]
    if any(value is not None for _, value in units):
        row("DRAM / L2 / L1-shared throughput", " / ".join(f"{name} {_pct(value)}" for name, value in units))
    row("SM SOL (compute throughput)", _pct(classification.sm_sol_pct) if classification.sm_sol_pct is not None else None)
    occupancy = classification.occupancy
    if occupancy.achieved_pct is not None or occupancy.theoretical_pct is not None:
        limit = ""
        if occupancy.limiters:
            limit = "; limited by " + " and ".join(
                f"{name} ({_number(occupancy.blocks_per_sm_limits[name])} blocks/SM)" for name in occupancy.limiters)
        row("achieved / theoretical occupancy", f"{_pct(occupancy.achieved_pct)} / {_pct(occupancy.theoretical_pct)}{limit}")
    grid = classification.grid
    if grid.grid_size_blocks is not None:
        block = metrics.block_size_threads
        parts = [f"{_number(grid.grid_size_blocks)} blocks" + (f" x {_number(block)} threads" if block else "")]
        if grid.sm_count is not None:
            parts.append(f"{_number(grid.sm_count)} SMs")
        if grid.waves_per_sm is not None:
            parts.append(f"{grid.waves_per_sm:.2f} waves per SM")
        row("grid", ", ".join(parts) + (" (small_grid)" if grid.small_grid else ""))
    if classification.top_stalls:
        row("top warp stalls (share of the cycles between issued instructions)",
            ", ".join(f"{share.reason} {share.share_pct:.0f}%" for share in classification.top_stalls))
    row("issue slots busy", _pct(metrics.issue_slots_busy_pct) if metrics.issue_slots_busy_pct is not None else None)
    if metrics.tensor_pipe_pct is not None and classification.pipes.busiest != "tensor":
        row("tensor pipe busy", _pct(metrics.tensor_pipe_pct))
    if metrics.l1_hit_rate_pct is not None or metrics.l2_hit_rate_pct is not None:
        row("L1 / L2 hit rate", f"{_pct(metrics.l1_hit_rate_pct)} / {_pct(metrics.l2_hit_rate_pct)}")
    if metrics.global_load_sectors_per_request is not None or metrics.global_store_sectors_per_request is not None:
        row("sectors per global load / store request",
            f"{_cell(metrics.global_load_sectors_per_request)} / {_cell(metrics.global_store_sectors_per_request)}")
    local = metrics.local_memory_sectors
    row("local-memory sectors (spills, local arrays)", _number(local) if local is not None else None)
    threads = metrics.threads_per_warp_instruction
    row("active threads per warp instruction (of 32)", f"{threads:.1f}" if threads is not None else None)
    row("registers per thread", _number(metrics.registers_per_thread) if metrics.registers_per_thread is not None else None)
    row("duration per launch (ncu, clocks not locked)",
        f"{_number(metrics.duration_us)} us" if metrics.duration_us is not None else None)
    return rows + design_rows(classification)


def _canonical_rows(metrics) -> list[list[str]]:
    from kernel_opt.profile.ncu.metrics import METRIC_ALIASES

    rows = []
    for alias in METRIC_ALIASES:
        value = getattr(metrics, alias.canonical)
        rows.append([alias.canonical, alias.label, _cell(value), alias.unit,
                     metrics.sources.get(alias.canonical, "not collected")])
    rows.append(["shared_bank_conflict_pct", "bank conflicts as a share of shared-memory wavefronts",
                 _cell(metrics.shared_bank_conflict_pct), "% of wavefronts", "derived"])
    return rows


def _render_context(payload: dict, profile, verdict, collection: Collection, notes: list[str]) -> dict[str, Any]:
    from kernel_opt.core.render import compact_markdown_table, format_number, markdown_table
    from kernel_opt.profile.ncu.metrics import STALL_MEANINGS

    dominant = next(v for v in verdict.kernels if v.name == verdict.dominant_kernel)
    classification = dominant.classification
    summary_rules = [rule for rule in next(k for k in profile.kernels if k.name == dominant.name).rules
                     if rule.kind in ("optimization", "warning") or rule.section == "SpeedOfLight"]
    summary_rules.sort(key=lambda rule: (rule.section != "SpeedOfLight", -(rule.estimated_speedup_pct or 0.0)))
    kernels_table = markdown_table(
        [[_cell(v.name), v.launches, v.launch_configuration, _cell(v.total_duration_us), f"{v.share_pct:.0f}%",
          v.classification.label or "—", "yes" if v.classification.small_grid else "no",
          _pct(v.classification.memory_sol_pct), _pct(v.classification.sm_sol_pct),
          _pct(v.classification.occupancy.achieved_pct)] for v in verdict.kernels],
        ["kernel", "launches", "launch", "total us (ncu)", "share", "label", "small_grid", "memory SOL", "SM SOL",
         "achieved occupancy"],
    )
    baseline_table = ""
    if payload["baseline"]:
        baseline_table = markdown_table(
            [[change["label"], _cell(change["before"]), _cell(change["after"]),
              ("—" if change["change"] is None else f"{change['change']:+.4g}"), "yes" if change["moved"] else "no"]
             for change in payload["baseline"]["changes"]],
            ["metric", "before", "after", "change", "moved"],
        )
    details = []
    for kernel_profile, kernel_verdict in zip(profile.kernels, verdict.kernels):
        metrics = kernel_profile.metrics
        stall_rows = [[share.reason, _cell(share.value), f"{share.share_pct:.1f}%", STALL_MEANINGS.get(share.reason, "")]
                      for share in metrics.stall_shares()]
        details.append({
            "name": kernel_profile.name,
            "demangled_name": kernel_profile.demangled_name,
            "launches": kernel_profile.launches,
            "launch_configuration": kernel_profile.launch_configuration,
            "inside_range": kernel_profile.inside_range,
            "classification": kernel_verdict.classification,
            "share_pct": kernel_verdict.share_pct,
            "canonical_table": markdown_table(_canonical_rows(metrics), ["canonical", "what", "value", "unit", "ncu metric"]),
            "stall_unit": metrics.stall_unit,
            "stall_source": metrics.sources.get("stalls"),
            "stall_table": markdown_table(stall_rows, ["state", f"value ({metrics.stall_unit})", "share", "meaning"])
            if stall_rows else "",
            "rules_table": markdown_table(
                [[rule.section, rule.rule, rule.kind, _cell(rule.estimated_speedup_pct), _cell(rule.message)]
                 for rule in kernel_profile.rules], ["section", "rule", "kind", "est. speedup %", "message"],
            ) if kernel_profile.rules else "",
            "raw_table": compact_markdown_table(
                [[metric.name, _cell(metric.value), _cell(metric.unit or ""), _cell(metric.description)]
                 for metric in kernel_profile.raw_metrics], ["ncu metric", "value", "unit", "description"],
            ),
            "raw_count": len(kernel_profile.raw_metrics),
        })
    return {
        "payload": payload,
        "verdict": verdict,
        "classification": classification,
        "evidence_table": markdown_table(_evidence_rows(classification, dominant.metrics), ["evidence", "value"]),
        "summary_rules": summary_rules[:SUMMARY_RULES_SHOWN],
        "kernels_table": kernels_table,
        "kernel_count": len(verdict.kernels),
        "baseline_table": baseline_table,
        "collection": collection,
        "notes": notes,
        "clock_note": CLOCK_NOTE,
        "details": details,
        "total_duration": format_number(payload["metrics"].get("duration_us")),
        "profile": profile,
    }
