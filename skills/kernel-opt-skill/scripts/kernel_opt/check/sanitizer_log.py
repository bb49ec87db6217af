"""compute-sanitizer's text output read into findings: pure functions over the log's text.

Every line the tool writes starts with its prefix (`=========`). A report starts on a line
whose text is not indented ("Invalid __global__ write of size 4 bytes", "Error: Race reported
between ...", "Barrier error detected. ...", "Program hit cudaError..."), goes on with indented
lines (`at KERNEL+0x90 in FILE:LINE`, `by thread (232,0,0) in block (3,0,0)`, `Access to 0x...
is out of bounds`), and ends at a prefix-only line. The counts come from the summary line
("ERROR SUMMARY: 25 errors", "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"),
never from the exit code: racecheck, initcheck and memcheck itself exit 0 with findings unless
--error-exitcode is given (compute-sanitizer 2025.3.1 on an H100, tests/fixtures/sanitizer/).
A log without a summary line is from a tool that did not finish, and its counts are unknown.

The formats are those of compute-sanitizer 2025.3.1; the recorded outputs in
tests/fixtures/sanitizer/ are what the tests hold this module to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from kernel_opt.check.records import SanitizerFinding

PREFIX = "========="

_FRAME = re.compile(r"^at (?P<kernel>.+?)(?P<pc>\+0x[0-9a-fA-F]+)(?: in (?P<location>\S+:\d+))?$")
_FRAME_WITHOUT_SYMBOL = re.compile(r"^at (?P<pc>0x[0-9a-fA-F]+) in (?P<kernel>.+)$")
_THREAD = re.compile(r"^by thread (?P<thread>\([^)]*\)) in block (?P<block>\([^)]*\))")
_ACCESS = re.compile(r"^Access to (?P<address>0x[0-9a-fA-F]+) is (?P<detail>.+?)\.?$")
_ADDRESS = re.compile(r"^Address (?P<address>0x[0-9a-fA-F]+)(?P<detail>.*)$")
_AND_IS = re.compile(r"^and is (?P<detail>.+?)\.?$")
_RACE = re.compile(r"^(?P<severity>Error|Warning): Race reported between (?P<first>\w+) access at (?P<first_at>.+?) "
                   r"and (?P<second>\w+) access at (?P<second_at>.+?) \[(?P<count>[\d,]+) hazards?\]")
_HAZARD = re.compile(r"^(?P<severity>Error|Warning): Potential (?P<type>\w+) hazard detected at (?P<space>\S+) "
                     r"(?P<address>0x[0-9a-fA-F]+) in block (?P<block>\([^)]*\))")
_HAZARD_ACCESS = re.compile(r"^(?P<access>\w+) Thread (?P<thread>\([^)]*\)) at (?P<frame>.+)$")
_TOOL_MESSAGE = re.compile(r"^(?:Internal .*[Ee]rror|Error|Warning)\b")
_ERROR_SUMMARY = re.compile(r"^ERROR SUMMARY: (?P<count>[\d,]+) errors?(?P<rest>.*)$")
_RACECHECK_SUMMARY = re.compile(r"^RACECHECK SUMMARY: [\d,]+ hazards? displayed "
                                r"\((?P<errors>[\d,]+) errors?, (?P<warnings>[\d,]+) warnings?\)")
_NOT_REPORTS = ("COMPUTE-SANITIZER", "Target application returned an error", "LEAK SUMMARY")


@dataclass
class SanitizerLog:
    """What one compute-sanitizer log says: every report in order, and the summary's counts."""

    findings: list[SanitizerFinding] = field(default_factory=list)  # one per report, ungrouped
    errors: int | None = None  # None: no summary line, so the tool did not finish
    warnings: int = 0  # racecheck only
    not_printed: int = 0  # reports past --print-limit
    application_failed: bool = False  # "Target application returned an error"
    tool_messages: list[str] = field(default_factory=list)

    @property
    def completed(self) -> bool:
        return self.errors is not None

    @property
    def finding_count(self) -> int:
        return (self.errors or 0) + self.warnings


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def tool_lines(text: str) -> list[str]:
    """The tool's own lines, prefix removed (the application's output, interleaved on stdout, is dropped)."""
    return [line[len(PREFIX):].rstrip() for line in text.splitlines() if line.startswith(PREFIX)]


def split_reports(lines: list[str]) -> list[list[str]]:
    """Group the tool's lines into reports: an unindented line and the indented lines after it."""
    reports: list[list[str]] = []
    current: list[str] | None = None
    for line in lines:
        body = line.strip()
        if not body:
            current = None
        elif line.startswith("  ") and current is not None:  # an indented line continues the report
            current.append(body)
        else:
            current = [body]
            reports.append(current)
    return reports


def _frame(text: str) -> dict[str, str | None]:
    """kernel, pc offset and source location from 'KERNEL+0x90 in FILE:LINE' (or without the location)."""
    match = _FRAME.match(f"at {text}") or _FRAME_WITHOUT_SYMBOL.match(f"at {text}")
    if not match:
        return {"kernel": text, "pc": None, "location": None}
    return {"kernel": match.group("kernel"), "pc": match.group("pc"), "location": match.groupdict().get("location")}


