"""The baselines as the benchmark's child times them: eager on the solution's own buffer sets, beside the pool,
then torch.compile's modes once the pool is released."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from functools import partial
from typing import Any

from kernel_opt.core.errors import SolutionError
from kernel_opt.measure import statistics
from kernel_opt.measure.records import TimedEntry, compile_baseline_name
from kernel_opt.measure.timing.samples import TimingSamples
from kernel_opt.run.events import EventLog, PhaseEvent, TimedEvent, one_line
from kernel_opt.run.request import ChildRequest
from kernel_opt.solution.inputs import cloned_arguments

EAGER_PAIRED_NOTE = ("timed in alternation with the solution (pairs solution-eager, eager-solution, ...), each call "
                     "on the buffer set the solution last used, with the same copy and L2 flush before each: both met "
                     "the same inputs in the same memory and the same clocks and power state")


def time_eager_beside_solution(reference, timed, dims: dict[str, Any], request: ChildRequest,
                               events: EventLog) -> bool:
    """The eager baseline timed in alternation with the solution, on the solution's buffer sets; whether it was.

    Two effects made one-after-the-other timings of identical work read apart on an H200. Placement: the same
    6.4 GB leaky_relu took 3035 us or 3390 us depending on where its input and output lay (an input allocated
    beside a freed 90 GB pool), so eager runs on the solution's own buffers. State: under a memory-bound load
    the GPU reached its 700 W power cap within 2 s and its SM clock moved between 1590 and 1980 MHz while the
    memory clock held, and an identity ModelNew of a 2048 x 1048576 matvec read 1.088x an eager timed after it
    (its samples rose from 2303 to 2632 us while the solution's had held 2300). In alternating pairs both meet
    the same state, and the speedup is read against the solution's median in those pairs (`paired_solution_us`).
    An eager call that runs out of memory beside the pool is timed on fresh copies once the pool is released
    instead (False). `timed` is the benchmark child's pool: its rotation, outputs, guard and post-timing check.
    """
    import torch

    from kernel_opt.measure.timing.budget import MIN_REPS
    from kernel_opt.measure.timing.interleaved import time_interleaved
    from kernel_opt.run.memory import is_out_of_memory

    if "eager" not in (request.benchmark.baselines or []):
        return False
    rotation = timed.rotation
    calls = eager_calls(reference, rotation.buffers, dims)
    events.emit(PhaseEvent("baseline eager"))
    out_of_memory = False
    try:
        with solution_faults("while timed beside the eager baseline"):
            # As many pairs as one timing's samples (MIN_REPS at least), not a comparison's 30: medians are read
            # here, not a bootstrap interval, and KernelBench's slowest eager call takes 185 ms on an H200.
            solution_samples, eager_samples = time_interleaved(
                rotation.call, lambda: calls[rotation.current](), before_a=rotation.before_call, min_pairs=MIN_REPS)
        torch.cuda.synchronize()
    except SolutionError:
        raise
    except Exception as error:
        if not is_out_of_memory(error):
            events.emit(TimedEvent(TimedEntry("eager", error=f"{type(error).__name__}: {error}"[:500]).to_dict()))
            return True
        out_of_memory = True
    if out_of_memory:  # out of the except block: its traceback no longer holds the call's tensors
        del calls
        torch.cuda.empty_cache()
        return False
    timed.guard.verify("the calls beside the eager baseline")
    timed.check_rotation("solution (beside eager)", rotation)
    eager_samples.notes.append(EAGER_PAIRED_NOTE)
    events.emit(TimedEvent(TimedEntry.from_samples(
        "eager", eager_samples, paired_solution_us=solution_samples.median_us,
        paired_solution_samples_us=list(solution_samples.samples_us)).to_dict()))
    return True


@contextmanager
def solution_faults(when: str, only_in_its_call: bool = True):
    """What the solution's call raises, as the solution's fault (SolutionError, or its allocation failure, whose
    blame run/memory.py decides). With `only_in_its_call`, an error raised elsewhere (the eager baseline's call
    beside it) passes through as it is."""
    from kernel_opt.run.events import classify_exception_message
    from kernel_opt.run.memory import allocation_failure, is_out_of_memory, raised_in_solution

    try:
        yield
    except SolutionError:
        raise
    except Exception as error:
        if only_in_its_call and not raised_in_solution(error):
            raise
        if is_out_of_memory(error):
            raise allocation_failure(error) from error
        raise SolutionError(f"the solution raised {one_line(error)} {when}",
                            kind=classify_exception_message(str(error))) from error


def eager_calls(reference, buffer_sets: list[dict[str, Any]], dims: dict[str, Any]) -> list[Callable[[], Any]]:
    """The eager baseline's call on each buffer set: the reference, or for a KernelBench problem its Model (built
    once) on that set's inputs."""
    from kernel_opt.solution.contract import accepted_kwargs

    arguments = [accepted_kwargs(reference.reference, {**dims, **buffers}) for buffers in buffer_sets]
    if reference.baseline is None:
        return [partial(reference.reference, **kwargs) for kwargs in arguments]
    model, keys = _model_and_input_names(reference, arguments[0])
    return [partial(model, *(kwargs[key] for key in keys)) for kwargs in arguments]


