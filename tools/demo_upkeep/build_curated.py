#!/usr/bin/env python3
"""Rebuild curated.jsonl from the experience logs of the case studies under demo/.

Why: the curated records are what `experience_log.py recommend` knows on first install, and
LEARNED.md admits only records of this skill's own recorded runs. Copied by hand they would
drift from the runs; this command makes the file from demo/<backend>/<case>/experience.jsonl
and nothing else, so it can be re-run whenever a case gains a record.

Each curated record is the case log's record with every measured field unchanged, a curated
id, and provenance {"case": "demo/cuda/gemm", "device": vN/benchmark.json's gpu.name,
"imported_from": [{"log": "demo/cuda/gemm/experience.jsonl", "id": its id there}]}, the form
`experience_log.py merge --from` writes. The two labels are not measurements but the
classifier's reading of the record's versions: where a version was re-profiled
(vN/reprofile/ncu_summary.json, tools/demo_upkeep/apply_reprofile.py), `bottleneck` (the version the change
was compared against) and `bottleneck_after` (the version it made) are that re-profile's label,
so `recommend` matches a kernel classified today against labels of today's classifier; the
labels the run recorded are kept in provenance.run_labels. The case log is left as the run
wrote it. A record keeps its curated id across rebuilds (matched
by case log and id there); new ones get the next ids. A curated record whose case record is
gone is dropped and named. Running it twice gives the same file.

Usage:
  python3 tools/demo_upkeep/build_curated.py
  python3 tools/demo_upkeep/build_curated.py --check

Exit codes: 0 written or already up to date; 1 --check found the file stale; 2 no case logs,
an unreadable line, or a curated record that no case produced; 4 the file cannot be written.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePosixPath

# tools/demo_upkeep/ -> the repository -> the skill's scripts/
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "skills" / "kernel-opt-skill" / "scripts"))

from kernel_opt.core.cli import make_parser, run_command  # noqa: E402
from kernel_opt.core.errors import EnvironmentFault, UsageError  # noqa: E402
from kernel_opt.core.files import write_text_atomic  # noqa: E402
from kernel_opt.experience.merge import imported_copy  # noqa: E402
from kernel_opt.experience.records import ExperienceRecord  # noqa: E402
from kernel_opt.experience.store import CURATED, CURATED_PATH, SKILL_ROOT, LogContents, next_id, read_log  # noqa: E402
from kernel_opt.loop.records import read_newest_profile  # noqa: E402
from kernel_opt.measure.records import read_benchmark  # noqa: E402

PROG = "build_curated.py"
DEFAULT_DEMO = SKILL_ROOT.parents[1] / "demo"


def _readable(contents: LogContents) -> LogContents:
    """A log with no unreadable line: a rebuild must not drop anything silently."""
    if contents.skipped:
        raise UsageError(
            f"unreadable line {contents.skipped[0].describe()}"
            + (f" (and {len(contents.skipped) - 1} more)" if len(contents.skipped) > 1 else ""),
            hint="repair or delete the line, then run again",
        )
    return contents


def case_logs(demo: Path) -> list[Path]:
    logs = sorted(Path(demo).glob("*/*/experience.jsonl"))
    if not logs:
        raise UsageError(f"no case logs <backend>/<case>/experience.jsonl under {demo}",
                         hint="pass --demo DIR, the folder of the case studies")
    return logs


def source_of(record: ExperienceRecord) -> tuple[str, int] | None:
    """(case log, id there) of a curated record, or None when it did not come from a case."""
    origins = record.provenance.get("imported_from") or [{}]
    if "case" not in record.provenance or not isinstance(origins[0].get("log"), str):
        return None
    return origins[0]["log"], origins[0].get("id")


def _device(case_dir: Path, record: ExperienceRecord) -> str | None:
    """The GPU's full name as the version's benchmark recorded it."""
    if not record.version_dir:
        return None
    benchmark = read_benchmark(case_dir / PurePosixPath(record.version_dir).name)
    return benchmark.gpu_name if benchmark is not None else None


def relabel(record: ExperienceRecord, case_dir: Path) -> dict[str, str | None]:
    """Set the record's two labels from its versions' re-profiles; return the run's labels they replaced."""
    version = PurePosixPath(record.version_dir).name if record.version_dir else None
    replaced: dict[str, str | None] = {}
    for name, folder in (("bottleneck", record.baseline), ("bottleneck_after", version)):
        if not folder:
            continue
        profile, reprofiled = read_newest_profile(case_dir / folder)
        if reprofiled and profile.bottleneck and profile.bottleneck != getattr(record, name):
            replaced[name] = getattr(record, name)
            setattr(record, name, profile.bottleneck)
    return replaced


def build(demo: Path, previous: LogContents) -> tuple[str, list[str]]:
    """The curated file's text, keeping the ids `previous` gave; and the ids it dropped."""
    ids: dict[tuple[str, int], int] = {}
    for record in _readable(previous).records:
        source = source_of(record)
        if source is None:
            raise UsageError(
                f"curated:{record.id} did not come from a case study (no provenance.case)",
                hint="LEARNED.md admits only records of the case studies under demo/: move it to a personal log "
                "(experience_log.py merge --from) and delete its line",
            )
        ids[source] = record.id
    identifier = next_id("\n".join(previous.lines).encode())
    root = Path(demo).resolve().parent
    records = []
    for log in case_logs(demo):
        label = log.resolve().relative_to(root).as_posix()
        for record in _readable(read_log(log, lock=False)).records:
            if (label, record.id) not in ids:
                ids[label, record.id] = identifier
                identifier += 1
            curated = imported_copy(record, ids[label, record.id], label)
            run_labels = relabel(curated, log.parent)
            curated.provenance = {"case": PurePosixPath(label).parent.as_posix(), "device": _device(log.parent, record),
                                  **curated.provenance, **({"run_labels": run_labels} if run_labels else {})}
            records.append(curated)
    built = {record.id for record in records}
    dropped = [f"curated:{record.id}" for record in previous.records if record.id not in built]
    records.sort(key=lambda record: record.id)
    return "".join(record.to_json_line() for record in records), dropped


def main(argv=None) -> int:
    return run_command(_main, argv)


def _main(argv) -> int:
    parser = make_parser(PROG, __doc__)
    parser.add_argument("--demo", type=Path, default=DEFAULT_DEMO,
                        help=f"the case studies' folder (default: {DEFAULT_DEMO})")
    parser.add_argument("--output", type=Path, default=CURATED_PATH,
                        help=f"the curated file (default: {CURATED_PATH})")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the file differs from a rebuild")
    args = parser.parse_args(argv)
    previous = read_log(args.output, origin=CURATED, lock=False)
    text, dropped = build(args.demo, previous)
    count = text.count("\n")
    if args.output.is_file() and args.output.read_text(encoding="utf-8") == text:
        print(f"{args.output} is up to date ({count} records)")
        return 0
    if args.check:
        print(f"{args.output} is stale: run {PROG} to rebuild it from {args.demo}")
        return 1
    try:
        write_text_atomic(args.output, text)
        os.chmod(args.output, 0o644)  # the temporary file was private; the skill ships this file
    except OSError as error:
        raise EnvironmentFault(f"cannot write {args.output}: {error.strerror}") from None
    print(f"wrote {args.output}: {count} records from {args.demo}")
    for ref in dropped:
        print(f"dropped {ref}: its case record is gone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
