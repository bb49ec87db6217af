"""The child process that runs a solution: `python -m kernel_opt.worker REQUEST.json`.

Solutions run here, never in the CLI's own process, so a segfault, an illegal address (which
poisons the CUDA context for good), or a hang ends only this process. Progress goes to an
append-only JSON-lines event file, flushed per event, so the parent knows how far the run got
and in which phase a crash or hang happened.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable

from .errors import EnvironmentFault, KernelOptError, SolutionError, UsageError

# Substrings of CUDA error messages -> the kind reported for them.
CUDA_ERROR_KINDS = (
    ("illegal memory access", "illegal_memory_access"),
    ("address space", "illegal_memory_access"),  # cudaErrorInvalidAddressSpace: a pointer outside global memory
    ("misaligned address", "misaligned_address"),
    ("illegal instruction", "illegal_instruction"),
    ("unspecified launch failure", "launch_failure"),
    ("device-side assert", "device_assert"),
    ("invalid configuration", "launch_error"),
    ("too many resources requested", "launch_error"),
    ("out of memory", "out_of_memory"),
)


def classify_exception_message(message: str) -> str:
    lowered = message.lower()
    for needle, kind in CUDA_ERROR_KINDS:
        if needle in lowered:
            return kind
    if "cuda error" in lowered:
        return "cuda_error"
    return "exception"


class EventLog:
    """Append one JSON object per line; each line is written whole and flushed at once."""

    def __init__(self, path: str):
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def emit(self, event: str, **fields: Any) -> None:
        # "t" (wall clock, s) lets the parent say where a step's time went (phase durations).
        line = json.dumps({"event": event, **fields, "t": round(time.time(), 3)}, default=str) + "\n"
        os.write(self._fd, line.encode())


def environment_info(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {"torch": torch.__version__, "python": sys.version.split()[0]}
    try:
        import triton

        info["triton"] = triton.__version__
    except Exception:  # triton is optional for CUDA solutions
        info["triton"] = None
    if device == "cuda":
        properties = torch.cuda.get_device_properties(0)
        info["gpu"] = {
            "name": properties.name,
            "compute_capability": f"{properties.major}.{properties.minor}",
            "multiprocessors": properties.multi_processor_count,
            "memory_gib": round(properties.total_memory / 2**30, 1),
        }
        info["cuda"] = torch.version.cuda
    return info


class LoadedSolution:
    """A uniform `call(values, dims, outputs)` over CUDA and Triton solutions."""

    def __init__(self, request: dict[str, Any]):
        self.backend = request["backend"]
        self.setup: Callable | None = None
        if self.backend == "cuda":
            from .cuda_launch import CudaSolution
            from .signature import Parameter, SolveSignature

            signature = SolveSignature(tuple(Parameter(**p) for p in request["signature"]["parameters"]))
            self.signature = signature
            self.cuda = CudaSolution(Path(request["library"]), signature)
        else:
            from .contract import load_triton_solution

            self.triton = load_triton_solution(Path(request["solution"]))
            self.setup = self.triton.setup

    def prepared(self, values: dict[str, Any], dims: dict[str, Any], outputs: list[str]) -> Callable[[], None]:
        """A no-argument call with everything bound up front, so timing it times only the launch."""
        if self.backend == "cuda":
            arguments = self.cuda.bind(values, dims, outputs)
            return lambda: self.cuda(arguments)
        from .contract import accepted_kwargs

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


def run_correctness(request: dict[str, Any], events: EventLog) -> None:
    import torch

    from .contract import load_reference
    from .correctness import (
        case_verdict,
        compare_tensors,
        inputs_modified,
        poison_,
        resolve_tolerance,
        run_reference,
    )
    from .inputs import degenerate_input_warnings, fingerprint

    device = request["device"]
    if device == "cuda" and not torch.cuda.is_available():
        raise EnvironmentFault("torch sees no CUDA GPU in the worker process")
    events.emit("environment", info=environment_info(device))
    reference = load_reference(Path(request["reference"]))
    if device == "cuda":
        from .contract import set_matmul_precision

        events.emit("note", text=set_matmul_precision(reference.allow_tf32)["note"])
    events.emit("phase", phase="load_solution")
    solution = solution_or_fault(request)

    make = instance_maker(reference, solution, device, events)

    from .contract import problem_cases

    setup_function = reference.setup or solution.setup
    cases = problem_cases(request["cli_dims"], reference.shapes, setup_function)
    events.emit("plan", cases=cases, seeds=request["seeds"], has_shapes=bool(reference.shapes))

    warned: set[str] = set()

    def warn(text: str) -> None:
        if text not in warned:
            warned.add(text)
            events.emit("warning", text=text)

    tolerances_seen: set[str] = set()
    for case_index, dims in enumerate(cases):
        fingerprints = {}
        for seed in request["seeds"]:
            events.emit("case_start", case=case_index, dims=dims, seed=seed)
            events.emit("phase", phase="setup", case=case_index, dims=dims, seed=seed)
            instance = make(dict(dims), seed)
            for note in instance.notes:
                warn(note)
            for text in degenerate_input_warnings(instance):
                warn(text)
            if device == "cpu" and any(
                isinstance(v, torch.Tensor) and v.dtype == torch.bfloat16 for v in instance.values.values()
            ):
                raise EnvironmentFault(
                    "the Triton interpreter (TRITON_INTERPRET=1, used on machines without a GPU) does not support "
                    "bfloat16, so this problem can only be checked on a GPU",
                    kind="interpreter_bf16",
                )
            fingerprints[seed] = fingerprint(instance)
            values, outputs = instance.values, instance.outputs
            pristine = {
                name: value.clone()
                for name, value in values.items()
                if isinstance(value, torch.Tensor) and name not in outputs
            }
            reference_kwargs = {
                **instance.dims,
                **{n: (v.clone() if isinstance(v, torch.Tensor) else v) for n, v in values.items()},
            }
            events.emit("phase", phase="reference", case=case_index, dims=dims, seed=seed)
            try:
                run_reference(reference.reference, reference_kwargs, outputs)
                if device == "cuda":
                    torch.cuda.synchronize()
            except KernelOptError:
                raise
            except Exception as error:
                raise UsageError(f"the reference raised {one_line(error)}", kind="reference_error") from error
            for name in outputs:
                poison_(values[name])
            events.emit("phase", phase="solution", case=case_index, dims=dims, seed=seed)
            call_solution(solution, values, instance.dims, outputs)
            events.emit("phase", phase="compare", case=case_index, dims=dims, seed=seed)
            comparisons = []
            for name in outputs:
                atol, rtol, source = resolve_tolerance(
                    values[name].dtype, reference.atol, reference.rtol, request.get("atol"), request.get("rtol")
                )
                key = f"{name}:{values[name].dtype}"
                if key not in tolerances_seen:
                    tolerances_seen.add(key)
                    events.emit(
                        "tolerance", output=name, dtype=str(values[name].dtype).removeprefix("torch."),
                        atol=atol, rtol=rtol, source=source,
                    )
                comparison = compare_tensors(name, values[name], reference_kwargs[name], atol, rtol)
                if comparison.zeros_would_pass:
                    warn(
                        f"output {name!r}: the reference values are so small that an all-zero output would pass "
                        f"atol={atol:g}, rtol={rtol:g}; this check cannot tell a kernel that writes zeros from a "
                        "correct one: scale the inputs or tighten atol in ref.py"
                    )
                comparisons.append(comparison)
            modified = inputs_modified(pristine, values)
            events.emit(
                "case_result",
                case=case_index,
                dims=instance.dims,
                seed=seed,
                passed=case_verdict(comparisons, modified),
                outputs=[asdict(c) for c in comparisons],
                modified_inputs=modified,
            )
        if len(request["seeds"]) > 1 and len(set(fingerprints.values())) == 1:
            warn("setup() returned the same inputs for every seed: each seed should draw fresh random inputs")
    events.emit("done")


def instance_maker(reference, solution: LoadedSolution, device: str, events: EventLog):
    """(dims, seed) -> ProblemInstance, from ref.py's setup, else the solution's, else solve's signature."""
    from .inputs import build_instance, infer_instance

    if reference.setup is not None:
        events.emit("note", text="inputs from ref.py setup()")
        return lambda dims, seed: build_instance(reference.setup, dims, seed, device)
    if solution.setup is not None:
        events.emit("note", text="inputs from the solution's setup() (ref.py has none)")
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


def one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    request = json.loads(Path(argv[0]).read_text())
    events = EventLog(request["events"])
    try:
        mode = request.get("mode", "correctness")
        if mode == "correctness":
            run_correctness(request, events)
        elif mode == "benchmark":
            from .benchmark import run_benchmark

            run_benchmark(request, events)
        else:
            raise UsageError(f"unknown worker mode {request.get('mode')!r}")
    except KernelOptError as error:
        events.emit("error", **error.to_dict())
        return int(error.exit_code)
    except BaseException as error:  # anything else is a bug or a solution side effect: report it whole
        events.emit(
            "error", kind="internal_error", message=one_line(error), hint=traceback.format_exc()[-2000:], exit_code=3
        )
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
