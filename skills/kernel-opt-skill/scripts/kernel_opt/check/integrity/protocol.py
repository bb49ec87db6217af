"""The protocol every integrity check follows (the contract is written in check/integrity/__init__.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Protocol


class When(str, Enum):
    """When a check runs in the correctness child."""

    AROUND_CASE = "around each case's call"
    AFTER_CASES = "after the cases"


@dataclass(frozen=True)
class RunFacts:
    """What a check may ask to say whether it applies to this run; asked when the check is due."""

    device: str  # "cuda" or "cpu" (the Triton interpreter)
    sanitized: bool  # one case under compute-sanitizer (check/sanitizer.py)
    explicit_tolerances: bool  # ref.py or the command line set atol/rtol: they say which precision is allowed
    kernelbench_tolerances: bool  # --kernelbench-tolerances
    all_passed: bool = True  # every case so far matched the reference (after the cases: every case)
    reference_kind: str = "ref.py"  # or "kernelbench": a problem file in KernelBench's format (solution/contract.py)
    # every case that failed did so only within KernelBench's 1e-2 of the reference (check/tolerance.py's
    # precision_downgrade flag): lower-precision arithmetic or a small wrong term, which the rounding probe tells apart
    suspected_downgrade: bool = False


@dataclass
class CaseCall:
    """One case's call of the solution, as the checks around it see it."""

    case: int
    dims: dict[str, Any]  # the instance's sizes
    seed: int
    values: dict[str, Any]  # every argument the solution receives, inputs and output buffers
    outputs: list[str]  # the output buffers' names
    comparisons: list[Any] = field(default_factory=list)  # check.records.OutputComparison per output, after the call


class CheckSession(Protocol):
    """What a check that runs after the cases gets from the correctness child (check/child.py)."""

    device: str
    reference: Any  # solution.contract.Reference
    solution: Any  # solution.loaded.LoadedSolution
    events: Any  # run.events.EventLog
    policy: Any  # check.tolerance.TolerancePolicy
    cases: list[dict[str, Any]]  # every planned case's dims, the command line's first
    largest_inputs: dict[int, int]  # per case run, the elements of its largest input tensor
    seeds: list[int]

    def instance(self, dims: dict[str, Any], seed: int) -> Any:
        """Fresh inputs of one shape (solution.contract.ProblemInstance), with their warnings reported."""

    def expect(self, dims: dict[str, Any], values: dict[str, Any], outputs: list[str]) -> Any:
        """The reference's outputs for these values (check.tolerance.Expectation)."""

    def compare(self, name: str, actual: Any, expectation: Any) -> Any:
        """One output judged as any case's is (check.records.OutputComparison), its tolerance reported once."""

    def solution_ran(self, after: str, who: str = "the solution") -> None:
        """Tell every check that the solution's code just ran (the tampering check verifies nothing was replaced)."""


class IntegrityCheck:
    """One integrity check: a subclass names itself, says when it runs, and overrides the hooks it needs.

    The registry (check/integrity/registry.py) lists the classes. In the child process an
    instance is made per run for each check that applies; in the parent the class methods read
    its result back from the record.
    """

    name: ClassVar[str]  # the registry's name; IntegrityEvent's "check"
    when: ClassVar[When]
    # Where its result lives: AFTER_CASES, the correctness record's key for its result record;
    # AROUND_CASE, the case record's key for its finding in that case. None: it keeps no record
    # (its outcome is an error that ends the run, or shows in the comparison itself).
    record_key: ClassVar[str | None] = None
    title: ClassVar[str | None] = None  # the heading of its section in correctness.md; None: no section

    # --- in the child process ----------------------------------------------------------------------

    @classmethod
    def applies(cls, facts: RunFacts) -> bool:
        """Whether it runs in this run (AROUND_CASE: asked before the first case; AFTER_CASES: after the last)."""
        return True

    @classmethod
    def draws_again(cls, facts: RunFacts, session: CheckSession, dims: dict[str, Any]) -> frozenset[str]:
        """AFTER_CASES: the inputs of a case at `dims` it will draw again after the cases, where it may run (asked
        as the cases' inputs are made): a constant value in them is no blind spot, so none is warned of."""
        return frozenset()

    def before_load(self, request: Any) -> None:
        """Before the solution is loaded (`request` is run.request.ChildRequest)."""

    def solution_ran(self, after: str, who: str) -> None:
        """After any code of the solution ran: its loading, every call (the cases' and other checks'); may raise."""

    def before_call(self, call: CaseCall) -> None:
        """AROUND_CASE: a case's reference has run; the solution is called next."""

    def after_call(self, call: CaseCall) -> Any:
        """AROUND_CASE: the solution was called and its outputs compared; the case's finding (JSON), or None."""
        return None

    def run(self, session: CheckSession) -> Any:
        """AFTER_CASES: run the check; its result record (with to_dict())."""
        raise NotImplementedError

    # --- in the parent, from the record --------------------------------------------------------------

    @classmethod
    def case_problems(cls, finding: Any) -> list[tuple[str, str]]:
        """AROUND_CASE: (subject, what is wrong) per problem its finding shows in one case; [] passes the case."""
        return []

    @classmethod
    def read(cls, payload: dict[str, Any]) -> Any:
        """AFTER_CASES: its result record from the correctness record's section."""
        return payload

    @classmethod
    def failures(cls, result: Any, report: Any) -> list[str]:
        """Why its result fails the correctness verdict, one sentence each; [] when it does not."""
        return []

    @classmethod
    def passed(cls, result: Any, report: Any) -> bool:
        """Whether its result lets the correctness verdict pass."""
        return not cls.failures(result, report)

    @classmethod
    def headline(cls, result: Any, report: Any, total: int, mode: str) -> str | None:
        """The console's first line when every case matched but this check failed the run; None: the generic one."""
        return None

    @classmethod
    def pass_lines(cls, result: Any, report: Any) -> list[str]:
        """Lines the console adds under a PASS."""
        return []

    @classmethod
    def section(cls, result: Any, report: Any) -> str:
        """The Markdown under its title in correctness.md (formatting only)."""
        return ""
