"""The baselines as the benchmark's child times them: eager on the solution's own buffer sets, beside the pool,
then torch.compile's modes once the pool is released."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from kernel_opt.measure.input_pool import InputRotation, copy_unless_same
from kernel_opt.measure.records import TimedEntry, compile_baseline_name
from kernel_opt.run.events import EventLog, PhaseEvent, TimedEvent, one_line
from kernel_opt.run.request import ChildRequest
from kernel_opt.solution.inputs import cloned_arguments

EAGER_ROTATED_NOTE = ("timed on the solution's own rotated buffer sets: the same inputs in the same memory, the "
                      "same copy, poisoning and L2 flush before each call")


def time_eager_rotated(reference, timed, dims: dict[str, Any], request: ChildRequest, events: EventLog) -> bool:
    """The eager baseline timed exactly as the solution was, on its buffer sets in turn; whether it was.

    Where the tensors lie in memory moves a memory-bound call's time: on an H200 the same 6.4 GB
    leaky_relu took 3035 us or 3390 us depending on where its input and output were placed (an input
    allocated beside a freed 90 GB pool read after empty_cache), so the eager baseline timed on fresh
    copies after the pool was freed read up to 14% slower than the identical identity ModelNew.
    On the same buffer sets, the same placements. An eager call that runs out of memory beside the
    pool is timed on fresh copies once the pool is released instead (False). `timed` is the benchmark child's
    pool: its rotation and outputs.
    """
    import torch

    from kernel_opt.check.compare import poison_
    from kernel_opt.measure.timing.events import time_callable
    from kernel_opt.run.memory import is_out_of_memory

    if "eager" not in (request.benchmark.baselines or []):
        return False
    rotation = timed.rotation
    eager = InputRotation(rotation.buffers, rotation.value_sets, timed.outputs,
                          eager_calls(reference, rotation.buffers, dims), copy_unless_same, poison_)
    events.emit(PhaseEvent("baseline eager"))
    out_of_memory = False
    try:
        samples = time_callable(lambda: eager.calls[eager.current](), before_each=eager.before_call)
        torch.cuda.synchronize()
    except Exception as error:
        if not is_out_of_memory(error):
            events.emit(TimedEvent(TimedEntry("eager", error=f"{type(error).__name__}: {error}"[:500]).to_dict()))
            return True
        out_of_memory = True
    if out_of_memory:  # out of the except block: its traceback no longer holds the call's tensors
        del eager
        torch.cuda.empty_cache()
        return False
    samples.notes.append(EAGER_ROTATED_NOTE)
    events.emit(TimedEvent(TimedEntry.from_samples("eager", samples).to_dict()))
    return True


def eager_calls(reference, buffer_sets: list[dict[str, Any]], dims: dict[str, Any]) -> list[Callable[[], Any]]:
    """The eager baseline's call on each buffer set: the reference, or for a KernelBench problem its Model (built
    once) on that set's inputs."""
    from kernel_opt.solution.contract import accepted_kwargs

    arguments = [accepted_kwargs(reference.reference, {**dims, **buffers}) for buffers in buffer_sets]
    if reference.baseline is None:
        return [partial(reference.reference, **kwargs) for kwargs in arguments]
    model, first_args, _ = reference.baseline(arguments[0])
    keys = [next(key for key, value in arguments[0].items() if value is argument) for argument in first_args]
    return [partial(model, *(kwargs[key] for key in keys)) for kwargs in arguments]


def time_baselines(reference, values, dims, request, events: EventLog, compiler_warm_up_s: float = 0.0,
                   eager: bool = True) -> None:
    import torch

    from kernel_opt.measure.timing.events import time_callable
    from kernel_opt.solution.contract import accepted_kwargs

    kinds = request.benchmark.baselines or []
    kwargs = accepted_kwargs(reference.reference, cloned_arguments(dims, values))
    function, args = reference.reference, ()
    if reference.baseline is not None:  # a KernelBench problem: its Model, called as KernelBench times it
        function, args, kwargs = reference.baseline(kwargs)
    if eager and "eager" in kinds:  # else timed on the solution's buffer sets already (time_eager_rotated)
        events.emit(PhaseEvent("baseline eager"))
        try:
            samples = time_callable(lambda: function(*args, **kwargs))
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
            compiled(*args, **kwargs)
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - started
            samples = time_callable(lambda compiled=compiled: compiled(*args, **kwargs))
            events.emit(TimedEvent(TimedEntry.from_samples(name, samples, compile_s=compile_s).to_dict()))
        except Exception as error:  # a baseline that fails to compile is reported; the others still run
            events.emit(TimedEvent(TimedEntry(name, error=one_line(error)[:500]).to_dict()))
