"""Why a PyTorch baseline still beats the run's best version, computed from one benchmark record and the profile.

The final report's "Why it stops short" section: how much faster the baseline ran, where both
stand against the same roof, what was tried, what the best version's profile says is left and,
where a math pipe is at its roof, how much any schedule of the same work could still gain. Only
where the baseline is faster beyond the noise (measure/baseline_standing.py): a baseline whose
median is lower by less than the noise is level with the best version, and nothing stops short.
"""

from __future__ import annotations

from typing import Any

from kernel_opt.measure.baseline_standing import BaselineStanding
from kernel_opt.measure.records import BenchmarkReport
from kernel_opt.measure.roofline_records import CopySameBytes, RoofCeilings
from kernel_opt.profile.records import NcuSummary

TAKING_TURNS_PCT = 90.0  # two math pipes busy this much together, neither at its roof, take turns

AT_THE_ROOF = 0.97  # share of the memory roof (a same-size copy's bandwidth) read as "at the roof"
# A baseline this far past the same-size copy is not a copy's noise: the copy is not that traffic's limit (an H200
# matvec, all reads, ran at 104.5% of it; a half-read, half-write RMSNorm's torch.compile at 100.8%).
PAST_THE_COPY = 1.02


def behind_pytorch(final: dict[str, Any], tried: list[str], remaining: dict[str, Any]) -> list[str]:
    """Where a PyTorch baseline beat the best version in the final comparison: why, from the records.

    Sentences computed from one benchmark record (the same inputs, one process): how much faster
    the baseline ran; where both stand against the same roof (the problem's minimum bytes over a
    copy of those bytes; its FLOPs over the compute roof when the kernel is compute bound); what
    each later version's interleaved comparison said; and the first finding of the best version's
    profile. Empty when no baseline beat it beyond the noise (`final["standing"]`).
    """
    record: BenchmarkReport | None = final.get("record")
    ratio, baseline, best = final.get("speedup_vs_best_baseline"), final.get("best_baseline"), final.get("best")
    standing: BaselineStanding | None = final.get("standing")
    if record is None or ratio is None or ratio >= 1.0 or not baseline or not record.median_us:
        return []
    entry = next((b for b in record.baselines if b.name == baseline and b.median_us), None)
    if entry is None or standing is None or not standing.behind:
        return []
    ours, theirs = entry.solution_us_beside(record.median_us), entry.median_us
    lines = [f"{baseline} ran {1 / ratio:.3f}x faster than {best} in the same benchmark run "
             f"({theirs:.2f} µs against {ours:.2f} µs): {_beyond_noise(standing, best)}."]
    lines += _roof_sentences(record, best, baseline, ours, theirs)
    lines.append(f"Tried: {'; '.join(tried)}." if tried else "No version after v0 was tried.")
    if remaining.get("findings"):
        lines.append(f"What {remaining['from']}'s profile says is left: {remaining['findings'][0]}.")
    lines += _pipe_bound_sentence(remaining, best, ours, ratio)
    lines += _taking_turns_sentence(remaining, best, ours)
    return lines


def _beyond_noise(standing: BaselineStanding, best: str) -> str:
    """Why the gap is real: the interval of the recorded samples, or the medians' 5% margin without samples."""
    if standing.samples is None:
        return (f"{best} runs at {standing.speedup:.3f}x its speed, beyond the 5% that medians alone must clear "
                "(no timing samples recorded)")
    ours, theirs = standing.samples
    return (f"{best} runs at {standing.interval_text()} its speed (95% bootstrap interval of {ours} and {theirs} "
            "timed calls), beyond the noise")


def pipes_taking_turns(profile: NcuSummary) -> list[tuple[str, float]] | None:
    """An overlap_bound profile's two busiest math pipes (dominant kernel) when their busy shares add up to
    TAKING_TURNS_PCT or more with neither at its roof: [(pipe, %), (pipe, %)], else None."""
    kernel = profile.dominant()
    if profile.bottleneck != "overlap_bound" or kernel is None or kernel.pipes.get("at_roof"):
        return None
    shares = sorted(((pipe, pct) for pipe, pct in (kernel.pipes.get("utilisation_pct") or {}).items() if pct),
                    key=lambda share: -share[1])[:2]
    return shares if len(shares) == 2 and shares[0][1] + shares[1][1] >= TAKING_TURNS_PCT else None


def _taking_turns_sentence(remaining: dict[str, Any], best: str, ours: float) -> list[str]:
    """Where two pipes take turns (pipes_taking_turns): the time the same work would take fully overlapped."""
    turns = remaining.get("pipes_taking_turns")
    if not turns or remaining.get("from") != best:
        return []
    (first, a), (second, b) = turns
    return [f"{best}'s profile has the {first} pipe busy {a:.1f}% and the {second} pipe {b:.1f}% of the time, "
            f"{a + b:.1f}% together with neither at its roof, as if the two took turns. Fully overlapped, the "
            f"same work would take about {ours * max(a, b) / (a + b):.2f} µs at best (the busier pipe's share "
            "alone), so the time is in overlapping them, not in either pipe."]


