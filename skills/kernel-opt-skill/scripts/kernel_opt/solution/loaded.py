"""A solution loaded in the worker, called the same way whatever its backend."""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import EnvironmentFault, KernelOptError, SolutionError, UsageError
from kernel_opt.run.events import EventLog, NoteEvent, classify_exception_message, one_line
from kernel_opt.run.memory import allocation_failure, is_out_of_memory, solution_code
from kernel_opt.run.request import ChildRequest
from kernel_opt.solution import registry
from kernel_opt.solution.returning_call import deliver_outputs


class LoadedSolution:
    """A uniform `call(values, dims, outputs)` over every backend's solutions (the backend's Launcher inside).

    It loads `request.solution` (for the benchmark's --against version, a request whose solution is that one).
    """

    @solution_code  # loading runs the solution's own code (its imports, a ModelNew's construction)
    def __init__(self, request: ChildRequest):
        self.backend = request.solution.backend
        self.path = request.solution.path  # the solution's own file: where an error's hint points
        definition = registry.get(self.backend, request.solution.backend_module)
        self.title = definition.title
        self.launcher = definition.load(request)
        self.setup: Callable | None = self.launcher.setup
        self.last_call_host_s = 0.0  # host-side time of the last call, until it returned (no synchronize)
        self._last_call: Callable[[], None] | None = None

    def prepared(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> Callable[[], None]:
        """A no-argument call with everything bound up front, so timing it times only the launch."""
        return self.launcher.prepared(values, dims, outputs)

    def raise_launch_error(self) -> None:
        """Raise if a launch inside the call failed (reading the error also clears it)."""
        self.launcher.raise_launch_error()

    @solution_code  # an allocation that fails in here is the solution's (run/memory.py)
    def call(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str],
             after_return: Callable[[], None] | None = None) -> None:
        """Call, then wait for the GPU; `after_return` runs as soon as the call returns (the launch check's marker)."""
        import torch

        self._last_call = self.prepared(values, dims, outputs)
        started = time.perf_counter()
        self._last_call()
        self.last_call_host_s = time.perf_counter() - started
        if after_return is not None:
            after_return()
        self.raise_launch_error()
        on_gpu = any(isinstance(v, torch.Tensor) and v.is_cuda for v in values.values())
        if on_gpu:
            torch.cuda.synchronize()
        self.raise_launch_error()


    def deliver_outputs(self) -> None:
        """After call(), outside anything timed or profiled: the outputs of a solution that returns them (a ModelNew)
        copied into the buffers the checks read (solution.returning_call.ReturningCall); nothing for the others."""
        if self._last_call is not None:
            deliver_outputs(self._last_call)
        self._last_call = None  # it holds the call's buffers: they must not outlive their case

    def forget_call(self) -> None:
        """Drop the last call undelivered (a warm-up whose outputs nobody reads), so its buffers can be freed."""
        self._last_call = None


def instance_maker(reference, solution: LoadedSolution, device: str, events: EventLog):
    """(dims, seed) -> ProblemInstance, from ref.py's setup, else the solution's, else the solution itself."""
    from kernel_opt.solution.inputs import build_instance

    if getattr(reference, "kind", "ref.py") == "kernelbench":
        drawn = "" if str(device) == "cpu" else (f", drawn on {device} (on the host where get_inputs() has a step "
                                                  "only the host can take)")
        events.emit(NoteEvent(f"inputs from {reference.path.name}'s get_inputs() after torch.manual_seed(seed){drawn}; "
                              "weights from its Model, built after torch.manual_seed(42) as KernelBench's eval does"))
        return lambda dims, seed: build_instance(reference.setup, dims, seed, device)
    if reference.setup is not None:
        events.emit(NoteEvent("inputs from ref.py setup()"))
        return lambda dims, seed: build_instance(reference.setup, dims, seed, device)
    if solution.setup is not None:
        events.emit(NoteEvent("inputs from the solution's setup() (ref.py has none)"))
        return lambda dims, seed: build_instance(solution.setup, dims, seed, device)
    from_solution = solution.launcher.input_maker()
    if from_solution is not None:
        return lambda dims, seed: from_solution(dims, seed, device)
    raise UsageError(
        f"no setup() in ref.py or in the {solution.title} solution, so there are no inputs to run",
        hint='define setup(seed=0, device="cuda", **dims) -> {"inputs": {...}, "outputs": [...]} in ref.py',
    )


def runtime_modules(request: ChildRequest) -> tuple[str, ...]:
    """The packages loading this request's solution imports (its backend's), for the tampering guard's snapshot."""
    return registry.get(request.solution.backend, request.solution.backend_module).runtime_modules


