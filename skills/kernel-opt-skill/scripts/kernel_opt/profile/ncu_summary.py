"""The profile's summary: an NcuSummary built from a read report and its classification, and its reports.

Every value is computed here or in profile.classify before rendering; the templates
(ncu_summary.md.j2, ncu_details.md.j2) and the console summary only format it.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernel_opt.core.files import write_json_atomic, write_text_atomic
from kernel_opt.core.render import compact_markdown_table, format_number, markdown_cell, markdown_table, render
from kernel_opt.measure.records import BenchmarkReport
from kernel_opt.profile.assessments import percent_text
from kernel_opt.profile.evidence import classification_details, design_rows
from kernel_opt.profile.findings import traffic_finding
from kernel_opt.profile.problem_traits import ProblemTraits, problem_traits
from kernel_opt.profile.records import (
    NCU_SUMMARY_FILE,
    BaselineComparison,
    Collection,
    DominantKernel,
    FindingRecord,
    GuideLink,
    KernelSummary,
    NcuSummary,
)

SUMMARY_MD = "ncu_summary.md"
DETAILS_MD = "ncu_details.md"
SUMMARY_RULES_SHOWN = 4
CLOCK_NOTE = (
    "ncu ran with --clock-control none: GPU clocks were not locked, so these durations describe this profile only "
    "and are never compared with benchmark timings (ncu also replays each kernel many times, flushing caches)"
)


def summarize_profile(profile, collection: Collection, backends, baseline: NcuSummary | None, baseline_dir: str | None,
                      static_opcodes: dict[str, dict[str, float]] | None = None, reference: Path | None = None,
                      benchmark: BenchmarkReport | None = None):
    """The record of a read profile, and the classifier's verdict behind it.

    `baseline` is a previous version's summary (read from `baseline_dir`): what moved since it is recorded.
    `static_opcodes` (kernel name -> SASS opcode counts from static_analysis.json) lets the verdict
    see the kernel's design where the report has no executed-opcode mix. `reference` (ref.py or a
    KernelBench problem) and `benchmark` (the folder's benchmark record) give the problem's family
    and counted bytes, which decide what advice fits (profile/problem_traits.py).
    """
    from kernel_opt.profile.classify import compare_with_baseline, summarize
    from kernel_opt.profile.suggestions import suggest
    from kernel_opt.profile.thresholds import THRESHOLDS

    verdict = summarize([(k.name, k.launches, k.launch_configuration, k.total_duration_us, k.metrics)
                         for k in profile.kernels], static_opcodes)
    dominant = next(v for v in verdict.kernels if v.name == verdict.dominant_kernel)
    classification = dominant.classification
    traits = problem_traits(reference, benchmark, verdict.metrics.get("dram_bytes"), collection.profiled_calls,
                            classification.design.tensor_cores, dict(collection.dims) or None)
    suggestions = suggest(classification, dominant.metrics, backends, profile.compute_capability, traits)
    traffic = traffic_finding(traits, classification.label)
    summary = NcuSummary(
        bottleneck=verdict.bottleneck,
        small_grid=verdict.small_grid,
        top_stall=verdict.top_stall,
        memory_limiter=verdict.memory_limiter,
        occupancy_limiters=classification.occupancy.limiters,
        busiest_pipe=classification.pipes.busiest,
        unverified=list(classification.unverified),
        reason=classification.reason,
        dominant_kernel=DominantKernel(verdict.dominant_kernel, verdict.dominant_share_pct),
        metrics=verdict.metrics,
        findings=[FindingRecord(**asdict(finding)) for finding in classification.findings + traffic],
        read_next=[GuideLink(**asdict(suggestion)) for suggestion in suggestions],
        traits=traits,
        kernels=[_kernel_summary(kernel, kernel_verdict)
                 for kernel, kernel_verdict in zip(profile.kernels, verdict.kernels, strict=True)],
        device={"name": profile.device_name, "compute_capability": profile.compute_capability},
        launches_profiled=profile.launches,
        collection=Collection(**{**asdict(collection), "notes": _collection_notes(profile, collection)}),
        thresholds={name: item.value for name, item in THRESHOLDS.items()},
    )
    if baseline is not None:
        changes = compare_with_baseline(baseline.to_dict(), summary.to_dict())
        summary.baseline = BaselineComparison.from_dict({"dir": baseline_dir, "changes": [asdict(c) for c in changes]})
    return summary, verdict


def _collection_notes(profile, collection: Collection) -> list[str]:
    notes = list(collection.notes)
    if collection.max_launches and profile.launches >= collection.max_launches:
        notes.append(f"ncu stopped at {collection.max_launches} launches (--max-launches): later launches are missing")
    if profile.launches_outside_range:
        notes.append(f"{profile.launches_outside_range} profiled launch(es) were outside the NVTX range "
                     f"{collection.nvtx_range or 'kernel_opt_solution'}: the report holds more than the solution's "
                     "calls")
    return notes


def _kernel_summary(kernel_profile, kernel_verdict) -> KernelSummary:
    classification = kernel_verdict.classification
    return KernelSummary(
        name=kernel_profile.name,
        demangled_name=kernel_profile.demangled_name,
        launches=kernel_profile.launches,
        launch_configuration=kernel_profile.launch_configuration,
        total_duration_us=kernel_profile.total_duration_us,
        share_pct=kernel_verdict.share_pct,
        inside_nvtx_range=kernel_profile.inside_range,
        label=classification.label,
        small_grid=classification.small_grid,
        reason=classification.reason,
        memory_limiter=classification.memory_limiter,
        occupancy=asdict(classification.occupancy),
        **classification_details(classification),
        top_stalls=[asdict(share) for share in classification.top_stalls],
        findings=[FindingRecord(**asdict(finding)) for finding in classification.findings],
        metrics=kernel_profile.metrics.to_dict(),
        metric_sources=kernel_profile.metrics.sources,
        rules=[asdict(rule) for rule in kernel_profile.rules],
    )


def write_profile_reports(summary: NcuSummary, profile, verdict, output_dir: Path) -> None:
    """DIR/ncu_summary.json (the record), ncu_summary.md (verdict, evidence, next) and ncu_details.md (every metric)."""
    context = _render_context(summary, profile, verdict)
    write_json_atomic(output_dir / NCU_SUMMARY_FILE, summary.to_dict())
    write_text_atomic(output_dir / SUMMARY_MD, render("ncu_summary.md.j2", **context))
    write_text_atomic(output_dir / DETAILS_MD, render("ncu_details.md.j2", **context))


def profile_summary(summary: NcuSummary, output_dir: Path) -> str:
    """What ncu_profile.py prints: the label with its evidence, and the guide section to read next."""
    metrics = summary.metrics
    label = summary.bottleneck + (" + small_grid" if summary.small_grid else "")
    unit = f" ({summary.memory_limiter})" if summary.memory_limiter else ""
    lines = [
        f"{label.upper()}: memory SOL {percent_text(metrics.get('memory_sol_pct'))}{unit}, "
        f"SM SOL {percent_text(metrics.get('sm_sol_pct'))}, "
        f"achieved occupancy {percent_text(metrics.get('achieved_occupancy_pct'))}; dominant kernel "
        f"{summary.dominant_kernel.name} ({summary.dominant_kernel.share_pct:.0f}% of the profiled time)",
        f"why: {summary.reason}",
        f"report: {output_dir / SUMMARY_MD} (every metric: {output_dir / DETAILS_MD})",
    ]
    first = summary.read_next[0] if summary.read_next else None
    if first:
        lines.append(f"next: read {first.link} ({first.why}), then write the hypothesis for the next version")
    elif summary.bottleneck is not None:
        lines.append(f"next: {no_advice_reason(summary)}")
    return "\n".join(lines)


def no_advice_reason(summary: NcuSummary) -> str:
    """Why no guide strategy was suggested: at the memory roof, or none fits this chip and problem, or no label."""
    traits = summary.traits
    if summary.bottleneck is None:
        return "no strategy applies (no label); profile with the targeted sections"
    if traits is not None and summary.bottleneck == "memory_bound" and traits.at_memory_roof:
        where = f"at {traits.percent_of_ceiling:.1f}% of its ceiling"
        if traits.target_percent is not None and traits.percent_of_ceiling < traits.target_percent:
            where += " and faster than every roof measured on this GPU"
        return (f"no guide strategy applies: the solution reads each byte once ({traits.traffic_ratio:.2f}x the "
                f"problem's minimum bytes) {where}; it is at its memory roof")
    return "no guide strategy fits this chip and problem; the findings above say what limits it"


def problem_line(traits: ProblemTraits | None) -> str | None:
    """The problem as the advice saw it: 'elementwise (the reference calls add); DRAM per call 0.98x its minimum'."""
    if traits is None or (traits.family is None and traits.traffic_ratio is None):
        return None
    parts = [f"{traits.family} ({traits.family_source})" if traits.family else "family not known"]
    if traits.traffic_ratio is not None:
        parts.append(f"DRAM moved {traits.traffic_ratio:.2f}x the problem's minimum bytes per call")
    return "; ".join(parts)


# --- formatting for the templates (formatting only: every value is already computed) --------


def _number(value: Any) -> str:
    """Counts print whole (65536 blocks, not 6.554e+04); other numbers with significant digits."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return format_number(value)


def _cell(value: Any) -> str:
    """A table cell: numbers formatted, pipes escaped so a description cannot break a row."""
    text = _number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else (
        "—" if value is None else str(value))
    return markdown_cell(text)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}%"


