"""Input mutation: every input tensor is compared bit for bit (NaN equal to NaN) before and after each call.

A solution that writes into its inputs fails the case: the harness hands the same inputs to the
reference and to later calls, so a changed input corrupts what it is judged against. Its finding
is the case record's `modified_inputs`: the names of the inputs that changed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kernel_opt.check.integrity.protocol import CaseCall, IntegrityCheck, When


class InputMutation(IntegrityCheck):
    name: ClassVar[str] = "input_mutation"
    when: ClassVar[When] = When.AROUND_CASE
    record_key: ClassVar[str] = "modified_inputs"

    def __init__(self) -> None:
        self._pristine: dict[str, Any] = {}

    def before_call(self, call: CaseCall) -> None:
        import torch

        from kernel_opt.check.truth import kept_copies  # on the host where the GPU needs the room for the call

        self._pristine = kept_copies({name: value for name, value in call.values.items()
                                      if isinstance(value, torch.Tensor) and name not in call.outputs})

    def after_call(self, call: CaseCall) -> list[str]:
        from kernel_opt.check.compare import inputs_modified

        modified, self._pristine = inputs_modified(self._pristine, call.values), {}
        return modified

    @classmethod
    def case_problems(cls, finding: Any) -> list[tuple[str, str]]:
        return [(f"input {name!r}", "was modified by the solution") for name in finding or []]
