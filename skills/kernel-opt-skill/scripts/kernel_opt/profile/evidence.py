"""Evidence-table rows for the compute pipes, shared memory, the SASS mix and what the verdict could not check.

Formatting only: every value comes from a `Classification` the classifier already made, so the
summary shows the numbers the label was decided from, in their own units.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from kernel_opt.profile.classify import Classification
from kernel_opt.profile.design import count_text
from kernel_opt.profile.thresholds import threshold


def pipe_row(classification: Classification) -> list[str] | None:
    """'tensor 95.0% (at its roof); FMA 0.0%, ALU 2.8%, ...; LSU 1.1%' or None without pipe metrics."""
    pipes = classification.pipes
    if pipes.busiest is None:
        return None
    roof = " (at its roof)" if pipes.at_roof else f" (roof {threshold('pipe_roof_pct'):g}%)"
    others = [f"{name} {value:.1f}%" for name, value in pipes.utilisation_pct.items() if name != pipes.busiest]
    return ["busiest math pipe, % of its own peak (others)",
            f"{pipes.busiest} {pipes.busiest_pct:.1f}%{roof}" + (f"; {', '.join(others)}" if others else "")]


def shared_memory_row(classification: Classification) -> list[str] | None:
    """Bank conflicts with their counts and wavefronts per request, and whether the traffic is operand staging."""
    shared = classification.shared
    if shared.bank_conflict_pct is None:
        return None
    parts = []
    for kind, conflicts, per_request in (("loads", shared.load_bank_conflicts, shared.load_wavefronts_per_request),
                                         ("stores", shared.store_bank_conflicts, shared.store_wavefronts_per_request)):
        if conflicts is not None:
            request_text = f", {per_request:.1f} wavefronts/request" if per_request is not None else ""
            parts.append(f"{kind} {count_text(conflicts)} conflicts{request_text}")
    verdict = ("operand staging for the tensor cores" if shared.operand_staging
               else "bank conflicts" if shared.conflicted else "no conflict problem")
    return ["shared memory: bank conflicts (% of wavefronts)",
            f"{shared.bank_conflict_pct:.1f}% ({'; '.join(parts)}): {verdict}"]


def sass_row(classification: Classification) -> list[str]:
    """The SASS evidence: key opcode counts and the asynchronous features they show, with their source."""
    design = classification.design
    counts = ", ".join(f"{opcode} {count_text(count)}" for opcode, count in design.key_opcodes.items())
    features = "; asynchronous: " + ", ".join(design.async_features) if design.async_features else ""
    unchecked = f"; not visible: {', '.join(design.unchecked)}" if design.unchecked else ""
    return [f"SASS ({design.source})", (counts or "no key opcode") + features + unchecked]


def design_rows(classification: Classification) -> list[list[str]]:
    """The pipe, shared-memory, SASS and not-verified rows, in that order (absent evidence leaves its row out)."""
    rows = [row for row in (pipe_row(classification), shared_memory_row(classification)) if row is not None]
    rows.append(sass_row(classification))
    if classification.unverified:
        rows.append(["not verified (the report lacks it)", "; ".join(classification.unverified)])
    return rows


def classification_details(classification: Classification) -> dict[str, Any]:
    """The assessments behind a kernel's label, for its record in ncu_summary.json."""
    return {"pipes": asdict(classification.pipes), "shared_memory": asdict(classification.shared),
            "design": asdict(classification.design), "unverified": list(classification.unverified)}
