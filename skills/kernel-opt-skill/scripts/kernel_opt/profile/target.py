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

import sys
from pathlib import Path

from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.run.entry import child_main
from kernel_opt.run.events import (
    DoneEvent,
    EnvironmentEvent,
    EventLog,
    PhaseEvent,
    PrecisionEvent,
    WarningEvent,
    environment_info,
)
from kernel_opt.run.request import ChildRequest, ProfileTargetPart
from kernel_opt.solution.loaded import call_solution, instance_maker, solution_or_fault


def run_profile_target(request: ChildRequest, events: EventLog) -> None:
    import torch

    from kernel_opt.solution.contract import load_reference, problem_cases, set_matmul_precision

    if not torch.cuda.is_available():
        raise EnvironmentFault("torch sees no CUDA GPU in the profiled process")
    events.emit(EnvironmentEvent(environment_info("cuda")))
    reference = load_reference(Path(request.reference))
    calls = request.profile_target
    # The precision the correctness check and the benchmark run under: without it torch's own defaults
    # apply here, and cuDNN's (allow_tf32 = True) profiled a float32 convolution as a TF32 kernel that
    # neither of them ran (demo/kernelbench L2_02, H100, 2026-11-25).
    events.emit(PrecisionEvent(**set_matmul_precision(reference.allow_tf32)))
    events.emit(PhaseEvent("load_solution"))
    solution = solution_or_fault(request)
    make = instance_maker(reference, solution, "cuda", events)
    dims = problem_cases(request.cli_dims, [], reference.setup or solution.setup)[0]
    events.emit(PhaseEvent("setup", dims=dims))
    instance = make(dict(dims), 0)
    for note in instance.notes:
        events.emit(WarningEvent(note))
    values, outputs = instance.values, instance.outputs
    events.emit(PhaseEvent("warmup", calls=calls.warmup_calls))
    for _ in range(calls.warmup_calls):
        call_solution(solution, values, instance.dims, outputs)
    torch.cuda.synchronize()
    events.emit(PhaseEvent("profile", calls=calls.profiled_calls, nvtx_range=calls.nvtx_range))
    torch.cuda.nvtx.range_push(calls.nvtx_range)
    try:
        for _ in range(calls.profiled_calls):
            call_solution(solution, values, instance.dims, outputs)
        torch.cuda.synchronize()
    finally:
        torch.cuda.nvtx.range_pop()
    events.emit(DoneEvent(dims=instance.dims, profiled_calls=calls.profiled_calls))


def main(argv: list[str] | None = None) -> int:
    """The request file is the profile target's own (it names no mode): run/entry.py runs it and reports any error."""
    return child_main(sys.argv[1:] if argv is None else argv, {ProfileTargetPart.mode: run_profile_target},
                      mode=ProfileTargetPart.mode)


if __name__ == "__main__":
    sys.exit(main())
