#!/usr/bin/env python3
"""Re-run a recorded case on a GPU and check that its figures still hold.

A case folder (demo/<backend>/<case>/, or any run made by workspace.py) records, per version,
the correctness check and the benchmark it passed, each with the command that made it. This
re-runs those commands, relocated to the folder as it is now and writing into a scratch
directory (nothing recorded is touched), and compares every figure the benchmark claimed:

  the solution's median and kernel time, each PyTorch baseline's median, the speedup over the
  best baseline, the % of the roofline ceiling, and the interleaved comparison (speedup and
  verdict) against the version it was measured against.

A figure holds when the new value is within --tolerance (relative, default 5%) of the recorded
one; a comparison also needs the same verdict, and a % of ceiling the same ceiling basis. Where
the basis is the same but this GPU measured the roof that bounds it differently (beyond the
tolerance), the % is "not comparable" (neither held nor failed) and the rate it divides (achieved
TFLOP/s or GB/s, a figure of its own) is what must hold; so too where the basis itself changed (a kernel at a
same-size copy's bandwidth crossed the copy this GPU measured and was placed on the datasheet).
A % of ceiling is only comparable on the basis it was made on (benchmark.json's roofline.basis;
older records: the roofline point it came from). When a record used measured ceilings, this
runs measure_ceilings.py first (it reads this GPU's cache, or measures), so the re-run uses
measured ceilings too; when that fails, nothing is re-run and the exit code is 4.
Medians of one kernel moved by up to about 2% between processes on the H100 these cases ran
on, so 5% keeps that drift from flagging a true figure. Timings compare only on the device
type that recorded them: a different GPU stops the run with exit 4.

Usage:
  python3 tools/reproduce_case.py demo/triton/softmax                    # every version + the final benchmark
  python3 tools/reproduce_case.py demo/cuda/gemm --versions v0,v2,final --tolerance 0.05
  python3 tools/reproduce_case.py demo/triton/gemm --output-dir /tmp/repro --json

Exit codes: 0 every figure holds; 1 a figure or a correctness check does not hold;
2 bad input (not a run folder, unknown or unmeasured version); 4 environment (no GPU, a
different GPU than the one that recorded the figures, or measured ceilings that cannot be
measured here).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
sys.path.insert(0, str(SCRIPTS))
from kernel_opt.check.records import read_correctness  # noqa: E402
from kernel_opt.core.errors import ExitCode, UsageError  # noqa: E402
from kernel_opt.core.render import markdown_table  # noqa: E402
from kernel_opt.loop.versions import list_versions  # noqa: E402
from kernel_opt.measure.records import BenchmarkReport, read_benchmark  # noqa: E402

DEFAULT_TOLERANCE = 0.05  # relative; see the module docstring for why 5%
FINAL = "final"  # the case-level benchmark written by SKILL.md's Finish step
CEILINGS_SCRIPT = "measure_ceilings.py"
MEASURED_BASES = ("measured", "same-size copy")  # bases whose compute roof comes from the measured ceilings
# The rate a % of ceiling divides by its roof, per bound: (roofline point key, the figure's name).
ACHIEVED_RATE = {"compute": ("achieved_tflops", "achieved TFLOP/s"),
                 "memory": ("achieved_bandwidth_gbps", "achieved GB/s")}
RATE_NAMES = {name for _, name in ACHIEVED_RATE.values()}
ROOF_KEY = {"compute": ("compute_tflops", "TFLOP/s"), "memory": ("memory_bandwidth_gbps", "GB/s")}


class CaseError(Exception):
    """The case folder or the selection cannot be reproduced as asked: nothing was run."""


@dataclass
class Figure:
    """One claimed number and its re-measured value."""

    item: str  # "v2" or "final"
    name: str  # "median µs", "eager median µs", "speedup vs v0", ...
    recorded: float | str
    reproduced: float | str | None
    holds: bool | None  # None: not comparable (the roof it is measured against moved), neither held nor failed
    note: str = ""


@dataclass
class Reproduction:
    case: str
    tolerance: float
    device_recorded: str | None = None
    device_now: str | None = None
    figures: list[Figure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    exit_code: int = int(ExitCode.OK)
    ceilings: str | None = None  # how the measured ceilings the records used were provided here

    @property
    def holds(self) -> bool:
        return not self.errors and all(figure.holds is not False for figure in self.figures)


# A runner takes a script name and its arguments and returns the exit code (tests replace it).
Runner = Callable[[str, list[str]], int]


def run_script(name: str, arguments: list[str]) -> int:
    command = [sys.executable, str(SCRIPTS / name), *arguments]
    print("$", shlex.join(command), flush=True)
    return subprocess.run(command, cwd=REPO).returncode


def version_dirs(case: Path) -> dict[str, Path]:
    """vN -> folder, for the versions whose benchmark was recorded, in version order."""
    folders = (Path(version.directory) for version in list_versions(case))
    return {folder.name: folder for folder in folders if (folder / "benchmark.json").is_file()}


def select(case: Path, wanted: list[str] | None) -> dict[str, Path]:
    """The items to re-run: versions (vN) and "final", each with the folder holding its records."""
    if not (case / "run.json").is_file():
        raise CaseError(f"{case}: no run.json; pass a case folder made by workspace.py (e.g. demo/triton/softmax)")
    available = version_dirs(case)
    if (case / "benchmark.json").is_file():
        available[FINAL] = case
    if not wanted:
        return available
    unknown = [item for item in wanted if item not in available]
    if unknown:
        raise CaseError(f"{case}: no recorded benchmark for {', '.join(unknown)}; recorded: {', '.join(available)}")
    return {item: available[item] for item in wanted}


def relocate(command: str, case: Path, output_dir: Path) -> tuple[str, list[str]]:
    """The recorded command as (script, arguments) for the folder as it is now.

    Paths in a recorded command are relative to wherever the run was made (runs/loop_cuda/...);
    the reference file's folder is that run's root, so every argument under it is moved to
    `case`, and --output-dir goes to the scratch directory.
    """
    tokens = shlex.split(command)
    if not tokens:
        raise CaseError(f"{case}: an empty recorded command")
    script, arguments = Path(tokens[0]).name, tokens[1:]
    root = None
    for index, token in enumerate(arguments):
        if token == "--ref" and index + 1 < len(arguments):
            root = Path(arguments[index + 1]).parent
        elif token.startswith("--ref="):
            root = Path(token.split("=", 1)[1]).parent
    if root is None:
        raise CaseError(f"{case}: the recorded command has no --ref: {command}")

    def moved(token: str) -> str:
        prefix, equals, value = token.partition("=") if token.startswith("--") and "=" in token else ("", "", token)
        path = Path(value)
        if value and path.parts[:len(root.parts)] == root.parts and len(path.parts) > len(root.parts):
            value = str(case / Path(*path.parts[len(root.parts):]))
        return f"{prefix}{equals}{value}" if equals else value

    relocated, skip = [], False
    for _index, token in enumerate(arguments):
        if skip:
            skip = False
            continue
        if token == "--output-dir":
            relocated += ["--output-dir", str(output_dir)]
            skip = True
        elif token.startswith("--output-dir="):
            relocated.append(f"--output-dir={output_dir}")
        else:
            relocated.append(moved(token))
    return script, relocated


def ceiling_basis(record: BenchmarkReport | None) -> str | None:
    """The basis of a record's % of ceiling: roofline.basis, or in older records the point it came from."""
    if record is None or record.percent_of_ceiling is None:
        return None
    basis = record.ceiling_basis()
    return basis.name if basis else record.primary_point()[0]


