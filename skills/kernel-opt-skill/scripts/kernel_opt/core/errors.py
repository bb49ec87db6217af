"""Exit codes and the exceptions that carry them.

Every CLI maps its outcome to one of these codes, so an agent can branch on the code
alone: was the check failed, was the command wrong, is the solution broken, or is this
machine unable to run the step?
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    CHECK_FAILED = 1  # the step ran and its verdict is negative (e.g. wrong results)
    USAGE = 2  # bad arguments or bad input files (ref.py without reference(), ...)
    SOLUTION_FAULT = 3  # the solution is at fault: compile error, crash, hang, bad signature
    ENVIRONMENT_FAULT = 4  # this machine cannot run the step: no GPU, no nvcc/ncu, versions


def failure_verdict(exit_code: int) -> str:
    """How a record names a step that failed with `exit_code`: usage_error, environment_error or solution_error."""
    return {ExitCode.USAGE: "usage_error", ExitCode.ENVIRONMENT_FAULT: "environment_error"}.get(exit_code,
                                                                                                "solution_error")


class KernelOptError(Exception):
    """An error with a message for people, an optional fix, and the exit code it maps to."""

    exit_code: ExitCode = ExitCode.USAGE
    kind: str = "error"

    def __init__(self, message: str, *, hint: str | None = None, kind: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if kind is not None:
            self.kind = kind

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "message": self.message,
            "hint": self.hint,
            "exit_code": int(self.exit_code),
        }


class UsageError(KernelOptError):
    exit_code = ExitCode.USAGE
    kind = "usage"


class SolutionError(KernelOptError):
    """The solution under test is broken; `kind` says how (compile_error, crash, timeout, ...)."""

    exit_code = ExitCode.SOLUTION_FAULT
    kind = "solution_error"


class EnvironmentFault(KernelOptError):
    exit_code = ExitCode.ENVIRONMENT_FAULT
    kind = "environment"
