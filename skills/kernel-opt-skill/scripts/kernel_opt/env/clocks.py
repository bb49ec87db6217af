"""Opt-in GPU clock locking: the exact nvidia-smi commands, checked before anything runs.

Nothing in the probing path changes GPU state or needs root; only `env_check.py --lock-clocks`
/ `--unlock-clocks` come here, and `plan_clock_change` refuses (changing nothing) without
nvidia-smi or without root.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.env.probe_records import NvidiaSmiProbe, SmiGpu
from kernel_opt.env.probes import run_tool

ClockAction = Literal["lock", "unlock"]


@dataclass
class ClockCommandResult:
    command: list[str]
    returncode: int | None
    output: str


def clock_lock_commands(nvidia_smi: str, gpus: list[SmiGpu]) -> list[list[str]]:
    """Commands that pin each GPU's SM clock at its maximum.

    One command for all GPUs when they share a maximum (the usual single-model node); one per
    GPU (`-i N`) when they differ, so no GPU is locked at another model's clock.
    """
    maxima = {gpu.max_sm_clock_mhz for gpu in gpus}
    if None in maxima or not maxima:
        raise EnvironmentFault(
            "nvidia-smi did not report a maximum SM clock, so there is no clock to lock at; nothing was changed",
            hint="check `nvidia-smi -q -d CLOCK`; some GPUs (and most VMs) do not allow clock locking",
        )
    if len(maxima) == 1:
        clock = maxima.pop()
        return [[nvidia_smi, f"--lock-gpu-clocks={clock},{clock}"]]
    return [[nvidia_smi, "-i", str(gpu.index), f"--lock-gpu-clocks={gpu.max_sm_clock_mhz},{gpu.max_sm_clock_mhz}"]
            for gpu in gpus]


def clock_reset_command(nvidia_smi: str) -> list[str]:
    return [nvidia_smi, "--reset-gpu-clocks"]


def plan_clock_change(action: ClockAction, smi: NvidiaSmiProbe) -> list[list[str]]:
    """The exact nvidia-smi commands for an opt-in clock change, after checking they can work.

    Raises EnvironmentFault (nothing changed) without nvidia-smi or without root: changing clocks
    is a machine-wide act, so it is never attempted half-way or through a silent sudo.
    """
    if not smi.found or smi.path is None:
        raise EnvironmentFault("nvidia-smi is not on PATH, so GPU clocks cannot be changed; nothing was changed")
    if smi.error:
        raise EnvironmentFault(f"nvidia-smi does not answer ({smi.error.splitlines()[0]}); nothing was changed")
    commands = [clock_reset_command(smi.path)] if action == "unlock" else clock_lock_commands(smi.path, smi.gpus)
    if os.geteuid() != 0:
        flag = "--lock-clocks" if action == "lock" else "--unlock-clocks"
        raise EnvironmentFault(
            f"changing GPU clocks needs root and this is not root; nothing was changed (it would run: "
            f"{'; '.join(' '.join(command) for command in commands)})",
            hint=f"run `sudo python env_check.py {flag}` on a machine you own, or run that command with sudo yourself",
        )
    return commands


def run_clock_command(command: list[str]) -> ClockCommandResult:
    returncode, output = run_tool(command)
    return ClockCommandResult(command=command, returncode=returncode, output=output.strip())