def needs_measured_ceilings(record: BenchmarkReport | None) -> bool:
    """Whether the record's % of ceiling used this GPU's measured (cached) ceilings."""
    return ceiling_basis(record) in MEASURED_BASES and bool(record.roofline.measured_ceilings)


def claimed_figures(record: BenchmarkReport | None) -> dict[str, float | str]:
    """Every figure a benchmark.json claims, by the name the reproduction table shows."""
    figures: dict[str, float | str] = {}
    if record is None:
        return figures
    if record.median_us:
        figures["median µs"] = record.median_us
    kernel_time = record.kernel_time
    if kernel_time and kernel_time.median_us and not kernel_time.error:
        figures["kernel time µs"] = kernel_time.median_us
    for baseline in record.baselines:
        if baseline.median_us and not baseline.error:
            figures[f"{baseline.name} median µs"] = baseline.median_us
    if record.speedup_vs_best_baseline and record.best_baseline:
        figures[f"speedup vs {record.best_baseline}"] = record.speedup_vs_best_baseline
    if record.percent_of_ceiling:
        figures["% of ceiling"] = record.percent_of_ceiling
        figures["ceiling basis"] = ceiling_basis(record) or "?"
        _, point = record.primary_point()
        rate = ACHIEVED_RATE.get(point.bound if point else None)
        if rate and getattr(point, rate[0]):
            figures[rate[1]] = getattr(point, rate[0])  # what the % divides: comparable even where the roof moved
    comparison = record.comparison
    if comparison is not None and comparison.speedup:
        other = Path(comparison.against_dir or comparison.against or "other").name
        figures[f"speedup vs {other}"] = comparison.speedup
        figures[f"verdict vs {other}"] = comparison.verdict or "?"
    return figures