def _race(lines: list[str]) -> SanitizerFinding | None:
    """racecheck's analysis report: 'Error: Race reported between Write access at A and Read access at B [N]'."""
    match = _RACE.match(" ".join(lines))
    if not match:
        return None
    first, second = _frame(match.group("first_at")), _frame(match.group("second_at"))
    places = [place for place in (first["location"], second["location"]) if place]
    return SanitizerFinding(
        kind=f"Race between {match.group('first')} access and {match.group('second')} access",
        severity=match.group("severity").lower(), kernel=first["kernel"],
        location=" and ".join(places) or None, pc_offset=first["pc"], thread=None, block=None, address=None,
        detail=(f"{match.group('first')} at {match.group('first_at')}; "
                f"{match.group('second')} at {match.group('second_at')}"),
        count=_number(match.group("count")),
    )


def _hazard(lines: list[str]) -> SanitizerFinding | None:
    """racecheck's hazard report: 'Error: Potential RAW hazard detected at __shared__ 0x680 in block (2,0,0)'."""
    match = _HAZARD.match(lines[0])
    if not match:
        return None
    accesses = [access for access in map(_HAZARD_ACCESS.match, lines[1:]) if access]
    frames = [_frame(access.group("frame")) for access in accesses]
    places = [frame["location"] for frame in frames if frame["location"]]
    return SanitizerFinding(
        kind=f"Potential {match.group('type')} hazard at {match.group('space')}",
        severity=match.group("severity").lower(), kernel=frames[0]["kernel"] if frames else None,
        location=" and ".join(places) or None, pc_offset=frames[0]["pc"] if frames else None,
        thread=accesses[0].group("thread") if accesses else None, block=match.group("block"),
        address=match.group("address"),
        detail="; ".join(f"{a.group('access')} by thread {a.group('thread')}" for a in accesses) or None,
    )


def parse_report(lines: list[str]) -> SanitizerFinding:
    """One report as a finding; its first line is its kind (memcheck, initcheck, synccheck, API errors)."""
    special = _race(lines) or _hazard(lines)
    if special is not None:
        return special
    values: dict[str, str | None] = {"kernel": None, "pc": None, "location": None, "thread": None, "block": None,
                                     "address": None}
    details: list[str] = []
    for line in lines[1:]:
        frame = _FRAME.match(line) or _FRAME_WITHOUT_SYMBOL.match(line)
        if frame and values["kernel"] is None:
            values.update(kernel=frame.group("kernel"), pc=frame.group("pc"),
                          location=frame.groupdict().get("location"))
        elif thread := _THREAD.match(line):
            values.update(thread=thread.group("thread"), block=thread.group("block"))
        elif access := _ACCESS.match(line) or _ADDRESS.match(line):
            values["address"] = access.group("address")
            if access.group("detail").strip():
                details.append(access.group("detail").strip())
        elif more := _AND_IS.match(line):
            details.append(more.group("detail"))
    return SanitizerFinding(
        kind=lines[0].rstrip(" .:"), severity="error", kernel=values["kernel"], location=values["location"],
        pc_offset=values["pc"], thread=values["thread"], block=values["block"], address=values["address"],
        detail="; ".join(details) or None,
    )


def parse_sanitizer_log(text: str) -> SanitizerLog:
    """Every report and the summary counts of one compute-sanitizer log (any of its four tools)."""
    log = SanitizerLog()
    error_summary: int | None = None
    racecheck: tuple[int, int] | None = None
    for report in split_reports(tool_lines(text)):
        head = report[0]
        if summary := _ERROR_SUMMARY.match(head):
            if "not printed" in summary.group("rest"):
                log.not_printed = _number(summary.group("count"))
            else:
                error_summary = _number(summary.group("count"))
        elif summary := _RACECHECK_SUMMARY.match(head):
            racecheck = (_number(summary.group("errors")), _number(summary.group("warnings")))
        elif head.startswith("Target application returned an error"):
            log.application_failed = True
        elif head.startswith(_NOT_REPORTS):
            continue
        elif _TOOL_MESSAGE.match(head) and not (_RACE.match(" ".join(report)) or _HAZARD.match(head)):
            log.tool_messages.append(" ".join(report))
        else:
            log.findings.append(parse_report(report))
    if racecheck is not None:
        log.errors, log.warnings = racecheck
    else:
        log.errors = error_summary
    return log


def group_findings(findings: list[SanitizerFinding]) -> list[SanitizerFinding]:
    """One finding per (kind, severity, kernel, place), in the order first seen, its count summed.

    memcheck writes one report per faulting thread (24 for a 24-thread tail write); the table
    shows the first of them and how many there were.
    """
    grouped: dict[tuple, SanitizerFinding] = {}
    for finding in findings:
        key = (finding.kind, finding.severity, finding.kernel, finding.location or finding.pc_offset)
        if key in grouped:
            grouped[key].count += finding.count
        else:
            grouped[key] = replace(finding)
    return list(grouped.values())
