"""The correctness check's records: what vN/correctness.json holds, and how it is read back.

Plain data, no torch: the final report, the workspace and the experience log read these
records on machines where nothing runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from kernel_opt.core.records import (
    UNSET,
    ErrorRecord,
    Section,
    check_schema,
    field_values,
    list_of,
    read_record,
    section_of,
    to_json,
)
from kernel_opt.run.environment import RunEnvironment
from kernel_opt.run.memory import MemoryUse
from kernel_opt.solution.build_record import BuildRecord, BuiltKernel

CORRECTNESS_FILE = "correctness.json"
CORRECTNESS_SCHEMA = "kernel_opt.correctness/1"

Verdict = Literal["pass", "fail", "usage_error", "solution_error", "environment_error"]


@dataclass
class Mismatch:
    index: list[int]
    actual: float | str
    expected: float | str


@dataclass
class OutputComparison:
    name: str
    dtype: str
    shape: list[int]
    numel: int
    atol: float | None  # None under the reference-error rule
    rtol: float | None
    passed: bool
    mismatches: int
    nonfinite_unexpected: int  # NaN/Inf where the reference is finite
    nan_unexpected: int  # NaN where the reference is finite: unwritten (poison) or computed NaN
    max_abs_error: float | str | None
    max_rel_error: float | str | None  # over elements with |expected| > atol
    norm_rel_error: float | str | None  # ||actual - expected|| / ||expected|| over finite pairs
    zeros_would_pass: bool  # an all-zero output would be within tolerance: the check is weak
    first_mismatches: list[Mismatch] = field(default_factory=list)  # expected: the float64 truth under that rule
    # Which rule judged it (check/tolerance.py): "atol/rtol" against the reference's output (explicit
    # tolerances, integer outputs, or no float64 truth), or "reference error" against the float64 truth.
    tolerance_rule: str = "atol/rtol"
    solution_error: float | str | None = None  # ||actual - truth|| / ||truth||
    reference_error: float | str | None = None  # ||reference - truth|| / ||truth||: the reference's own rounding
    allowed_error: float | str | None = None  # max(multiple x reference_error, dtype floor), plus the absolute floor
    element_bound: float | str | None = None  # the largest |actual_i - truth_i| allowed for any element
    # Within KernelBench's atol = rtol = 1e-2 of the reference but not within the reference-error rule:
    # less precise arithmetic than the reference's (check/tolerance.py). Under --kernelbench-tolerances the
    # output passes anyway and the error fields above are the reference-error rule's.
    precision_downgrade: bool = False
    # Where the tolerance in force (explicit atol/rtol, or KernelBench's) would pass an output that carries no
    # information: which one and at what, e.g. "an all-zero output would pass at KernelBench's atol = rtol = 1e-2".
    # That tolerance cannot judge it, so the reference-error rule did (check/tolerance.py).
    tolerance_cannot_judge: str | None = None
    # Under --kernelbench-tolerances: KernelBench's own verdict on this output (atol = rtol = 1e-2 against the
    # reference's output), and whether it passes only there (a precision downgrade where the rounding probe shows
    # one, a wrong result otherwise: check/integrity/verdict.py).
    kernelbench_would_pass: bool | None = None
    kernelbench_only: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The record; the reference-error rule's fields only where that rule judged it (older records stay as read)."""
        payload = asdict(self)
        for name, unset in _OPTIONAL_FLAGS.items():
            if payload[name] == unset:
                del payload[name]
        if self.tolerance_rule == "atol/rtol":
            for name in _REFERENCE_RULE_FIELDS:
                if payload[name] is None:
                    del payload[name]
            del payload["tolerance_rule"]
        return payload

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> OutputComparison:
        mismatches = [Mismatch(**item) for item in payload.get("first_mismatches") or []]
        return cls(**field_values(cls, payload, first_mismatches=mismatches))


_REFERENCE_RULE_FIELDS = ("solution_error", "reference_error", "allowed_error", "element_bound")
_OPTIONAL_FLAGS = {"precision_downgrade": False, "tolerance_cannot_judge": None, "kernelbench_would_pass": None,
                   "kernelbench_only": False}  # written only where they say something


