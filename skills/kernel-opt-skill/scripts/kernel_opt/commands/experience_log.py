"""Record what each optimization step did, and ask what worked in situations like yours.

Usage:
  # after benchmarking and profiling version 3 against version 2: numbers come from the files
  experience_log.py add --from out/v3 --kernel softmax --strategy vector_loads \\
      --optimization "float4 loads and stores for the row pass"
  # the original skill's form, numbers typed by hand (latencies in ms as there, or with a unit: 140us)
  experience_log.py add --kernel softmax --backend cuda --chip sm_90 --dims "N=4096,D=4096" \\
      -i v2 --bottleneck memory --stall long_scoreboard --memory-sol-before 41.5 \\
      --memory-sol-after 78.0 --latency-before 0.14 --latency-after 0.10 -o "float4 loads" --outcome success
  experience_log.py recommend --kernel softmax --backend cuda --chip H100 --bottleneck memory_bound -n 5
  experience_log.py search float4 shared
  experience_log.py list --kernel softmax --outcome failure
  experience_log.py show 12
  experience_log.py merge --from teammate/experience.jsonl
  experience_log.py merge
  experience_log.py merge --groups "1,3" "2,4,5"
  experience_log.py merge --duplicates
  experience_log.py sync
  experience_log.py stats --json

The log is one JSON record per line at --log PATH, else $KERNEL_OPT_EXPERIENCE_LOG, else
$XDG_DATA_HOME/kernel-opt-skill/experience.jsonl (~/.local/share/kernel-opt-skill/...).
Curated records shipped with the skill (experience/learned/curated.jsonl) are read beside it
and never written; their ids read curated:N. Ids never change. Several agents may append at
once. A corrupt line is reported with its line number and skipped.

`add --from DIR/vN` copies correctness, speedup (with its confidence interval), times and
profile metrics from vN/*.json and the baseline's ncu_summary.json; the outcome is the measured
verdict (success: more than 5% faster with the interval above 1; failure: incorrect, or slower
beyond noise: more than 2% slower with the whole interval below 1; else neutral). A typed --outcome that contradicts the
measurement is refused unless --force is given with --notes. Group strategies by passing a
--strategy name from the guides (e.g. vector_loads, smem_tiling, cp_async_pipeline). Without
--backend, add takes it from the --from folder (its correctness.json, else its kernel's suffix).

Latencies: --latency-before/--latency-after take a unit (4.2ms, 4200us, 4200000ns); a bare
number is in --latency-unit, milliseconds by default as in the original skill, and add says
how it read it. The record stores microseconds (latency_before_us).

merge alone lists every record for review; `merge --groups "1,3" "2,4,5"` then collapses each
listed group of ids into one record (the original skill's two phases); `merge --duplicates`
(also `--groups` with no ids) collapses records with identical content. sync writes
experiences.md beside the log (--output to choose), never into the skill folder.

Exit codes: 0 ok; 2 bad input (the message names the field); 4 the log cannot be written.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from kernel_opt.core.cli import make_parser, print_json, run_command
from kernel_opt.core.errors import EnvironmentFault, UsageError
from kernel_opt.core.files import write_text_atomic
from kernel_opt.core.render import markdown_table, render
from kernel_opt.experience import labels
from kernel_opt.experience.evidence import read_version
from kernel_opt.experience.families import FAMILIES, OTHER_FAMILY
from kernel_opt.experience.labels import (
    Chip,
    normalize_backend,
    normalize_bottleneck,
    normalize_chip,
    normalize_outcome,
)
from kernel_opt.experience.merge import merge, parse_id_groups
from kernel_opt.experience.query import Filters, filter_entries, search
from kernel_opt.experience.ranking import RecommendRequest, recommend_from_log
from kernel_opt.experience.recording import build_record
from kernel_opt.experience.records import parse_dims, parse_latency_us
from kernel_opt.experience.store import (
    CURATED_PATH,
    SUMMARY_NAME,
    Entry,
    Experience,
    append_records,
    default_log_path,
    load_experience,
    summary_path,
)
from kernel_opt.experience.summary import compute_stats, render_stats, render_summary, stats_to_dict
from kernel_opt.solution import registry

PROG = "experience_log.py"

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


def _labels_help() -> str:
    """The accepted spellings of every label, generated from the tables that normalise them."""
    aliases = "\n".join(
        f"  {kind}: {labels.describe_aliases(table)}"
        for kind, table in (
            ("bottleneck", labels.BOTTLENECK_ALIASES),
            ("backend", labels.backend_aliases()),
            ("outcome", labels.OUTCOME_ALIASES),
        )
    )
    families = "\n".join(f"  {family}: {', '.join(members[:8])}, ..." for family, (_, members) in FAMILIES.items())
    return (
        "Accepted labels (canonical, then the aliases read as it):\n"
        + aliases
        + "\n  chip: sm_XY (sm_90, sm_90a, 9.0), a name (H100, 'NVIDIA H100 80GB HBM3', H200, A100, L40S,"
        + "\n        RTX A6000, B200, ...) or both ('sm_89 RTX 4000 Ada'); stored as sm_XY plus a name\n"
        + "\nKernel families (recommend treats members of one family as similar):\n"
        + families
        + "\n"
    )


def _help_text() -> str:
    return __doc__.rstrip() + "\n\n" + _labels_help()


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


def _add_common_options(parser: argparse.ArgumentParser) -> None:
    """--log, --curated and --json, accepted before or after the command name.

    SUPPRESS defaults: an option given before the command is not reset by the subparser.
    """
    parser.add_argument(
        "--log", type=Path, default=argparse.SUPPRESS,
        help="the experience log (JSONL); default: $KERNEL_OPT_EXPERIENCE_LOG, else "
        "$XDG_DATA_HOME/kernel-opt-skill/experience.jsonl",
    )
    parser.add_argument(
        "--curated", default=argparse.SUPPRESS,
        help=f"curated read-only records to read beside the log, or 'none' (default: {CURATED_PATH})",
    )
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON object")


def build_parser() -> argparse.ArgumentParser:
    parser = make_parser(PROG, _help_text())
    _add_common_options(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        joined = re.sub(r"\\\n\s*", "", __doc__)  # continuation lines of multi-line examples
        examples = [line.strip() for line in joined.splitlines() if line.strip().startswith(f"{PROG} {name} ")]
        epilog = "Example:\n  " + "\n  ".join(examples) + "\n\n" if examples else ""
        subparser = commands.add_parser(
            name, help=summary, description=summary, allow_abbrev=False,
            epilog=epilog + (_labels_help() if name in ("add", "recommend", "list") else ""),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _add_common_options(subparser)
        return subparser

    _add_record_arguments(command("add", "append one record (ids are assigned by the log)"))

    rec = command("recommend", "strategies that worked in similar situations, and failures to avoid")
    rec.add_argument("--kernel", help="operation name")
    rec.add_argument("--backend", help="cuda or triton")
    rec.add_argument("--chip", help="sm_90, H100, ...")
    rec.add_argument("--bottleneck", help="the current version's bottleneck label")
    rec.add_argument("-n", type=int, default=5, help="how many strategies (default 5)")

    find = command("search", "records whose text fields contain every word")
    find.add_argument("words", nargs="+", help="words to look for (case-insensitive)")

    listing = command("list", "records matching filters")
    listing.add_argument("--kernel")
    listing.add_argument("--family", choices=[*FAMILIES, OTHER_FAMILY])
    listing.add_argument("--backend")
    listing.add_argument("--chip")
    listing.add_argument("--bottleneck")
    listing.add_argument("--outcome")
    listing.add_argument("--strategy")
    listing.add_argument("-n", type=int, default=None, help="show only the last N matches")

    show = command("show", "one record in full")
    show.add_argument("id", help="12 (your log), curated:3 (shipped), or an id merged into a group")

    merging = command("merge", "import a teammate's log and/or collapse duplicates (backup: <log>.bak)")
    merging.add_argument("--from", dest="from_log", type=Path, help="another experience.jsonl to import")
    merging.add_argument("--groups", nargs="*", metavar="ID,ID", default=None,
                         help='collapse each listed group of ids into one record: --groups "1,3" "2,4,5"; '
                              "with no ids, the same as --duplicates")
    merging.add_argument("--duplicates", action="store_true", help="collapse records with identical content into one")

    sync = command("sync", "write the human summary experiences.md")
    sync.add_argument("--output", type=Path, default=None,
                      help=f"where to write it (default: {SUMMARY_NAME} beside the log)")

    command("stats", "counts, success rates and median speedups by backend, bottleneck, chip, strategy")
    return parser


def _add_record_arguments(add: argparse.ArgumentParser) -> None:
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


def main(argv=None) -> int:
    return run_command(_main, argv)


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    wants_json = getattr(args, "json", False)
    log_path = getattr(args, "log", None) or default_log_path()
    curated_option = getattr(args, "curated", None)
    curated_path = None if curated_option == "none" else Path(curated_option) if curated_option else CURATED_PATH
    if curated_option and curated_path is not None and not curated_path.is_file():
        raise UsageError(f"--curated {curated_option}: no such file", hint="pass a JSONL file, or --curated none")
    handler = {
        "add": _add,
        "recommend": _recommend,
        "search": _search,
        "list": _list,
        "show": _show,
        "merge": _merge,
        "sync": _sync,
        "stats": _stats,
    }[args.command]
    return handler(args, Path(log_path), curated_path, wants_json)


def _report_skipped(experience: Experience) -> list[str]:
    lines = [line.describe() for line in experience.skipped]
    for line in lines:
        print(f"warning: skipped {line}", file=sys.stderr)
    return lines


def _chip_option(text: str | None) -> Chip | None:
    return normalize_chip(text, field="--chip") if text else None


def _summary_line(entry: Entry) -> str:
    record = entry.record
    chip = Chip(record.chip, record.chip_name).describe() if record.chip or record.chip_name else "chip not recorded"
    speed = f", {record.speedup:.2f}x" if record.speedup is not None else ""
    return (
        f"#{entry.ref}: {record.kernel} · {record.backend} · {chip} · {record.bottleneck or 'bottleneck not recorded'}"
        f" → {record.strategy}: {record.outcome} ({record.outcome_source}{speed})"
    )


# --- add -------------------------------------------------------------------------------------


def _add(args, log_path: Path, curated_path, wants_json: bool) -> int:
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
    unit_notes = _read_latencies(given, args.latency_unit)
    if not args.kernel:
        raise UsageError("add needs --kernel (the operation, e.g. softmax)",
                         hint="kernel names are not in the version files")
    if args.force and not args.notes:
        raise UsageError("--force needs --notes saying why the measured outcome is overridden")
    evidence = read_version(args.from_dir) if args.from_dir else None
    if not args.backend and (evidence is None or evidence.backend is None):
        given["backend"] = _backend_of_folder(args.from_dir)
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
    print(f"recorded {_summary_line(entry)}")
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


def _read_latencies(given: dict, bare_unit: str) -> list[str]:
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


def _backend_of_folder(folder: Path | None) -> str:
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


# --- recommend, search, list, show -------------------------------------------------------------


def _recommend(args, log_path: Path, curated_path, wants_json: bool) -> int:
    request = RecommendRequest(kernel=args.kernel, backend=args.backend, chip=args.chip, bottleneck=args.bottleneck,
                               limit=args.n, log_path=log_path, curated_path=curated_path)
    result, skipped = recommend_from_log(request)
    for line in skipped:
        print(f"warning: skipped {line}", file=sys.stderr)
    if wants_json:
        print_json({"ok": True, "command": "recommend", "log": str(log_path), **result.to_dict(),
                    "skipped_lines": skipped})
        return 0
    sys.stdout.write(render("experience_recommend.md.j2", result=result))
    return 0


def _entries_table(entries: list[Entry]) -> str:
    rows = []
    for entry in entries:
        record = entry.record
        rows.append([
            entry.ref,
            record.kernel,
            record.backend,
            Chip(record.chip, record.chip_name).describe() if record.chip or record.chip_name else None,
            record.bottleneck,
            record.strategy,
            record.outcome,
            f"{record.speedup:.2f}x" if record.speedup is not None else None,
        ])
    return markdown_table(rows, ["id", "kernel", "backend", "chip", "bottleneck", "strategy", "outcome", "speedup"])


def _print_entries(command: str, entries: list[Entry], log_path: Path, skipped: list[str], wants_json: bool) -> int:
    if wants_json:
        print_json({
            "ok": True,
            "command": command,
            "log": str(log_path),
            "count": len(entries),
            "records": [{"ref": entry.ref, "origin": entry.origin, **entry.record.to_dict()} for entry in entries],
            "skipped_lines": skipped,
        })
        return 0
    if not entries:
        print(f"no matching records (log: {log_path})")
        return 0
    print(_entries_table(entries))
    print(f"\n{len(entries)} record{'s' if len(entries) != 1 else ''}; next: `{PROG} show ID` for one in full")
    return 0


def _search(args, log_path: Path, curated_path, wants_json: bool) -> int:
    experience = load_experience(log_path, curated_path)
    skipped = _report_skipped(experience)
    return _print_entries("search", search(experience.entries(), args.words), log_path, skipped, wants_json)


def _list(args, log_path: Path, curated_path, wants_json: bool) -> int:
    experience = load_experience(log_path, curated_path)
    skipped = _report_skipped(experience)
    filters = Filters(
        kernel=args.kernel,
        family=args.family,
        backend=normalize_backend(args.backend, field="--backend"),
        chip=_chip_option(args.chip),
        bottleneck=normalize_bottleneck(args.bottleneck, field="--bottleneck"),
        outcome=normalize_outcome(args.outcome, field="--outcome"),
        strategy=args.strategy,
    )
    entries = filter_entries(experience.entries(), filters)
    if args.n is not None:
        if args.n < 1:
            raise UsageError(f"-n must be at least 1, got {args.n}")
        entries = entries[-args.n :]
    return _print_entries("list", entries, log_path, skipped, wants_json)


def _show(args, log_path: Path, curated_path, wants_json: bool) -> int:
    experience = load_experience(log_path, curated_path)
    skipped = _report_skipped(experience)
    entry = experience.find(args.id)
    data = entry.record.to_dict()
    if wants_json:
        print_json({"ok": True, "command": "show", "ref": entry.ref, "origin": entry.origin, "record": data,
                    "skipped_lines": skipped})
        return 0
    if str(entry.record.id) != args.id.strip().lstrip("#").rpartition(":")[2]:
        print(f"(id {args.id} was merged into #{entry.ref})")
    print(_summary_line(entry))
    width = max(len(key) for key in data)
    for key, value in data.items():
        if value in (None, "", {}, []):
            continue
        print(f"  {key:<{width}}  {value}")
    return 0


# --- merge, sync, stats ------------------------------------------------------------------------


def _merge(args, log_path: Path, curated_path, wants_json: bool) -> int:
    id_groups = parse_id_groups(args.groups or [])
    duplicates = args.duplicates or args.groups == []  # `--groups` with no ids: its meaning before ids
    if args.from_log is None and not duplicates and not id_groups:
        return _review(log_path, wants_json)
    report = merge(log_path, source=args.from_log, groups=duplicates, id_groups=id_groups)
    if wants_json:
        print_json({"ok": True, "command": "merge", **report.to_dict()})
        return 0
    for line in report.skipped_in_source:
        print(f"warning: skipped {line.describe()}", file=sys.stderr)
    for line in report.skipped_in_log:
        print(f"warning: unreadable line kept as it was: {line.describe()}", file=sys.stderr)
    if report.source:
        print(f"imported {len(report.imported)} record(s) from {report.source}; "
              f"{len(report.duplicates)} already present; {len(report.skipped_in_source)} unreadable line(s) skipped")
        for item in report.imported:
            print(f"  #{item['id']} <- {report.source} #{item['source_id']}")
    for warning in report.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if duplicates or id_groups:
        print(f"collapsed {len(report.groups)} group(s)" + ("" if id_groups else " of duplicates"))
        for group in report.groups:
            print(f"  #{group['kept_id']} now also stands for {', '.join('#' + str(i) for i in group['merged_ids'])}")
    if report.backup:
        print(f"previous log kept at {report.backup}")
    if not report.changed:
        print(f"{log_path} unchanged")
    print(f"next: `{PROG} sync` to refresh the summary")
    return 0


def _review(log_path: Path, wants_json: bool) -> int:
    """merge without options: every record of the log, by kernel and backend, to decide what to merge."""
    experience = load_experience(log_path, None)
    skipped = _report_skipped(experience)
    entries = experience.entries()
    if wants_json:
        return _print_entries("merge", entries, log_path, skipped, wants_json)
    if not entries:
        print(f"no records to review (log: {log_path})")
        return 0
    by_group: dict[tuple[str, str], list[Entry]] = {}
    for entry in entries:
        by_group.setdefault((entry.record.kernel, entry.record.backend), []).append(entry)
    for (kernel, backend), group in sorted(by_group.items()):
        print(f"### {kernel} [{backend}]")
        print(_entries_table(group) + "\n")
    print(f'to merge records that describe one experiment: `{PROG} merge --groups "ID,ID" "ID,ID,ID"` '
          "(each quoted group becomes one record; ids not named stay as they are)")
    return 0


def _sync(args, log_path: Path, curated_path, wants_json: bool) -> int:
    experience = load_experience(log_path, curated_path)
    skipped = _report_skipped(experience)
    output = args.output or summary_path(log_path)
    text = render_summary(experience.entries())
    try:
        write_text_atomic(output, text)
    except OSError as error:
        raise EnvironmentFault(f"cannot write {output}: {error.strerror}",
                               hint="pass --output PATH somewhere writable") from None
    if wants_json:
        print_json({"ok": True, "command": "sync", "output": str(output), "records": len(experience.entries()),
                    "skipped_lines": skipped})
        return 0
    print(f"wrote {output} from {len(experience.entries())} record(s)")
    print(f"next: `{PROG} stats` for success rates, or read {output.name}")
    return 0


def _stats(args, log_path: Path, curated_path, wants_json: bool) -> int:
    experience = load_experience(log_path, curated_path)
    skipped = _report_skipped(experience)
    stats = compute_stats(experience.entries())
    if wants_json:
        print_json({"ok": True, "command": "stats", "log": str(log_path), **stats_to_dict(stats),
                    "skipped_lines": skipped})
        return 0
    sys.stdout.write(render_stats(stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
