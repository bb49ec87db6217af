"""Read and check `vN/hypothesis.txt`: Hypothesis / Rationale / Expected, one change per version.

The check is mechanical: every field present and filled in, and Expected names a metric, a
direction and a rough amount, so the next profile can confirm or refute it. Whether the
version really changes only one thing is for the reviewer (see reference/hypothesis.md).

The loop checks the file before it measures a version (loop/evaluate.py, hypothesis_check.py);
the experience log copies its Hypothesis and Expected into the step's record (evidence.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

FIELDS: tuple[str, ...] = ("hypothesis", "rationale", "expected")

# A field starts a line: "Hypothesis: ...", "**Expected:** ...", "- Rationale: ...", or a
# heading such as "## Expected" with its text on the lines below.
_FIELD_LINE = re.compile(
    r"^\s*(?:#{1,6}\s*|[-*>]\s+)?[*_]{0,2}\s*"
    r"(?P<name>hypothesis|rationale|expected)(?:\s+(?:result|outcome|effect|change|metrics?))?"
    r"\s*[*_]{0,2}\s*(?::|$)\s*[*_]{0,2}\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(r"^(?:todo|tbd|fixme|\.\.\.|…|-|n/?a|none|\?+)$", re.IGNORECASE)
_TEMPLATE_SLOT = re.compile(r"<[^<>\n]{2,}>")

# metric named in Expected -> pattern. Profile and benchmark vocabulary, matched case-insensitively.
METRIC_TERMS: dict[str, str] = {
    "time": r"\b(?:time|latency|duration|runtime|run\s*time|elapsed)\b|\d\s*(?:us|µs|ms|ns)\b",
    "speedup": r"\bspeed\s*-?\s*up\b|\bfaster\b|\bslower\b",
    "bandwidth": r"\bbandwidth\b|\bthroughput\b|\b[gt]b/s\b",
    "DRAM": r"\b(?:dram|hbm)\b",
    "L1": r"\bl1(?:tex)?\b",
    "L2": r"\bl2\b",
    "memory SOL": r"\bmem(?:ory)?[\s_-]*(?:sol|speed[\s-]*of[\s-]*light)\b",
    "SM SOL": r"\b(?:sm|compute)[\s_-]*(?:sol|speed[\s-]*of[\s-]*light)\b",
    "SOL": r"\bsol\b|\bspeed[\s-]*of[\s-]*light\b|\bof\s+peak\b|\broofline\b",
    "occupancy": r"\boccupancy\b|\bactive\s+warps\b|\bwarps\s+per\s+sm\b|\bblocks\s+per\s+sm\b",
    "registers": r"\bregisters?\b|\bregs\b",
    "spills": r"\bspill(?:s|ed|ing)?\b|\blocal[\s-]*memory\b|\b(?:ldl|stl)\b",
    "stall reasons": r"\bstalls?\b|\bscoreboard\b|\b(?:mio|lg|tex)[\s_-]*throttle\b|\bbarrier\b|\bmath[\s_-]*pipe\b",
    "tensor pipe": r"\btensor[\s-]*(?:pipe|core|cores|utili[sz]ation)\b|\b(?:hmma|hgmma|wgmma|mma)\b",
    "bank conflicts": r"\bbank[\s-]*conflicts?\b",
    "instructions": r"\binstructions?\b|\bipc\b|\bissue[\s-]*slots?\b|\bsass\b",
    "FLOP/s": r"\b[gt]?flop/?s\b",
    "cache hit rate": r"\bhit[\s-]*rate\b",
    "sectors / coalescing": r"\bsectors?\b|\bcoalesc\w*|\btransactions?\b",
    "waves": r"\bwaves?\b|\btail\s+effect\b",
    "divergence": r"\bdivergen\w*|\bbranch\s+(?:efficiency|uniformity)\b",
    "shared memory": r"\bshared[\s-]*memory\b|\bsmem\b",
}
_DIRECTION = re.compile(
    r"\b(?:increas\w*|rais\w*|ris(?:e|es|ing)|grow\w*|higher|up|improv\w*|drop\w*|decreas\w*|fall\w*|lower\w*|"
    r"reduc\w*|down|fewer|more|less|better|worse|eliminat\w*|remov\w*|disappear\w*|halv\w*|doubl\w*|tripl\w*|faster|slower|"
    r"stay\w*|unchanged|goes\s+to|go\s+to|from\b.+\bto)\b|→|->|↑|↓",
    re.IGNORECASE,
)
_AMOUNT = re.compile(r"\d|\b(?:zero|half|halve[sd]?|double[sd]?|twice|triple[sd]?|none)\b", re.IGNORECASE)


@dataclass
class HypothesisCheck:
    """The verdict on one hypothesis.txt: its fields, the metrics Expected names, its problems."""

    path: str
    fields: dict[str, str] = field(default_factory=dict)
    metrics_named: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "path": self.path,
            "fields": self.fields,
            "metrics_named": self.metrics_named,
            "problems": self.problems,
        }


def parse_hypothesis(text: str) -> tuple[dict[str, str], list[str]]:
    """Split the text into its fields; returns (fields, names seen more than once)."""
    fields_found: dict[str, list[str]] = {}
    repeated: list[str] = []
    current: str | None = None
    for line in text.splitlines():
        match = _FIELD_LINE.match(line)
        if match:
            current = match.group("name").lower()
            if current in fields_found and current not in repeated:
                repeated.append(current)
            fields_found[current] = [match.group("rest").strip()]
        elif current is not None:
            fields_found[current].append(line.strip())
    joined = {name: " ".join(part for part in parts if part).strip() for name, parts in fields_found.items()}
    return joined, repeated


def metrics_in(text: str) -> list[str]:
    """The metric names from METRIC_TERMS that the text mentions, in table order."""
    return [name for name, pattern in METRIC_TERMS.items() if re.search(pattern, text, re.IGNORECASE)]


def check_hypothesis(text: str, path: str = "hypothesis.txt") -> HypothesisCheck:
    fields_found, repeated = parse_hypothesis(text)
    check = HypothesisCheck(path=path, fields={name: fields_found.get(name, "") for name in FIELDS})
    for name in repeated:
        check.problems.append(f"{name.capitalize()}: appears more than once; a version tests one hypothesis")
    for name in FIELDS:
        value = fields_found.get(name)
        label = name.capitalize()
        if value is None:
            check.problems.append(f"{label}: missing; add a line starting with '{label}:'")
        elif not value or _PLACEHOLDER.match(value):
            check.problems.append(f"{label}: empty; fill it in")
        elif _TEMPLATE_SLOT.search(value):
            check.problems.append(
                f"{label}: still holds a template slot {_TEMPLATE_SLOT.search(value).group(0)}; replace it"
            )
    expected = fields_found.get("expected") or ""
    if expected and not _PLACEHOLDER.match(expected):
        check.metrics_named = metrics_in(expected)
        if not check.metrics_named:
            check.problems.append(
                "Expected: names no metric; say which one moves (e.g. DRAM throughput, memory SOL, "
                "achieved occupancy, registers per thread, long-scoreboard stalls, duration)"
            )
        if not _DIRECTION.search(expected):
            check.problems.append("Expected: gives no direction; say whether the metric rises or falls")
        if not _AMOUNT.search(expected):
            check.problems.append(
                "Expected: gives no amount; say roughly how much (e.g. 'from ~45% to >75%', '~1.3x faster')"
            )
    return check
