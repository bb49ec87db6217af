"""Measure this GPU's copy bandwidth and matmul throughput once, cache them, and show them beside the datasheet.

The roofline in benchmark reports needs two ceilings per dtype: memory bandwidth and matmul
throughput. This command measures them on this board (a 1 GiB device-to-device copy; square
bf16, fp16, tf32 and strict-fp32 matmuls on random data) with the same timer that times the
kernels, and caches the result per GPU model and driver. Later runs read the cache; pass
--refresh to measure again (after a driver update the cache file name changes by itself).
Datasheet peaks, each with its source, are printed beside the measured figures.

Usage:
  python skills/kernel-opt-skill/scripts/measure_ceilings.py
  python skills/kernel-opt-skill/scripts/measure_ceilings.py --json
  python skills/kernel-opt-skill/scripts/measure_ceilings.py --refresh
  KERNEL_OPT_CACHE_DIR=work/cache python skills/kernel-opt-skill/scripts/measure_ceilings.py --json
  kernel-opt measure-ceilings --refresh

Cache: $KERNEL_OPT_CACHE_DIR, else $XDG_CACHE_HOME/kernel-opt-skill, else ~/.cache/kernel-opt-skill,
file ceilings-<gpu>-<driver>.json. A measurement takes about a minute of GPU time.
Exit codes: 0 ceilings measured or read from the cache, 2 bad arguments, 4 no GPU on this machine.
"""

from __future__ import annotations

from kernel_opt.core.cli import make_parser, print_json, run_command
from kernel_opt.measure import ceilings as ceilings_module
from kernel_opt.measure import datasheet
from kernel_opt.measure.ceilings_report import PROG, ceilings_next_step, ceilings_summary, comparison_rows


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser(PROG, __doc__)
    parser.add_argument("--refresh", action="store_true", help="measure again even when a cached result exists")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    return parser


def _main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    result = ceilings_module.load_or_measure(refresh=args.refresh)
    measured = result.ceilings
    if args.json:
        sheet = datasheet.lookup_gpu(measured.device.name)
        print_json(
            {
                "ok": True,
                "from_cache": result.from_cache,
                "cached": result.from_cache or measured.complete,
                "cache_path": str(result.cache_path),
                "measured": measured.to_dict(),
                "datasheet": None if sheet is None else sheet.to_dict(),
                "comparison": comparison_rows(measured, sheet),
                "next": ceilings_next_step(),
            }
        )
        return 0
    print(ceilings_summary(result))
    return 0
