"""The correctness check's child side: every shape and seed, reference vs solution."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import EnvironmentFault, KernelOptError, UsageError
from kernel_opt.run.events import (
    CaseResultEvent,
    CaseStartEvent,
    DoneEvent,
    EnvironmentEvent,
    EventLog,
    LaunchCheckEvent,
    NoteEvent,
    PhaseEvent,
    PlanEvent,
    RoundingProbeEvent,
    ToleranceEvent,
    WarningEvent,
    environment_info,
    one_line,
)
from kernel_opt.run.request import ChildRequest
from kernel_opt.run.tampering import PrimitiveGuard
from kernel_opt.solution.loaded import (
    LoadedSolution,
    call_solution,
    instance_maker,
    runtime_modules,
    solution_or_fault,
)

SAME_INPUTS_WARNING = "setup() returned the same inputs for every seed: each seed should draw fresh random inputs"


def run_correctness(request: ChildRequest, events: EventLog) -> None:
    """Run every case of the plan (shapes x seeds), reporting each through the event log."""
    import torch

    from kernel_opt.solution.contract import load_reference, plan_cases, problem_cases, set_matmul_precision

    device, part = request.device, request.correctness
    if device == "cuda" and not torch.cuda.is_available():
        raise EnvironmentFault("torch sees no CUDA GPU in the worker process")
    events.emit(EnvironmentEvent(environment_info(device)))
    reference = load_reference(Path(request.reference))
    if device == "cuda":
        events.emit(NoteEvent(set_matmul_precision(reference.allow_tf32)["note"]))
    events.emit(PhaseEvent("load_solution"))
    guard = PrimitiveGuard(runtime_modules(request))
    solution = solution_or_fault(request)
    guard.verify("loading the solution")
    make = instance_maker(reference, solution, device, events)
    if part.shapes is not None:  # a sweep's sizes replace SHAPES and any derived shapes
        cases, notes = problem_cases(request.cli_dims, part.shapes, reference.setup or solution.setup), []
    else:
        cases, notes = plan_cases(reference, request.cli_dims, reference.setup or solution.setup)
    for note in notes:
        events.emit(NoteEvent(note))
    if part.sanitized:  # under compute-sanitizer (check/sanitizer.py): the smallest case
        from kernel_opt.check.sanitizer import smallest_case, smallest_case_note

        cases = [smallest_case(cases)]
        events.emit(NoteEvent(smallest_case_note(cases[0])))
    events.emit(PlanEvent(cases=cases, seeds=part.seeds, has_shapes=bool(reference.shapes) or len(cases) > 1))
    runner = _CaseRunner(request, reference, solution, make, events, guard)
    for case_index, dims in enumerate(cases):
        fingerprints = {seed: runner.run(case_index, dims, seed) for seed in part.seeds}
        if len(part.seeds) > 1 and len(set(fingerprints.values())) == 1:
            runner.warn(SAME_INPUTS_WARNING)
    # Neither check under compute-sanitizer: CUPTI (the torch profiler) and the tool both instrument the
    # launches, and the full check has made it already; the rounding probe is a question of values.
    if not part.sanitized:
        from kernel_opt.check.launch_check import check_launches

        events.emit(LaunchCheckEvent(check_launches(runner, cases[0], max(part.seeds) + 1).to_dict()))
    if not part.sanitized and runner.all_passed and not runner.policy.explicit:
        from kernel_opt.check.rounding_probe import probe_rounding

        events.emit(RoundingProbeEvent(probe_rounding(runner, cases[0], max(part.seeds) + 3).to_dict()))
    events.emit(DoneEvent())


class _CaseRunner:
    """One case (a shape and a seed) at a time; warnings and tolerances are reported once per run."""

    def __init__(self, request: ChildRequest, reference, solution: LoadedSolution, make: Callable, events: EventLog,
                 guard: PrimitiveGuard):
        self.request, self.reference, self.solution, self.make, self.events = request, reference, solution, make, events
        self.guard = guard
        self.device = request.device
        self._warned: set[str] = set()
        self.all_passed = True  # every case so far matched the reference (the rounding probe runs only then)
        self._tolerances_seen: set[str] = set()
        from kernel_opt.check.tolerance import TolerancePolicy  # imports torch: the worker's business only

        self.policy = TolerancePolicy.for_run(reference, request.correctness.tolerances)

    def note_once(self, text: str) -> None:
        if text not in self._warned:
            self._warned.add(text)
            self.events.emit(NoteEvent(text))

    def warn(self, text: str) -> None:
        if text not in self._warned:
            self._warned.add(text)
            self.events.emit(WarningEvent(text))

    def run(self, case: int, dims: dict[str, Any], seed: int) -> tuple:
        """Reference, then the solution on poisoned outputs, then the comparison; returns the inputs' fingerprint."""
        import torch

        from kernel_opt.check.compare import case_verdict, inputs_modified, poison_
        from kernel_opt.solution.inputs import fingerprint

        self.events.emit(CaseStartEvent(case=case, dims=dims, seed=seed))
        self.events.emit(PhaseEvent("setup", case=case, dims=dims, seed=seed))
        instance = self.instance(dims, seed)
        if self.request.correctness.sanitized:  # outputs filled before the reference reads them: check/sanitizer.py
            for name in instance.outputs:
                poison_(instance.values[name])
        inputs_fingerprint = fingerprint(instance)
        values, outputs = instance.values, instance.outputs
        pristine = {name: value.clone() for name, value in values.items()
                    if isinstance(value, torch.Tensor) and name not in outputs}
        self.events.emit(PhaseEvent("reference", case=case, dims=dims, seed=seed))
        expectation = self.expect(instance.dims, values, outputs)
        for name in outputs:
            poison_(values[name])
        self.events.emit(PhaseEvent("solution", case=case, dims=dims, seed=seed))
        call_solution(self.solution, values, instance.dims, outputs)
        self.guard.verify("the solution's call")
        self.solution.deliver_outputs()
        self.events.emit(PhaseEvent("compare", case=case, dims=dims, seed=seed))
        comparisons = [self.compare(name, values[name], expectation) for name in outputs]
        modified = inputs_modified(pristine, values)
        passed = case_verdict(comparisons, modified)
        self.all_passed = self.all_passed and passed
        self.events.emit(CaseResultEvent(
            case=case, dims=instance.dims, seed=seed, passed=passed,
            outputs=[comparison.to_dict() for comparison in comparisons], modified_inputs=modified,
        ))
        return inputs_fingerprint

    def instance(self, dims: dict[str, Any], seed: int):
        """The case's inputs, with their warnings; bfloat16 cannot run under the Triton interpreter."""
        import torch

        from kernel_opt.solution.inputs import degenerate_input_warnings

        instance = self.make(dict(dims), seed)
        for text in [*instance.notes, *degenerate_input_warnings(instance)]:
            self.warn(text)
        if self.device == "cpu" and any(
            isinstance(v, torch.Tensor) and v.dtype == torch.bfloat16 for v in instance.values.values()
        ):
            raise EnvironmentFault(
                "the Triton interpreter (TRITON_INTERPRET=1, used on machines without a GPU) does not support "
                "bfloat16, so this problem can only be checked on a GPU",
                kind="interpreter_bf16",
            )
        return instance

    def expect(self, dims: dict[str, Any], values: dict[str, Any], outputs: list[str]):
        """The reference's outputs (and their float64 truth); the reference's failure is ref.py's fault (exit 2)."""
        import torch

        from kernel_opt.check.tolerance import expect

        try:
            expectation = expect(self.reference.reference, self.policy, dims, values, outputs)
            if self.device == "cuda":
                torch.cuda.synchronize()
        except KernelOptError:
            raise
        except Exception as error:
            raise UsageError(f"the reference raised {one_line(error)}", kind="reference_error") from error
        return expectation

    def compare(self, name: str, actual, expectation):
        from kernel_opt.check.tolerance import judge

        comparison, rule = judge(name, actual, expectation, self.policy)
        key = f"{name}:{rule.dtype}"
        if key not in self._tolerances_seen:
            self._tolerances_seen.add(key)
            self.events.emit(ToleranceEvent(output=name, dtype=rule.dtype, atol=rule.atol, rtol=rule.rtol,
                                            source=rule.source, rule=rule.kind, multiple=rule.multiple,
                                            floor=rule.floor))
        if expectation.truth_missing is not None:
            self.note_once(f"output {name!r}: {rule.source}")
        if comparison.reference_error == 0.0 and comparison.numel > 1:
            self.note_once(f"output {name!r}: the reference's float64 run gave exactly its own result, so the "
                           "allowed error is the dtype floor: the operation is exact, or the reference does not "
                           "compute in float64 (it casts its inputs, or allocates float32 buffers)")
        if comparison.zeros_would_pass:
            self.warn(
                f"output {name!r}: the reference values are so small that an all-zero output would pass "
                f"({rule.source if rule.atol is None else f'atol={rule.atol:g}, rtol={rule.rtol:g}'}); "
                "this check cannot tell a kernel that writes zeros from a correct one: scale the inputs or tighten "
                "atol in ref.py"
            )
        return comparison