def _pipe_bound_sentence(remaining: dict[str, Any], best: str, ours: float, ratio: float) -> list[str]:
    """Where the best version's busiest pipe is at its roof: how much faster any schedule of the same work could
    run (its busy share removed of every gap), set against what passing the baseline would take."""
    at_roof = remaining.get("pipe_at_roof")
    if not at_roof or remaining.get("from") != best:
        return []
    busy = at_roof["pipe_pct"] / 100.0
    bound = f"{best}'s profile has the {at_roof['pipe']} pipe busy {at_roof['pipe_pct']:.1f}% of the time: the same " \
            f"work with no gap on that pipe would run at most {1 / busy:.3f}x faster (about {ours * busy:.2f} µs)"
    if 1 / busy < 1 / ratio:
        return [f"{bound}, short of the {1 / ratio:.3f}x that matching the baseline takes: only less work or a lower "
                "precision closes the gap."]
    return [f"{bound}; matching the baseline needs {1 / ratio:.3f}x, within that bound, so the gap is in the schedule "
            "(fill, drain, waits between the pipe's instructions), not in the work."]


def _roof_sentences(record: BenchmarkReport, best: str, baseline: str, ours: float, theirs: float) -> list[str]:
    """Both times against one roof: DRAM for a memory-bound problem, the compute roof for a compute-bound one."""
    work, (primary, point) = record.work, record.primary_point()
    roofs = (point.ceilings if point else None) or RoofCeilings()
    flops, traffic = work.flops, work.bytes
    if point and point.bound == "compute" and flops and roofs.compute_tflops:
        roof, at_least = roofs.compute_tflops, "≥ " if work.flops_lower_bound else ""
        ours_rate, theirs_rate = flops / ours / 1e6, flops / theirs / 1e6
        return [f"It is compute bound ({at_least}{flops / 1e9:.2f} GFLOP, {work.flops_source}): {best} runs "
                f"at {at_least}{ours_rate:.1f} TFLOP/s and {baseline} at {at_least}{theirs_rate:.1f} TFLOP/s, "
                f"against a {roof:.1f} TFLOP/s roof ({roofs.source}, {roofs.dtype}).",
                f"{best} is at {100 * ours_rate / roof:.1f}% of that roof and {baseline} at "
                f"{100 * theirs_rate / roof:.1f}%: the FLOPs are the same, so the gap is in how fast {best} "
                "issues them."]
    if not traffic:
        return ["The records hold no byte count for the problem, so where both stand against the memory roof "
                "is not measured."]
    copy = record.copy_same_bytes or CopySameBytes()
    roof, roof_text = copy.bandwidth_gbps, None
    if roof:
        roof_text = f"a copy of the same bytes ran at {roof:.0f} GB/s ({copy.median_us:.2f} µs)"
    elif roofs.memory_bandwidth_gbps:
        roof = roofs.memory_bandwidth_gbps
        roof_text = f"the {primary} memory roof is {roof:.0f} GB/s"
    ours_rate, theirs_rate = traffic / ours / 1e3, traffic / theirs / 1e3
    lines = [f"Both move at least {traffic / 1e6:.1f} MB ({work.bytes_source}): {best} at an effective "
             f"{ours_rate:.0f} GB/s, {baseline} at {theirs_rate:.0f} GB/s" + (f"; {roof_text}." if roof_text else ".")]
    if roof:
        ours_share, theirs_share = ours_rate / roof, theirs_rate / roof
        if theirs_share > PAST_THE_COPY and copy.bandwidth_gbps:
            lines.append(f"{best} is at {100 * ours_share:.1f}% of that roof and {baseline} at "
                         f"{100 * theirs_share:.1f}%: {baseline} moves the same bytes faster than the copy does, so "
                         "the copy is not this problem's limit. A copy writes as many bytes as it reads; traffic with "
                         "another mix (mostly reads, as in a matrix-vector product or a reduction) can run past it.")
        elif ours_share >= AT_THE_ROOF:
            lines.append(f"{best} is at {100 * ours_share:.1f}% of that roof and {baseline} at "
                         f"{100 * theirs_share:.1f}%: both are at the memory roof with the same bytes, and the gap is "
                         "in how close each gets to DRAM's peak, not in the bytes moved.")
        else:
            lines.append(f"{best} reaches {100 * ours_share:.1f}% of that roof and {baseline} "
                         f"{100 * theirs_share:.1f}%: the bytes are the same, so the gap is in how {best} moves them.")
    return lines
