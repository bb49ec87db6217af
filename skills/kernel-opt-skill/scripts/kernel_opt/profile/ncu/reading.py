"""Reading a report: an .ncu-rep's launches, grouped per kernel, with canonical metrics and ncu's rule results.

Reports are read through Nsight's own Python reader `ncu_report` (the `ncu-report` pip package,
or the copy in `extras/python` beside the ncu binary), in a child process
(`python -m kernel_opt.profile.ncu REPORT`): loaded beside torch, ncu_report has crashed its
process. The child sends the launches back as one JSON line; everything after that
(`group_launches`, `profile_from_launches`) is pure and tested with test doubles of ncu_report's
actions.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernel_opt.core.errors import EnvironmentFault, ExitCode, KernelOptError, UsageError
from kernel_opt.env.probes import ncu_report_candidates
from kernel_opt.profile.ncu.collection import NVTX_RANGE, environment_for_child
from kernel_opt.profile.ncu.metric_aliases import INSTANCED_METRICS
from kernel_opt.profile.ncu.metrics import KernelMetrics, mean_metrics, metrics_from_raw
from kernel_opt.profile.ncu.raw_metrics import RawMetric, finite_number

# --- rule results ----------------------------------------------------------------------------

# ncu_report's link markup inside rule messages and tables:
# @url:<text>:<link>@, @section:<id>:<text>@, @sass:<address>:<text>@, @source:<file>:<line>:<text>@
_LINK_MARKUP = (
    re.compile(r"@url:([^:@]*):[^@]*@"),
    re.compile(r"@section:[^:@]*:([^@]*)@"),
    re.compile(r"@sass:[^:@]*:([^@]*)@"),
    re.compile(r"@source:[^:@]*:[^:@]*:([^@]*)@"),
)
_HTML_TAGS = re.compile(r"</?(?:b|i|u|em|strong|code|br|p|span)\b[^>]*>", re.IGNORECASE)
RULE_MESSAGE_MAX_CHARS = 600

# ncu_report's MsgType values, by name (the numbers are the module's own constants).
RULE_KINDS = {"MsgType_NONE": "info", "MsgType_OK": "ok", "MsgType_OPTIMIZATION": "optimization",
              "MsgType_WARNING": "warning", "MsgType_ERR": "error"}


def strip_rule_markup(text: str) -> str:
    """Rule text for people: ncu's link markup reduced to its visible text, tags removed, spaces folded."""
    for pattern in _LINK_MARKUP:
        text = pattern.sub(lambda match: match.group(1), text)
    text = _HTML_TAGS.sub(" ", text)
    return " ".join(text.split())


@dataclass
class RuleResult:
    """One of ncu's own rule results (its guided-analysis advice), link markup stripped."""

    rule: str  # rule identifier, e.g. "SOLBottleneck"
    name: str
    section: str
    kind: str  # ok, optimization, warning, error, info
    title: str
    message: str
    estimated_speedup_pct: float | None = None


def rule_from_dict(data: Mapping[str, Any], kind_names: Mapping[int, str] | None = None) -> RuleResult:
    """A RuleResult from one entry of `IAction.rule_results_as_dicts()`."""
    message = data.get("rule_message") or {}
    kind_value = message.get("type")
    kind = (kind_names or {}).get(kind_value, str(kind_value) if kind_value is not None else "info")
    text = strip_rule_markup(str(message.get("message") or ""))
    if len(text) > RULE_MESSAGE_MAX_CHARS:
        text = text[: RULE_MESSAGE_MAX_CHARS - 1].rstrip() + "…"
    speedup = data.get("speedup_estimation") or {}
    estimate = finite_number(speedup.get("speedup")) if isinstance(speedup, Mapping) else None
    return RuleResult(
        rule=str(data.get("rule_identifier") or ""),
        name=str(data.get("name") or ""),
        section=str(data.get("section_identifier") or ""),
        kind=kind,
        title=strip_rule_markup(str(message.get("title") or "")),
        message=text,
        estimated_speedup_pct=estimate,
    )


# --- reading a report ------------------------------------------------------------------------


@dataclass
class LaunchRecord:
    """One profiled kernel launch (an ncu "action")."""

    name: str  # function name, e.g. "vector_add_kernel"
    demangled_name: str
    raw: dict[str, RawMetric]
    rules: list[RuleResult]
    nvtx_ranges: list[str]  # push/pop ranges open at launch, outermost first

    @property
    def metrics(self) -> KernelMetrics:
        return metrics_from_raw(self.raw)

    def raw_value(self, name: str) -> Any:
        metric = self.raw.get(name)
        return metric.value if metric is not None else None


