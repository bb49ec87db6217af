"""recommend: which strategies worked in situations like this one, and which failed.

Relevance of a record to the question is the product of four similarities (kernel, chip,
bottleneck, backend), so a mismatch on any one of them costs as much as it should: a lesson
from another chip needs the exact kernel to stay in the list, a lesson from another kernel of
the same family needs the same chip and bottleneck, and a lesson from a kernel of another
known family (a GEMM's, asked about a GELU) is never shown: tiling and tensor cores are not
an elementwise kernel's levers. The question's family is the one asked (`--family`, the
profile's reading of the reference), else its kernel name's. Strategies are then scored by the
relevance of the records that support them, weighted by measured speedup and by how many
independent records agree; failures of the same strategy count against it and are shown. A
strategy built on hardware the chip asked about lacks (wgmma, TMA on an A100:
profile/chip_features.py), or a lever only another backend's guide has (wgmma, asked about Triton:
backend_gate.py), is left out, with the reason.

Each suggestion says why it matched, field by field (same op, same bottleneck, same or other
chip, same backend), and strategies backed by an exact match (every field asked about is the
same) rank before the rest, whatever the scores. When no record at all comes from the chip
asked about, the result says so instead of passing other chips' lessons off as this one's.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.experience.backend_gate import foreign_strategies
from kernel_opt.experience.chip_gate import chip_requirements, unavailable_strategies
from kernel_opt.experience.labels import Chip, chip_similarity, normalize_backend, normalize_bottleneck, normalize_chip
from kernel_opt.experience.records import content_key
from kernel_opt.experience.store import CURATED_PATH, Entry, default_log_path, load_experience
from kernel_opt.solution.families import FAMILIES, OTHER_FAMILY, is_attention, kernel_family, normalize_kernel

# Similarity weights; the reasoning is in the module docstring. Same chip beats same
# architecture (H100 vs H200: same SM, different memory), which beats the same generation
# (sm_80 vs sm_86: A100 vs A6000 differ in shared memory and bandwidth), which beats others.
# A kernel of another known family weighs below MIN_RELEVANCE even on the same chip, bottleneck and
# backend; where either family is unknown ("other": a name such as "v0") the old 0.25 stands.
# Attention and a plain product are both matmul_like, but a softmax's lessons (and its failures) are not a GEMM's or
# a convolution's: the other kind of the family weighs below MIN_RELEVANCE too, just above another family.
KERNEL_WEIGHTS = {"same_kernel": 1.0, "same_family": 0.6, "other": 0.25, "same_family_other_kind": 0.15,
                  "other_family": 0.1}
CHIP_WEIGHTS = {"same_chip": 1.0, "same_arch": 0.8, "same_generation": 0.5, "unknown": 0.4, "other": 0.25}
BOTTLENECK_WEIGHTS = {"same": 1.0, "unknown": 0.5, "other": 0.3}
BACKEND_WEIGHTS = {"same": 1.0, "other": 0.4}
# Below this a record says too little about the question to be shown at all: e.g. the same
# family on another chip (0.6 * 0.25 = 0.15) is out, the exact kernel on another chip (0.25) is in.
MIN_RELEVANCE = 0.2
# A failure of a strategy in a matching situation costs half a success of the same relevance;
# a neutral result a quarter.
FAILURE_PENALTY = 0.5
NEUTRAL_PENALTY = 0.25
# Speedup weighting saturates at 4x: beyond that the number says more about the starting
# point (often a naive v0) than about the strategy.
SPEEDUP_GAIN_CAP = 4.0


@dataclass(frozen=True)
class Query:
    kernel: str | None = None
    backend: str | None = None
    chip: Chip | None = None
    bottleneck: str | None = None
    problem_family: str | None = None  # the family asked about; None: the kernel name's

    @property
    def family(self) -> str | None:
        if self.problem_family:
            return self.problem_family
        return kernel_family(self.kernel) if self.kernel else None

    @property
    def known_family(self) -> str | None:
        family = self.family
        return family if family and family != OTHER_FAMILY else None


@dataclass
class Match:
    """One record judged against the query."""

    entry: Entry
    relevance: float
    reasons: list[str]
    matched: list[str] = field(default_factory=list)  # one label per field asked about: "same op softmax", ...
    exact: bool = False  # every field asked about is the same (kernel, bottleneck, chip, backend)
    chip_matches: bool = False  # the record comes from the chip asked about (or its architecture, if only that)

    def label(self) -> str:
        """Why this record matched, in one line: 'exact match: same op softmax · same bottleneck ...'."""
        text = " · ".join(self.matched) or "no field asked about"
        return f"exact match: {text}" if self.exact else text

    def to_dict(self) -> dict[str, Any]:
        record = self.entry.record
        return {
            "ref": self.entry.ref,
            "kernel": record.kernel,
            "backend": record.backend,
            "chip": Chip(record.chip, record.chip_name).describe(),
            "bottleneck": record.bottleneck,
            "outcome": record.outcome,
            "speedup": record.speedup,
            "speedup_ci": ([record.speedup_ci_low, record.speedup_ci_high]
                           if record.speedup_ci_low is not None else None),
            "optimization": record.optimization,
            "notes": record.notes,
            "relevance": round(self.relevance, 3),
            "why": "; ".join(self.reasons),
            "matched": self.matched,
            "exact": self.exact,
        }


@dataclass
class Recommendation:
    strategy: str
    score: float
    support: list[Match] = field(default_factory=list)  # successes, best first
    against: list[Match] = field(default_factory=list)  # failures and neutral results of this strategy
    chip_requirement: str | None = None  # asked without a chip: the chip it needs ("needs wgmma (sm_9x only)")

    @property
    def exact(self) -> bool:
        """Some success behind it matches the question exactly."""
        return any(match.exact for match in self.support)

    @property
    def matched(self) -> str:
        """Why it is suggested: the label of its best supporting record."""
        return self.support[0].label() if self.support else ""

    @property
    def median_speedup(self) -> float | None:
        speedups = [m.entry.record.speedup for m in self.support if m.entry.record.speedup is not None]
        return statistics.median(speedups) if speedups else None

    @property
    def warnings(self) -> list[str]:
        needs = ([f"{self.chip_requirement}; the chip was not known here: check the GPU's compute capability first"]
                 if self.chip_requirement else [])
        return needs + [
            f"{m.entry.record.outcome} in #{m.entry.ref} ({m.entry.record.kernel}, "
            f"{Chip(m.entry.record.chip, m.entry.record.chip_name).describe()}, "
            f"{m.entry.record.bottleneck or 'bottleneck not recorded'}"
            + (f", {m.entry.record.speedup:.2f}x" if m.entry.record.speedup is not None else "")
            + f"): {m.entry.record.notes or m.entry.record.optimization}"
            for m in self.against
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "score": round(self.score, 3),
            "exact": self.exact,
            "matched": self.matched,
            "successes": len(self.support),
            "failures": sum(1 for m in self.against if m.entry.record.outcome == "failure"),
            "neutral": sum(1 for m in self.against if m.entry.record.outcome == "neutral"),
            "median_speedup": self.median_speedup,
            "example": self.support[0].entry.record.optimization if self.support else None,
            "evidence": [m.to_dict() for m in self.support],
            "warnings": self.warnings,
        }


@dataclass
class RecommendationResult:
    query: Query
    recommendations: list[Recommendation]
    avoid: list[Match]
    considered: int
    chip_matches: int = 0  # records (relevant or not) from the chip asked about
    # (strategy, why) for strategies that matched but need hardware the chip asked about lacks
    unavailable: list[tuple[str, str]] = field(default_factory=list)
    # (strategy, why) for strategies that matched but are levers of another backend's guide only
    other_backend: list[tuple[str, str]] = field(default_factory=list)

    @property
    def chip_note(self) -> str | None:
        """What to make of the suggestions when no record comes from the chip asked about."""
        if self.query.chip is None or self.chip_matches:
            return None
        chips = sorted({Chip(m.entry.record.chip, m.entry.record.chip_name).describe()
                        for r in self.recommendations for m in r.support} |
                       {Chip(m.entry.record.chip, m.entry.record.chip_name).describe() for m in self.avoid})
        here = self.query.chip.describe()
        if not chips:
            return f"no record comes from {here}, and none from another chip matches this question either"
        return (f"no record comes from {here}: every suggestion below was measured on {', '.join(chips)}; "
                "on another chip a lesson is a hypothesis to re-measure here, not a result")

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": {
                "kernel": self.query.kernel,
                "family": self.query.family,
                "backend": self.query.backend,
                "chip": self.query.chip.describe() if self.query.chip else None,
                "bottleneck": self.query.bottleneck,
            },
            "considered": self.considered,
            "chip_matches": self.chip_matches,
            "chip_note": self.chip_note,
            "unavailable": [{"strategy": strategy, "why": why} for strategy, why in self.unavailable],
            "other_backend": [{"strategy": strategy, "why": why} for strategy, why in self.other_backend],
            "recommendations": [r.to_dict() for r in self.recommendations],
            "avoid": [m.to_dict() for m in self.avoid],
        }


def judge(entry: Entry, query: Query) -> Match:
    """How relevant one record is to the query, with the reasons in words."""
    record = entry.record
    relevance, reasons = 1.0, []
    if query.kernel or query.known_family:
        weight, reason = _kernel_similarity(record, query)
        relevance *= KERNEL_WEIGHTS[weight]
        reasons.append(reason)
    if query.chip is not None:
        record_chip = Chip(record.chip, record.chip_name)
        similarity = chip_similarity(query.chip, record_chip)
        relevance *= CHIP_WEIGHTS[similarity]
        reasons.append(f"{similarity.replace('_', ' ')} {record_chip.describe()}"
                       if similarity != "unknown" else "chip not comparable")
    if query.bottleneck:
        if record.bottleneck == query.bottleneck:
            relevance *= BOTTLENECK_WEIGHTS["same"]
            reasons.append(f"same bottleneck {record.bottleneck}")
        elif record.bottleneck is None:
            relevance *= BOTTLENECK_WEIGHTS["unknown"]
            reasons.append("bottleneck not recorded")
        else:
            relevance *= BOTTLENECK_WEIGHTS["other"]
            reasons.append(f"other bottleneck {record.bottleneck}")
    if query.backend:
        same = record.backend == query.backend
        relevance *= BACKEND_WEIGHTS["same" if same else "other"]
        reasons.append(f"{'same' if same else 'other'} backend {record.backend}")
    if record.speedup is not None:
        interval = ""
        if record.speedup_ci_low is not None and record.speedup_ci_high is not None:
            interval = f" [{record.speedup_ci_low:.2f}, {record.speedup_ci_high:.2f}]"
        reasons.append(f"measured {record.speedup:.2f}x{interval}")
    matched, exact, chip_matches = match_labels(entry, query)
    return Match(entry, relevance, reasons, matched, exact, chip_matches)


def _kernel_similarity(record, query: Query) -> tuple[str, str]:
    """(KERNEL_WEIGHTS key, reason): same kernel, same family, another known family, or a family not known."""
    family = query.known_family
    if query.kernel and record.kernel == query.kernel:
        return "same_kernel", f"same kernel {record.kernel}"
    if family is not None and record.kernel_family == family:
        attention = is_attention(record.kernel)
        if query.kernel and attention != is_attention(query.kernel):
            kind = {True: "attention", False: "a plain product"}
            return "same_family_other_kind", (f"same family {family}, but {record.kernel} is {kind[attention]}, "
                                              f"asked about {kind[not attention]}")
        return "same_family", f"same family {record.kernel_family} ({record.kernel})"
    if family is not None and record.kernel_family in FAMILIES:
        return "other_family", f"other family {record.kernel_family} ({record.kernel}), asked about {family}"
    return "other", f"other kernel {record.kernel} ({record.kernel_family})"


def match_labels(entry: Entry, query: Query) -> tuple[list[str], bool, bool]:
    """(one label per field asked about, whether all are the same, whether the chip is the one asked about).

    The chip counts as the same when the names agree, or when the architectures agree and one
    side gave only the architecture (sm_90 asked, an H100 record): nothing then tells them apart.
    """
    record = entry.record
    labels: list[str] = []
    same: list[bool] = []
    if query.kernel:
        same.append(record.kernel == query.kernel)
        labels.append(f"same op {record.kernel}" if same[-1] else f"other op {record.kernel}")
    elif query.known_family:
        same.append(record.kernel_family == query.known_family)
        labels.append(f"{'same' if same[-1] else 'other'} family {record.kernel_family} ({record.kernel})")
    if query.bottleneck:
        same.append(record.bottleneck == query.bottleneck)
        labels.append(f"same bottleneck {record.bottleneck}" if same[-1]
                      else f"other bottleneck {record.bottleneck or '(not recorded)'}")
    chip_matches = False
    if query.chip is not None:
        record_chip = Chip(record.chip, record.chip_name)
        similarity = chip_similarity(query.chip, record_chip)
        chip_matches = similarity == "same_chip" or (
            similarity == "same_arch" and not (query.chip.name and record_chip.name))
        same.append(chip_matches)
        labels.append(f"{'same' if chip_matches else 'other'} chip {record_chip.describe()}")
    if query.backend:
        same.append(record.backend == query.backend)
        labels.append(f"{'same' if same[-1] else 'other'} backend {record.backend}")
    return labels, bool(same) and all(same), chip_matches


def speedup_gain(speedup: float | None) -> float:
    """1 for an unmeasured success, rising with log2(speedup) to 2 at SPEEDUP_GAIN_CAP."""
    if speedup is None or speedup <= 1.0:
        return 1.0
    return 1.0 + min(math.log2(speedup), math.log2(SPEEDUP_GAIN_CAP)) / math.log2(SPEEDUP_GAIN_CAP)


def _independent(entries: list[Entry]) -> list[Entry]:
    """Records with identical content (a copy merged twice, curated and local) count once."""
    seen: set[str] = set()
    unique = []
    for entry in entries:
        key = content_key(entry.record)
        if key not in seen:
            seen.add(key)
            unique.append(entry)
    return unique


def recommend(entries: list[Entry], query: Query, limit: int = 5) -> RecommendationResult:
    matches = [judge(entry, query) for entry in _independent(entries)]
    relevant = [m for m in matches if m.relevance >= MIN_RELEVANCE]
    by_strategy: dict[str, Recommendation] = {}
    for match in relevant:
        record = match.entry.record
        recommendation = by_strategy.setdefault(record.strategy, Recommendation(record.strategy, 0.0))
        if record.outcome == "success":
            recommendation.support.append(match)
            recommendation.score += match.relevance * speedup_gain(record.speedup)
        else:
            recommendation.against.append(match)
            penalty = FAILURE_PENALTY if record.outcome == "failure" else NEUTRAL_PENALTY
            recommendation.score -= match.relevance * penalty

    def strength(match: Match) -> tuple:
        return (not match.exact, -match.relevance, -(match.entry.record.speedup or 0.0), match.entry.ref)

    for recommendation in by_strategy.values():
        recommendation.support.sort(key=strength)
        recommendation.against.sort(key=strength)
    arch = query.chip.arch if query.chip else None
    unavailable = unavailable_strategies(by_strategy, arch, query.backend)
    foreign = foreign_strategies(by_strategy, query.backend)
    left_out = unavailable | foreign
    if arch is None:
        for name, needs in chip_requirements(by_strategy, query.backend).items():
            by_strategy[name].chip_requirement = needs
    ranked = sorted(  # exact matches first, whatever the scores of the rest
        (r for r in by_strategy.values() if r.support and r.score > 0 and r.strategy not in left_out),
        key=lambda r: (not r.exact, -r.score, r.strategy),
    )
    avoid = sorted((m for m in relevant if m.entry.record.outcome == "failure"
                    and m.entry.record.strategy not in left_out), key=strength)
    return RecommendationResult(query, ranked[:limit], avoid[:limit], considered=len(matches),
                                chip_matches=sum(1 for m in matches if m.chip_matches),
                                unavailable=[(name, why) for name, why in unavailable.items()
                                             if by_strategy[name].support],
                                other_backend=[(name, why) for name, why in foreign.items()
                                               if by_strategy[name].support and name not in unavailable])


@dataclass
class RecommendRequest:
    """What `experience_log.py recommend` is asked, as typed options; labels in any accepted spelling."""

    kernel: str | None = None
    backend: str | None = None
    chip: str | None = None
    bottleneck: str | None = None
    limit: int = 5
    log_path: Path | None = None  # None: default_log_path()
    family: str | None = None  # the problem's family (solution/families.py); None: the kernel name's
    curated_path: Path | None = CURATED_PATH

    def argv(self) -> list[str]:
        """The same request as experience_log.py's arguments."""
        arguments = ["recommend"]
        for flag, value in (("--kernel", self.kernel), ("--family", self.family), ("--backend", self.backend)):
            arguments += [] if value is None else [flag, value]
        arguments += ["-n", str(self.limit)]
        for flag, value in (("--chip", self.chip), ("--bottleneck", self.bottleneck)):
            arguments += [] if value is None else [flag, value]
        return arguments


def recommend_from_log(request: RecommendRequest) -> tuple[RecommendationResult, list[str]]:
    """`recommend` as experience_log.py runs it, over the log and the curated records.

    Returns the result and the log lines that could not be read (each described).
    """
    if request.limit < 1:
        raise UsageError(f"-n must be at least 1, got {request.limit}")
    if request.family is not None and request.family not in (*FAMILIES, OTHER_FAMILY):
        raise UsageError(f"--family {request.family!r} is not a kernel family",
                         hint=f"one of {', '.join([*FAMILIES, OTHER_FAMILY])}")
    experience = load_experience(request.log_path or default_log_path(), request.curated_path)
    query = Query(
        kernel=normalize_kernel(request.kernel) if request.kernel else None,
        backend=normalize_backend(request.backend, field="--backend"),
        chip=normalize_chip(request.chip, field="--chip") if request.chip else None,
        bottleneck=normalize_bottleneck(request.bottleneck, field="--bottleneck"),
        problem_family=request.family,
    )
    return recommend(experience.entries(), query, limit=request.limit), [line.describe() for line in experience.skipped]

