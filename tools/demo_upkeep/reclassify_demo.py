#!/usr/bin/env python3
"""Re-classify the demo versions profiled before issue 15 with today's classifier, from what each version kept.

Which versions: those whose own ncu_summary.json predates issue 15's classifier (no `pipes` and
`design` in its kernels; tools/demo_upkeep/reprofile_demo.py's rule, the 44 versions its 2026-11-25 re-profile
covered), the ones whose labels that classifier may change. With --current, the versions profiled
since instead (every version recorded after 2026-11-24): their summaries were written by issue 15's
classifier, so their kept files must give back the label and first advice they recorded; one that
does not means the classifier changed after they were evaluated.

Each demo/<backend>/<case>/vN/ kept its ncu_summary.json (the canonical metrics the classifier
read then, at full precision) and ncu_details.md (every metric ncu gave, first launch, to four
significant digits), not the .ncu-rep. The metrics are rebuilt from the details' raw table, the
summary's canonical values laid over them, and classified again. The per-opcode SASS mix was
in the reports but not kept, so cp.async and setmaxnreg cannot be seen: a verdict that needed
them (or any other evidence the version lacks) is printed as provisional, with what it lacked.
A static analysis can stand in for the missing SASS: a version folder's own static_analysis.json,
or DIR/<backend>/<case>/<vN>/static_analysis.json with --static-analysis-root DIR.

Usage:
  python3 tools/demo_upkeep/reclassify_demo.py                 # the 44 versions: old -> new label and first advice
  python3 tools/demo_upkeep/reclassify_demo.py demo/cuda/gemm --changed  # one case: label or advice changed
  python3 tools/demo_upkeep/reclassify_demo.py --static-analysis-root /tmp/sass --json
  python3 tools/demo_upkeep/reclassify_demo.py --reprofile --changed  # re-profiles whose recorded label is stale
  python3 tools/demo_upkeep/reclassify_demo.py --current --changed    # versions evaluated since issue 15, label stale

A CUDA version's SASS can be rebuilt without a GPU (nvcc and cuobjdump), e.g. for v6 of the
attention case (wgmma versions need --arch sm_90a):
  python3 skills/kernel-opt-skill/scripts/static_analysis.py demo/cuda/attention/v6/v6.cu \
      --output-dir /tmp/sass/cuda/attention/v6 --arch sm_90

With --reprofile it classifies the re-profiles instead (vN/reprofile/, tools/demo_upkeep/apply_reprofile.py),
whose summaries keep the executed opcode mix: a label there that today's classifier would not
give means the re-profile must be brought in again (apply_reprofile.py re-reads its report).

Nothing under demo/ is written. Exit codes: 0 printed; 2 no such demo version under the paths.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "skills" / "kernel-opt-skill" / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reprofile_demo import needs_reprofile  # noqa: E402

from kernel_opt.core.render import markdown_table  # noqa: E402
from kernel_opt.loop.records import REPROFILE_DIR  # noqa: E402
from kernel_opt.profile.classify import summarize  # noqa: E402
from kernel_opt.profile.design import load_static_opcodes  # noqa: E402
from kernel_opt.profile.ncu.metric_aliases import CANONICAL_FIELDS  # noqa: E402
from kernel_opt.profile.ncu.metrics import KernelMetrics, metrics_from_raw  # noqa: E402
from kernel_opt.profile.ncu.raw_metrics import RawMetric  # noqa: E402
from kernel_opt.profile.suggestions import suggest  # noqa: E402

DEMO = REPO / "demo"
# What the classifier reads since issue 15 that older profiles may lack, and what each is for.
NEWER_EVIDENCE: tuple[tuple[str, str], ...] = (
    ("alu_pipe_pct", "ALU pipe"), ("fp64_pipe_pct", "FP64 pipe"), ("xu_pipe_pct", "XU pipe"),
    ("lsu_pipe_pct", "LSU pipe"), ("gmma_instructions_pct", "wgmma instruction rate"), ("tma_pipe_pct", "TMA pipe"),
    ("shared_load_instructions", "shared load requests"), ("shared_store_instructions", "shared store requests"),
    # the opcode mix with its modifiers (executed_global_accesses, the access widths) comes with it, and is
    # rightly empty in a kernel with no global access through L1 (TMA only)
    ("shared_matrix_load_instructions", "ldmatrix requests"), ("executed_opcodes", "executed opcode mix (SASS)"),
)


@dataclass
class VersionVerdict:
    """One demo version: the label it was given, the label it gets now, and what the new rules could not see."""

    version: str  # "cuda/gemm/v9"
    old_label: str | None
    new_label: str | None
    old_limiter: str | None
    new_limiter: str | None
    old_advice: str | None  # the first strategy the summary recorded in read_next, and today's
    new_advice: str | None
    source: str  # where the metrics came from
    design_source: str
    not_collected: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def label_changed(self) -> bool:
        return self.old_label != self.new_label

    @property
    def changed(self) -> bool:
        """The label or the first advice: what the demo table and DEMO.md's re-profile notes show."""
        return self.label_changed or self.old_advice != self.new_advice

    @property
    def provisional(self) -> bool:
        return bool(self.unverified)