@dataclass
class KernelProfile:
    """All launches of one kernel with one launch configuration, merged."""

    name: str
    demangled_name: str
    launches: int
    total_duration_us: float | None
    metrics: KernelMetrics  # mean over launches
    raw_metrics: list[RawMetric]  # the first launch's, for the details report
    rules: list[RuleResult]
    inside_range: bool  # every launch was inside the NVTX range

    @property
    def launch_configuration(self) -> str:
        grid, block = self.metrics.grid_size_blocks, self.metrics.block_size_threads
        if grid is None or block is None:
            return "unknown"
        return f"{int(grid)} blocks x {int(block)} threads"


@dataclass
class ProfileReport:
    """What one .ncu-rep holds, grouped per kernel."""

    report_path: str
    reader: str  # which ncu_report was used, for the report
    device_name: str | None
    compute_capability: str | None
    kernels: list[KernelProfile]
    launches: int
    launches_outside_range: int

    @property
    def total_duration_us(self) -> float | None:
        known = [kernel.total_duration_us for kernel in self.kernels if kernel.total_duration_us is not None]
        return sum(known) if known else None


@dataclass
class ReaderLocation:
    """Where `ncu_report` can be imported from, found without importing it."""

    source: str  # for the report: which copy is used
    sys_path_entry: str | None  # folder to put first on sys.path; None when importable as installed


def locate_report_reader(ncu_path: str | None = None) -> ReaderLocation:
    """Find `ncu_report` (the ncu-report pip package, or extras/python beside ncu) without importing it.

    Importing happens only in the reading child process: loaded in a process that also holds
    torch, ncu_report has crashed that process on the GPU machine. Raises EnvironmentFault with
    the install command when there is no copy.
    """
    if importlib.util.find_spec("ncu_report") is not None:
        try:
            version = importlib.metadata.version("ncu-report")
            return ReaderLocation(f"ncu_report from the pip package ncu-report {version}", None)
        except importlib.metadata.PackageNotFoundError:
            return ReaderLocation("ncu_report importable from sys.path", None)
    for folder in ncu_report_candidates(ncu_path):
        if (folder / "ncu_report.py").is_file():
            return ReaderLocation(f"ncu_report from {folder} (shipped beside ncu)", str(folder))
    raise EnvironmentFault(
        "Nsight Compute's report reader (the Python module ncu_report) is not available here, so an .ncu-rep "
        "cannot be read: it is neither installed nor in extras/python beside an Nsight Compute install",
        hint="pip install ncu-report==<the version of the ncu that wrote the report> (e.g. 2025.3.1), or install "
        "Nsight Compute, which ships it",
        kind="no_ncu_report",
    )


def import_report_reader(location: ReaderLocation) -> Any:
    if location.sys_path_entry and location.sys_path_entry not in sys.path:
        sys.path.insert(0, location.sys_path_entry)
    try:
        return importlib.import_module("ncu_report")
    except Exception as error:
        raise EnvironmentFault(f"`import ncu_report` failed ({location.source}): {type(error).__name__}: {error}",
                               kind="no_ncu_report") from error


def _kind_names(module: Any) -> dict[int, str]:
    names: dict[int, str] = {}
    for constant, kind in RULE_KINDS.items():
        value = getattr(module, constant, None)
        if isinstance(value, int):
            names[value] = kind
    return names


def _metric_value(metric: Any) -> Any:
    try:
        return metric.value()
    except Exception:  # a metric whose value kind the reader cannot convert: absent, not fatal
        return None


def _instance_values(metric: Any) -> dict[str, float] | None:
    """An instanced metric's values keyed by their correlation id (the SASS opcode for the opcode mix)."""
    try:
        count = metric.num_instances()
        if not count:
            return None
        names = metric.correlation_ids()
        values = {str(names.as_string(index)): finite_number(metric.value(index)) for index in range(count)}
    except Exception:  # a reader (or test double) without instance access: the metric keeps its value only
        return None
    return {name: value for name, value in values.items() if value is not None} or None


def _safe_text(call, default: str = "") -> str:
    try:
        value = call()
    except Exception:
        return default
    return default if value is None else str(value)


