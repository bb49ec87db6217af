"""The correctness check's child side: every shape and seed, reference vs solution, and the integrity checks.

The checks themselves live in check/integrity/: the session below calls those that apply
around each case's call (in the registry's order) and, once the cases are done, runs those that
come after them, each reporting its result as an IntegrityEvent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel_opt.check.integrity import registry
from kernel_opt.check.integrity.protocol import CaseCall, IntegrityCheck, RunFacts, When
from kernel_opt.core.errors import EnvironmentFault, KernelOptError, UsageError
from kernel_opt.run.events import (
    CaseResultEvent,
    CaseStartEvent,
    DoneEvent,
    EnvironmentEvent,
    EventLog,
    IntegrityEvent,
    MemoryEvent,
    NoteEvent,
    PhaseEvent,
    PlanEvent,
    ToleranceEvent,
    WarningEvent,
    environment_info,
    one_line,
)
from kernel_opt.run.request import ChildRequest
from kernel_opt.solution.loaded import call_solution, instance_maker, solution_or_fault

SAME_INPUTS_WARNING = "setup() returned the same inputs for every seed: each seed should draw fresh random inputs"


def run_correctness(request: ChildRequest, events: EventLog) -> None:
    """Run every case of the plan (shapes x seeds), then the checks that follow the cases; all as events."""
    import torch

    from kernel_opt.solution.contract import load_reference, set_matmul_precision

    device, part = request.device, request.correctness
    if device == "cuda" and not torch.cuda.is_available():
        raise EnvironmentFault("torch sees no CUDA GPU in the worker process")
    events.emit(EnvironmentEvent(environment_info(device)))
    reference = load_reference(Path(request.reference))
    if device == "cuda":
        events.emit(NoteEvent(set_matmul_precision(reference.allow_tf32)["note"]))
    registry.register_named(part.integrity_checks)
    session = CaseSession(request, reference, events)
    events.emit(PhaseEvent("load_solution"))
    session.load_solution()
    session.plan()
    for case_index, dims in enumerate(session.cases):
        fingerprints = {seed: session.run(case_index, dims, seed) for seed in session.seeds}
        if len(session.seeds) > 1 and len(set(fingerprints.values())) == 1:
            session.warn(SAME_INPUTS_WARNING)
    session.run_checks_after_cases()
    events.emit(DoneEvent())


class CaseSession:
    """One case (a shape and a seed) at a time, the integrity checks around each call and after them all.

    Warnings and tolerances are reported once per run. It is what a check that runs after the
    cases gets (check.integrity.protocol.CheckSession).
    """

    def __init__(self, request: ChildRequest, reference, events: EventLog):
        from kernel_opt.check.tolerance import TolerancePolicy  # imports torch: the worker's business only

        self.request, self.reference, self.events = request, reference, events
        self.device = request.device
        self.policy = TolerancePolicy.for_run(reference, request.correctness.tolerances)
        self.solution: Any = None  # solution.loaded.LoadedSolution, once loaded
        self.make: Callable | None = None  # (dims, seed) -> ProblemInstance
        self.cases: list[dict[str, Any]] = []
        self.largest_inputs: dict[int, int] = {}  # per case, the elements of its largest input tensor
        self.seeds: list[int] = list(request.correctness.seeds)
        self.all_passed = True  # every case so far matched the reference
        self.failed_within_kernelbench = False  # a case failed with only outputs within KernelBench's 1e-2
        self.failed_otherwise = False  # a case failed beyond that (larger errors, NaN, an integrity finding)
        self._warned: set[str] = set()
        self._tolerances_seen: set[str] = set()
        self._where: tuple[int | None, int | None] = (None, None)  # the case and seed being run, for the phases
        self.checks: list[IntegrityCheck] = [check() for check in registry.checks(When.AROUND_CASE)
                                             if check.applies(self.facts())]

    def facts(self) -> RunFacts:
        part = self.request.correctness
        return RunFacts(self.device, part.sanitized, self.policy.explicit, part.tolerances.kernelbench,
                        self.all_passed, self.reference.kind,
                        self.failed_within_kernelbench and not self.failed_otherwise)

    def solution_ran(self, after: str, who: str = "the solution") -> None:
        for check in self.checks:
            check.solution_ran(after, who)

    def load_solution(self) -> None:
        for check in self.checks:
            check.before_load(self.request)
        self.solution = solution_or_fault(self.request)
        self.solution_ran("loading the solution")
        self.make = instance_maker(self.reference, self.solution, self.device, self.events)

    def plan(self) -> None:
        """The cases: the command-line shape and SHAPES (or the request's shapes); one under compute-sanitizer."""
        from kernel_opt.solution.contract import plan_cases, problem_cases

        part, setup = self.request.correctness, self.reference.setup or self.solution.setup
        if part.shapes is not None:  # a sweep's sizes replace SHAPES and any derived shapes
            cases, notes = problem_cases(self.request.cli_dims, part.shapes, setup), []
        else:
            cases, notes = plan_cases(self.reference, self.request.cli_dims, setup)
        for note in notes:
            self.events.emit(NoteEvent(note))
        if part.sanitized:  # under compute-sanitizer (check/sanitizer.py): the smallest case
            from kernel_opt.check.sanitizer import smallest_case, smallest_case_note

            cases = [smallest_case(cases)]
            self.events.emit(NoteEvent(smallest_case_note(cases[0])))
        self.cases = cases
        self.events.emit(PlanEvent(cases=cases, seeds=self.seeds,
                                   has_shapes=bool(self.reference.shapes) or len(cases) > 1))

    def run_checks_after_cases(self) -> None:
        """Each check that follows the cases, if it applies now, its result reported."""
        for check_type in registry.checks(When.AFTER_CASES):
            if check_type.applies(self.facts()):
                check = check_type()
                self.checks.append(check)  # it hears of the solution's calls it makes, as the others do
                self.events.emit(IntegrityEvent(check_type.name, check.run(self).to_dict()))

    def note_once(self, text: str) -> None:
        if text not in self._warned:
            self._warned.add(text)
            self.events.emit(NoteEvent(text))

    def warn(self, text: str) -> None:
        if text not in self._warned:
            self._warned.add(text)
            self.events.emit(WarningEvent(text))

    def run(self, case: int, dims: dict[str, Any], seed: int) -> tuple:
        """Reference, then the solution between the checks' hooks, then the comparison; the inputs' fingerprint."""
        import torch

        from kernel_opt.check.compare import poison_
        from kernel_opt.solution.inputs import fingerprint

        self.events.emit(CaseStartEvent(case=case, dims=dims, seed=seed))
        self.events.emit(PhaseEvent("setup", case=case, dims=dims, seed=seed))
        instance = self.instance(dims, seed)
        if self.request.correctness.sanitized:  # outputs filled before the reference reads them: check/sanitizer.py
            for name in instance.outputs:
                poison_(instance.values[name])
        inputs_fingerprint = fingerprint(instance)
        values, outputs = instance.values, instance.outputs
        self.largest_inputs[case] = max((value.numel() for name, value in values.items()
                                         if isinstance(value, torch.Tensor) and name not in outputs), default=0)
        self.events.emit(PhaseEvent("reference", case=case, dims=dims, seed=seed))
        self._where = (case, seed)
        expectation = self.expect(instance.dims, values, outputs)
        call = CaseCall(case, instance.dims, seed, values, outputs)
        self.events.emit(PhaseEvent("before_call", case=case, dims=dims, seed=seed))
        for check in self.checks:
            check.before_call(call)
        self.events.emit(PhaseEvent("solution", case=case, dims=dims, seed=seed))
        call_solution(self.solution, values, instance.dims, outputs)
        self.solution_ran("the solution's call")
        self.solution.deliver_outputs()
        self.events.emit(PhaseEvent("compare", case=case, dims=dims, seed=seed))
        call.comparisons = [self.compare(name, values[name], expectation) for name in outputs]
        self._where = (None, None)
        findings = self._findings(call)
        problems = [problem for check in self.checks if check.record_key in findings
                    for problem in check.case_problems(findings[check.record_key])]
        passed = all(comparison.passed for comparison in call.comparisons) and not problems
        self.all_passed = self.all_passed and passed
        if not passed:
            within = not problems and all(item.passed or item.precision_downgrade for item in call.comparisons)
            self.failed_within_kernelbench = self.failed_within_kernelbench or within
            self.failed_otherwise = self.failed_otherwise or not within
        self.events.emit(CaseResultEvent(
            case=case, dims=instance.dims, seed=seed, passed=passed,
            outputs=[comparison.to_dict() for comparison in call.comparisons], findings=findings,
        ))
        return inputs_fingerprint

    def _findings(self, call: CaseCall) -> dict[str, Any]:
        """What each check around the call found, under the key it keeps it in the case record."""
        findings = {}
        for check in self.checks:
            finding = check.after_call(call)
            if check.record_key is not None and finding is not None:
                findings[check.record_key] = finding
        return findings

    def instance(self, dims: dict[str, Any], seed: int):
        """The case's inputs, with their warnings; bfloat16 cannot run under the Triton interpreter."""
        import torch

        from kernel_opt.solution.inputs import degenerate_input_warnings

        instance = self.make(dict(dims), seed)
        for text in [*instance.notes, *degenerate_input_warnings(instance, self._redrawn_later(instance.dims))]:
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

    def _redrawn_later(self, dims: dict[str, Any]) -> frozenset[str]:
        """The inputs a check after the cases draws again (IntegrityCheck.draws_again): no blind spot to warn of."""
        facts = self.facts()
        return frozenset().union(*(check.draws_again(facts, self, dims) for check in registry.checks(When.AFTER_CASES)))

    def expect(self, dims: dict[str, Any], values: dict[str, Any], outputs: list[str]):
        """The reference's outputs (and their float64 truth, as the memory plan fits it: check/truth.py); the
        reference's failure is ref.py's fault (exit 2), its running out of memory this machine's (exit 4)."""
        import torch

        from kernel_opt.check.tolerance import expect
        from kernel_opt.run.memory import is_out_of_memory

        row_arguments = self.reference.row_arguments(dims) if self.reference.row_arguments is not None else ()
        try:
            expectation = expect(self.reference.reference, self.policy, dims, values, outputs, row_arguments,
                                 on_truth=lambda: self.events.emit(PhaseEvent("truth", case=self._where[0], dims=dims,
                                                                              seed=self._where[1])))
            if self.device == "cuda":
                torch.cuda.synchronize()
        except KernelOptError:
            raise
        except Exception as error:
            if is_out_of_memory(error):
                raise  # run/entry.py: the harness's allocation, exit 4
            raise UsageError(f"the reference raised {one_line(error)}", kind="reference_error") from error
        self._memory_plan(expectation)
        return expectation

    def _memory_plan(self, expectation) -> None:
        """What the memory plan did, into the record (once each); a truth of a sample of rows is a warning."""
        from kernel_opt.check.chunked import SampledTruth

        if expectation.truth_plan is not None and expectation.truth_plan not in self._warned:
            self._warned.add(expectation.truth_plan)
            self.events.emit(MemoryEvent(step="truth", plan=expectation.truth_plan))
        for name, truth in (expectation.truth or {}).items():
            if isinstance(truth, SampledTruth):
                self.warn(f"output {name!r}: the float64 truth covers only {truth.text()}, because the whole fits "
                          "neither on the GPU nor on the host: the reference-error rule judged those rows, and every "
                          "other row had to lie within twice that rule's element bound of the reference's output")

    def compare(self, name: str, actual, expectation):
        from kernel_opt.check.tolerance import judge

        comparison, rule = judge(name, actual, expectation, self.policy)
        key = f"{name}:{rule.dtype}:{rule.kind}"  # one line per rule an output met (see tolerance_cannot_judge)
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
        if comparison.tolerance_cannot_judge:
            self._weak_tolerance(name, comparison.tolerance_cannot_judge)
        if comparison.zeros_would_pass:
            self.warn(
                f"output {name!r}: the reference values are so small that an all-zero output would pass "
                f"({rule.source if rule.atol is None else f'atol={rule.atol:g}, rtol={rule.rtol:g}'}); "
                "this check cannot tell a kernel that writes zeros from a correct one: scale the inputs or tighten "
                "atol in ref.py"
            )
        return comparison

    def _weak_tolerance(self, name: str, weak: str) -> None:
        """Said once per output: a problem file's or command line's tolerance is a warning, KernelBench's a note."""
        if f"weak tolerance: {name}" in self._warned:
            return
        self._warned.add(f"weak tolerance: {name}")
        text = (f"output {name!r}: {weak}, so that tolerance cannot tell it from a kernel that computes nothing: "
                "it is judged by the reference-error rule instead")
        if self.policy.kernelbench:
            self.note_once(text)
        else:
            self.warn(text + " (scale the inputs, or tighten atol in ref.py)")