def _evidence_rows(classification, metrics) -> list[list[str]]:
    """The dominant kernel's key numbers, each with its real unit (a 0-32 ratio stays a ratio)."""
    rows: list[list[str]] = []

    def row(label: str, value: str | None) -> None:
        if value not in (None, "—"):
            rows.append([label, value])

    limiter = f" ({classification.memory_limiter})" if classification.memory_limiter else ""
    row("memory SOL: busiest of DRAM, L2, L1/shared", f"{_pct(classification.memory_sol_pct)}{limiter}")
    units = [(name, getattr(metrics, field)) for name, field in (("DRAM", "dram_throughput_pct"),
             ("L2", "l2_throughput_pct"), ("L1/shared", "l1_throughput_pct"))]
    if any(value is not None for _, value in units):
        row("DRAM / L2 / L1-shared throughput", " / ".join(f"{name} {_pct(value)}" for name, value in units))
    row("SM SOL (compute throughput)",
        _pct(classification.sm_sol_pct) if classification.sm_sol_pct is not None else None)
    occupancy = classification.occupancy
    if occupancy.achieved_pct is not None or occupancy.theoretical_pct is not None:
        limit = ""
        if occupancy.limiters:
            limit = "; limited by " + " and ".join(
                f"{name} ({_number(occupancy.blocks_per_sm_limits[name])} blocks/SM)" for name in occupancy.limiters)
        row("achieved / theoretical occupancy",
            f"{_pct(occupancy.achieved_pct)} / {_pct(occupancy.theoretical_pct)}{limit}")
    grid = classification.grid
    if grid.grid_size_blocks is not None:
        block = metrics.block_size_threads
        parts = [f"{_number(grid.grid_size_blocks)} blocks" + (f" x {_number(block)} threads" if block else "")]
        if grid.sm_count is not None:
            parts.append(f"{_number(grid.sm_count)} SMs")
        if grid.waves_per_sm is not None:
            parts.append(f"{grid.waves_per_sm:.2f} waves per SM")
        row("grid", ", ".join(parts) + (" (small_grid)" if grid.small_grid else ""))
    if classification.top_stalls:
        row("top warp stalls (share of the cycles between issued instructions)",
            ", ".join(f"{share.reason} {share.share_pct:.0f}%" for share in classification.top_stalls))
    row("issue slots busy", _pct(metrics.issue_slots_busy_pct) if metrics.issue_slots_busy_pct is not None else None)
    if metrics.tensor_pipe_pct is not None and classification.pipes.busiest != "tensor":  # else the pipe row says it
        row("tensor pipe busy", _pct(metrics.tensor_pipe_pct))
    if metrics.l1_hit_rate_pct is not None or metrics.l2_hit_rate_pct is not None:
        row("L1 / L2 hit rate", f"{_pct(metrics.l1_hit_rate_pct)} / {_pct(metrics.l2_hit_rate_pct)}")
    if metrics.global_load_sectors_per_request is not None or metrics.global_store_sectors_per_request is not None:
        row("sectors per global load / store request",
            f"{_cell(metrics.global_load_sectors_per_request)} / {_cell(metrics.global_store_sectors_per_request)}")
    local = metrics.local_memory_sectors
    row("local-memory sectors (spills, local arrays)", _number(local) if local is not None else None)
    threads = metrics.threads_per_warp_instruction
    row("active threads per warp instruction (of 32)", f"{threads:.1f}" if threads is not None else None)
    row("registers per thread",
        _number(metrics.registers_per_thread) if metrics.registers_per_thread is not None else None)
    row("duration per launch (ncu, clocks not locked)",
        f"{_number(metrics.duration_us)} us" if metrics.duration_us is not None else None)
    return rows + design_rows(classification)