def read_action(action: Any, kind_names: Mapping[int, str] | None = None) -> LaunchRecord:
    """Everything this project uses from one ncu_report IAction (also works on test doubles)."""
    raw: dict[str, RawMetric] = {}
    for name in action.metric_names():
        metric = action.metric_by_name(name)
        if metric is None:
            continue
        raw[name] = RawMetric(
            name=name,
            value=_metric_value(metric),
            unit=_safe_text(metric.unit),
            description=_safe_text(metric.description),
            instances=_instance_values(metric) if name in INSTANCED_METRICS else None,
        )
    rules_as_dicts = getattr(action, "rule_results_as_dicts", None)
    rules = [rule_from_dict(entry, kind_names) for entry in (rules_as_dicts() if rules_as_dicts else [])]
    demangled_base = getattr(action, "NameBase_DEMANGLED", None)
    function_name = _safe_text(action.name, "unknown kernel")
    demangled = (_safe_text(lambda: action.name(demangled_base), function_name) if demangled_base is not None
                 else function_name)
    return LaunchRecord(function_name, demangled, raw, rules, _nvtx_ranges(action))


def _nvtx_ranges(action: Any) -> list[str]:
    state_getter = getattr(action, "nvtx_state", None)
    if state_getter is None:
        return []
    try:
        state = state_getter()
        ranges: list[str] = []
        for domain_id in state.domains():
            ranges.extend(str(name) for name in state.domain_by_id(domain_id).push_pop_ranges())
        return ranges
    except Exception:  # an older report without NVTX data
        return []


def group_launches(launches: Sequence[LaunchRecord], nvtx_range: str | None = NVTX_RANGE) -> list[KernelProfile]:
    """Merge launches of the same kernel with the same grid and block; longest total duration first."""
    groups: OrderedDict[tuple, list[LaunchRecord]] = OrderedDict()
    for launch in launches:
        key = (launch.name, launch.raw_value("launch__grid_size"), launch.raw_value("launch__block_size"))
        groups.setdefault(key, []).append(launch)
    kernels: list[KernelProfile] = []
    for members in groups.values():
        per_launch = [member.metrics for member in members]
        durations = [metrics.duration_us for metrics in per_launch if metrics.duration_us is not None]
        rules: list[RuleResult] = []
        seen: set[tuple[str, str]] = set()
        for member in members:
            for rule in member.rules:
                if (rule.rule, rule.message) not in seen:
                    seen.add((rule.rule, rule.message))
                    rules.append(rule)
        kernels.append(
            KernelProfile(
                name=members[0].name,
                demangled_name=members[0].demangled_name,
                launches=len(members),
                total_duration_us=sum(durations) if durations else None,
                metrics=mean_metrics(per_launch),
                raw_metrics=sorted(members[0].raw.values(), key=lambda metric: metric.name),
                rules=rules,
                inside_range=nvtx_range is None or all(nvtx_range in member.nvtx_ranges for member in members),
            )
        )
    return sorted(kernels, key=lambda kernel: -(kernel.total_duration_us or 0.0))


def profile_from_launches(
    launches: Sequence[LaunchRecord], report_path: str, reader: str, nvtx_range: str | None = NVTX_RANGE
) -> ProfileReport:
    """A ProfileReport from launch records (the pure half of `read_profile`)."""
    first = launches[0] if launches else None
    device = first.raw_value("device__attribute_display_name") if first else None
    major = first.raw_value("device__attribute_compute_capability_major") if first else None
    minor = first.raw_value("device__attribute_compute_capability_minor") if first else None
    known = finite_number(major) is not None and finite_number(minor) is not None
    capability = f"{int(major)}.{int(minor)}" if known else None
    outside = sum(1 for launch in launches
                  if nvtx_range is not None and launch.nvtx_ranges and nvtx_range not in launch.nvtx_ranges)
    return ProfileReport(
        report_path=report_path,
        reader=reader,
        device_name=str(device) if device else None,
        compute_capability=capability,
        kernels=group_launches(launches, nvtx_range),
        launches=len(launches),
        launches_outside_range=outside,
    )


def collect_launches(module: Any, path: Path) -> list[LaunchRecord]:
    """Every action in the report, through an imported ncu_report `module` (runs in the reading child)."""
    try:
        context = module.load_report(str(path))
    except Exception as error:
        raise UsageError(
            f"{path} cannot be read as an Nsight Compute report: {type(error).__name__}: {error}") from error
    kind_names = _kind_names(module)
    launches: list[LaunchRecord] = []
    for range_index in range(context.num_ranges() if context is not None else 0):
        profiled_range = context.range_by_idx(range_index)
        for action_index in range(profiled_range.num_actions()):
            launches.append(read_action(profiled_range.action_by_idx(action_index), kind_names))
    return launches


