"""A solution loaded in the worker, called the same way whatever its backend."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any, Callable

from kernel_opt.core.errors import EnvironmentFault, KernelOptError, SolutionError, UsageError
from kernel_opt.run.events import EventLog, NoteEvent, classify_exception_message, one_line


class LoadedSolution:
    """A uniform `call(values, dims, outputs)` over CUDA and Triton solutions."""

    def __init__(self, request: dict[str, Any]):
        self.backend = request["backend"]
        self.setup: Callable | None = None
        if self.backend == "cuda":
            from kernel_opt.backends.cuda.launch import CudaSolution
            from kernel_opt.backends.cuda.signature import Parameter, SolveSignature

            signature = SolveSignature(tuple(Parameter(**p) for p in request["signature"]["parameters"]))
            self.signature = signature
            self.cuda = CudaSolution(Path(request["library"]), signature)
        else:
            from kernel_opt.solution.contract import load_triton_solution

            self.triton = load_triton_solution(Path(request["solution"]))
            self.setup = self.triton.setup

    def prepared(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> Callable[[], None]:
        """A no-argument call with everything bound up front, so timing it times only the launch."""
        if self.backend == "cuda":
            arguments = self.cuda.bind(values, dims, outputs)
            return lambda: self.cuda(arguments)
        from kernel_opt.solution.contract import accepted_kwargs

        kwargs = accepted_kwargs(self.triton.run_kernel, {**dims, **values})
        run_kernel = self.triton.run_kernel
        return lambda: run_kernel(**kwargs)

    def raise_launch_error(self) -> None:
        """Raise if a launch inside a CUDA solve failed (reading the error also clears it)."""
        if self.backend == "cuda":
            launch_error = self.cuda.last_launch_error()
            if launch_error:
                raise SolutionError(f"a kernel launch inside solve failed: {launch_error}", kind="launch_error")

    def call(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> None:
        import torch

        self.prepared(values, dims, outputs)()
        self.raise_launch_error()
        on_gpu = any(isinstance(v, torch.Tensor) and v.is_cuda for v in values.values())
        if on_gpu:
            torch.cuda.synchronize()
        self.raise_launch_error()


def instance_maker(reference, solution: LoadedSolution, device: str, events: EventLog):
    """(dims, seed) -> ProblemInstance, from ref.py's setup, else the solution's, else solve's signature."""
    from kernel_opt.solution.inputs import build_instance, infer_instance

    if reference.setup is not None:
        events.emit(NoteEvent("inputs from ref.py setup()"))
        return lambda dims, seed: build_instance(reference.setup, dims, seed, device)
    if solution.setup is not None:
        events.emit(NoteEvent("inputs from the solution's setup() (ref.py has none)"))
        return lambda dims, seed: build_instance(solution.setup, dims, seed, device)
    if solution.backend == "cuda":
        return lambda dims, seed: infer_instance(solution.signature, dims, seed, device)
    raise UsageError(
        "no setup() in ref.py or in the Triton solution, so there are no inputs to run",
        hint='define setup(seed=0, device="cuda", **dims) -> {"inputs": {...}, "outputs": [...]} in ref.py',
    )


def solution_or_fault(request: dict[str, Any]) -> LoadedSolution:
    try:
        return LoadedSolution(request)
    except KernelOptError:
        raise
    except Exception as error:
        raise SolutionError(f"loading the solution raised {one_line(error)}", kind="load_error") from error


def call_solution(solution: LoadedSolution, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> None:
    try:
        solution.call(values, dims, outputs)
    except KernelOptError:
        raise
    except Exception as error:
        message = one_line(error)
        if interpreter_numpy_fault(type(error).__name__, message):
            raise EnvironmentFault(
                "the Triton interpreter of this triton version fails under NumPy 2.4 or newer when a loop bound "
                "or index is a runtime value ('only 0-dimensional arrays can be converted to Python scalars', "
                "triton-lang/triton#9171): not the kernel's fault",
                kind="interpreter_numpy",
                hint="for interpreter runs install numpy<2.4 (python -m pip install 'numpy<2.4'), or check on a GPU",
            ) from error
        kind = classify_exception_message(message)
        if type(error).__name__ == "CompilationError":
            kind = "compile_error"
        detail = "".join(traceback.format_exception(type(error), error, error.__traceback__)[-6:])
        raise SolutionError(f"the solution raised {message}", kind=kind, hint=detail.strip()[-1500:]) from error


def interpreter_numpy_fault(error_type: str, message: str) -> bool:
    """Triton's interpreter calling int() on a 1-element array, which NumPy 2.4 made an error."""
    if error_type != "InterpreterError" or "only 0-dimensional arrays can be converted to Python scalars" not in message:
        return False
    import numpy

    major, minor = (int(part) for part in numpy.__version__.split(".")[:2])
    return (major, minor) >= (2, 4)