def _canonical_rows(metrics) -> list[list[str]]:
    from kernel_opt.profile.ncu.metric_aliases import METRIC_ALIASES  # needed only to render

    rows = []
    for alias in METRIC_ALIASES:
        value = getattr(metrics, alias.canonical)
        rows.append([alias.canonical, alias.label, _cell(value), alias.unit,
                     metrics.sources.get(alias.canonical, "not collected")])
    rows.append(["shared_bank_conflict_pct", "bank conflicts as a share of shared-memory wavefronts",
                 _cell(metrics.shared_bank_conflict_pct), "% of wavefronts", "derived"])
    return rows


def _render_context(summary: NcuSummary, profile, verdict) -> dict[str, Any]:
    dominant = next(v for v in verdict.kernels if v.name == verdict.dominant_kernel)
    classification = dominant.classification
    summary_rules = [rule for rule in next(k for k in profile.kernels if k.name == dominant.name).rules
                     if rule.kind in ("optimization", "warning") or rule.section == "SpeedOfLight"]
    summary_rules.sort(key=lambda rule: (rule.section != "SpeedOfLight", -(rule.estimated_speedup_pct or 0.0)))
    payload = summary.to_dict()
    return {
        "payload": payload,
        "verdict": verdict,
        "classification": classification,
        "evidence_table": markdown_table(_evidence_rows(classification, dominant.metrics), ["evidence", "value"]),
        "summary_rules": summary_rules[:SUMMARY_RULES_SHOWN],
        "kernels_table": _kernels_table(verdict),
        "kernel_count": len(verdict.kernels),
        "baseline_table": _baseline_table(summary),
        "collection": summary.collection,
        "notes": summary.collection.notes,
        "clock_note": CLOCK_NOTE,
        "details": [_kernel_details(kernel, kernel_verdict)
                    for kernel, kernel_verdict in zip(profile.kernels, verdict.kernels, strict=True)],
        "total_duration": format_number(summary.metric("duration_us")),
        "problem": problem_line(summary.traits),
        "no_advice": no_advice_reason(summary),
        "profile": profile,
    }