def launch_to_dict(launch: LaunchRecord) -> dict[str, Any]:
    return {
        "name": launch.name,
        "demangled_name": launch.demangled_name,
        "raw": [[m.name, m.value, m.unit, m.description] + ([m.instances] if m.instances else [])
                for m in launch.raw.values()],
        "rules": [asdict(rule) for rule in launch.rules],
        "nvtx_ranges": launch.nvtx_ranges,
    }


def launch_from_dict(data: Mapping[str, Any]) -> LaunchRecord:
    raw = {entry[0]: RawMetric(*entry[:4], instances=entry[4] if len(entry) > 4 else None) for entry in data["raw"]}
    return LaunchRecord(data["name"], data["demangled_name"], raw, [RuleResult(**rule) for rule in data["rules"]],
                        list(data["nvtx_ranges"]))


READ_TIMEOUT_S = 600.0


def read_report_launches(path: Path, ncu_path: str | None = None) -> tuple[list[LaunchRecord], str]:
    """(launches, reader description): the report is read by `python -m kernel_opt.profile.ncu` in a child process.

    The child imports ncu_report, so a crash of its native library (seen beside torch on the GPU
    machine) ends only the child and comes back as an error with a plain message.
    """
    location = locate_report_reader(ncu_path)
    command = [sys.executable, "-m", "kernel_opt.profile.ncu", str(path)] + (["--ncu", ncu_path] if ncu_path else [])
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=READ_TIMEOUT_S,
                                   env=environment_for_child(), stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired as error:
        raise EnvironmentFault(f"reading {path} with ncu_report took more than {READ_TIMEOUT_S:.0f} s") from error
    try:
        payload = json.loads(completed.stdout.strip().splitlines()[-1]) if completed.stdout.strip() else None
    except json.JSONDecodeError:
        payload = None
    if not isinstance(payload, dict):
        raise EnvironmentFault(
            f"ncu_report crashed while reading {path} (exit status {completed.returncode}): "
            f"{completed.stderr.strip()[-800:] or 'no message'}",
            hint=f"the reader was {location.source}; try the ncu-report pip package matching the ncu that wrote it",
            kind="ncu_report_crash",
        )
    if not payload.get("ok"):
        error = payload.get("error") or {}
        error_class = {int(ExitCode.USAGE): UsageError}.get(int(error.get("exit_code", 4)), EnvironmentFault)
        raise error_class(error.get("message") or "reading the report failed", hint=error.get("hint"),
                          kind=error.get("kind"))
    return [launch_from_dict(item) for item in payload["launches"]], payload["reader"]


def read_profile(path: Path, ncu_path: str | None = None, nvtx_range: str | None = NVTX_RANGE) -> ProfileReport:
    """Read an .ncu-rep (in a child process) and return its kernels, grouped, with canonical metrics."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"report not found: {path}",
                         hint="pass the .ncu-rep that ncu_profile.py wrote (DIR/profile.ncu-rep)")
    launches, reader = read_report_launches(path, ncu_path)
    if not launches:
        raise UsageError(
            f"{path} holds no profiled kernel: it is not an Nsight Compute report, or ncu profiled nothing",
            hint="re-run ncu_profile.py; its ncu.log says what ncu did",
        )
    return profile_from_launches(launches, str(path), reader, nvtx_range)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m kernel_opt.profile.ncu REPORT [--ncu PATH]`: print the report's launches as one JSON line."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    ncu_path = None
    if "--ncu" in arguments:
        index = arguments.index("--ncu")
        ncu_path = arguments[index + 1]
        del arguments[index: index + 2]
    try:
        location = locate_report_reader(ncu_path)
        launches = collect_launches(import_report_reader(location), Path(arguments[0]))
        payload: dict[str, Any] = {"ok": True, "reader": location.source,
                                   "launches": [launch_to_dict(launch) for launch in launches]}
        code = 0
    except KernelOptError as error:
        payload, code = {"ok": False, "error": error.to_dict()}, int(error.exit_code)
    sys.stdout.write("\n" + json.dumps(payload, default=str) + "\n")
    return code