@dataclass
class CaseResult:
    """One case: its outputs' comparisons, and what each integrity check around its call found (check/integrity).

    A check's finding lies under the key the check names: the input-mutation check's under
    `modified_inputs` (always written), any other's in `findings`, written at the case's top level.
    """

    dims: dict[str, Any]
    seed: int
    passed: bool
    outputs: list[OutputComparison]
    modified_inputs: list[str] = field(default_factory=list)
    findings: dict[str, Any] = field(default_factory=dict)

    def finding(self, key: str) -> Any:
        """What the check that keeps its finding under `key` found in this case (None: nothing recorded)."""
        return getattr(self, key) if key in _CASE_FIELDS else self.findings.get(key)

    def to_dict(self) -> dict[str, Any]:
        payload = {**asdict(self), "outputs": [output.to_dict() for output in self.outputs]}
        findings = payload.pop("findings")
        return {**payload, **findings}

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> CaseResult:
        outputs = [OutputComparison.from_dict(item) for item in payload.get("outputs") or []]
        findings = {key: value for key, value in payload.items() if key not in _CASE_FIELDS}
        return cls(**field_values(cls, payload, outputs=outputs, modified_inputs=payload.get("modified_inputs") or [],
                                  findings=findings))


_CASE_FIELDS = frozenset(item.name for item in fields(CaseResult)) - {"findings"}


@dataclass
class SanitizerFinding:
    """One kind of report from compute-sanitizer, at one place: the first report of it and how many there were."""

    kind: str  # "Invalid __global__ write of size 4 bytes", "Race between Write access and Read access", ...
    severity: str  # "error", or "warning" (racecheck's lower level, counted as a finding too)
    kernel: str | None  # "tail_write(float *, int)"; None for a CUDA API error
    location: str | None  # "oob.cu:6": the source line, where the kernel carries line info
    pc_offset: str | None  # "+0x90": where in the kernel, also without line info
    thread: str | None  # "(232,0,0)", of the first report
    block: str | None  # "(3,0,0)"
    address: str | None  # the memory address the first report names
    detail: str | None  # "out of bounds; 1 bytes after the nearest allocation at 0x... of size 4,000 bytes"
    count: int = 1  # reports of this kind at this place (racecheck: the hazards it aggregated)


@dataclass
class SanitizerRun:
    """How compute-sanitizer ran one correctness case (correctness_check.py --sanitize) and what it found."""

    tool: str  # memcheck, racecheck, initcheck, synccheck
    command: str | None = None  # the compute-sanitizer prefix the child process ran under
    version: str | None = None
    log_file: str | None = None  # its whole text output
    exit_code: int | None = None  # compute-sanitizer's own (its --error-exitcode when it found errors)
    completed: bool = False  # its summary line was read: without it, no count below is final
    errors: int | None = None  # ERROR SUMMARY (racecheck: the errors of RACECHECK SUMMARY)
    warnings: int = 0  # racecheck's warnings
    not_printed: int = 0  # errors past --print-limit: counted, not shown
    findings: list[SanitizerFinding] = field(default_factory=list)  # grouped by kind, kernel and place
    tool_messages: list[str] = field(default_factory=list)  # what it said that is no finding (its own errors)

    @property
    def finding_count(self) -> int:
        return (self.errors or 0) + self.warnings

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> SanitizerRun:
        findings = [SanitizerFinding(**field_values(SanitizerFinding, item)) for item in payload.get("findings") or []]
        return cls(**field_values(cls, payload, findings=findings))


@dataclass
class DeviceInfo(Section):
    """Where the check ran: "cuda" with the GPU's name and compute capability, or "cpu" (the Triton interpreter)."""

    type: str
    name: str | None = None
    compute_capability: str | None = None  # "9.0"


@dataclass
class ToleranceEntry(Section):
    """The rule one output was judged by (check/tolerance.py), as run.events.ToleranceEvent reported it."""

    output: str
    dtype: str
    rule: str | None  # "atol/rtol" or "reference error"; absent in records written before the rule existed
    atol: float | None
    rtol: float | None
    multiple: float | None  # the reference-error rule: allowed = max(multiple x reference error, floor)
    floor: float | None
    source: str  # where the tolerance comes from: "dtype default", "ref.py", the command line, ...


@dataclass
class CheckSubject(Section):
    """What a verdict is about (check/reuse.py): the files' contents and the build options; {} in older records."""

    solution_sha256: str | None = UNSET
    reference_sha256: str | None = UNSET
    arch: str | None = UNSET
    nvcc_flags: str | None = UNSET


