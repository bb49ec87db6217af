"""The size sweep's program, started as a file: `python .../profile/sweep/nsight_child.py REQUEST.json`.

nsight-python profiles a decorated function by running *the script file* again under ncu
(`sys.executable sys.argv[0] ARGS`, with NSPY_NCU_PROFILE naming the call to profile), so this
program is a file, never `python -m`, and all of it runs twice:

- the sweep process (NSPY_NCU_PROFILE unset) asks nsight-python for one size at a time; each
  request starts ncu on this file and reads the report back with ncu_report. It never imports
  torch: ncu_report loaded beside torch has crashed its process (profile/ncu/reading.py). It
  writes each size's DataFrame as CSV and, at the end, all of them as one (sweep.csv).
- the profiled process (under ncu) runs the decorated function for its one size, `runs` times.
  The first run loads the solution, makes the inputs with setup(seed=0) and reports the work per
  call (the parent reads the cached ceilings: nothing here asks nvidia-smi under ncu). Every run
  calls the solution and the reference once outside any annotation (JIT, autotuning and the
  caching allocator settle there), then the solution inside the annotation "solution" and PyTorch
  eager as the benchmark times it (ref.py's reference; a KernelBench problem's Model) inside
  "reference", then a kernel that moves the problem's minimum bytes (an
  elementwise copy) inside "copy" (the same-size copy roof, plan.COPY_ANNOTATION). ncu profiles
  only kernels inside nsight-python's annotations.

One ncu process per size: nsight-python matches kernels to sizes by counting them, so a size whose
reference launches more kernels than another's would shift every later size's numbers if all
sizes shared one report. The top level only reads the request; what happens is reported as
events (run/events.py) in the request's JSON-lines file.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, this folder is sys.path[0], where the sweep's own modules would shadow any
# top-level module of the same name; the package is imported from the folder that holds it.
_HERE = Path(__file__).resolve().parent
if __name__ == "__main__":
    sys.path[:] = [str(_HERE.parents[2])] + [entry for entry in sys.path if Path(entry or ".").resolve() != _HERE]

import inspect  # noqa: E402
import os  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from kernel_opt.core.errors import EnvironmentFault, KernelOptError  # noqa: E402
from kernel_opt.profile.sweep.frame import merge_frames  # noqa: E402
from kernel_opt.profile.sweep.plan import (  # noqa: E402
    COPY_ANNOTATION,
    FRAME_FILE,
    REFERENCE_ANNOTATION,
    SIZE_PHASE,
    SOLUTION_ANNOTATION,
)
from kernel_opt.run.entry import child_main, report_error  # noqa: E402
from kernel_opt.run.events import (  # noqa: E402
    DoneEvent,
    EnvironmentEvent,
    EventLog,
    PhaseEvent,
    SweepOutcomeEvent,
    SweepSizeEvent,
    environment_info,
    one_line,
)
from kernel_opt.run.request import ChildRequest, SweepPart  # noqa: E402

# nsight-python sets this in the environment of the run it starts under ncu (nsight/collection/ncu.py).
PROFILED_RUN_VARIABLE = "NSPY_NCU_PROFILE"
OUTCOME_ERROR_CHARS = 1500


def _summed(first, second):
    """nsight-python's combiner for an annotation that launched several kernels: durations and bytes add up."""
    return first + second


def import_nsight():
    """nsight-python, or the exit-4 error naming what is missing (it imports pandas, deepdiff, nvtx, ncu_report)."""
    try:
        import nsight
    except Exception as error:
        from kernel_opt.env.capabilities import INSTALL_NSIGHT_PYTHON

        raise EnvironmentFault(f"nsight-python cannot be imported in the sweep's process: {one_line(error)}",
                               hint=INSTALL_NSIGHT_PYTHON, kind="missing_dependency") from error
    return nsight


class ProfiledSize:
    """The profiled process's one size: solution loaded, inputs made and work reported once, on its first run."""

    def __init__(self, request: ChildRequest, value: int, events: EventLog):
        import torch

        from kernel_opt.measure.baseline_timing import eager_calls
        from kernel_opt.measure.benchmark_child import problem_work
        from kernel_opt.solution.contract import load_reference, problem_cases, set_matmul_precision
        from kernel_opt.solution.inputs import cloned_arguments
        from kernel_opt.solution.loaded import instance_maker, solution_or_fault

        device, seed = request.device, request.sweep.seed
        if device == "cuda" and not torch.cuda.is_available():
            raise EnvironmentFault("torch sees no CUDA GPU in the profiled process")
        events.emit(EnvironmentEvent(environment_info(device)))
        reference = load_reference(Path(request.reference))
        if device == "cuda":
            set_matmul_precision(reference.allow_tf32)  # as the correctness check and the benchmark run it
        events.emit(PhaseEvent("load_solution"))
        self.solution = solution_or_fault(request)
        make = instance_maker(reference, self.solution, device, events)
        base = problem_cases(request.cli_dims, [], reference.setup or self.solution.setup)[0]
        dims = {**base, request.sweep.name: value}
        events.emit(PhaseEvent("setup", dims=dims, seed=seed))
        self.instance = make(dims, seed)
        work = problem_work(reference, self.instance.values, self.instance.outputs, self.instance.dims)
        events.emit(SweepSizeEvent(dims=self.instance.dims, work={**work, "allow_tf32": reference.allow_tf32}))
        # PyTorch eager as the benchmark times it: ref.py's reference, or a KernelBench problem's Model on its
        # inputs (not the contract's reference, which also copies into the outputs and poisons what it made).
        self.call_reference = eager_calls(reference, [cloned_arguments(self.instance.dims, self.instance.values)],
                                          self.instance.dims)[0]
        self.synchronize = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        self.copy = same_size_copy(work.get("bytes"), device)

    def run(self, annotate: Callable[[str], Any]) -> None:
        """One run: both warmed up outside any annotation, then each inside its own."""
        from kernel_opt.solution.loaded import call_solution

        instance = self.instance
        call_solution(self.solution, instance.values, instance.dims, instance.outputs)
        self.call_reference()
        self.synchronize()
        with annotate(SOLUTION_ANNOTATION):
            call_solution(self.solution, instance.values, instance.dims, instance.outputs)
        with annotate(REFERENCE_ANNOTATION):
            self.call_reference()
            self.synchronize()
        if self.copy is not None:
            self.copy()  # warmed up like the others
            with annotate(COPY_ANNOTATION):
                self.copy()
                self.synchronize()


