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

from kernel_opt.commands.experience_subcommands.add import add_command, add_record_arguments
from kernel_opt.commands.experience_subcommands.browse import (
    list_command,
    recommend_command,
    search_command,
    show_command,
)
from kernel_opt.commands.experience_subcommands.maintenance import merge_command, stats_command, sync_command
from kernel_opt.commands.experience_subcommands.output import PROG
from kernel_opt.core.cli import make_parser, run_command
from kernel_opt.core.errors import UsageError
from kernel_opt.experience import labels
from kernel_opt.experience.store import CURATED_PATH, SUMMARY_NAME, default_log_path
from kernel_opt.solution.families import FAMILIES, OTHER_FAMILY


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

    add_record_arguments(command("add", "append one record (ids are assigned by the log)"))

    rec = command("recommend", "strategies that worked in similar situations, and failures to avoid")
    rec.add_argument("--kernel", help="operation name")
    rec.add_argument("--family", choices=[*FAMILIES, OTHER_FAMILY],
                     help="the problem's kernel family, when its name does not say it (the profile's traits.family)")
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
        "add": add_command,
        "recommend": recommend_command,
        "search": search_command,
        "list": list_command,
        "show": show_command,
        "merge": merge_command,
        "sync": sync_command,
        "stats": stats_command,
    }[args.command]
    return handler(args, Path(log_path), curated_path, wants_json)


if __name__ == "__main__":
    sys.exit(main())
