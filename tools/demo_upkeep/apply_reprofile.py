#!/usr/bin/env python3
"""Bring a GPU re-profile of the demo (reprofile_demo.sh's OUT_DIR) into demo/, beside the run's records.

The demo folders are a real run's output and stay as they are: vN/ncu_summary.json, the
evaluation, the case's experience.jsonl and final_report.md keep the labels the run saw when it
chose each next step. The re-profile goes to vN/reprofile/ (replacing an earlier one whole):
ncu_summary.json/.md and ncu_details.md, static_analysis.json/.md, ncu.log and a README naming
the device, the date, the tool versions and the commands. ncu_details.md and the report stay out
of git (.gitignore): the summary keeps every value the classifier reads. A run that hit its
deadline and a second one (`--only` the rest) are applied together: each version takes the
profile of the last source that has one. Where the archive holds the version's .ncu-rep and ncu_report is
importable here, the summary is re-read from that report with today's classifier (`ncu_profile.py
--from-report`), so a later change to the classifier reaches the demo by running this again; the
report itself stays beside it, out of git. Otherwise the device's own summary is copied.

Which label is shown where (the decision, also in demo/DEMO.md):
- vN/reprofile/ncu_summary.json: today's label and advice for the version;
- curated.jsonl (tools/demo_upkeep/build_curated.py): each record's `bottleneck` and
  `bottleneck_after` from the re-profiles of its two versions, the run's labels kept in
  `provenance.run_labels`;
- demo/DEMO.md: the table between `<!-- reprofile-table:start -->` and `<!-- reprofile-table:end -->`,
  every version whose label or first advice changed, rendered by `notes` from those records.

Usage:
  python3 tools/demo_upkeep/apply_reprofile.py apply OUT_DIR   # OUT_DIR: the archives, or the unpacked reprofile/
  python3 tools/demo_upkeep/apply_reprofile.py apply RUN1 RUN2 # a second run (--only) for what the first skipped
  python3 tools/demo_upkeep/apply_reprofile.py apply OUT_DIR --dry-run  # what would be written
  python3 tools/demo_upkeep/apply_reprofile.py notes                    # print the table
  python3 tools/demo_upkeep/apply_reprofile.py notes --update demo/DEMO.md
  python3 tools/demo_upkeep/apply_reprofile.py notes --check demo/DEMO.md

Exit codes: 0 applied (or the table printed / up to date); 1 some version in the archive had no
profile to apply, or --check found a stale table; 2 bad input (no manifest, an archive member
outside its folder, a version the demo does not have, no markers).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shutil
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parents[1]
sys.path.insert(0, str(REPO / "skills" / "kernel-opt-skill" / "scripts"))
sys.path.insert(0, str(TOOLS))
from demo_table import TableError, replace_table  # noqa: E402
from reprofile_demo import REPORT_FILE, profile_reading, read_json_if_any  # noqa: E402

from kernel_opt.core.errors import KernelOptError, UsageError  # noqa: E402
from kernel_opt.core.render import markdown_table  # noqa: E402
from kernel_opt.loop.records import REPROFILE_DIR  # noqa: E402

DEMO = REPO / "demo"
COPIED = ("static_analysis.json", "static_analysis.md", "ncu.log")  # always the device's
SUMMARY_FILES = ("ncu_summary.json", "ncu_summary.md", "ncu_details.md")  # re-read, or the device's
NOTES_START, NOTES_END = "<!-- reprofile-table:start -->", "<!-- reprofile-table:end -->"
NOTES_HEADERS = ["version", "label: run → re-profile", "first advice: run → re-profile", "busiest pipe",
                 "tensor pipe", "occupancy", "asynchronous design (evidence)", "top stalls"]


# --- reading the device's output ---------------------------------------------------------------


def unpacked(source: Path, scratch: Path) -> Path:
    """The re-profile's root folder (with manifest.json): SOURCE, SOURCE/reprofile, or SOURCE's archives unpacked."""
    for candidate in (source, source / "reprofile"):
        if (candidate / "manifest.json").is_file():
            return candidate
    archives = sorted(source.glob("reprofile.tar.gz")) + sorted(source.glob("reports-*.tar.gz"))
    if not archives:
        raise UsageError(f"{source}: no manifest.json, reprofile/manifest.json or reprofile.tar.gz",
                         hint="pass the OUT_DIR of tools/demo_upkeep/reprofile_demo.sh, or the folder it unpacks to")
    for archive in archives:
        with tarfile.open(archive) as tar:
            bad = [member.name for member in tar.getmembers()
                   if not member.name.startswith("reprofile/") or ".." in Path(member.name).parts
                   or not (member.isfile() or member.isdir())]
            if bad:
                raise UsageError(f"{archive}: member {bad[0]!r} is not a file under reprofile/; nothing was written")
            tar.extractall(scratch, filter="data")
    root = scratch / "reprofile"
    if not (root / "manifest.json").is_file():
        raise UsageError(f"{source}: the archives hold no reprofile/manifest.json")
    return root


def version_command(console: Path, key: str) -> str | None:
    """The command a step ran (its console file's first line), with the scratch folder written OUT/."""
    try:
        first = console.read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    if not first.startswith("$ "):
        return None
    return re.sub(r"\S*/reprofile/(?=" + re.escape(key) + r"\b)", "OUT/", first[2:])


# --- applying ----------------------------------------------------------------------------------


@dataclass
class Applied:
    key: str
    outcome: str  # "re-read from the report", "copied from the device", or why not applied
    applied: bool
    recorded: dict[str, Any]
    reading: dict[str, Any]


def _reader_available() -> bool:
    from kernel_opt.profile.ncu.reading import locate_report_reader

    try:
        locate_report_reader()
    except KernelOptError:
        return False
    return True


def reread(report: Path, dest: Path, backend: str) -> None:
    """ncu_profile.py --from-report into dest (static_analysis.json there is read too), quietly."""
    from kernel_opt.profile.profiler import ProfileRequest, profile_solution

    relative = report.relative_to(REPO) if report.is_relative_to(REPO) else report
    with contextlib.redirect_stdout(io.StringIO()):
        profile_solution(ProfileRequest(dest, from_report=relative, backend=backend))


def apply_version(entry: dict[str, Any], root: Path, demo: Path, can_reread: bool, dry_run: bool) -> Applied:
    """One version of the manifest into demo/<key>/reprofile/ (the run's own files are never touched)."""
    key = entry["key"]
    folder, source = demo / key, root / key
    recorded = profile_reading(read_json_if_any(folder / "ncu_summary.json"))
    if not (source / "ncu_summary.json").is_file():
        why = entry["profile"].get("skipped") or f"profile {_step(entry['profile'])}"
        return Applied(key, f"not applied: {why}", False, recorded, {})
    has_report = (source / REPORT_FILE).is_file()
    outcome = "re-read from the report" if has_report and can_reread else "copied from the device"
    if dry_run:
        return Applied(key, f"would be {outcome}", True, recorded, profile_reading(read_json_if_any(
            source / "ncu_summary.json")))
    dest = folder / REPROFILE_DIR
    if dest.is_dir():  # this tool's own output: an earlier application leaves nothing behind
        shutil.rmtree(dest)
    dest.mkdir()
    _copy(source, dest, COPIED)
    if outcome.startswith("re-read"):
        shutil.copyfile(source / REPORT_FILE, dest / REPORT_FILE)  # git-ignored (demo/**/*.ncu-rep)
        try:
            reread(dest / REPORT_FILE, dest, key.split("/")[0])
        except KernelOptError as error:  # the device's own reading is still a record of the same profile
            (dest / REPORT_FILE).unlink()
            outcome = f"copied from the device (re-reading its report failed: {error.message})"
    if not outcome.startswith("re-read"):
        _copy(source, dest, SUMMARY_FILES)
    reading = profile_reading(read_json_if_any(dest / "ncu_summary.json"))
    (dest / "README.md").write_text(render_version_readme(entry, root, outcome, recorded, reading))
    return Applied(key, outcome, True, recorded, reading)


def _copy(source: Path, dest: Path, names: tuple[str, ...]) -> None:
    for name in names:
        if (source / name).is_file():
            shutil.copyfile(source / name, dest / name)


def _step(step: dict[str, Any]) -> str:
    if step.get("timed_out"):
        return f"timed out after {step.get('seconds', 0):.0f} s"
    return f"exit {step.get('exit_code')}"


def render_version_readme(entry: dict[str, Any], root: Path, outcome: str, recorded: dict[str, Any],
                          reading: dict[str, Any]) -> str:
    """vN/reprofile/README.md: where these files came from, and the label beside the run's."""
    manifest = json.loads((root / "manifest.json").read_text())
    environment, key = manifest["environment"], entry["key"]
    lines = [f"# Re-profile of {key} (issue 15)", "",
             "The files beside this README come from a later profile of this version's kernel with the issue-15 "
             "collection (per-pipe utilisation, executed SASS opcode mix, shared-memory requests) and a static "
             "analysis of its SASS, written by `tools/demo_upkeep/reprofile_demo.sh` and brought here by "
             "`tools/demo_upkeep/apply_reprofile.py`. The version's own profile (`../ncu_summary.json`, "
             "`../ncu_details.md`) is the run's record and stays as the run wrote it.", ""]
    lines += [f"- {name}: {_commit_text(value) if name == 'commit' else value}" for name, value in environment.items()]
    for step, console in (("profile", "profile.console.txt"), ("static analysis", "static.console.txt")):
        command = version_command(root / key / console, key)
        lines.append(f"- {step}: `{command}`" if command else f"- {step}: command not recorded")
    how = ("re-read from the report (`profile.ncu-rep`, kept beside it but not in git, as is the every-metric "
           "table `ncu_details.md`: ncu_summary.json keeps every value the classifier reads) with `ncu_profile.py "
           "--from-report` and the classifier of this checkout" if outcome.startswith("re-read")
           else "as the device classified it when profiling" + outcome.removeprefix("copied from the device"))
    lines += [f"- summary: {how}",
              f"- label: {recorded.get('bottleneck')} (the run) → {reading.get('bottleneck')} (here); first advice: "
              f"{recorded.get('first_advice')} → {reading.get('first_advice')}", ""]
    return "\n".join(lines)


def _commit_text(recorded: str) -> str:
    """A bare sha is what reprofile_demo.py recorded before it named the files' tree: the device copy's HEAD only."""
    if not re.fullmatch(r"[0-9a-f]{40}", recorded):
        return recorded
    return (f"{recorded[:7]} as recorded, which is the git HEAD of the device's copy, not necessarily the code that "
            "ran (the device tool sends the files, and its copy's history can be older); demo/DEMO.md's re-profile "
            "section names the code")


def apply_all(sources: Path | list[Path], demo: Path, dry_run: bool = False) -> list[Applied]:
    """Every version the sources hold into demo/<key>/reprofile/; a version profiled by several takes the last one's.

    A run that hit its deadline lists the versions it skipped; a second run with `--only` profiles
    them, so the two are applied together and each version gets exactly one re-profile.
    """
    sources = [sources] if isinstance(sources, Path) else list(sources)
    with tempfile.TemporaryDirectory(prefix="apply_reprofile.") as scratch:
        roots = [unpacked(source, Path(scratch) / str(number)) for number, source in enumerate(sources)]
        chosen = chosen_entries(roots)
        unknown = [key for key in chosen if not (demo / key).is_dir()]
        if unknown:  # checked for all before any is written
            raise UsageError(f"{unknown[0]}: the archive has it, the demo does not ({demo / unknown[0]})")
        can_reread = _reader_available()
        return [apply_version(entry, root, demo, can_reread, dry_run) for entry, root in chosen.values()]


def chosen_entries(roots: list[Path]) -> dict[str, tuple[dict[str, Any], Path]]:
    """Version key -> (its manifest entry, its root): the last root that has its profile, else the last that lists it.

    In the order the first manifest lists the versions, then what later ones add.
    """
    chosen: dict[str, tuple[dict[str, Any], Path]] = {}
    for root in roots:
        for entry in json.loads((root / "manifest.json").read_text())["versions"]:
            key = entry["key"]
            if key not in chosen or (root / key / "ncu_summary.json").is_file() or not (
                    chosen[key][1] / key / "ncu_summary.json").is_file():
                chosen[key] = (entry, root)
    return chosen


# --- the DEMO.md table -------------------------------------------------------------------------


def changed_versions(demo: Path) -> tuple[list[list[str]], int]:
    """Rows for every re-profiled version whose label or first advice changed, and how many did not change."""
    rows, unchanged = [], 0
    for summary in sorted(demo.glob(f"*/*/v*/{REPROFILE_DIR}/ncu_summary.json"), key=_version_order):
        folder = summary.parent.parent
        old = profile_reading(read_json_if_any(folder / "ncu_summary.json"))
        new = profile_reading(read_json_if_any(summary))
        if (old.get("bottleneck"), old.get("first_advice")) == (new.get("bottleneck"), new.get("first_advice")):
            unchanged += 1
            continue
        rows.append([str(folder.relative_to(demo)), _arrow(old.get("bottleneck"), new.get("bottleneck")),
                     _arrow(old.get("first_advice"), new.get("first_advice")), _pipe(new), _percent(
                         new.get("tensor_pipe_pct")), _percent(new.get("achieved_occupancy_pct")),
                     f"{', '.join(new.get('async_features') or []) or 'none'} ({new.get('design_source') or '—'})",
                     ", ".join(new.get("top_stalls") or []) or "—"])
    return rows, unchanged


def _version_order(path: Path) -> tuple[str, str, int]:
    version = path.parent.parent
    return version.parent.parent.name, version.parent.name, int(version.name[1:])


def _arrow(old: Any, new: Any) -> str:
    return f"{old} (unchanged)" if old == new else f"{old} → {new}"


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}%"


