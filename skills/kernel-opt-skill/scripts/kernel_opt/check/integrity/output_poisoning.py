"""Output poisoning: every output buffer is filled with NaN (integers: their maximum) before each call.

An element the solution never writes then stays NaN and fails the comparison, whatever the
tolerance: the check's outcome is in each output's comparison (`nan_unexpected`, and the failure
sentence "still NaN (never written, or NaN computed)"), so it keeps no record of its own.
"""

from __future__ import annotations

from typing import ClassVar

from kernel_opt.check.integrity.protocol import CaseCall, IntegrityCheck, When


class OutputPoisoning(IntegrityCheck):
    name: ClassVar[str] = "output_poisoning"
    when: ClassVar[When] = When.AROUND_CASE

    def before_call(self, call: CaseCall) -> None:
        from kernel_opt.check.compare import poison_

        for name in call.outputs:
            poison_(call.values[name])