def roof_moved(recorded: BenchmarkReport | None, reproduced: BenchmarkReport | None, tolerance: float) -> str | None:
    """How the roof bounding the recorded % of ceiling moved on the re-run (same basis, beyond `tolerance`), or None.

    Measured ceilings are measured per machine: the bf16 matmul roof read 708 TFLOP/s on one H100 and 784 on
    another (2026-11-24 and 11-26), which moved every compute-bound % of ceiling by 10% with no kernel change.
    """
    if recorded is None or reproduced is None:
        return None
    (_, before), (_, after) = recorded.primary_point(), reproduced.primary_point()
    if not before or not after or before.bound != after.bound or before.bound not in ROOF_KEY:
        return None
    key, unit = ROOF_KEY[before.bound]
    old, new = (getattr(point.ceilings, key) if point.ceilings else None for point in (before, after))
    if not old or not new or abs(new / old - 1) <= tolerance:
        return None
    return f"the {before.bound} roof moved {old:.1f} -> {new:.1f} {unit} on this GPU; the achieved rate is compared"


def compare(item: str, recorded: BenchmarkReport | None, reproduced: BenchmarkReport | None,
            tolerance: float) -> list[Figure]:
    claims, now = claimed_figures(recorded), claimed_figures(reproduced)
    # A basis that changed where both records carry the achieved rate: the point crossed a roof this GPU measured
    # a little differently (a kernel at a same-size copy's bandwidth moves to the datasheet above it); the % and
    # the basis are set aside, the achieved rate is compared. Without that rate a changed basis fails.
    rate_compared = any(name in claims and name in now for name in RATE_NAMES)
    basis_changed = claims.get("ceiling basis") != now.get("ceiling basis")
    figures = []
    for name, value in claims.items():
        new = now.get(name)
        if new is None:
            figures.append(Figure(item, name, value, None, False, "not measured by the re-run"))
        elif name == "ceiling basis" and basis_changed and rate_compared:
            figures.append(Figure(item, name, value, new, None, "basis changed: the achieved rate is compared"))
        elif isinstance(value, str) or isinstance(new, str):
            changed = "basis changed" if name == "ceiling basis" else "verdict changed"
            figures.append(Figure(item, name, value, new, value == new, "" if value == new else changed))
        elif name == "% of ceiling" and basis_changed:
            figures.append(Figure(item, name, value, new, None if rate_compared else False,
                                  f"not comparable: {claims.get('ceiling basis')} vs {now.get('ceiling basis')} basis"))
        elif name == "% of ceiling" and (moved := roof_moved(recorded, reproduced, tolerance)):
            # The same basis, but this GPU measured a different roof: the % moves with the roof, not the kernel;
            # the achieved rate beside it says whether the kernel held. Not a failed figure, not a held one.
            figures.append(Figure(item, name, value, new, None, f"not comparable: {moved}"))
        else:
            drift = new / value - 1
            figures.append(Figure(item, name, value, new, abs(drift) <= tolerance, f"{drift:+.1%}"))
    return figures


def provide_measured_ceilings(items: dict[str, Path], result: Reproduction, runner: Runner) -> bool:
    """Where a record used measured ceilings, have this GPU's ready (cached or measured); False when it cannot."""
    using = [item for item, folder in items.items() if needs_measured_ceilings(read_benchmark(folder))]
    if not using:
        result.ceilings = "no record used measured ceilings"
        return True
    code = runner(CEILINGS_SCRIPT, [])
    if code == 0:
        result.ceilings = f"{CEILINGS_SCRIPT} read or measured this GPU's ceilings for {', '.join(using)}"
        return True
    result.errors.append(
        f"{', '.join(using)}: the recorded % of ceiling is against this GPU's measured ceilings, and "
        f"{CEILINGS_SCRIPT} exited {code} here, so they cannot be measured on this machine; a re-run would place "
        f"the kernel against other ceilings (the datasheet's), which is not the recorded figure. Run "
        f"{CEILINGS_SCRIPT} on this GPU until it succeeds, then reproduce again")
    result.exit_code = int(ExitCode.ENVIRONMENT_FAULT)
    return False


