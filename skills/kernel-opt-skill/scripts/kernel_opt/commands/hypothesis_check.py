"""Check a version's hypothesis.txt: Hypothesis, Rationale and Expected filled in, Expected measurable.

Usage:
  hypothesis_check.py out/v3
  hypothesis_check.py out/v3/hypothesis.txt --json

The format and the one-variable rule are in reference/hypothesis.md. Expected must name a
metric (duration, DRAM throughput, memory SOL, achieved occupancy, registers, spills, a stall
reason, bank conflicts, tensor-pipe utilisation, ...), a direction and a rough amount, so the
next profile can confirm or refute it.

Exit codes: 0 valid; 1 invalid (each problem is listed); 2 no such file.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kernel_opt.core.cli import make_parser, print_json, run_command
from kernel_opt.core.errors import ExitCode, UsageError
from kernel_opt.experience.hypothesis import check_hypothesis
from kernel_opt.experience.time_prediction import read_time_prediction

PROG = "hypothesis_check.py"


def main(argv=None) -> int:
    return run_command(_main, argv)


def _main(argv) -> int:
    parser = make_parser(PROG, __doc__)
    parser.add_argument("path", type=Path, help="a version folder (DIR/vN) or its hypothesis.txt")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    path = args.path / "hypothesis.txt" if args.path.is_dir() else args.path
    if not path.is_file():
        raise UsageError(
            f"no hypothesis file at {path}",
            hint="write DIR/vN/hypothesis.txt with Hypothesis:, Rationale: and Expected: lines "
                 "(reference/hypothesis.md)",
        )
    check = check_hypothesis(path.read_text(encoding="utf-8", errors="replace"), str(path))
    prediction = read_time_prediction(check.fields.get("expected"))
    if args.json:
        print_json({**check.to_dict(), "time_prediction": prediction.said() if prediction else None})
    elif check.ok:
        print(f"{path}: valid (Expected names {', '.join(check.metrics_named)})")
        if prediction:
            print(f'time prediction: {prediction.said()} ("{prediction.quote}"): evaluate sets the measured time '
                  "against it")
        else:
            print("note: Expected gives the time no number the tools read (\"time drops about 1.5x against v2\"; "
                  "the forms: reference/hypothesis.md), so evaluate cannot say whether the prediction held")
        print("next: make exactly this one change in the version's source, then run the correctness check")
    else:
        print(f"{path}: {len(check.problems)} problem(s)")
        for problem in check.problems:
            print(f"  - {problem}")
        print("fix them (format: reference/hypothesis.md), then run this check again")
    return int(ExitCode.OK if check.ok else ExitCode.CHECK_FAILED)


if __name__ == "__main__":
    sys.exit(main())
