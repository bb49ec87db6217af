"""measure_ceilings.py's comparison of measured ceilings with the datasheet, and its console summary."""

from __future__ import annotations

from kernel_opt.core.cli import script_command
from kernel_opt.core.render import format_number, markdown_table
from kernel_opt.measure import ceilings as ceilings_module
from kernel_opt.measure import datasheet

PROG = "measure_ceilings.py"

# (label, measured key, datasheet field) for each row of the comparison.
_ROWS: tuple[tuple[str, str, str], ...] = (
    ("memory bandwidth (GB/s)", "bandwidth", "memory_bandwidth_gbps"),
    ("bf16 matmul (TFLOP/s)", "bfloat16", "bf16_tensor_tflops"),
    ("fp16 matmul (TFLOP/s)", "float16", "fp16_tensor_tflops"),
    ("tf32 matmul (TFLOP/s)", "tf32", "tf32_tensor_tflops"),
    ("fp32 matmul, TF32 off (TFLOP/s)", "float32", "fp32_tflops"),
    ("fp8 e4m3 matmul (TFLOP/s)", ceilings_module.FP8_LABEL, "fp8_tensor_tflops"),
)


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


def ceilings_origin(result: ceilings_module.CeilingsResult) -> str:
    """ "ceilings read from cache, measured at <when>" (or "measured now"): where the figures came from."""
    origin = "read from cache" if result.from_cache else "measured now"
    return f"ceilings {origin}, measured at {result.ceilings.measured_at}"


def ceilings_summary(result: ceilings_module.CeilingsResult) -> str:
    """What measure_ceilings.py prints: the device, where the figures came from, measured against datasheet."""
    measured = result.ceilings
    device = measured.device
    sheet = datasheet.lookup_gpu(device.name)
    rows = comparison_rows(measured, sheet)
    lines = [f"{device.name} (driver {device.driver_version}, torch {device.torch_version}, "
             f"CUDA {device.cuda_version})", f"{ceilings_origin(result)}: {result.cache_path}"]
    if not measured.complete:
        lines.append("not cached: some ceilings failed to measure (below); run again when the GPU is idle")
    table = [
        [
            row["ceiling"],
            format_number(row["measured"]) if row["measured"] else f"failed: {row['measurement_error']}",
            format_number(row["datasheet"]),
            "—" if row["measured_fraction_of_datasheet"] is None
            else f"{100 * row['measured_fraction_of_datasheet']:.0f}%",
        ]
        for row in rows
    ]
    lines.append(markdown_table(table, ["ceiling", "measured", "datasheet (dense)", "measured / datasheet"]))
    if sheet is None:
        lines.append(f"datasheet: {device.name!r} is not in kernel_opt/data/datasheet.yaml; "
                     "only measured ceilings apply")
    else:
        lines.append(f"datasheet sources ({sheet.display_name}):")
        lines += [f"  {row['datasheet_field']}: {row['datasheet_citation']}"
                  for row in rows if row["datasheet_citation"]]
    lines.append(f"next: {ceilings_next_step()}")
    return "\n".join(lines)




def ceilings_next_step() -> str:
    """The step measure_ceilings.py names next: a benchmark, whose roofline reads the cached ceilings."""
    return (f"{script_command('benchmark')} SOLUTION --ref REF.py --output-dir DIR   "
            "# its roofline reads these ceilings from the cache")