def _model_and_input_names(reference, kwargs: dict[str, Any]) -> tuple[Callable[..., Any], list[str]]:
    """A KernelBench problem's Model, built once, and the keyword names of the inputs its forward takes, in order."""
    model, inputs, _ = reference.baseline(kwargs)
    return model, [next(key for key, value in kwargs.items() if value is argument) for argument in inputs]


def time_baselines(reference, values, dims, request, events: EventLog, compiler_warm_up_s: float = 0.0,
                   eager: bool = True) -> None:
    import torch

    from kernel_opt.measure.timing.events import time_callable

    kinds = request.benchmark.baselines or []
    function, arguments = _baseline_call(reference, values, dims)
    if eager and "eager" in kinds:  # else timed on the solution's buffer sets already (time_eager_beside_solution)
        events.emit(PhaseEvent("baseline eager"))
        try:
            samples = time_in_fresh_placement(
                lambda args, kwargs: time_callable(lambda: function(*args, **kwargs)), arguments)
            events.emit(TimedEvent(TimedEntry.from_samples("eager", samples).to_dict()))
        except Exception as error:
            events.emit(TimedEvent(TimedEntry("eager", error=f"{type(error).__name__}: {error}"[:500]).to_dict()))
    if "compile" not in kinds:
        return
    for mode in request.benchmark.compile_modes or []:
        name = compile_baseline_name(mode)
        events.emit(PhaseEvent(f"baseline {name}"))
        try:
            # compile_s is all that torch.compile costs before its first result: the first
            # reset imports dynamo and inductor (seconds in a fresh process), then tracing
            # and code generation run on the first call. A held worker paid that start
            # beforehand: it counts in the first mode's compile_s all the same.
            started = time.perf_counter() - compiler_warm_up_s
            compiler_warm_up_s = 0.0
            torch._dynamo.reset()
            compiled = torch.compile(function, mode=mode, dynamic=False)
            first = [arguments()]  # popped into the timing below, which alone then holds these tensors
            compiled(*first[0][0], **first[0][1])
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - started
            samples = time_in_fresh_placement(
                lambda args, kwargs, compiled=compiled: time_callable(lambda: compiled(*args, **kwargs)),
                arguments, first.pop())
            events.emit(TimedEvent(TimedEntry.from_samples(name, samples, compile_s=compile_s).to_dict()))
        except Exception as error:  # a baseline that fails to compile is reported; the others still run
            events.emit(TimedEvent(TimedEntry(name, error=one_line(error)[:500]).to_dict()))


Arguments = tuple[tuple[Any, ...], dict[str, Any]]


def _baseline_call(reference, values, dims) -> tuple[Callable[..., Any], Callable[[], Arguments]]:
    """What the baselines time, and a maker of its arguments: fresh copies of the instance's tensors each time.

    ref.py's reference on keyword arguments, or for a KernelBench problem its Model (built once) on its inputs.
    """
    from kernel_opt.solution.contract import accepted_kwargs

    def fresh() -> dict[str, Any]:
        return accepted_kwargs(reference.reference, cloned_arguments(dims, values))

    if reference.baseline is None:
        return reference.reference, lambda: ((), fresh())
    model, keys = _model_and_input_names(reference, fresh())  # those copies are dropped: the maker copies again

    def model_arguments() -> Arguments:
        kwargs = fresh()
        return tuple(kwargs[key] for key in keys), {}

    return model, model_arguments


SPLIT_LEVEL_GAP = 0.05  # the second-fastest sample this far under the median: the samples hold two levels


def split_levels(samples_us: list[float]) -> bool:
    """Whether a timing ran at two speeds: two samples or more at least SPLIT_LEVEL_GAP faster than its median."""
    ordered = sorted(samples_us)
    return len(ordered) >= 2 and ordered[1] < (1.0 - SPLIT_LEVEL_GAP) * statistics.median(ordered)


def time_in_fresh_placement(time_on: Callable[[tuple[Any, ...], dict[str, Any]], TimingSamples],
                            arguments: Callable[[], Arguments], first: Arguments | None = None) -> TimingSamples:
    """A baseline's samples; where they ran at two speeds, timed once more on fresh copies and the lower median kept.

    Where a baseline's tensors lie can change its time: a 6.4 GB elementwise torch.compile baseline on an H200
    read 3358 us for 27 samples and 3015 us for its last 3 (as one placement against another, see
    time_eager_beside_solution). A baseline is never reported slower than it was seen to run.
    """
    import torch

    args, kwargs = first if first is not None else arguments()
    samples = time_on(args, kwargs)
    if not split_levels(samples.samples_us):
        return samples
    del args, kwargs, first
    torch.cuda.empty_cache()  # the copies below may land elsewhere
    args, kwargs = arguments()
    again = time_on(args, kwargs)
    kept, other = sorted((samples, again), key=lambda timed: timed.median_us)
    kept.notes.append(
        f"its first timing ran at two speeds (median {samples.median_us:.2f} µs, second-fastest sample "
        f"{sorted(samples.samples_us)[1]:.2f} µs), so it was timed again on fresh copies of its inputs (median "
        f"{again.median_us:.2f} µs): the lower median is kept, the other was {other.median_us:.2f} µs")
    return kept
