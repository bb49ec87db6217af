"""The launch check: one more real case, profiled, on a stream of the harness's choosing.

After the shapes and seeds, the check picks the caller's stream: a fresh one when the solution
takes the stream it is called on, the legacy default stream when it cannot (a CUDA solve without
a cudaStream_t). One unprofiled call on other fresh inputs warms that stream up (a library's
per-stream set-up, a JIT compile the shapes did not cover) and measures the call's host-side
time, which sizes the fence. Then fresh inputs for the first shape from a new seed, outputs
poisoned, and the call under the profiler (launch_profile.py); where its host side outlasted
the fence, once more on inputs from another seed. Its outputs are compared like any case's, and
its trace is judged by launch_rules.py: no kernel, or work on another stream that is not ordered
with the caller's, fails the check. Every call draws new values, so a result kept from an
earlier call cannot be handed back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kernel_opt.check.integrity.launch_rules import OWN, LaunchCheck, judge_trace, kernel_base_name
from kernel_opt.check.integrity.protocol import CheckSession, IntegrityCheck, RunFacts, When
from kernel_opt.core.errors import KernelOptError
from kernel_opt.core.render import format_number, markdown_cell, markdown_table, render
from kernel_opt.run.events import PhaseEvent, one_line

FRESH_STREAM = "a fresh stream (torch.cuda.Stream()), the one it is called on"
LEGACY_STREAM = ("the legacy default stream: the solution takes no stream, so it can only launch there "
                 "(and must keep to it)")
CPU_NOTE = ("not profiled: the solution ran on the CPU (Triton interpreter), where no GPU kernel is launched; the "
            "kernels it launches and the streams it uses are checked on a GPU")
KERNEL_NAME_SHOWN = 110  # characters of a kernel's name in a table: torch's template names run to hundreds


class Launches(IntegrityCheck):
    """What one more call ran on the GPU and on which streams; correctness.json "launches"."""

    name: ClassVar[str] = "launches"
    when: ClassVar[When] = When.AFTER_CASES
    record_key: ClassVar[str] = "launches"
    title: ClassVar[str] = "What ran on the GPU"

    @classmethod
    def applies(cls, facts: RunFacts) -> bool:
        # Not under compute-sanitizer: CUPTI (the torch profiler) and the tool both instrument the launches,
        # and the full check has made it already.
        return not facts.sanitized

    def run(self, session: CheckSession) -> LaunchCheck:
        return check_launches(session, session.cases[0], max(session.seeds) + 1)

    @classmethod
    def read(cls, payload: dict[str, Any]) -> LaunchCheck:
        return LaunchCheck.from_dict(payload)

    @classmethod
    def failures(cls, result: LaunchCheck, report: Any) -> list[str]:
        return result.failure_sentences()

    @classmethod
    def passed(cls, result: LaunchCheck, report: Any) -> bool:
        return result.passed

    @classmethod
    def headline(cls, result: LaunchCheck, report: Any, total: int, mode: str) -> str | None:
        if result.passed:
            return None
        return f"FAIL: all {total} cases match the reference, but the profiled call failed the launch check."

    @classmethod
    def pass_lines(cls, result: LaunchCheck, report: Any) -> list[str]:
        line = launch_summary_line(result)
        return [line] if line else []

    @classmethod
    def section(cls, result: LaunchCheck, report: Any) -> str:
        return render("launches.md.j2", launches=result, launch_table=launch_table(result))


def launch_check_of(report: Any) -> LaunchCheck | None:
    """A correctness record's launch check; None where none ran (compile-only, errors, records made before it)."""
    launches = report.integrity.get(Launches.record_key) if report is not None else None
    return LaunchCheck.from_dict(launches) if isinstance(launches, dict) else None


def launch_table(check: LaunchCheck) -> str:
    """The profiled call's kernels and copies, one row per name and stream (correctness.md and benchmark.md)."""
    def whose(origin: str) -> str:
        return {OWN: "the solution's own", "copy": "copy", "unknown": "unknown"}.get(origin, f"library ({origin})")

    rows = [[markdown_cell(_shortened(row.name)), row.kind, whose(row.origin),
             f"caller's ({row.stream})" if row.on_caller_stream else f"other ({row.stream})", row.count,
             format_number(row.total_us)] for row in check.work]
    return markdown_table(rows, ["kernel or copy", "kind", "whose", "stream", "runs", "GPU µs"])


def _shortened(name: str) -> str:
    return name if len(name) <= KERNEL_NAME_SHOWN else name[:KERNEL_NAME_SHOWN - 1] + "…"


def launch_summary_line(check: LaunchCheck | None) -> str | None:
    """One console line on what the profiled call ran; None when nothing was profiled."""
    if check is None or not check.profiled:
        return None
    own = sorted({kernel_base_name(row.name) for row in check.work if row.origin == OWN})
    if check.library_only:
        return ("NOTE: no kernel of the solution's own ran: every kernel it launched is library code, so the timed "
                "work is library code")
    if check.own_kernels is None:
        return f"launched: {len(check.work)} kernel(s) and copies (which are its own is unknown for this backend)"
    mine = f" ({', '.join(own)})" if own else ""
    return f"launched: {check.own_kernels} kernel(s) of its own{mine}, {check.library_kernels} library kernel(s)"