# --- reading what a version kept -------------------------------------------------------------

_KERNEL_HEADING = re.compile(r"^## Kernel `(?P<name>[^`]+)`")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def raw_metrics_by_kernel(details: str) -> dict[str, dict[str, RawMetric]]:
    """Kernel name -> its raw metrics from ncu_details.md ('### All N metrics in the report' tables)."""
    kernels: dict[str, dict[str, RawMetric]] = {}
    current: dict[str, RawMetric] | None = None
    in_table = False
    for line in details.splitlines():
        heading = _KERNEL_HEADING.match(line)
        if heading:
            current, in_table = kernels.setdefault(heading.group("name"), {}), False
            continue
        if line.startswith("### "):
            in_table = line.startswith("### All ") and current is not None
            continue
        if in_table and line.startswith("| ") and not line.startswith("| ncu metric") and not line.startswith("| ---"):
            cells = [cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(line)[1:-1]]
            if len(cells) >= 3:
                current[cells[0]] = RawMetric(cells[0], _value(cells[1]), cells[2], cells[3] if len(cells) > 3 else "")
    return kernels


def _value(text: str) -> float | str | None:
    if text in ("—", ""):
        return None
    try:
        return float(text)
    except ValueError:
        return text


def kernel_metrics(summary_kernel: dict[str, Any], raw: dict[str, RawMetric] | None) -> KernelMetrics:
    """The raw table's metrics, with the summary's full-precision canonical values (and stalls) laid over them."""
    metrics = metrics_from_raw(raw) if raw else KernelMetrics()
    recorded = summary_kernel.get("metrics") or {}
    for name in CANONICAL_FIELDS:
        if recorded.get(name) is not None:
            setattr(metrics, name, recorded[name])
    if recorded.get("stalls"):
        metrics.stalls = {share["reason"]: share["value"] for share in recorded["stalls"]}
        metrics.stall_unit = recorded.get("stall_unit")
    if recorded.get("executed_opcodes"):  # summaries since issue 15 keep the SASS mix the details table sums up
        metrics.executed_opcodes = dict(recorded["executed_opcodes"])
    if recorded.get("executed_global_accesses"):  # and the global accesses with their widths
        metrics.executed_global_accesses = dict(recorded["executed_global_accesses"])
    return metrics


def not_collected(metrics: KernelMetrics) -> list[str]:
    return [label for name, label in NEWER_EVIDENCE if getattr(metrics, name) in (None, {}, [])]


def reclassify_version(folder: Path, static_root: Path | None = None, reprofile: bool = False) -> VersionVerdict:
    """Classify one kept version again (read-only): its run's profile, or with `reprofile` its vN/reprofile/.

    A re-profile keeps its own static_analysis.json beside its summary; `static_root` overrides it.
    """
    kept = folder / REPROFILE_DIR if reprofile else folder
    summary = json.loads((kept / "ncu_summary.json").read_text())
    details_path = kept / "ncu_details.md"
    raw_by_kernel = raw_metrics_by_kernel(details_path.read_text()) if details_path.is_file() else {}
    kernels = []
    for kernel in summary["kernels"]:
        metrics = kernel_metrics(kernel, raw_by_kernel.get(kernel["name"]))
        kernels.append((kernel["name"], kernel["launches"], kernel["launch_configuration"],
                        kernel.get("total_duration_us"), metrics))
    relative = folder.relative_to(folder.parents[2])
    static_path = static_root / relative / "static_analysis.json" if static_root else kept / "static_analysis.json"
    verdict = summarize(kernels, load_static_opcodes(static_path))
    dominant = next(item for item in verdict.kernels if item.name == verdict.dominant_kernel)
    source = "ncu_details.md raw table + ncu_summary.json" if raw_by_kernel else "ncu_summary.json only"
    run = folder.parent / "run.json"  # the run's backend; a case study's folder is also named after it
    backend = json.loads(run.read_text()).get("backend") if run.is_file() else None
    advice = suggest(dominant.classification, dominant.metrics, (backend or relative.parts[0],),
                     (summary.get("device") or {}).get("compute_capability"))
    recorded_advice = summary.get("read_next") or []
    return VersionVerdict(
        version=str(relative), old_label=summary.get("bottleneck"), new_label=verdict.bottleneck,
        old_limiter=summary.get("memory_limiter"), new_limiter=verdict.memory_limiter,
        old_advice=recorded_advice[0].get("strategy") if recorded_advice else None,
        new_advice=advice[0].strategy if advice else None, source=source,
        design_source=dominant.classification.design.source, not_collected=not_collected(dominant.metrics),
        unverified=list(dominant.classification.unverified), reason=dominant.classification.reason,
    )