def _kernels_table(verdict) -> str:
    return markdown_table(
        [[_cell(v.name), v.launches, v.launch_configuration, _cell(v.total_duration_us), f"{v.share_pct:.0f}%",
          v.classification.label or "—", "yes" if v.classification.small_grid else "no",
          _pct(v.classification.memory_sol_pct), _pct(v.classification.sm_sol_pct),
          _pct(v.classification.occupancy.achieved_pct)] for v in verdict.kernels],
        ["kernel", "launches", "launch", "total us (ncu)", "share", "label", "small_grid", "memory SOL", "SM SOL",
         "achieved occupancy"],
    )


def _baseline_table(summary: NcuSummary) -> str:
    if not summary.baseline:
        return ""
    return markdown_table(
        [[change.label, _cell(change.before), _cell(change.after),
          ("—" if change.change is None else f"{change.change:+.4g}"), "yes" if change.moved else "no"]
         for change in summary.baseline.changes],
        ["metric", "before", "after", "change", "moved"],
    )


def _kernel_details(kernel_profile, kernel_verdict) -> dict[str, Any]:
    """One kernel's section of ncu_details.md: canonical metrics, stalls, ncu's rules, every raw metric."""
    from kernel_opt.profile.ncu.stalls import STALL_MEANINGS

    metrics = kernel_profile.metrics
    stall_rows = [[share.reason, _cell(share.value), f"{share.share_pct:.1f}%", STALL_MEANINGS.get(share.reason, "")]
                  for share in metrics.stall_shares()]
    return {
        "name": kernel_profile.name,
        "demangled_name": kernel_profile.demangled_name,
        "launches": kernel_profile.launches,
        "launch_configuration": kernel_profile.launch_configuration,
        "inside_range": kernel_profile.inside_range,
        "classification": kernel_verdict.classification,
        "share_pct": kernel_verdict.share_pct,
        "canonical_table": markdown_table(_canonical_rows(metrics),
                                          ["canonical", "what", "value", "unit", "ncu metric"]),
        "stall_unit": metrics.stall_unit,
        "stall_source": metrics.sources.get("stalls"),
        "stall_table": markdown_table(stall_rows, ["state", f"value ({metrics.stall_unit})", "share", "meaning"])
        if stall_rows else "",
        "rules_table": markdown_table(
            [[rule.section, rule.rule, rule.kind, _cell(rule.estimated_speedup_pct), _cell(rule.message)]
             for rule in kernel_profile.rules], ["section", "rule", "kind", "est. speedup %", "message"],
        ) if kernel_profile.rules else "",
        "raw_table": compact_markdown_table(
            [[metric.name, _cell(metric.value), _cell(metric.unit or "")] for metric in kernel_profile.raw_metrics],
            ["ncu metric", "value", "unit"],
        ),
        "raw_count": len(kernel_profile.raw_metrics),
    }
