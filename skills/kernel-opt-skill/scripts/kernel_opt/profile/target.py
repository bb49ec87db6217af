"""The program ncu profiles: `python -m kernel_opt.profile.target REQUEST.json`.

It builds one problem instance the way the correctness worker does (setup() in ref.py or the
solution, else inputs inferred from solve's signature), calls the solution a few times to get
JIT compilation, autotuning and first-touch costs out of the way, then opens the NVTX push/pop
range that ncu filters on and calls the solution again inside it. Only those calls are
profiled; the reference is never run here, so none of its kernels can leak into the report.

Progress and errors go to the same JSON-lines event file the worker writes, so ncu_profile.py
can tell a solution fault (exit 3) from an ncu failure.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import EnvironmentFault, KernelOptError
from kernel_opt.run.events import (
    DoneEvent,
    EnvironmentEvent,
    ErrorEvent,
    EventLog,
    PhaseEvent,
    PrecisionEvent,
    WarningEvent,
    environment_info,
    one_line,
)
from kernel_opt.solution.loaded import call_solution, instance_maker, solution_or_fault


def run_profile_target(request: dict[str, Any], events: EventLog) -> None:
    import torch

    from kernel_opt.solution.contract import load_reference, problem_cases, set_matmul_precision

    if not torch.cuda.is_available():
        raise EnvironmentFault("torch sees no CUDA GPU in the profiled process")
    events.emit(EnvironmentEvent(environment_info("cuda")))
    reference = load_reference(Path(request["reference"]))
    # The precision the correctness check and the benchmark run under: without it torch's own defaults
    # apply here, and cuDNN's (allow_tf32 = True) profiled a float32 convolution as a TF32 kernel that
    # neither of them ran (demo/kernelbench L2_02, H100, 2026-11-25).
    events.emit(PrecisionEvent(**set_matmul_precision(reference.allow_tf32)))
    events.emit(PhaseEvent("load_solution"))
    solution = solution_or_fault(request)
    make = instance_maker(reference, solution, "cuda", events)
    dims = problem_cases(request["cli_dims"], [], reference.setup or solution.setup)[0]
    events.emit(PhaseEvent("setup", dims=dims))
    instance = make(dict(dims), 0)
    for note in instance.notes:
        events.emit(WarningEvent(note))
    values, outputs = instance.values, instance.outputs
    events.emit(PhaseEvent("warmup", calls=request["warmup_calls"]))
    for _ in range(request["warmup_calls"]):
        call_solution(solution, values, instance.dims, outputs)
    torch.cuda.synchronize()
    events.emit(PhaseEvent("profile", calls=request["profiled_calls"], nvtx_range=request["nvtx_range"]))
    torch.cuda.nvtx.range_push(request["nvtx_range"])
    try:
        for _ in range(request["profiled_calls"]):
            call_solution(solution, values, instance.dims, outputs)
        torch.cuda.synchronize()
    finally:
        torch.cuda.nvtx.range_pop()
    events.emit(DoneEvent(dims=instance.dims, profiled_calls=request["profiled_calls"]))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    request = json.loads(Path(argv[0]).read_text())
    events = EventLog(request["events"])
    try:
        run_profile_target(request, events)
    except KernelOptError as error:
        events.emit(ErrorEvent.from_error(error))
        return int(error.exit_code)
    except BaseException as error:  # a bug or a solution side effect: report it whole
        events.emit(ErrorEvent("internal_error", one_line(error), traceback.format_exc()[-2000:], 3))
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