def _pipe(reading: dict[str, Any]) -> str:
    if reading.get("busiest_pipe_pct") is None:
        return "—"
    return f"{reading['busiest_pipe']} {reading['busiest_pipe_pct']:.1f}%"


def render_notes(demo: Path) -> str:
    rows, unchanged = changed_versions(demo)
    if not rows and not unchanged:
        raise TableError(f"no version under {demo} has a {REPROFILE_DIR}/ncu_summary.json")
    table = markdown_table(rows, NOTES_HEADERS) if rows else "No label or first advice changed."
    return f"{table}\n\n{len(rows)} versions changed label or first advice; {unchanged} re-profiled versions kept both."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    actions = parser.add_subparsers(dest="action", required=True)
    apply = actions.add_parser("apply", help="write demo/<version>/reprofile/ from the device's output")
    apply.add_argument("sources", nargs="+", type=Path, metavar="SOURCE",
                       help="tools/demo_upkeep/reprofile_demo.sh's OUT_DIR, or its unpacked reprofile/; several: "
                       "a version profiled by more than one takes the last one's profile")
    apply.add_argument("--dry-run", action="store_true", help="say what would be written, write nothing")
    notes = actions.add_parser("notes", help="the table of changed labels for demo/DEMO.md")
    mode = notes.add_mutually_exclusive_group()
    mode.add_argument("--update", nargs="+", type=Path, metavar="FILE")
    mode.add_argument("--check", nargs="+", type=Path, metavar="FILE")
    for sub in (apply, notes):
        sub.add_argument("--demo", type=Path, default=DEMO)
    args = parser.parse_args(argv)
    try:
        if args.action == "apply":
            return _apply(args)
        return _notes(args)
    except (UsageError, TableError, OSError) as error:
        print(f"error: {getattr(error, 'message', error)}", file=sys.stderr)
        return 2


