"""`kernel-opt <command>`: every script of the skill, reachable from one console entry point.

Usage:
  kernel-opt --help
  kernel-opt env-check --output-dir out/
  kernel-opt correctness-check v0/kernel.cu --ref ref.py --output-dir out/v0 --N=4096
  kernel-opt experience-log recommend --kernel softmax --backend cuda --chip H100 --bottleneck memory_bound
  kernel-opt hypothesis-check out/v1
  kernel-opt eval problems/ solutions/ --output-dir out/eval
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from kernel_opt.core.cli import run_command
from kernel_opt.run.bytecode import use_bytecode_cache

# command name -> module under kernel_opt.commands; each module has main(argv) -> int and a
# docstring whose first line is its summary. Script wrappers in scripts/ share these names.
COMMANDS: dict[str, str] = {
    "env_check": "env_check",
    "correctness_check": "correctness_check",
    "benchmark": "benchmark",
    "measure_ceilings": "measure_ceilings",
    "experience_log": "experience_log",
    "hypothesis_check": "hypothesis_check",
    "static_analysis": "static_analysis",
    "ncu_profile": "ncu_profile",
    "workspace": "workspace",
    "final_report": "final_report",
    "eval": "eval",
    "install": "install",
    "uninstall": "uninstall",
}


def _summary(module_name: str) -> str:
    module = importlib.import_module(f"kernel_opt.commands.{module_name}")
    return (module.__doc__ or "").strip().splitlines()[0]


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nCommands (also runnable as python $SKILL_ROOT/scripts/<command>.py):")
        for name, module in COMMANDS.items():
            print(f"  {name.replace('_', '-'):<20} {_summary(module)}")
        return 0 if argv else 2
    name = argv[0].replace("-", "_").removesuffix(".py")
    if name not in COMMANDS:
        print(f"error: unknown command {argv[0]!r}; run `kernel-opt --help` for the list", file=sys.stderr)
        return 2
    module = importlib.import_module(f"kernel_opt.commands.{COMMANDS[name]}")
    return module.main(argv[1:])


def console() -> int:
    """The `kernel-opt` console script: main() in a process of its own, its compiled Python kept (run/bytecode.py)
    before the command imports torch; called in-process, main() leaves the interpreter's settings alone."""
    use_bytecode_cache()
    return run_command(main, None)  # `kernel-opt --help | head -1` ends quietly, as the commands themselves do


if __name__ == "__main__":
    sys.exit(console())
