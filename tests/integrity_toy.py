"""A toy integrity check, defined outside the package: the whole of what a new check takes.

`RepeatCheck` calls the solution again on the inputs of its first case and compares the bits of
every output with the first call's: a result that is not a function of the inputs alone fails.
tests/unit/check/test_integrity.py registers it with one line and runs it through the real correctness
check (parent and child process) on the CPU; its known-wrong solution is
tests/fixtures/integrity_toy/flickers.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from kernel_opt.check.integrity.protocol import CheckSession, IntegrityCheck, RunFacts, When

REPEATS = 3


@dataclass
class RepeatResult:
    calls: int
    differing: list[str] = field(default_factory=list)  # outputs whose bits changed between calls

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> RepeatResult:
        return cls(payload["calls"], list(payload.get("differing") or []))


class RepeatCheck(IntegrityCheck):
    name: ClassVar[str] = "repeat"
    when: ClassVar[When] = When.AFTER_CASES
    record_key: ClassVar[str] = "repeat"
    title: ClassVar[str] = "Repeated calls"

    @classmethod
    def applies(cls, facts: RunFacts) -> bool:
        return facts.all_passed

    def run(self, session: CheckSession) -> RepeatResult:
        import torch

        from kernel_opt.solution.loaded import call_solution

        instance = session.instance(session.cases[0], max(session.seeds) + 7)
        bits = []
        for _ in range(REPEATS):
            call_solution(session.solution, instance.values, instance.dims, instance.outputs)
            session.solution_ran("the solution's call in the repeat check")
            session.solution.deliver_outputs()
            bits.append({name: instance.values[name].clone() for name in instance.outputs})
        differing = [name for name in instance.outputs
                     if any(not torch.equal(first[name].view(torch.int32), later[name].view(torch.int32))
                            for first, later in zip(bits, bits[1:], strict=False))]
        return RepeatResult(REPEATS, differing)

    @classmethod
    def read(cls, payload: dict[str, Any]) -> RepeatResult:
        return RepeatResult.from_dict(payload)

    @classmethod
    def failures(cls, result: RepeatResult, report: Any) -> list[str]:
        return [f"output {name!r} changed between {result.calls} calls on the same inputs" for name in result.differing]

    @classmethod
    def headline(cls, result: RepeatResult, report: Any, total: int, mode: str) -> str | None:
        return None if not result.differing else f"FAIL{mode}: the outputs are not a function of the inputs alone."

    @classmethod
    def section(cls, result: RepeatResult, report: Any) -> str:
        changed = ", ".join(result.differing) or "none"
        return f"{result.calls} calls on the same inputs; outputs that changed: {changed}."