def reproduce(case: Path, items: dict[str, Path], output_dir: Path, tolerance: float,
              runner: Runner = run_script) -> Reproduction:
    result = Reproduction(str(case), tolerance)
    if not provide_measured_ceilings(items, result, runner):
        return result
    for item, folder in items.items():
        recorded = read_benchmark(folder)
        scratch = output_dir / item
        scratch.mkdir(parents=True, exist_ok=True)
        correctness = read_correctness(folder) if item != FINAL else None
        if correctness and correctness.command:
            script, arguments = relocate(correctness.command, case, scratch)
            code = runner(script, arguments)
            rechecked = read_correctness(scratch)
            result.figures.append(Figure(item, "correctness", correctness.verdict or "?",
                                         rechecked.verdict if rechecked else f"exit {code}",
                                         code == 0 and rechecked is not None and rechecked.passed))
            if code == ExitCode.ENVIRONMENT_FAULT:
                result.errors.append(f"{item}: correctness_check.py found no usable GPU (exit 4)")
                result.exit_code = int(ExitCode.ENVIRONMENT_FAULT)
                return result
        if recorded is None or not recorded.command:
            result.errors.append(f"{item}: benchmark.json records no command")
            continue
        script, arguments = relocate(recorded.command, case, scratch)
        code = runner(script, arguments)
        reproduced = read_benchmark(scratch)
        if code == ExitCode.ENVIRONMENT_FAULT:
            result.errors.append(f"{item}: benchmark.py found no usable GPU (exit 4)")
            result.exit_code = int(ExitCode.ENVIRONMENT_FAULT)
            return result
        result.device_recorded = result.device_recorded or recorded.gpu_name
        result.device_now = result.device_now or (reproduced.gpu_name if reproduced else None)
        if result.device_now and result.device_recorded and result.device_now != result.device_recorded:
            result.errors.append(f"recorded on {result.device_recorded}, this GPU is {result.device_now}: "
                                 "timings compare only on the same device type")
            result.exit_code = int(ExitCode.ENVIRONMENT_FAULT)
            return result
        if code != 0 or reproduced is None:
            result.errors.append(f"{item}: benchmark.py exited {code}; see {scratch}")
        result.figures.extend(compare(item, recorded, reproduced, tolerance))
    result.exit_code = int(ExitCode.OK if result.holds else ExitCode.CHECK_FAILED)
    return result


RESULT_TEXT = {True: "holds", False: "DIFFERS", None: "not comparable"}


def render(result: Reproduction) -> str:
    def shown(value: float | str | None) -> str:
        if value is None:
            return "—"
        return value if isinstance(value, str) else f"{value:.4g}"

    rows = [[figure.item, figure.name, shown(figure.recorded), shown(figure.reproduced),
             RESULT_TEXT[figure.holds], figure.note] for figure in result.figures]
    held = sum(figure.holds is True for figure in result.figures)
    set_aside = sum(figure.holds is None for figure in result.figures)
    lines = [f"# Reproduction of {result.case}", "",
             f"Recorded on {result.device_recorded or '?'}; re-run on {result.device_now or '?'}. "
             f"A figure holds within ±{result.tolerance:.0%} of the recorded value; a comparison also needs "
             "the same verdict, and a % of ceiling the same ceiling basis. "
             f"Ceilings: {result.ceilings or 'not checked'}.", "",
             markdown_table(rows, ["item", "figure", "recorded", "re-run", "result", "drift"]), "",
             f"**{held} of {len(result.figures)} figures hold"
             + (f"; {set_aside} not comparable (a roof this GPU measured differently)" if set_aside else "") + ".**"]
    lines += [f"- error: {error}" for error in result.errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", type=Path, help="a case folder, e.g. demo/triton/softmax")
    parser.add_argument("--versions", help="comma-separated: v0,v2,final (default: every recorded one)")
    parser.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                        help=f"relative drift allowed per figure (default {DEFAULT_TOLERANCE})")
    parser.add_argument("--output-dir", type=Path,
                        help="scratch for the re-run's records (default reproduction/<backend>-<case>)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    case = args.case.resolve()
    if not 0 < args.tolerance < 1:
        print(f"error: --tolerance must be between 0 and 1, got {args.tolerance}", file=sys.stderr)
        return ExitCode.USAGE
    try:
        if not case.is_dir():
            raise CaseError(f"{args.case}: no such folder")
        items = select(case, [item.strip() for item in args.versions.split(",")] if args.versions else None)
        output_dir = (args.output_dir or Path("reproduction") / f"{case.parent.name}-{case.name}").resolve()
        result = reproduce(case, items, output_dir, args.tolerance)
    except (CaseError, UsageError) as error:  # UsageError: a record that is not valid JSON
        print(f"error: {error}", file=sys.stderr)
        return ExitCode.USAGE
    report = render(result)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "reproduction.md").write_text(report)
    (output_dir / "reproduction.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
    print(json.dumps(asdict(result), indent=2) if args.json else report)
    if result.exit_code == ExitCode.OK and not args.json:
        print(f"next: every figure of {args.case} held; the report is {output_dir / 'reproduction.md'}")
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
