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

from pathlib import Path

from kernel_opt.core.cli import make_parser, print_json, run_command
from kernel_opt.core.render import format_number, markdown_table
from kernel_opt.measure import ceilings as ceilings_module
from kernel_opt.measure import datasheet

PROG = "measure_ceilings.py"
SCRIPTS_DIR = Path(__file__).resolve().parents[2]

# (label, measured key, datasheet field) for each row of the comparison.
_ROWS: tuple[tuple[str, str, str], ...] = (
    ("memory bandwidth (GB/s)", "bandwidth", "memory_bandwidth_gbps"),
    ("bf16 matmul (TFLOP/s)", "bfloat16", "bf16_tensor_tflops"),
    ("fp16 matmul (TFLOP/s)", "float16", "fp16_tensor_tflops"),
    ("tf32 matmul (TFLOP/s)", "tf32", "tf32_tensor_tflops"),
    ("fp32 matmul, TF32 off (TFLOP/s)", "float32", "fp32_tflops"),
)


def main(argv=None) -> int:
    return run_command(_main, argv)


def build_parser():
    parser = make_parser(PROG, __doc__)
    parser.add_argument("--refresh", action="store_true", help="measure again even when a cached result exists")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    return parser


def _script(name: str) -> str:
    """How to call another command: the wrapper beside this skill, else the console script."""
    if (SCRIPTS_DIR / f"{PROG}").is_file():
        return f"python {SCRIPTS_DIR / f'{name}.py'}"
    return f"kernel-opt {name.replace('_', '-')}"


def comparison_rows(measured: ceilings_module.MeasuredCeilings, sheet: datasheet.GpuDatasheet | None) -> list[dict]:
    """Measured against datasheet, one row per ceiling; fraction is measured / datasheet."""
    rows = []
    for label, key, field_name in _ROWS:
        if key == "bandwidth":
            value = measured.memory_bandwidth_gbps
            error = measured.copy_error
        else:
            entry = measured.matmul.get(key)
            value = None if entry is None else entry.tflops
            error = None if entry is None else entry.error
        cited = None if sheet is None else sheet.specs.get(field_name)
        rows.append(
            {
                "ceiling": label,
                "measured": value,
                "measurement_error": error,
                "datasheet": None if cited is None else cited.value,
                "datasheet_field": field_name,
                "measured_fraction_of_datasheet": (value / cited.value) if (value and cited) else None,
                "datasheet_citation": None if cited is None else cited.citation(),
            }
        )
    return rows


def _main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    result = ceilings_module.load_or_measure(refresh=args.refresh)
    measured = result.ceilings
    sheet = datasheet.lookup_gpu(measured.device.name)
    rows = comparison_rows(measured, sheet)
    next_step = (
        f"{_script('benchmark')} SOLUTION --ref REF.py --output-dir DIR   "
        "# its roofline reads these ceilings from the cache"
    )
    if args.json:
        print_json(
            {
                "ok": True,
                "from_cache": result.from_cache,
                "cached": result.from_cache or measured.complete,
                "cache_path": str(result.cache_path),
                "measured": measured.to_dict(),
                "datasheet": None if sheet is None else sheet.to_dict(),
                "comparison": rows,
                "next": next_step,
            }
        )
        return 0

    device = measured.device
    origin = "read from cache" if result.from_cache else "measured now"
    print(f"{device.name} (driver {device.driver_version}, torch {device.torch_version}, CUDA {device.cuda_version})")
    print(f"ceilings {origin}, measured at {measured.measured_at}: {result.cache_path}")
    if not measured.complete:
        print("not cached: some ceilings failed to measure (below); run again when the GPU is idle")
    table = [
        [
            row["ceiling"],
            format_number(row["measured"]) if row["measured"] else f"failed: {row['measurement_error']}",
            format_number(row["datasheet"]),
            "—" if row["measured_fraction_of_datasheet"] is None else f"{100 * row['measured_fraction_of_datasheet']:.0f}%",
        ]
        for row in rows
    ]
    print(markdown_table(table, ["ceiling", "measured", "datasheet (dense)", "measured / datasheet"]))
    if sheet is None:
        print(f"datasheet: {device.name!r} is not in kernel_opt/data/datasheet.yaml; only measured ceilings apply")
    else:
        print(f"datasheet sources ({sheet.display_name}):")
        for row in rows:
            if row["datasheet_citation"]:
                print(f"  {row['datasheet_field']}: {row['datasheet_citation']}")
    print(f"next: {next_step}")
    return 0
