"""Which integrity checks run, in which order: one line per built-in check, then any registered one.

The order is the order they run in the child (around a case: before_call in this order,
after_call too), the order of their sections in correctness.md and of their sentences under
"Why it failed".

A check that is not built in (a plugin, a test's toy) is added with `register(CheckClass)`.
The child process has a registry of its own: the correctness request names each added check
as "module:Class" (`child_names`), and the child imports it (`register_named`), so its module
must be importable there (installed, or on PYTHONPATH, which the child inherits).
"""

from __future__ import annotations

import importlib

from kernel_opt.check.integrity.input_mutation import InputMutation
from kernel_opt.check.integrity.launches import Launches
from kernel_opt.check.integrity.output_poisoning import OutputPoisoning
from kernel_opt.check.integrity.protocol import IntegrityCheck, When
from kernel_opt.check.integrity.redrawn_weights import RedrawnWeightsCheck
from kernel_opt.check.integrity.rounding_probe import RoundingProbeCheck
from kernel_opt.check.integrity.tampering import Tampering
from kernel_opt.core.errors import UsageError

BUILT_IN: tuple[type[IntegrityCheck], ...] = (
    Tampering,  # nothing the harness times and checks with was replaced, after any of the solution's code
    OutputPoisoning,  # outputs filled with NaN before every call: an element never written fails
    InputMutation,  # inputs compared bit for bit after every call
    Launches,  # one more call, profiled: what it ran on the GPU and on which streams
    RoundingProbeCheck,  # each float32 input rounded: do the outputs follow its low bits as the reference's do
    RedrawnWeightsCheck,  # a KernelBench Model's weights re-drawn: does every output follow every weight
)
_added: list[type[IntegrityCheck]] = []


def checks(when: When | None = None) -> list[type[IntegrityCheck]]:
    """Every check, built-in ones first; only those that run `when`, if given."""
    return [check for check in (*BUILT_IN, *_added) if when is None or check.when is when]


def register(check: type[IntegrityCheck]) -> type[IntegrityCheck]:
    """Add a check after the others; its name must be new (the same class may be registered again)."""
    existing = next((known for known in checks() if known.name == check.name), None)
    if existing is not None and existing is not check:
        raise UsageError(f"an integrity check named {check.name!r} is already registered ({existing.__module__})")
    if existing is None:
        _added.append(check)
    return check


def unregister(name: str) -> None:
    """Remove a check added with register() (a test's toy, when the test ends)."""
    _added[:] = [check for check in _added if check.name != name]


def get(name: str) -> type[IntegrityCheck]:
    check = next((known for known in checks() if known.name == name), None)
    if check is None:
        raise UsageError(f"unknown integrity check {name!r}", hint=f"known: {', '.join(c.name for c in checks())}")
    return check


def child_names() -> tuple[str, ...]:
    """"module:Class" of each added check, for the child request (CorrectnessPart.integrity_checks)."""
    return tuple(f"{check.__module__}:{check.__qualname__}" for check in _added)


def register_named(names: tuple[str, ...]) -> None:
    """In the child: import and register each "module:Class" the request names."""
    for name in names:
        module_name, _, class_name = name.partition(":")
        try:
            check = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError) as error:
            raise UsageError(f"integrity check {name} cannot be imported in the child process: {error}",
                             hint="install it, or put its folder on PYTHONPATH (child processes inherit it)") from error
        register(check)
