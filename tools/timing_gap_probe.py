#!/usr/bin/env python3
"""Where does event timing differ from Nsight Compute's kernel duration? A GPU probe.

Times one CUDA solution several ways with kernel_opt.measure.timing and prints the medians:
- as benchmark.py does (clean L2 flush, output poisoning before each call);
- the same with the GPU kept busy (torch.cuda._sleep) after the flush, so the host is surely
  ahead when the start event is reached: if this is faster, the loop was host-bound;
- an empty kernel under the same discipline: the fixed cost events add around any launch.

Usage:
  python3 tools/timing_gap_probe.py reference/softmax/good/softmax.cu reference/softmax/ref.py --N=4096 --D=4096
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "skills" / "kernel-opt-skill" / "scripts"))


def main() -> int:
    import tempfile

    import torch

    from kernel_opt.check.compare import poison_
    from kernel_opt.check.correctness import BuildOptions
    from kernel_opt.core.cli import parse_dim_value
    from kernel_opt.measure.timing.events import time_callable
    from kernel_opt.run.request import BenchmarkPart, ChildRequest
    from kernel_opt.solution.contract import load_reference
    from kernel_opt.solution.inputs import build_instance
    from kernel_opt.solution.loaded import LoadedSolution
    from kernel_opt.solution.spec import solution_spec

    solution, ref = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    dims = {a[2:].split("=")[0]: parse_dim_value(a.split("=", 1)[1]) for a in sys.argv[3:]}
    spec, _ = solution_spec(solution, "cuda", "cuda", Path(tempfile.mkdtemp()), BuildOptions(), [])
    loaded = LoadedSolution(ChildRequest(spec, str(ref), "cuda", dims, BenchmarkPart()))
    instance = build_instance(load_reference(ref).setup, dims, 0, "cuda")
    run = loaded.prepared(instance.values, instance.dims, instance.outputs)
    outputs = [instance.values[name] for name in instance.outputs]

    def poison():
        for tensor in outputs:
            poison_(tensor)

    def spin():
        poison()
        torch.cuda._sleep(200_000)  # ~100 us of GPU spinning at ~2 GHz: the host runs ahead

    empty = torch.empty(1, device="cuda")
    rows = {
        "as benchmark.py (poison + clean flush)": lambda: time_callable(run, before_each=poison),
        "clean flush, no poison": lambda: time_callable(run),
        "write-only flush (do_bench's)": lambda: time_callable(run, flush_mode="write", before_each=poison),
        "poison + spin + clean flush": lambda: time_callable(run, before_each=spin),
        "empty kernel (event overhead)": lambda: time_callable(lambda: empty.zero_()),
    }
    print(f"GPU: {torch.cuda.get_device_name()}")
    for label, measure in rows.items():
        medians = [measure().median_us for _ in range(5)]
        print(f"{label:<42} median of 5 medians {statistics.median(medians):8.2f} us  "
              f"(min {min(medians):.2f}, max {max(medians):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
