"""experience_log.py add: one record, its numbers typed or copied from a version folder."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from kernel_opt.commands.experience_subcommands.output import PROG, summary_line
from kernel_opt.core.cli import print_json
from kernel_opt.core.errors import UsageError
from kernel_opt.experience.evidence import read_version
from kernel_opt.experience.recording import build_record
from kernel_opt.experience.records import parse_dims, parse_latency_us
from kernel_opt.experience.store import Entry, append_records
from kernel_opt.solution import registry

# Original skill flag -> record field (all numbers; units are in the field names).
METRIC_FLAGS: dict[str, tuple[str, str]] = {
    "--memory-sol-before": ("memory_sol_before_pct", "memory speed-of-light %% before the change"),
    "--memory-sol-after": ("memory_sol_after_pct", "memory speed-of-light %% after"),
    "--sm-sol-before": ("sm_sol_before_pct", "SM speed-of-light %% before"),
    "--sm-sol-after": ("sm_sol_after_pct", "SM speed-of-light %% after"),
    "--latency-before": ("latency_before_us", "kernel time before: 4.2ms, 4200us, or a bare number in --latency-unit"),
    "--latency-after": ("latency_after_us", "kernel time after: 4.2ms, 4200us, or a bare number in --latency-unit"),
    "--occupancy-before": ("occupancy_before_pct", "achieved occupancy %% before"),
    "--occupancy-after": ("occupancy_after_pct", "achieved occupancy %% after"),
}


def _iteration(text: str) -> int:
    match = re.fullmatch(r"v?(\d+)", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a version number such as 3 or v3")
    return int(match.group(1))


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def add_record_arguments(add: argparse.ArgumentParser) -> None:
    """The fields of one record, as `add` takes them."""
    add.add_argument("--from", dest="from_dir", type=Path,
                     help="version folder DIR/vN: copy numbers from its JSON files")
    add.add_argument("--kernel", help="operation name, e.g. softmax, gemm, layernorm")
    add.add_argument("--backend", help="cuda or triton (default with --from: the version's)")
    add.add_argument("--chip", help="sm_90, H100, 'NVIDIA H100 80GB HBM3', ...")
    add.add_argument("--dims", help="problem size: 'N=4096,D=4096' or a JSON object")
    add.add_argument("--iteration", "-i", type=_iteration, help="version number N of vN (3 or v3)")
    add.add_argument("--bottleneck", help="the classifier's label for the version the change started from")
    add.add_argument("--stall", help="top warp-stall reason before the change, e.g. long_scoreboard")
    for flag, (field_name, text) in METRIC_FLAGS.items():
        latency = field_name.startswith("latency_")
        add.add_argument(flag, type=str if latency else _number, metavar="TIME" if latency else "PCT", help=text)
    add.add_argument("--latency-unit", choices=["ms", "us"], default="ms",
                     help="unit of a bare --latency-before/--latency-after number (default ms, as in the original "
                          "skill; us for microseconds)")
    add.add_argument("--speedup", type=_number, help="old time / new time, when typed by hand")
    add.add_argument("--optimization", "-o", help="the one change this version made")
    add.add_argument("--strategy", help="short strategy name to group by (default: from --optimization)")
    add.add_argument("--hypothesis", help="the hypothesis tested (default with --from: vN/hypothesis.txt)")
    add.add_argument("--outcome", help="success, neutral or failure (default with --from: the measured verdict)")
    add.add_argument("--notes", help="what to remember: why it worked, why it failed")
    add.add_argument("--force", action="store_true",
                     help="accept an --outcome that contradicts the measurement (needs --notes)")


def add_command(args, log_path: Path, curated_path, wants_json: bool) -> int:
    """`add`: append one record, its numbers from --from DIR/vN or typed; prints it and the next step."""
    given = {
        "kernel": args.kernel,
        "backend": args.backend,
        "chip": args.chip,
        "dims": parse_dims(args.dims) or None,
        "iteration": args.iteration,
        "bottleneck": args.bottleneck,
        "stall": args.stall,
        "speedup": args.speedup,
        "optimization": args.optimization,
        "strategy": args.strategy,
        "hypothesis": args.hypothesis,
        "outcome": args.outcome,
        "notes": args.notes,
    }
    for flag, (field_name, _) in METRIC_FLAGS.items():
        given[field_name] = getattr(args, flag.lstrip("-").replace("-", "_"))
    unit_notes = read_latencies(given, args.latency_unit)
    if not args.kernel:
        raise UsageError("add needs --kernel (the operation, e.g. softmax)",
                         hint="kernel names are not in the version files")
    if args.force and not args.notes:
        raise UsageError("--force needs --notes saying why the measured outcome is overridden")
    evidence = read_version(args.from_dir) if args.from_dir else None
    if not args.backend and (evidence is None or evidence.backend is None):
        given["backend"] = backend_of_folder(args.from_dir)
    new = build_record(given, evidence, force=args.force)
    [record] = append_records(log_path, [new.record])
    entry = Entry("local", record)
    if wants_json:
        print_json({
            "ok": True,
            "command": "add",
            "log": str(log_path),
            "ref": entry.ref,
            "record": record.to_dict(),
            "measured_outcome": new.measured_outcome,
            "not_measured": new.not_measured,
            "warnings": new.warnings,
            "notes": unit_notes,
        })
        return 0
    print(f"recorded {summary_line(entry)}")
    print(f"log: {log_path}")
    for note in unit_notes:
        print(f"note: {note}")
    for warning in new.warnings:
        print(f"warning: {warning}")
    for item in new.not_measured:
        print(f"not measured: {item}")
    chip = f" --chip {record.chip}" if record.chip else ""
    print(
        f"next: before the next version, run "
        f"`{PROG} recommend --kernel {record.kernel} --backend {record.backend}{chip} "
        f"--bottleneck {record.bottleneck_after or '<its bottleneck>'}`"
    )
    return 0


def read_latencies(given: dict, bare_unit: str) -> list[str]:
    """Typed latencies to microseconds in place; one note per bare number saying how it was read."""
    notes = []
    for flag, (field_name, _) in METRIC_FLAGS.items():
        text = given.get(field_name)
        if not field_name.startswith("latency_") or text is None:
            continue
        given[field_name], explicit = parse_latency_us(text, bare_unit, flag)
        if not explicit:
            other = "us" if bare_unit == "ms" else "ms"
            notes.append(f"{flag} {text} read as {text} {bare_unit} = {given[field_name]:g} us "
                         f"(write {text}{other} or --latency-unit {other} if it was in {other})")
    return notes


def backend_of_folder(folder: Path | None) -> str:
    """The backend of a version folder's kernel file (vN.cu, vN.py, else its only solution file)."""
    if folder is not None and folder.is_dir():
        own = sorted(folder.glob(f"{folder.name}.*"))
        others = sorted(p for p in folder.iterdir() if p.is_file() and p not in own)
        for path in own + others:
            try:
                return registry.detect(path)
            except UsageError:
                continue
    where = f" and {folder} holds no kernel file whose backend can be told" if folder is not None else ""
    raise UsageError(f"add needs --backend: no --from version records one{where}",
                     hint=f"pass --backend {'|'.join(registry.names())}, or --from OUT/vN")