SUBJECT_FIELDS = ("solution_sha256", "reference_sha256", "arch", "nvcc_flags")


@dataclass
class CorrectnessReport:
    """vN/correctness.json: the verdict, every case with its evidence, and how the check ran."""

    verdict: Verdict
    solution: str
    reference: str
    backend: str
    device: DeviceInfo | None
    interpreter: bool
    command: str
    dims: dict[str, Any]
    seeds: list[int]
    cases: list[CaseResult] = field(default_factory=list)
    planned_cases: int = 0
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tolerances: list[ToleranceEntry] = field(default_factory=list)
    build: BuildRecord | None = None  # a backend with a build step (CUDA: arch, command, kernels, signature)
    # The integrity checks' results (check/integrity), each under the key its check names ("launches": the
    # profiled call's kernels and streams; "rounding_probe": whether the outputs follow the float32 inputs'
    # low bits), in the order they ran; written at the record's top level, after "build".
    # Each stays the JSON its check wrote: the check reads it back itself (IntegrityCheck.read), so a check
    # registered from outside the package needs no type here.
    integrity: dict[str, dict[str, Any]] = field(default_factory=dict)
    error: ErrorRecord | None = None
    environment: RunEnvironment = field(default_factory=RunEnvironment)
    subject: CheckSubject = field(default_factory=CheckSubject)
    sanitizer: SanitizerRun | None = None  # --sanitize: the tool, its command and its findings
    kernelbench_tolerances: bool = False  # judged at KernelBench's atol = rtol = 1e-2 (--kernelbench-tolerances)
    memory: MemoryUse | None = None  # each step's peak GPU memory and what the memory plan chose (run/memory.py)
    phases_s: dict[str, float] = field(default_factory=dict)  # where the worker's wall time went, summed per phase
    sizes_note: str | None = None  # why the cases ran at smaller sizes than asked (the interpreter's reach)
    schema: str = CORRECTNESS_SCHEMA

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def precision_downgrades(self) -> list[str]:
        """The outputs shown computed in a lower precision than the reference: those the rounding probe finds ignoring
        an input's low bits. An error within KernelBench's 1e-2 but outside the reference's rounding (an output's
        precision_downgrade flag) is only a suspicion: a small wrong term looks the same."""
        return self.rounding_downgrades

    @property
    def kernelbench_only_outputs(self) -> list[str]:
        """Under --kernelbench-tolerances: the outputs that pass only at KernelBench's 1e-2 in some case, each once."""
        return list(dict.fromkeys(output.name for case in self.cases for output in case.outputs
                                  if output.kernelbench_only))

    @property
    def rounding_downgrades(self) -> list[str]:
        """The outputs the rounding probe found ignoring an input's low bits (check/integrity/rounding_probe.py
        writes them beside its probes; read as written)."""
        return list((self.integrity.get("rounding_probe") or {}).get("downgraded_outputs") or [])

    def to_dict(self) -> dict[str, Any]:
        """The record; sections that did not apply (no --sanitize, an integrity check that did not run, the project's
        own tolerance rule) are left out, so records read as they did before those existed."""
        fields_ = {"passed": self.passed, **{item.name: to_json(getattr(self, item.name)) for item in fields(self)}}
        integrity = fields_.pop("integrity")
        payload: dict[str, Any] = {}
        for key, value in fields_.items():
            payload[key] = value
            if key == "build":  # where the launch check and the rounding probe have always been written
                payload.update(integrity)
        if self.sanitizer is None:
            del payload["sanitizer"]
        if not self.kernelbench_tolerances:
            del payload["kernelbench_tolerances"]
        if self.memory is None:
            del payload["memory"]
        if not self.phases_s:
            del payload["phases_s"]
        if self.sizes_note is None:
            del payload["sizes_note"]
        return payload

    @classmethod
    def from_dict(cls, payload: dict[str, Any], what: str = CORRECTNESS_FILE) -> CorrectnessReport:
        """The record as written; "passed" follows from the verdict, so it is read only where the verdict is missing.

        Every other object at the top level is an integrity check's result (check/integrity), kept under its key.
        """
        check_schema(payload, CORRECTNESS_SCHEMA, what)
        cases = [CaseResult.from_dict(case) for case in payload.get("cases") or []]
        verdict = payload.get("verdict")
        if verdict is None and "passed" in payload:  # a record that says only whether it passed
            verdict = "pass" if payload["passed"] is True else "fail"
        sanitizer = SanitizerRun.from_dict(payload["sanitizer"]) if payload.get("sanitizer") else None
        integrity = {key: value for key, value in payload.items()
                     if key not in _REPORT_FIELDS and isinstance(value, dict)}
        sections = {name: reader(payload[name]) for name, reader in _SECTION_READERS.items() if name in payload}
        return cls(**field_values(cls, payload, cases=cases, verdict=verdict, sanitizer=sanitizer,
                                  integrity=integrity, schema=CORRECTNESS_SCHEMA, **sections))

    @property
    def file_stem(self) -> str:
        """correctness, or correctness_<tool> for a --sanitize run: one case must never replace the full check."""
        return "correctness" if self.sanitizer is None else f"correctness_{self.sanitizer.tool}"

    def build_kernels(self) -> list[BuiltKernel]:
        """The kernels the CUDA build reported (name, registers, spills...); [] without a build record."""
        return list((self.build.kernels if self.build else None) or [])


