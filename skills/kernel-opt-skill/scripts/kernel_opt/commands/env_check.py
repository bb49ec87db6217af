"""Check what this machine can run: tool versions, GPUs, and which steps of the loop work here.

With --output-dir DIR, writes DIR/env_check.md and DIR/env_check.json; without it, writes
nothing (the summary, or --json, is printed either way). Exit 0 when kernels can run and be timed on a
GPU; exit 4 when they cannot (the report still lists what can run here, e.g. nvcc compile-only
and the Triton interpreter). Never needs root and never changes GPU clocks unless asked to.

Usage:
  python skills/kernel-opt-skill/scripts/env_check.py --output-dir work/
  python skills/kernel-opt-skill/scripts/env_check.py --output-dir work/ --json
  kernel-opt env-check --output-dir work/
  # opt-in, on a machine you own (root): pin SM clocks at their maximum, then undo it
  sudo "$(which python)" skills/kernel-opt-skill/scripts/env_check.py --lock-clocks
  sudo "$(which python)" skills/kernel-opt-skill/scripts/env_check.py --unlock-clocks
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from kernel_opt.core.cli import make_parser, print_json, run_command, script_command
from kernel_opt.core.errors import EnvironmentFault, ExitCode
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import markdown_cell, markdown_table, render
from kernel_opt.env import probe_records
from kernel_opt.env import probes as environment
from kernel_opt.env.capabilities import RUN_ON_GPU_MACHINE, Capability, EnvironmentReport, check_environment
from kernel_opt.env.clocks import ClockCommandResult, plan_clock_change, run_clock_command

PROG = "env_check.py"




def next_steps(report: EnvironmentReport, output_dir: Path) -> list[str]:
    """The commands (or the install) to do next, chosen from what can run here."""
    check = script_command("correctness_check")
    version_dir = output_dir / "v0"
    if report.verdict == "ok":
        return [f"{check} SOLUTION --ref REF.py --output-dir {version_dir} --NAME=VALUE"]
    steps = []
    if report.capability("triton_correctness").can_run:
        steps.append(
            f"{check} SOLUTION.py --ref REF.py --output-dir {version_dir} --device cpu   # Triton, interpreter"
        )
    if report.capability("compile_cuda").can_run:
        steps.append(f"{check} SOLUTION.cu --ref REF.py --output-dir {version_dir} --compile-only   # CUDA, no GPU")
    if steps:
        return steps
    fixes = [item.how_to_fix for item in report.capabilities if item.how_to_fix and not item.can_run]
    return [fixes[0] if fixes else RUN_ON_GPU_MACHINE]


def _tool_rows(probes: probe_records.Probes) -> list[list[object]]:
    def package(probe: probe_records.PackageProbe) -> list[object]:
        return [probe.distribution, probe.version if probe.installed else "missing", probe.location or probe.error]

    def tool(probe: probe_records.ToolProbe) -> list[object]:
        where = f"{probe.path} ({probe.source})" if probe.found else probe.error
        return [probe.name, probe.version or ("found" if probe.found else "missing"), where]

    torch = probes.torch
    build = f"CUDA {torch.cuda_build_version}" if torch.cuda_build_version else "CPU-only build"
    torch_version = f"{torch.version} ({build})" if torch.installed else "missing"
    reader = probes.ncu_report
    rows = [
        ["python", probes.python.version, probes.python.executable],
        ["torch", torch_version, "sees a GPU" if torch.cuda_available else (torch.error or "sees no GPU")],
        package(probes.triton),
        tool(probes.nvcc),
        tool(probes.ncu),
        package(probes.nsight_python),
        ["ncu_report", reader.source if reader.available else "missing", reader.path or reader.error],
        tool(probes.compute_sanitizer),
        tool(probes.cuobjdump),
        ["nvidia-smi", "found" if probes.nvidia_smi.found else "missing",
         probes.nvidia_smi.path or probes.nvidia_smi.error],
    ]
    return [[markdown_cell(cell) for cell in row] for row in rows]


def _capability_rows(capabilities: list[Capability]) -> list[list[object]]:
    return [
        [item.label, "yes" if item.can_run else "no",
         *(markdown_cell(text) for text in (item.needs, item.reason, item.how_to_fix))]
        for item in capabilities
    ]


def render_markdown(report: EnvironmentReport, clock_results: list[ClockCommandResult]) -> str:
    probes = report.probes
    torch_gpu_rows = [
        [gpu.index, gpu.name, gpu.compute_capability, gpu.arch, gpu.sm_count, gpu.memory_gib, gpu.l2_cache_mib]
        for gpu in probes.torch.gpus
    ]
    smi_rows = [
        [gpu.index, gpu.name, gpu.driver_version, gpu.sm_clock_mhz, gpu.max_sm_clock_mhz, gpu.memory_clock_mhz,
         gpu.max_memory_clock_mhz, gpu.power_limit_w, gpu.persistence_mode, gpu.compute_mode]
        for gpu in probes.nvidia_smi.gpus
    ]
    return render(
        "env_check.md.j2",
        report=report,
        capability_table=markdown_table(_capability_rows(report.capabilities),
                                        ["step", "can run", "needs", "why", "how to fix"]),
        tool_table=markdown_table(_tool_rows(probes), ["tool", "version", "where / why not"]),
        torch_gpu_table=markdown_table(torch_gpu_rows, ["index", "name", "compute capability", "arch", "SMs",
                                                        "memory (GiB)", "L2 (MiB)"]) if torch_gpu_rows else None,
        smi_table=markdown_table(smi_rows, ["index", "name", "driver", "SM clock (MHz)", "max SM clock (MHz)",
                                            "mem clock (MHz)", "max mem clock (MHz)", "power limit (W)",
                                            "persistence", "compute mode"]) if smi_rows else None,
        clock_commands=[shlex.join(result.command) for result in clock_results],
    )


def summary_lines(report: EnvironmentReport, output_dir: Path | None, paths: list[Path]) -> list[str]:
    probes = report.probes
    versions = [
        f"python {probes.python.version}",
        f"torch {probes.torch.version}" if probes.torch.installed else "torch missing",
        f"triton {probes.triton.version}" if probes.triton.installed else "triton missing",
        f"nvcc {probes.nvcc.version}" if probes.nvcc.found else "nvcc missing",
        f"ncu {probes.ncu.version}" if probes.ncu.found else "ncu missing",
    ]
    runnable = [item.label for item in report.capabilities if item.can_run]
    blocked = [item.label for item in report.capabilities if not item.can_run]
    lines = [
        f"env_check: {report.verdict}. {report.headline}",
        "  " + " · ".join(versions),
        f"  can run here: {', '.join(runnable) or 'nothing'}",
    ]
    if blocked:
        lines.append(f"  cannot run here: {', '.join(blocked)}")
    if report.verdict == "ok":  # the GPU works, so each blocked step has its own, specific fix
        lines += [f"  to enable {item.label}: {item.how_to_fix}" for item in report.capabilities
                  if not item.can_run and item.how_to_fix]
    lines += [f"  warning: {warning}" for warning in report.warnings]
    lines.append(f"report: {', '.join(str(path) for path in paths)}" if paths else
                 "report: not written (pass --output-dir DIR for env_check.md and env_check.json)")
    lines += [f"next: {step}" for step in next_steps(report, output_dir or Path("OUT"))]
    return lines


def _change_clocks(action: str, as_json: bool) -> list[ClockCommandResult]:
    """Run the opt-in clock change, printing each exact command before it runs."""
    commands = plan_clock_change(action, environment.probe_nvidia_smi())
    stream = sys.stderr if as_json else sys.stdout  # --json keeps stdout for the one JSON object
    results = []
    for command in commands:
        print(f"running: {shlex.join(command)}", file=stream)
        result = run_clock_command(command)
        results.append(result)
        if result.returncode != 0:
            raise EnvironmentFault(
                f"`{shlex.join(command)}` failed (exit {result.returncode}): {result.output[:300]}",
                hint="some GPUs and most VMs do not allow clock locking; "
                     "the clocks are as they were before this command",
            )
    if action == "lock":
        print("GPU clocks locked; undo with --unlock-clocks (a reboot also resets them)", file=stream)
    return results


def _main(argv: list[str]) -> int:
    parser = make_parser(PROG, __doc__)
    parser.add_argument("--output-dir", type=Path, default=None,
                        help="where env_check.md/.json go (default: nowhere; nothing is written unless asked)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    clocks = parser.add_mutually_exclusive_group()
    clocks.add_argument("--lock-clocks", action="store_true",
                        help="opt-in, needs root: nvidia-smi --lock-gpu-clocks=<max SM clock>,<max SM clock>")
    clocks.add_argument("--unlock-clocks", action="store_true",
                        help="opt-in, needs root: nvidia-smi --reset-gpu-clocks")
    args = parser.parse_args(argv)

    clock_action = "lock" if args.lock_clocks else "unlock" if args.unlock_clocks else None
    clock_results = _change_clocks(clock_action, args.json) if clock_action else []

    report = check_environment()
    output_dir = args.output_dir
    markdown_path = output_dir / "env_check.md" if output_dir else None
    json_path = output_dir / "env_check.json" if output_dir else None
    exit_code = ExitCode.OK if report.verdict == "ok" else ExitCode.ENVIRONMENT_FAULT
    payload = {
        "ok": report.verdict == "ok",
        "exit_code": int(exit_code),
        "next_steps": next_steps(report, output_dir or Path("OUT")),
        "clock_change": {"action": clock_action, "results": [vars(result) for result in clock_results]},
        **report.to_dict(),
        "report": {"markdown": str(markdown_path), "json": str(json_path)} if output_dir else None,
    }
    if exit_code != ExitCode.OK:
        payload["error"] = {"kind": "environment", "message": report.headline, "hint": "; ".join(payload["next_steps"]),
                            "exit_code": int(exit_code)}
    if output_dir:
        write_json_atomic(json_path, payload)
        write_text_atomic(markdown_path, render_markdown(report, clock_results))

    if args.json:
        print_json(payload)
    else:
        print("\n".join(summary_lines(report, output_dir, [markdown_path, json_path] if output_dir else [])))
    return int(exit_code)


def main(argv=None) -> int:
    return run_command(_main, argv)