def _apply(args) -> int:
    results = apply_all(args.sources, args.demo, args.dry_run)
    for item in results:
        label = (f"{item.recorded.get('bottleneck')} -> {item.reading.get('bottleneck')}; first advice "
                 f"{item.recorded.get('first_advice')} -> {item.reading.get('first_advice')}") if item.applied else ""
        print(f"{item.key}: {item.outcome}" + (f" ({label})" if label else ""))
    missed = [item.key for item in results if not item.applied]
    if missed:
        print(f"{len(missed)} versions had no profile to apply: {', '.join(missed)}")
    if not args.dry_run:
        print("next: python3 tools/demo_upkeep/apply_reprofile.py notes --update demo/DEMO.md; "
              "python3 tools/demo_upkeep/build_curated.py")
    return 1 if missed else 0


def _notes(args) -> int:
    table = render_notes(args.demo.resolve())
    files = args.update or args.check or []
    texts = {path: path.read_text() for path in files}
    updated = {path: replace_table(text, table, path, NOTES_START, NOTES_END) for path, text in texts.items()}
    if args.check:
        stale = [path for path in files if updated[path] != texts[path]]
        for path in stale:
            print(f"{path}: the re-profile table is out of date; run python3 "
                  f"tools/demo_upkeep/apply_reprofile.py notes --update {path}")
        return 1 if stale else 0
    for path in files:
        path.write_text(updated[path])
        print(f"updated {path}")
    if not files:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
