"""The correctness check's child side: every shape and seed, reference vs solution."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import EnvironmentFault, KernelOptError, UsageError
from kernel_opt.run.events import EventLog, environment_info, one_line
from kernel_opt.solution.loaded import call_solution, instance_maker, solution_or_fault


def run_correctness(request: dict[str, Any], events: EventLog) -> None:
    import torch

    from kernel_opt.check.compare import (
        case_verdict,
        compare_tensors,
        inputs_modified,
        poison_,
        resolve_tolerance,
        run_reference,
    )
    from kernel_opt.solution.contract import load_reference
    from kernel_opt.solution.inputs import degenerate_input_warnings, fingerprint

    device = request["device"]
    if device == "cuda" and not torch.cuda.is_available():
        raise EnvironmentFault("torch sees no CUDA GPU in the worker process")
    events.emit("environment", info=environment_info(device))
    reference = load_reference(Path(request["reference"]))
    if device == "cuda":
        from kernel_opt.solution.contract import set_matmul_precision

        events.emit("note", text=set_matmul_precision(reference.allow_tf32)["note"])
    events.emit("phase", phase="load_solution")
    solution = solution_or_fault(request)

    make = instance_maker(reference, solution, device, events)

    from kernel_opt.solution.contract import problem_cases

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