def same_size_copy(traffic_bytes: float | None, device: str) -> Callable[[], Any] | None:
    """A kernel that moves `traffic_bytes` in all (half read, half written), or None where it has no size or no room.

    An elementwise kernel (torch.neg into a second buffer), not `copy_`: a plain copy of contiguous
    memory becomes a cudaMemcpy, which ncu does not profile (on the H100 the "copy" annotation came
    back empty at every size, 2026-11-25).
    """
    import torch

    elements = int(traffic_bytes or 0) // 2 // 4
    if elements <= 0 or device != "cuda":
        return None
    free, _ = torch.cuda.mem_get_info()
    if 2 * elements * 4 > free // 2:
        return None
    source = torch.ones(elements, dtype=torch.float32, device=device)
    destination = torch.empty_like(source)
    return lambda: torch.neg(source, out=destination)


def profiled_function(request: ChildRequest, events: EventLog, annotate: Callable[[str], Any],
                      exit_process: Callable[[int], None] = os._exit) -> Callable[[int], None]:
    """The function nsight-python profiles, its one parameter named after the swept dim (the CSV's column).

    A failure ends the profiled process at once with its exit code, after reporting it: ncu then
    fails, nsight-python raises in the sweep process, and the parent reads why from the events.
    """
    sizes: dict[int, ProfiledSize] = {}

    def sweep(value: int) -> None:
        try:
            if value not in sizes:
                sizes[value] = ProfiledSize(request, value, events)
            sizes[value].run(annotate)
        except BaseException as error:  # a fault of the solution's, this machine's, or a bug: reported
            exit_process(report_error(events, error))

    parameter = inspect.Parameter(request.sweep.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    sweep.__signature__ = inspect.Signature([parameter])  # nsight-python reads the parameter's name
    return sweep


def decorated(nsight, request: ChildRequest, function: Callable[[int], None], value: int):
    """`function` under nsight-python for one size, its files in that size's own folder."""
    sweep = request.sweep
    prefix = Path(sweep.frames_dir) / f"{sweep.name}-{value}"  # N-1024: a plain file name
    options = {**sweep.nsight_options, "output_prefix": f"{prefix}/"}
    return nsight.analyze.kernel(**options, combine_kernel_metrics=_summed)(function), prefix


def sweep_sizes(nsight, request: ChildRequest, events: EventLog, function: Callable[[int], None]) -> int:
    """The sweep process: each size through nsight-python in turn, its outcome reported; then sweep.csv."""
    name = request.sweep.name
    frames = []
    for value in request.sweep.values:
        events.emit(PhaseEvent(SIZE_PHASE, dims={name: value}, seed=request.sweep.seed))
        profiled, prefix = decorated(nsight, request, function, value)
        try:
            result = profiled(configs=[(value,)])
            frame = prefix / FRAME_FILE
            result.to_dataframe().to_csv(frame, index=False)
        except Exception as error:  # ncu or nsight-python failed; the profiled program may have said why
            events.emit(SweepOutcomeEvent(value=value, profiled=False, error=one_line(error)[:OUTCOME_ERROR_CHARS]))
            continue
        frames.append(frame)
        events.emit(SweepOutcomeEvent(value=value, profiled=True, frame=str(frame)))
    if frames:
        merge_frames(frames, Path(request.sweep.csv))
    events.emit(DoneEvent())
    return 0


def profile_one_size(nsight, request: ChildRequest, function: Callable[[int], None]) -> int:
    """The profiled process: every size's call returns at once except the one this process profiles, which ends it."""
    for value in request.sweep.values:
        profiled, _ = decorated(nsight, request, function, value)
        profiled(configs=[(value,)])
    return 0


def run_sweep_process(request: ChildRequest, events: EventLog) -> int:
    """The sweep process (run/entry.py reports what it raises): every size through nsight-python."""
    nsight = import_nsight()
    return sweep_sizes(nsight, request, events, profiled_function(request, events, nsight.annotate))


def run_profiled_process(argv: list[str]) -> int:
    """The process ncu profiles, this file run again by nsight-python: the profiled function reports its own
    failures and ends the process; nsight-python's own failures end it as they are, and the sweep process
    reports them for that size (an error event here would blame the solution)."""
    request = ChildRequest.read(argv[0], SweepPart.mode)
    events = EventLog(request.events)
    try:
        nsight = import_nsight()
    except KernelOptError as error:
        return report_error(events, error)
    return profile_one_size(nsight, request, profiled_function(request, events, nsight.annotate))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if PROFILED_RUN_VARIABLE in os.environ:
        return run_profiled_process(argv)
    return child_main(argv, {SweepPart.mode: run_sweep_process}, mode=SweepPart.mode)


if __name__ == "__main__":
    sys.exit(main())