def check_launches(runner: CheckSession, dims: dict[str, Any], seed: int) -> LaunchCheck:
    """Run the profiled case (runner is the correctness child's session) and return its record.

    The solution's own faults raise as in any case; a profiler that cannot run here gives a
    record that says so ("profiled": false), never a failure.
    """
    if runner.device != "cuda":
        return LaunchCheck(profiled=False, note=CPU_NOTE)
    import torch

    from kernel_opt.check.compare import inputs_modified
    from kernel_opt.solution.loaded import call_solution

    solution = runner.solution
    runner.events.emit(PhaseEvent("launch_check", dims=dims, seed=seed))
    takes_stream = solution.launcher.takes_caller_stream()
    caller = torch.cuda.Stream() if takes_stream else torch.cuda.default_stream()
    warm_up = runner.instance(dims, seed + 1)
    with torch.cuda.stream(caller):
        call_solution(solution, warm_up.values, warm_up.dims, warm_up.outputs)
    runner.solution_ran("the solution's warm-up call on the caller's stream")
    warm_host_s = solution.last_call_host_s
    solution.forget_call()
    del warm_up  # its inputs and outputs: one instance at a time
    caller_name = FRESH_STREAM if takes_stream else LEGACY_STREAM
    try:
        case = _profile_call(runner, lambda case_seed: _prepared(runner, dims, case_seed), (seed, seed + 2), caller,
                             warm_host_s)
    except KernelOptError:
        raise
    except Exception as error:  # the profiler itself (CUPTI busy or missing): say so, judge nothing
        runner.solution_ran("the solution's profiled call")
        return LaunchCheck(profiled=False, dims=dims, seed=seed,
                           note=f"not profiled: the torch profiler failed here ({one_line(error)})")
    runner.solution_ran("the solution's profiled call")
    solution.deliver_outputs()  # a ModelNew's returned outputs into the checked buffers, after the profile
    check = _judged(case, solution.launcher.own_kernel_names(), caller_name)
    values, outputs = case.instance.values, case.instance.outputs
    comparisons = [runner.compare(name, values[name], case.expectation) for name in outputs]
    check.outputs = [comparison.to_dict() for comparison in comparisons]
    check.values_passed = all(comparison.passed for comparison in comparisons)
    check.modified_inputs = inputs_modified(case.pristine, values)
    return check


@dataclass
class _ProfiledCase:
    """One profiled call's inputs (kept as they were, for the input check), its expectation and what it ran."""

    instance: Any
    pristine: dict[str, Any]
    expectation: Any
    seed: int
    activities: list = field(default_factory=list)
    call_host_s: float = 0.0


def _prepared(runner: CheckSession, dims: dict[str, Any], seed: int) -> _ProfiledCase:
    """Fresh inputs from `seed`, copies of them as they were, and the reference's outputs for them."""
    import torch

    from kernel_opt.check.truth import kept_copies

    instance = runner.instance(dims, seed)
    values, outputs = instance.values, instance.outputs
    pristine = kept_copies({name: value for name, value in values.items()  # on the host where the GPU lacks room
                            if isinstance(value, torch.Tensor) and name not in outputs})
    return _ProfiledCase(instance, pristine, runner.expect(instance.dims, values, outputs), seed)


def _judged(case: _ProfiledCase, own_kernel_names: Any, caller_name: str) -> LaunchCheck:
    """The profiled call's trace judged by the launch rules, and the fence's reach noted."""
    verdict = judge_trace(case.activities, own_kernel_names)
    check = LaunchCheck(profiled=True, dims=case.instance.dims, seed=case.seed, caller=caller_name)
    if verdict.unreadable is not None:
        check.profiled, check.note = False, f"not profiled: {verdict.unreadable}"
    check.caller_stream, check.fence_us, check.work = verdict.caller_stream, verdict.fence_us, verdict.work
    check.call_host_us = round(case.call_host_s * 1e6, 1)
    check.own_kernels, check.library_kernels, check.problems = (verdict.own_kernels, verdict.library_kernels,
                                                                verdict.problems)
    if check.profiled and check.fence_us is not None and check.fence_us < check.call_host_us:
        check.note = (f"the fence ({check.fence_us:.0f} us) ended before the call returned ({check.call_host_us:.0f} "
                      "us of host time): work launched on another stream late in the call may have escaped the "
                      "first stream rule")
    return check


def _profile_call(runner: CheckSession, prepare: Callable[[int], _ProfiledCase], seeds: tuple[int, int], caller,
                  warm_host_s: float) -> _ProfiledCase:
    """A case's call in its fence, under the profiler. Where its host side outlasted the fence sized from the
    warm-up (a loaded host, the profiler's first launches, a call that waits on its stream), once more, fenced for
    the time it took, on fresh inputs from the second seed: a solution that keys a kept result on its inputs
    must not find the first try's there."""
    from kernel_opt.check.compare import poison_
    from kernel_opt.check.integrity.launch_profile import outlasted_fence, profile_fenced_call
    from kernel_opt.solution.loaded import call_solution

    solution = runner.solution

    def profiled(case: _ProfiledCase, host_s: float) -> _ProfiledCase:
        instance = case.instance
        for name in instance.outputs:
            poison_(instance.values[name])
        case.activities, case.call_host_s = profile_fenced_call(
            lambda marker: call_solution(solution, instance.values, instance.dims, instance.outputs,
                                         after_return=marker), caller, host_s)
        return case

    case = profiled(prepare(seeds[0]), warm_host_s)
    if not outlasted_fence(case.call_host_s, warm_host_s):
        return case
    runner.solution_ran("the solution's profiled call")
    solution.forget_call()
    host_s, case = case.call_host_s, None  # the first try's inputs freed before the second's are drawn
    return profiled(prepare(seeds[1]), host_s)
