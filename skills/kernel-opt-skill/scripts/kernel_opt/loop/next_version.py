"""`workspace.py next`: the next version, a copy of the best so far with a hypothesis template, or why not yet."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.records import now_iso
from kernel_opt.loop.records import VERSION_FILE, VersionRecord
from kernel_opt.loop.versions import VersionState
from kernel_opt.loop.workspace import HYPOTHESIS_FILE, RunRefusal, RunStatus, run_status

HYPOTHESIS_TEMPLATE_FIELDS = (
    # The <...> slots are what hypothesis_check rejects as "still holds a template slot", so a
    # template left unfilled can never pass for a hypothesis.
    "Hypothesis: <the one change, and the effect it should have>",
    "Rationale: <evidence from {parent}/ncu_summary.md and {parent}/benchmark.md: metric names and values>",
    "Expected: <which metric moves, which way, roughly how much; and the time against {parent}>",
)


@dataclass
class NextVersion:
    number: int
    parent: VersionState
    solution: Path
    hypothesis: Path

    @property
    def name(self) -> str:
        return f"v{self.number}"


def check_can_create_next(status: RunStatus, ignore_target: bool = False) -> VersionState:
    """The version the next one starts from, or RunRefusal with the sentence that says why not."""
    newest = status.newest
    if newest is None or status.best is None:
        raise UsageError(f"{status.out} has no v0", hint="start the run with `workspace.py init`")
    if status.newest_pending:
        what = {
            None: "has not been evaluated yet",
            "needs_gpu": "has not been timed yet (its evaluation ran on a machine without a GPU)",
            "invalid_hypothesis": "was stopped at its hypothesis check: nothing was timed",
            "error": "ended with a usage error: nothing was concluded",
        }.get(newest.evaluation_state, f"is in state {newest.evaluation_state}")
        raise RunRefusal(f"{newest.name} {what}; evaluate it before starting the next version",
                         hint=f"run `workspace.py evaluate {status.out} {newest.name}`")
    v0 = next((v for v in status.versions if v.number == 0), None)
    if v0 is None:
        raise UsageError(f"{status.out} has no v0 folder", hint="a run starts at v0: `workspace.py init`")
    if not v0.measured and not status.best_is_measured:
        raise RunRefusal("v0 has not passed its correctness check and benchmark: the loop starts from a correct, "
                         "timed v0; fix v0 in place and evaluate it again",
                         hint=f"read {v0.directory}/correctness.md, "
                              f"then `workspace.py evaluate {status.out} v0 --force`")
    if status.budget.spent:
        raise RunRefusal(f"budget spent: all {status.budget.iterations_total} iteration(s) of this run are used "
                         f"(fixed at init); finish with the final report",
                         hint=f"run `final_report.py {status.out}`")
    if status.stop_reason == "target_reached" and not ignore_target:
        left = status.budget.iterations_left
        raise RunRefusal(f"target reached: {status.best.name} runs at {status.best.percent_of_ceiling:.1f}% of the "
                         f"roofline ceiling (target {status.run.target_percent:g}%), with {left} of "
                         f"{status.budget.iterations_total} iteration(s) unused; finish with the final report, and "
                         f"tell the user the run stopped at the roof with {left} iteration(s) left",
                         hint=f"going on is the user's call, not yours: with their say-so, `workspace.py next "
                              f"{status.out} --ignore-target` spends the rest of the budget (the final report marks "
                              "those versions)")
    return status.best


def create_next_version(out: Path, ignore_target: bool = False) -> NextVersion:
    """Create v<n+1>/ as a copy of the best version so far, with a hypothesis template.

    The copy starts from the best, never from the newest: a failed version is not patched
    in place but abandoned (reference/hypothesis.md, the one-variable rule).
    """
    status = run_status(out)
    parent = check_can_create_next(status, ignore_target)
    number = status.newest.number + 1
    solution = status.run.solution_path(out, number)
    solution.parent.mkdir(parents=True, exist_ok=False)  # a concurrent `next` fails here, not later
    shutil.copyfile(parent.solution, solution)
    write_json_atomic(solution.parent / VERSION_FILE, VersionRecord(
        f"v{number}", parent.name, copied_from=parent.solution, created_at=now_iso(), parent_median_us=parent.median_us,
        # Past the roofline target only by the agent's choice (--ignore-target): the report says so.
        continued_past_target=bool(status.stop_reason == "target_reached" and ignore_target),
    ).to_dict())
    hypothesis = solution.parent / HYPOTHESIS_FILE
    write_text_atomic(hypothesis, hypothesis_template(parent, number, solution.name))
    return NextVersion(number, parent, solution, hypothesis)


def hypothesis_template(parent: VersionState, number: int, solution_name: str) -> str:
    """The template: comment lines with the parent's evidence, then the three slots to fill."""
    facts = []
    if parent.median_us:
        facts.append(f"{parent.median_us:.2f} us")
    if parent.bottleneck:
        facts.append(parent.bottleneck + (f" ({parent.memory_limiter})" if parent.memory_limiter else ""))
    if parent.top_stall:
        facts.append(f"top stall {parent.top_stall}")
    evidence = f" ({'; '.join(facts)})" if facts else ""
    lines = [
        f"# v{number} starts as a copy of {parent.name}, the best version so far{evidence}.",
        f"# Replace each <...> slot, then make exactly this one change in {solution_name}.",
        "# Format and the one-change rule: reference/hypothesis.md. These # lines may stay.",
        *(line.format(parent=parent.name) for line in HYPOTHESIS_TEMPLATE_FIELDS),
    ]
    return "\n".join(lines) + "\n"
