"""A stand-in for the GPU machine that tools/demo_upkeep/reprofile_demo.py drives: fake commands on a fake clock.

Shared by tests/tools/demo_upkeep/test_reprofile_demo.py (the run's deadline and packing) and
tests/tools/demo_upkeep/test_apply_reprofile.py (bringing its output into demo/).
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool

reprofile_demo = load_tool("reprofile_demo", DEMO_UPKEEP)

NEW_SUMMARY = {
    "bottleneck": "overlap_bound", "memory_limiter": "L2", "top_stall": "wait", "unverified": [],
    "reason": "achieved occupancy 12.4% is below 50% by design", "metrics": {"achieved_occupancy_pct": 12.4},
    "dominant_kernel": {"name": "gemm_kernel", "share_pct": 100.0},
    "read_next": [{"guide": "cuda", "strategy": "pipeline_depth", "link": "x", "why": "y"}],
    "kernels": [{"name": "gemm_kernel", "pipes": {"busiest": "tensor", "busiest_pct": 61.04},
                 "design": {"source": "executed opcode mix (ncu)", "async_features": ["wgmma (HGMMA x1.2M)",
                                                                                     "TMA (UTMALDG x100)"]},
                 "top_stalls": [{"reason": "wait", "share_pct": 31.5}], "metrics": {"tensor_pipe_pct": 61.04}}],
}


class FakeMachine:
    """Stands in for the GPU machine: each command takes `seconds` of a fake clock and writes what the tool would."""

    def __init__(self, seconds: dict[str, float], report_bytes: int = 1000, failing: tuple[str, ...] = (),
                 report: Path | None = None):
        self.now, self.seconds, self.report_bytes, self.failing = 0.0, seconds, report_bytes, failing
        self.report = report  # a real .ncu-rep to hand back as every profile's report
        self.commands: list[list[str]] = []

    def clock(self) -> float:
        return self.now

    def execute(self, command, console, timeout_s):
        self.commands.append(command)
        folder = Path(command[command.index("--output-dir") + 1])
        folder.mkdir(parents=True, exist_ok=True)
        console.write_text("$ " + " ".join(command) + "\n")
        tool = Path(command[1]).name
        self.now += self.seconds.get(tool, 1.0)
        key = "/".join(folder.parts[-3:])
        if key in self.failing and tool == "ncu_profile.py":
            return reprofile_demo.StepRun(3, 1.0)
        if tool == "static_analysis.py":
            (folder / "static_analysis.json").write_text(json.dumps({"kernels": []}))
        else:
            (folder / "ncu_summary.json").write_text(json.dumps(NEW_SUMMARY))
            (folder / "ncu_details.md").write_text("details\n")
            (folder / "profile.ncu-rep").write_bytes(self.report.read_bytes() if self.report else
                                                     b"r" * self.report_bytes)
            (folder / "build").mkdir(exist_ok=True)
            (folder / "build" / "libv.so").write_bytes(b"so")
        return reprofile_demo.StepRun(0, self.seconds.get(tool, 1.0))


ENVIRONMENT = {"date": "2026-11-26T00:00:00+00:00", "device": "NVIDIA H100 80GB HBM3, 580.159.04"}


def device_output(tmp_path: Path, only: list[str], machine: FakeMachine | None = None, **options) -> tuple[int, Path]:
    """Run tools/demo_upkeep/reprofile_demo.py's `run` on the fake machine: (exit code, OUT_DIR)."""
    machine = machine or FakeMachine({})
    jobs = reprofile_demo.plan_versions(REPO_ROOT / "demo", only)
    run_options = reprofile_demo.RunOptions(out_dir=tmp_path / "out", static_workers=1, python="python3", **options)
    code = reprofile_demo.run_versions(jobs, run_options, execute=machine.execute, clock=machine.clock,
                                       environment=ENVIRONMENT)
    return code, tmp_path / "out"