def solution_or_fault(request: ChildRequest) -> LoadedSolution:
    try:
        return LoadedSolution(request)
    except KernelOptError:
        raise
    except Exception as error:
        raise SolutionError(f"loading the solution raised {one_line(error)}", kind="load_error") from error


def call_solution(solution: LoadedSolution, values: dict[str, Any], dims: dict[str, Any], outputs: list[str],
                  after_return: Callable[[], None] | None = None) -> None:
    try:
        solution.call(values, dims, outputs, after_return)
    except KernelOptError:
        raise
    except Exception as error:
        if is_out_of_memory(error):
            failure, frame = allocation_failure(error), solution_frame(error, solution.path)
            if frame is not None:  # where in its own code the solution asked for the memory
                failure.hint = f"{Path(frame.filename).name} line {frame.lineno}, in {frame.name}: {frame.line}; " \
                               f"{failure.hint}"
            raise failure from error
        message = one_line(error)
        if interpreter_numpy_fault(type(error).__name__, message):
            raise EnvironmentFault(
                "the Triton interpreter of this triton version fails under NumPy 2.4 or newer when a loop bound "
                "or index is a runtime value ('only 0-dimensional arrays can be converted to Python scalars', "
                "triton-lang/triton#9171): not the kernel's fault",
                kind="interpreter_numpy",
                hint="for interpreter runs install numpy<2.4 (python -m pip install 'numpy<2.4'), or check on a GPU",
            ) from error
        frame = solution_frame(error, solution.path)
        limit = interpreter_limit(frame, message)
        if limit is not None:
            raise EnvironmentFault(
                f"the Triton interpreter (TRITON_INTERPRET=1) cannot run this kernel: {limit}; not the kernel's fault",
                kind="interpreter_limit",
                hint="check it on a GPU; for a CPU check, write the function from what the interpreter runs, "
                     "e.g. tanh(x) = 2 * tl.sigmoid(2 * x) - 1 (experience/triton/TRITON.md, \"The CPU interpreter's "
                     "limits\")") from error
        kind = classify_exception_message(message)
        if type(error).__name__ == "CompilationError":
            kind = "compile_error"
        detail = "".join(traceback.format_exception(type(error), error, error.__traceback__)[-6:]).strip()
        where = (f"in the solution's own code: {Path(frame.filename).name} line {frame.lineno}, in {frame.name}: "
                 f"{frame.line}\n") if frame is not None else ""
        raise SolutionError(f"the solution raised {message}", kind=kind,
                            hint=(where + detail[-max(0, 1500 - len(where)):]).strip()) from error


def solution_frame(error: BaseException, path: str) -> traceback.FrameSummary | None:
    """The deepest frame in the solution's own file, across the exception and its causes.

    The error's own traceback ends in the harness or in a library (torch's Module.__call__, Triton's
    interpreter, which re-raises as InterpreterError from the kernel's TypeError); the line that
    went wrong is the last one of the solution's file in the innermost exception that has one.
    """
    target = Path(path).resolve()
    found, seen, current = None, set(), error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        own = [frame for frame in traceback.extract_tb(current.__traceback__)
               if Path(frame.filename).resolve() == target]
        found = own[-1] if own else found
        current = current.__cause__ or current.__context__
    return found


def interpreter_limit(frame: traceback.FrameSummary | None, message: str) -> str | None:
    """What the Triton interpreter lacks, where that is why the call failed; None for the kernel's own errors.

    The interpreter patches tl's builtins, not libdevice's extern functions, which return None there, so the
    first operation on their result fails (`1.0 + libdevice.tanh(x)`: unsupported operand ... 'NoneType'; a
    tl.store of it: cannot convert None); inline PTX raises "not supported in interpreter mode".
    """
    if os.environ.get("TRITON_INTERPRET") != "1":
        return None
    if "not supported in interpreter mode" in message:
        return f"the kernel uses what it does not implement ({message})"
    if frame is None or "NoneType" not in message:
        return None
    try:
        uses_libdevice = "libdevice." in Path(frame.filename).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not uses_libdevice:
        return None
    return (f"libdevice functions return None there, and {Path(frame.filename).name} line {frame.lineno} "
            f"(`{frame.line}`) failed on such a None ({message})")


def interpreter_numpy_fault(error_type: str, message: str) -> bool:
    """Triton's interpreter calling int() on a 1-element array, which NumPy 2.4 made an error."""
    if (
        error_type != "InterpreterError"
        or "only 0-dimensional arrays can be converted to Python scalars" not in message
    ):
        return False
    import numpy

    major, minor = (int(part) for part in numpy.__version__.split(".")[:2])
    return (major, minor) >= (2, 4)
