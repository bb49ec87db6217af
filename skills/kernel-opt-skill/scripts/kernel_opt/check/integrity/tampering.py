"""The tampering check: nothing the harness times and checks with was replaced by the solution's code.

The guard itself (run/tampering.py: what is snapshotted and compared) is shared with the
benchmark's child; this check is how the correctness child uses it: the snapshot before the
solution loads, the comparison after any of the solution's code ran (its loading, every call,
the other checks' calls). A change raises SolutionError (exit 3, kind `tampering`), which ends
the run: its outcome is the record's error, so it keeps no record of its own.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kernel_opt.check.integrity.protocol import IntegrityCheck, When
from kernel_opt.run.tampering import PrimitiveGuard


class Tampering(IntegrityCheck):
    name: ClassVar[str] = "tampering"
    when: ClassVar[When] = When.AROUND_CASE

    def __init__(self) -> None:
        self.guard: PrimitiveGuard | None = None

    def before_load(self, request: Any) -> None:
        from kernel_opt.solution.loaded import runtime_modules

        self.guard = PrimitiveGuard(runtime_modules(request))

    def solution_ran(self, after: str, who: str) -> None:
        if self.guard is not None:
            self.guard.verify(after, who=who)