_REPORT_FIELDS = frozenset(item.name for item in fields(CorrectnessReport)) | {"passed"}
_SECTION_READERS = {"device": section_of(DeviceInfo), "tolerances": list_of(ToleranceEntry),
                    "build": section_of(BuildRecord), "error": section_of(ErrorRecord),
                    "environment": section_of(RunEnvironment), "subject": section_of(CheckSubject),
                    "memory": section_of(MemoryUse)}


KERNELBENCH_WOULD_PASS = "KernelBench's rule (atol = rtol = 1e-2) would pass it"


def output_failure_text(output: OutputComparison, downgrade_shown: bool | None = None) -> str:
    """Why one output failed, in one sentence: the rule it broke and the evidence.

    `downgrade_shown` is what the rounding probe said of this output (None where the caller cannot know): an error
    within KernelBench's 1e-2 is called a precision downgrade only on the probe's word.
    """
    if output.tolerance_rule == "reference error":
        over = f"{output.mismatches} of {output.numel} elements off by more than {_number(output.element_bound)}"
        text = over + " from the float64 truth"
        if _is_number(output.solution_error) and _is_number(output.allowed_error):
            text += (f"; normwise error {output.solution_error:.3g} against allowed {output.allowed_error:.3g} "
                     f"(the reference's own error is {_number(output.reference_error)})")
    else:
        text = f"{output.mismatches} of {output.numel} elements outside atol={output.atol:g}, rtol={output.rtol:g}"
    if output.precision_downgrade:
        text += "; " + _within_kernelbench_text(downgrade_shown)
    if output.nan_unexpected:
        text += f"; {output.nan_unexpected} still NaN (never written, or NaN computed)"
    elif output.nonfinite_unexpected:
        text += f"; {output.nonfinite_unexpected} Inf where the reference is finite"
    elif _is_number(output.max_abs_error) and _is_number(output.max_rel_error):
        text += f"; max abs error {output.max_abs_error:.3g}, max rel error {output.max_rel_error:.3g}"
    if output.tolerance_cannot_judge:
        text = f"{output.tolerance_cannot_judge}, so the reference-error rule judged it: {text}"
    return text + (f"; {KERNELBENCH_WOULD_PASS}" if output.kernelbench_would_pass else "")


def _within_kernelbench_text(downgrade_shown: bool | None) -> str:
    within = "within KernelBench's atol = rtol = 1e-2 but not within the reference's own rounding"
    if downgrade_shown is None:
        return within
    if downgrade_shown:
        return (f"a precision downgrade: {within}, and the rounding probe shows inputs rounded to a lower precision "
                "(TF32, bf16 or fp16 arithmetic in a float32 problem)")
    return (f"{within}, and nothing shows lower-precision arithmetic (the rounding probe found no input rounded): a "
            "wrong result, such as a missing or extra term or a wrong index, not a precision downgrade")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: Any) -> str:
    return f"{value:.3g}" if _is_number(value) else str(value)


def read_correctness(folder: Path) -> CorrectnessReport | None:
    """folder/correctness.json (a version's), or None where there is none."""
    return read_record(folder / CORRECTNESS_FILE, CorrectnessReport.from_dict)