def version_folders(paths: list[Path], reprofile: bool = False, current: bool = False) -> list[Path]:
    """The version folders under the paths whose own ncu_summary.json predates issue 15's classifier.

    With `reprofile`: those with a re-profile (vN/reprofile/ncu_summary.json) instead; with
    `current`: those whose own summary was written by issue 15's classifier. In backend/case/version
    order (v2 before v10).
    """
    found = {summary.parent for path in paths for summary in path.rglob("ncu_summary.json")
             if summary.parent.name != REPROFILE_DIR}
    if reprofile:
        found = {folder for folder in found if (folder / REPROFILE_DIR / "ncu_summary.json").is_file()}
    else:
        found = {folder for folder in found if needs_reprofile(folder) != current}
    return sorted(found, key=lambda folder: (folder.parent.parent.name, folder.parent.name,
                                             int(folder.name[1:]) if folder.name[1:].isdigit() else -1))


# --- the report ------------------------------------------------------------------------------


def table(verdicts: list[VersionVerdict]) -> str:
    rows = []
    for item in verdicts:
        rows.append([item.version, _arrow(item.old_label, item.new_label), _arrow(item.old_advice, item.new_advice),
                     _arrow(item.old_limiter, item.new_limiter), "provisional: " + "; ".join(item.unverified)
                     if item.provisional else "verified", item.design_source])
    return markdown_table(rows, ["version", "label", "first advice", "memory limiter", "verdict", "design evidence"])


def _arrow(old: str | None, new: str | None) -> str:
    return f"{old} → {new}" if old != new else f"{new or '—'} (unchanged)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("paths", nargs="*", type=Path, default=[DEMO], help="demo folders (default: demo/)")
    parser.add_argument("--changed", action="store_true", help="only the versions whose label or first advice changed")
    parser.add_argument("--static-analysis-root", type=Path,
                        help="read DIR/<backend>/<case>/<vN>/static_analysis.json for the SASS the demo did not keep")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--reprofile", action="store_true",
                       help="classify the re-profiles (vN/reprofile/, tools/demo_upkeep/apply_reprofile.py) instead "
                       "of the run's own profiles; 'old' is then the label the re-profile recorded")
    which.add_argument("--current", action="store_true",
                       help="the versions whose own profile was written by issue 15's classifier (recorded after "
                       "2026-11-24) instead of the older ones; any change means the classifier moved since")
    parser.add_argument("--json", action="store_true", help="one JSON list instead of the table")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    folders = version_folders(args.paths, args.reprofile, args.current)
    if not folders:
        what = (f"with a {REPROFILE_DIR}/ncu_summary.json" if args.reprofile else "profiled with issue 15's "
                "classifier" if args.current else "profiled before issue 15 (--current: the versions profiled since)")
        print(f"no version {what} under {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 2
    verdicts = [reclassify_version(folder, args.static_analysis_root, args.reprofile) for folder in folders]
    shown = [item for item in verdicts if item.changed] if args.changed else verdicts
    if args.json:
        print(json.dumps([asdict(item) | {"changed": item.changed, "label_changed": item.label_changed,
                                           "provisional": item.provisional} for item in shown], indent=2))
        return 0
    print(table(shown))
    labels = sum(item.label_changed for item in verdicts)
    advice = sum(item.old_advice != item.new_advice for item in verdicts)
    provisional = sum(item.provisional for item in verdicts)
    missing = sorted({label for item in verdicts for label in item.not_collected})
    print(f"\n{len(verdicts)} versions: {labels} labels changed, {advice} first advice changed, {provisional} "
          f"provisional. Not collected back then (in some or all versions): {', '.join(missing) or 'nothing'}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
