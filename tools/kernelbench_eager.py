"""Each KernelBench problem's Model timed in PyTorch eager on the GPU, beside its counted estimate: is it H100-sized?

A quick check before the loop runs (a couple of minutes for the demo set): every problem is built
as the tools build it (KernelBench's weights: torch.manual_seed(42) before get_init_inputs() and
Model(...); strict float32, TF32 off, as correctness_check and benchmark set it) and timed with
the tools' own timer (measure/timing/events.py's time_callable: CUDA events, the L2 flushed before every call)
on fresh inputs: each call takes the next of INPUT_SETS input sets drawn with seeds 0, 1, 2, ...
It prints and writes a table of the median, p20 and p80 beside tools/kernelbench_estimate.py's
estimate, and whether the median reaches MIN_EAGER_US.

Usage (from the repository root, on a GPU machine):
  python3 tools/kernelbench_eager.py demo/kernelbench/problems --output-dir OUT/eager
  python3 tools/kernelbench_eager.py demo/kernelbench/problems --only L1_01_rms_norm,L2_02_conv_bias_relu_scale

Exit codes: 0 every problem ran and took at least MIN_EAGER_US; 1 one ran faster than that (or
failed to run); 2 bad arguments; 4 no CUDA GPU here.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parent))
from kernelbench_estimate import SCRIPTS, estimate, problem_files  # noqa: E402

if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

MIN_EAGER_US = 100.0  # the demo set's sizing rule: each problem takes at least 100 us in eager on the H100
INPUT_SETS = 3  # distinct inputs rotated call by call, so no call finds the previous call's data
REP_MS = 150.0  # GPU time per problem's timed calls: medians of tens to hundreds of calls
WARMUP_MS = 30.0


@dataclass
class EagerTiming:
    """One problem's eager median (or why it has none) beside its estimate."""

    problem: str
    estimate_us: float
    median_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    reps: int | None = None
    error: str | None = None

    @property
    def large_enough(self) -> bool:
        return self.median_us is not None and self.median_us >= MIN_EAGER_US


def time_eager(path: Path) -> EagerTiming:
    """Build the problem's Model on the GPU and time its forward on rotating input sets."""
    import torch

    from kernel_opt.measure.timing.events import time_callable
    from kernel_opt.solution.contract import set_matmul_precision
    from kernel_opt.solution.kernelbench_problem import problem_for

    timing = EagerTiming(path.stem, estimate(path).eager_us)
    problem = problem_for(path)
    sizes = problem.sizes({})
    set_matmul_precision(False)
    try:
        model = problem.build_model(sizes, "cuda")
        input_sets = itertools.cycle([problem.inputs(sizes, seed, "cuda") for seed in range(INPUT_SETS)])
        with torch.no_grad():
            samples = time_callable(lambda: model(*next(input_sets)), warmup_ms=WARMUP_MS, rep_ms=REP_MS)
    except Exception as error:  # a problem that does not run is a row of the table, not the end of it
        timing.error = f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
        return timing
    finally:
        torch.cuda.empty_cache()
    timing.median_us, timing.p20_us, timing.p80_us = samples.median_us, samples.p20_us, samples.p80_us
    timing.reps = samples.reps
    return timing


def render(timings: list[EagerTiming], device: str) -> str:
    from tabulate import tabulate

    rows = [[t.problem, f"{t.estimate_us:,.0f}",
             "—" if t.median_us is None else f"{t.median_us:,.1f}",
             "—" if t.median_us is None else f"{t.p20_us:,.1f} / {t.p80_us:,.1f}",
             "—" if t.median_us is None else f"{t.median_us / t.estimate_us:.2f}",
             "ok" if t.large_enough else (t.error or f"UNDER {MIN_EAGER_US:.0f} us")] for t in timings]
    table = tabulate(rows, headers=["problem", "estimate us", "eager median us", "p20 / p80 us",
                                    "median / estimate", f">= {MIN_EAGER_US:.0f} us"],
                     tablefmt="github", disable_numparse=True)
    return f"Eager on {device} (CUDA events, L2 flushed, {INPUT_SETS} rotating input sets)\n\n{table}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problems", type=Path, help="a folder of KernelBench problem files (or one file)")
    parser.add_argument("--only", default="", help="comma-separated problem names (default: all)")
    parser.add_argument("--output-dir", type=Path, help="where eager.md and eager.json go")
    args = parser.parse_args(argv)
    if not args.problems.exists():
        print(f"error: {args.problems} does not exist", file=sys.stderr)
        return 2
    only = {name.strip() for name in args.only.split(",") if name.strip()}
    paths = [path for path in problem_files(args.problems) if not only or path.stem in only]
    unknown = only - {path.stem for path in paths}
    if unknown or not paths:
        print(f"error: no problem named {', '.join(sorted(unknown)) or 'at all'} in {args.problems}", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print("error: no CUDA GPU here: eager timings need one (run this on the GPU machine)", file=sys.stderr)
        return 4
    timings = []
    for path in paths:
        timings.append(time_eager(path))
        print(f"{path.stem}: {timings[-1].median_us or timings[-1].error}", file=sys.stderr, flush=True)
    text = render(timings, torch.cuda.get_device_name())
    print(text)
    if args.output_dir is not None:
        args.output_dir.mkdir(parents=True, exist_ok=True)
        (args.output_dir / "eager.md").write_text(text)
        (args.output_dir / "eager.json").write_text(json.dumps([asdict(t) for t in timings], indent=1) + "\n")
    return 0 if all(t.large_enough for t in timings) else 1


if __name__ == "__main__":
    sys.exit(main())
