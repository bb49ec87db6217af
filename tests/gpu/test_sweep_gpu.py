"""ncu_profile.py --sweep on a real GPU through the real nsight-python (pinned 0.9.6) and ncu.

Run on the GPU machine with nsight-python and its dependencies importable (tools/sweep_gpu.sh).
Each profiled size is one ncu process, so these take a few tens of seconds each.
"""

import importlib.metadata
import json
import math

import pytest

from kernel_opt.commands.ncu_profile import main
from kernel_opt.env.capabilities import NSIGHT_PYTHON_SWEEP_PIN


def _nsight_python() -> str | None:
    try:
        return importlib.metadata.version("nsight-python")
    except importlib.metadata.PackageNotFoundError:
        return None


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.ncu,
    # Alone, after the parallel tests: in a run beside 5 other GPU test workers (H100, 2026-11-25) nsight-python
    # reported "PROFILING FAILED" for one size of two, while the same sweeps run alone profiled every size.
    pytest.mark.timing,
    pytest.mark.skipif(_nsight_python() != NSIGHT_PYTHON_SWEEP_PIN,
                       reason=f"needs nsight-python {NSIGHT_PYTHON_SWEEP_PIN} (tools/sweep_gpu.sh installs it)"),
]


def sweep(reference_dir, tmp_path, solution, sizes, *dims):
    out = tmp_path / "sweep"
    code = main([str(reference_dir / "softmax" / solution), "--ref", str(reference_dir / "softmax" / "ref.py"),
                 "--output-dir", str(out), "--sweep", sizes, *dims])
    return code, json.loads((out / "sweep.json").read_text()), out


def test_a_two_size_sweep_of_the_triton_softmax_is_sane(reference_dir, tmp_path):
    code, record, out = sweep(reference_dir, tmp_path, "good/softmax.py", "N=1024,4096", "--D=4096")
    assert code == 0, (record.get("error"), [point["message"] for point in record["points"]])
    assert record["verdict"] == "profiled" and record["gpu"] and record["nsight_python"] == NSIGHT_PYTHON_SWEEP_PIN
    assert [point["value"] for point in record["points"]] == [1024, 4096]
    for point in record["points"]:
        solution, reference = point["solution"], point["reference"]
        counted = 2 * point["value"] * 4096 * 4
        assert point["status"] == "profiled" and point["work"]["bytes"] == counted
        assert solution["time_us"] > 0 and reference["time_us"] > 0 and solution["runs"] == 3
        assert math.isfinite(point["speedup_vs_reference"]) and point["speedup_vs_reference"] > 0
        assert solution["kernels"] == ["softmax_kernel"] and reference["kernels"]
        # Caches are flushed before every replay, so the input comes from DRAM; the output may still sit in the
        # 50 MB L2 when the kernel ends (H100, N=1024: 17.19 MB of DRAM traffic for 16.8 MB read and 16.8 MB
        # written), since ncu counts only the write-backs made during the kernel. So: at least the bytes read.
        assert 0.95 * counted / 2 < solution["dram_bytes"] < 2.0 * counted
        # The same-size copy ran as a kernel ncu could see (a plain copy_ is a cudaMemcpy it cannot), and is a roof:
        # no honest kernel passes 100% of the stricter of it and the other roofs.
        assert 1000 < point["copy_bandwidth_gbps"] < 5000
        assert 0 < solution["percent_of_ceiling"] <= 100.5
        assert solution["ceiling_basis"] in ("measured", "same-size copy", "datasheet")
        assert solution["achieved_bandwidth_gbps"] < 5000  # no GPU this skill targets moves more
    small, large = record["points"]
    assert large["solution"]["time_us"] > small["solution"]["time_us"]  # four times the work takes longer
    assert (out / "sweep.png").read_bytes().startswith(b"\x89PNG") and (out / "sweep.csv").is_file()
    assert json.loads((out / "check" / "correctness.json").read_text())["verdict"] == "pass"
    assert "| 1024 |" in (out / "sweep.md").read_text()
    # nsight-python's full reports are gone (tens of MB each), said in a note; --keep-reports would keep them
    assert not list(out.rglob("*.ncu-rep"))
    assert any(note.startswith("removed nsight-python's 2 full report(s)") for note in record["notes"])


def test_a_size_with_wrong_results_is_reported_and_not_profiled(reference_dir, tmp_path):
    # padding_in_sum.py is right where D is a power of two and wrong elsewhere (reference/softmax/README.md)
    code, record, out = sweep(reference_dir, tmp_path, "wrong/padding_in_sum.py", "D=127,128", "--N=1024")
    statuses = {point["value"]: point["status"] for point in record["points"]}
    assert code == 1 and statuses == {127: "incorrect", 128: "profiled"} and record["verdict"] == "partial"
    assert record["points"][0]["solution"] is None and record["points"][1]["solution"]["time_us"] > 0
    assert not (out / "nsight" / "D-127").exists()  # never handed to nsight-python
