#!/usr/bin/env python3
"""Check the measurement targets of docs/measurement.md on a GPU and print its figures.

For a vector add of 2^28 fp32 elements and a 4096x4096 fp32 softmax (the CUDA solutions in
reference/): benchmark.py's median against Nsight Compute's gpu__time_duration.sum (taken with
--clock-control none, read through ncu_report), five separate benchmark.py runs against each
other, and benchmark.py's eager softmax time against a plain triton do_bench beside it.

Usage:
  python3 tools/measurement_targets.py --out-dir out/targets
  python3 tools/measurement_targets.py --ncu-target vector_add   # what ncu profiles (internal)
"""

from __future__ import annotations

import argparse
import faulthandler
import glob
import json
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "skills" / "kernel-opt-skill" / "scripts"
sys.path.insert(0, str(SCRIPTS))

CASES = {
    "vector_add": ("reference/vector_add/good/vector_add.cu", "reference/vector_add/ref.py", {"n": 1 << 28}),
    "softmax": ("reference/softmax/good/softmax.cu", "reference/softmax/ref.py", {"N": 4096, "D": 4096}),
}
RUNS = 5
NVTX_RANGE = "kernel_opt_measure"


def ncu_target(case: str, build_dir: Path) -> None:
    """Call one solution the way the benchmark does, 10 times inside an NVTX range."""
    import torch

    from kernel_opt.check.correctness import BuildOptions
    from kernel_opt.run.request import ChildRequest, ProfileTargetPart
    from kernel_opt.solution.contract import load_reference
    from kernel_opt.solution.inputs import build_instance
    from kernel_opt.solution.loaded import LoadedSolution
    from kernel_opt.solution.spec import solution_spec

    solution, ref, dims = CASES[case]
    spec, _ = solution_spec(REPO / solution, "cuda", "cuda", build_dir, BuildOptions(), [])
    loaded = LoadedSolution(ChildRequest(spec, str(REPO / ref), "cuda", dims, ProfileTargetPart(3, 10, NVTX_RANGE)))
    instance = build_instance(load_reference(REPO / ref).setup, dims, 0, "cuda")
    run = loaded.prepared(instance.values, instance.dims, instance.outputs)
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    for _ in range(10):
        run()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


def ncu_median_us(case: str, out_dir: Path) -> tuple[float, list[float]]:
    report = out_dir / f"ncu_{case}"
    command = ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", f"{NVTX_RANGE}/",
               "--metrics", "gpu__time_duration.sum", "--export", str(report), "--force-overwrite",
               sys.executable, str(Path(__file__).resolve()), "--ncu-target", case,
               "--build-dir", str(out_dir / "build")]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
    # ncu_report is read in its own process: loaded beside torch it has crashed the process.
    reader = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--read-ncu", str(report) + ".ncu-rep"],
                            capture_output=True, text=True, timeout=120)
    if reader.returncode != 0:
        raise RuntimeError(f"reading {report}.ncu-rep failed ({reader.returncode}): {reader.stderr[-1500:]}")
    durations = json.loads(reader.stdout)
    return statistics.median(durations), durations


def read_ncu_durations_us(path: str) -> list[float]:
    """gpu__time_duration.sum of every profiled kernel, in microseconds (run without torch loaded)."""
    sys.path.insert(0, sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"))[-1])
    import ncu_report

    context = ncu_report.load_report(path)
    durations = []
    for range_index in range(context.num_ranges()):
        profiled = context.range_by_idx(range_index)
        for action_index in range(profiled.num_actions()):
            metric = profiled.action_by_idx(action_index).metric_by_name("gpu__time_duration.sum")
            scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}[metric.unit()]
            durations.append(metric.as_double() * scale)
    return durations


def benchmark_json(case: str, out_dir: Path, run: int, *extra: str):
    """One benchmark.py run of a case, read back as its BenchmarkReport."""
    from kernel_opt.measure.records import read_benchmark

    solution, ref, dims = CASES[case]
    target = out_dir / f"{case}_run{run}"
    command = [sys.executable, str(SCRIPTS / "benchmark.py"), str(REPO / solution), "--ref", str(REPO / ref),
               "--output-dir", str(target), *extra, *(f"--{k}={v}" for k, v in dims.items())]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900)
    report = read_benchmark(target)
    if report.verdict != "measured" or not (report.kernel_time and report.kernel_time.median_us):
        print(completed.stdout[-3000:], completed.stderr[-3000:], file=sys.stderr)
        print(json.dumps(report.kernel_time.to_dict() if report.kernel_time is not None else None), file=sys.stderr)
    return report


def main() -> int:
    faulthandler.enable()
    parser = argparse.ArgumentParser()
    parser.add_argument("--out-dir", type=Path, default=REPO / "out" / "targets")
    parser.add_argument("--ncu-target")
    parser.add_argument("--build-dir", type=Path)
    parser.add_argument("--read-ncu")
    args = parser.parse_args()
    if args.read_ncu:
        print(json.dumps(read_ncu_durations_us(args.read_ncu)))
        return 0
    if args.ncu_target:
        ncu_target(args.ncu_target, args.build_dir)
        return 0
    import tempfile

    import torch
    import triton.testing

    args.out_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="kernel-opt-targets-"))  # run folders and builds stay out of out-dir
    results: dict = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    lines = []
    for case in CASES:
        reports = [benchmark_json(case, scratch, run, "--baseline", "none") for run in range(RUNS)]
        medians = [r.median_us for r in reports]
        kernel = [r.kernel_time.median_us for r in reports]
        ncu_median, ncu_all = ncu_median_us(case, scratch)
        results[case] = {"event_medians_us": medians, "kernel_time_medians_us": kernel, "ncu_us": ncu_all,
                         "ncu_median_us": ncu_median}
        for label, values in (("events", medians), ("kernel time", kernel)):
            tool = statistics.median(values)
            gap = abs(tool - ncu_median) / ncu_median
            spread = (max(values) - min(values)) / min(values)
            results[case][label] = {"median_of_runs_us": tool, "gap_to_ncu": gap, "run_to_run_spread": spread}
            lines.append(f"{case:<11} {label:<12} {tool:9.2f} us  ncu {ncu_median:9.2f} us  "
                         f"gap {100 * gap:5.2f}% (target <5)  "
                         f"5-run spread {100 * spread:5.2f}% (target <2)")
    eager = benchmark_json("softmax", scratch, 99, "--baseline", "eager")
    eager_us = next(b.median_us for b in eager.baselines if b.name == "eager")
    x = torch.randn(4096, 4096, device="cuda")
    do_bench_us = statistics.median(triton.testing.do_bench(lambda: torch.softmax(x, -1), return_mode="median") * 1000
                                    for _ in range(5))
    gap = abs(eager_us - do_bench_us) / do_bench_us
    results["softmax_eager"] = {"benchmark_eager_us": eager_us, "do_bench_us": do_bench_us, "gap": gap}
    lines.append(f"eager softmax: benchmark.py {eager_us:.2f} us, do_bench {do_bench_us:.2f} us, "
                 f"gap {100 * gap:.2f}% (target <10)")
    print(f"GPU: {results['gpu']}, torch {results['torch']}")
    print("\n".join(lines))
    (args.out_dir / "targets.json").write_text(json.dumps(results, indent=2))
    (args.out_dir / "targets.txt").write_text(
        "\n".join([f"GPU: {results['gpu']}, torch {results['torch']}", *lines]) + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
