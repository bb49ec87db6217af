"""Why the outputs of timed calls were wrong: the cause the benchmark's checks point at.

The benchmark checks the outputs of its timed calls in up to four ways (measure/benchmark_child.py),
and which of them failed tells the causes apart:
- "solution": the rotated timing, where every call gets fresh values in one of several buffer sets;
- "solution (kernel time)": a CUDA graph replaying calls on buffer set 0 with the same values;
- "solution (interleaved)" and "against": this version and the other one, timed alternately.
The correctness gate's launch check (check/integrity/launches.py) adds what the call ran on which stream.
Pure: the sentences come from the record's fields, tested in tests/unit/measure/test_timed_outputs.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kernel_opt.check.integrity.launch_rules import LaunchCheck, kernel_base_name

ROTATED, GRAPH, INTERLEAVED, AGAINST = "solution", "solution (kernel time)", "solution (interleaved)", "against"


def wrong_timed_outputs_text(checks: Mapping[str, Any], launches: LaunchCheck | None) -> str:
    """One sentence naming which timed outputs were wrong and the cause that pattern points at.

    `checks`: the record's post_timing_check, measure.records.TimedOutputCheck by kind.
    """
    failed = [name for name, check in checks.items() if not check.passed]
    causes = _causes(set(failed), checks)
    side = _other_streams(launches)
    if side:
        causes.append(f"it also runs work on other streams ({side}): the timer records its events on the caller's "
                      "stream, so work that is not joined to it runs outside the timed interval and may not be "
                      "finished when its outputs are read")
    if launches is not None and launches.library_only:
        causes.append("every kernel it launched in the correctness check was library code")
    return (f"the outputs of the timed calls are wrong ({', '.join(failed)}): " + "; ".join(causes)
            + "; its timing is not valid")


def _causes(failed: set[str], checks: Mapping[str, Any]) -> list[str]:
    """The causes the pattern of failed checks points at."""
    causes = []
    if ROTATED in failed and GRAPH in checks and GRAPH not in failed:
        causes.append("they were wrong only when the inputs changed between calls (fresh values rotated through "
                      "several buffer sets) and right when the same buffers were replayed: the solution reuses "
                      "results from earlier calls (cached by pointer, tensor version or contents)")
    elif ROTATED in failed:
        causes.append("they were wrong on repeated calls, replayed on the same buffers too: the solution returns "
                      "results kept from earlier calls (cached, or computed only on its first calls and skipped "
                      "after a warm-up)")
    if GRAPH in failed and ROTATED not in failed:
        causes.append("they were right when called normally but wrong when replayed from a CUDA graph: the call does "
                      "work on the host (computing, copying from host memory, or deciding from state kept between "
                      "calls) that a graph replay does not repeat")
    if INTERLEAVED in failed and ROTATED not in failed:
        causes.append("they were wrong only when timed alternately with the other version: the two share state "
                      "(a cache or a buffer kept between calls)")
    if AGAINST in failed:
        causes.append("the other version's own outputs were wrong after timing: the comparison does not count")
    return causes or ["the check after timing found them wrong"]


def _other_streams(launches: LaunchCheck | None) -> str:
    """The work the correctness check's profiled call ran on streams other than the caller's, in words."""
    if launches is None:
        return ""
    rows = [row for row in launches.work if not row.on_caller_stream]
    return ", ".join(f"{kernel_base_name(row.name)} on stream {row.stream}" for row in rows)
