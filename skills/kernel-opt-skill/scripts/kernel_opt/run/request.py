"""What a parent asks of its child process: the typed `ChildRequest`, and its JSON file.

Every child reads one request file (its path is the child program's last argument): which
solution to load and how (`SolutionSpec`: its backend, its file, and what that backend prepared
in the parent), the reference, the device, the command line's sizes, the event log to write, and
one part per mode with what that mode alone needs:

- `CorrectnessPart`: the correctness check (check/child.py): seeds, tolerances, the sizes to check;
- `BenchmarkPart`: the benchmark's timing (measure/benchmark_child.py): seed, tolerances, another
  version, the work and baselines the run's cache already holds, whether it is held (run/release.py);
- `ProfileTargetPart`: the program ncu profiles (profile/target.py): warm-up and profiled calls;
- `SweepPart`: the size sweep's program (profile/sweep/nsight_child.py): the swept dim and its values.

The file is one flat JSON object, as it has always been (a kept DIR/profile_request.json reads
exactly as before): the common fields, the mode part's fields, then the backend's own prepared
values under their own names. `to_json` and `from_json` below are the only code that knows this
layout; everything else reads attributes. A backend's prepared names may not reuse a name of
the layout (`RESERVED_KEYS`).

Plain data, no torch: a parent builds it before any child starts.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kernel_opt.core.errors import UsageError


@dataclass(frozen=True)
class SolutionSpec:
    """What the child needs to load a solution: built in the parent by solution.spec.solution_spec."""

    backend: str  # the registry's name for its backend
    path: str  # the solution file (JSON: "solution")
    prepared: dict[str, Any] = field(default_factory=dict)  # the backend's Prepared.request: read by it alone
    backend_module: str | None = None  # the module defining a backend that is not built in, for the child to import

    def to_json(self) -> dict[str, Any]:
        payload = {"backend": self.backend, "solution": self.path, **self.prepared}
        return payload | ({"backend_module": self.backend_module} if self.backend_module else {})

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> SolutionSpec:
        """The spec from its keys; every key but backend, solution and backend_module is the backend's."""
        rest = {key: value for key, value in payload.items() if key not in ("backend", "solution", "backend_module")}
        return cls(payload["backend"], payload["solution"], rest, payload.get("backend_module"))


@dataclass(frozen=True)
class Tolerances:
    """The command line's tolerance options: the correctness check and the benchmark's checks judge by them."""

    atol: float | None = None
    rtol: float | None = None
    kernelbench: bool = False  # --kernelbench-tolerances (JSON: "kernelbench_tolerances")

    def to_json(self) -> dict[str, Any]:
        return {"atol": self.atol, "rtol": self.rtol, "kernelbench_tolerances": self.kernelbench}

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> Tolerances:
        return cls(payload.get("atol"), payload.get("rtol"), bool(payload.get("kernelbench_tolerances")))


class ModePart:
    """One mode's own fields. A subclass names its mode and its JSON keys, and reads and writes them."""

    mode: ClassVar[str]
    keys: ClassVar[tuple[str, ...]]  # its top-level JSON keys
    # The file says its mode where kernel_opt.child dispatches on it; the profile target and the size
    # sweep are programs of their own, which know theirs (and their files never carried one).
    names_its_mode: ClassVar[bool] = True

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> ModePart:
        raise NotImplementedError


@dataclass(frozen=True)
class CorrectnessPart(ModePart):
    """Every case (the command-line shape and SHAPES, or `shapes`) for every seed; check/child.py."""

    mode: ClassVar[str] = "correctness"
    keys: ClassVar[tuple[str, ...]] = ("seeds", "atol", "rtol", "kernelbench_tolerances", "shapes", "sanitized",
                                       "integrity_checks")

    seeds: list[int]
    tolerances: Tolerances = field(default_factory=Tolerances)
    shapes: list[dict[str, Any]] | None = None  # in place of ref.py's SHAPES (a size sweep's sizes); None: SHAPES
    # Under compute-sanitizer (check/sanitizer.py): the smallest case only, its outputs filled before the
    # reference runs, and only the integrity checks that apply under the tool.
    sanitized: bool = False
    # "module:Class" of each integrity check that is not built in, for the child to register (check/integrity).
    integrity_checks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"seeds": list(self.seeds), **self.tolerances.to_json(), "shapes": self.shapes,
                "sanitized": self.sanitized, "integrity_checks": list(self.integrity_checks)}

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> CorrectnessPart:
        return cls(list(payload["seeds"]), Tolerances.from_json(payload), payload.get("shapes"),
                   bool(payload.get("sanitized")), tuple(payload.get("integrity_checks") or ()))


@dataclass(frozen=True)
class BenchmarkPart(ModePart):
    """The solution timed at the command-line shape, with its baselines and another version; the benchmark's child.

    A held worker (`wait_for_release`) is told `baselines` and `compile_modes` only when released
    (`ChildRequest.released`): until then they are None.
    """

    mode: ClassVar[str] = "benchmark"
    keys: ClassVar[tuple[str, ...]] = ("seed", "atol", "rtol", "kernelbench_tolerances", "against", "work",
                                       "warm_compiler", "wait_for_release", "baselines", "compile_modes")

    seed: int = 0
    tolerances: Tolerances = field(default_factory=Tolerances)
    against: SolutionSpec | None = None  # the --against version, loaded beside the solution
    work: dict[str, Any] | None = None  # FLOPs and bytes from the run's cache (with "cached_from"); None: count them
    warm_compiler: bool = False  # pay torch.compile's one-off start while held
    wait_for_release: bool = False  # prepare, then wait for the parent's release line (run/release.py)
    baselines: list[str] | None = None  # "eager", "compile": the baselines still to time
    compile_modes: list[str] | None = None  # torch.compile modes still to time

    def to_json(self) -> dict[str, Any]:
        payload = {"seed": self.seed, **self.tolerances.to_json(),
                   "against": self.against.to_json() if self.against is not None else None,
                   "work": self.work, "warm_compiler": self.warm_compiler}
        payload |= {"wait_for_release": True} if self.wait_for_release else {}
        if self.baselines is not None:
            payload |= {"baselines": list(self.baselines), "compile_modes": list(self.compile_modes or [])}
        return payload

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> BenchmarkPart:
        against = SolutionSpec.from_json(payload["against"]) if payload.get("against") else None
        return cls(int(payload.get("seed") or 0), Tolerances.from_json(payload), against, payload.get("work"),
                   bool(payload.get("warm_compiler")), bool(payload.get("wait_for_release")),
                   payload.get("baselines"), payload.get("compile_modes"))


@dataclass(frozen=True)
class ProfileTargetPart(ModePart):
    """The calls ncu profiles: warm-up calls, then calls inside the NVTX range it filters on; profile/target.py."""

    mode: ClassVar[str] = "profile_target"
    keys: ClassVar[tuple[str, ...]] = ("warmup_calls", "profiled_calls", "nvtx_range")
    names_its_mode: ClassVar[bool] = False

    warmup_calls: int
    profiled_calls: int
    nvtx_range: str

    def to_json(self) -> dict[str, Any]:
        return {"warmup_calls": self.warmup_calls, "profiled_calls": self.profiled_calls, "nvtx_range": self.nvtx_range}

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> ProfileTargetPart:
        return cls(int(payload["warmup_calls"]), int(payload["profiled_calls"]), payload["nvtx_range"])


@dataclass(frozen=True)
class SweepPart(ModePart):
    """One swept dim through nsight-python, one ncu process per value; profile/sweep/nsight_child.py."""

    mode: ClassVar[str] = "sweep"
    keys: ClassVar[tuple[str, ...]] = ("seed", "sweep", "nsight_options", "frames_dir", "csv")
    names_its_mode: ClassVar[bool] = False

    name: str  # the swept dim (JSON: "sweep": {"name", "values"})
    values: list[int]
    nsight_options: dict[str, Any]  # nsight.analyze.kernel's options (profile/sweep/plan.py)
    frames_dir: str  # where each size's files go
    csv: str  # every size's DataFrame, merged
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"seed": self.seed, "sweep": {"name": self.name, "values": list(self.values)},
                "nsight_options": self.nsight_options, "frames_dir": self.frames_dir, "csv": self.csv}

    @classmethod
    def from_json(cls, payload: dict[str, Any]) -> SweepPart:
        sweep = payload["sweep"]
        return cls(sweep["name"], list(sweep["values"]), payload.get("nsight_options") or {}, payload["frames_dir"],
                   payload["csv"], int(payload.get("seed") or 0))


PARTS: dict[str, type[ModePart]] = {part.mode: part for part in (CorrectnessPart, BenchmarkPart, ProfileTargetPart,
                                                                  SweepPart)}
DEFAULT_MODE = "correctness"  # a file without "mode" read by kernel_opt.child
_COMMON_KEYS = ("mode", "backend", "solution", "backend_module", "reference", "device", "cli_dims", "events")
RESERVED_KEYS = frozenset(_COMMON_KEYS).union(*(part.keys for part in PARTS.values()))


@dataclass(frozen=True)
class ChildRequest:
    """One child's request: the solution, the problem, the event log, and its mode's part."""

    solution: SolutionSpec
    reference: str  # ref.py or a KernelBench problem file
    device: str  # "cuda" or "cpu"
    cli_dims: dict[str, Any]
    part: CorrectnessPart | BenchmarkPart | ProfileTargetPart | SweepPart
    events: str | None = None  # the JSON-lines event log; set by whoever starts the child (run/runner.py)

    @property
    def mode(self) -> str:
        return self.part.mode

    @property
    def correctness(self) -> CorrectnessPart:
        return self._part(CorrectnessPart)

    @property
    def benchmark(self) -> BenchmarkPart:
        return self._part(BenchmarkPart)

    @property
    def profile_target(self) -> ProfileTargetPart:
        return self._part(ProfileTargetPart)

    @property
    def sweep(self) -> SweepPart:
        return self._part(SweepPart)

    def _part(self, part_type: type) -> Any:
        if not isinstance(self.part, part_type):
            raise UsageError(f"a {self.mode} request has no {part_type.mode} part")
        return self.part

    def with_events(self, events: str | Path) -> ChildRequest:
        return dataclasses.replace(self, events=str(events))

    def with_part(self, **changes: Any) -> ChildRequest:
        """The same request with some of its part's fields changed."""
        return dataclasses.replace(self, part=dataclasses.replace(self.part, **changes))

    def released(self, fields: dict[str, Any]) -> ChildRequest:
        """A held benchmark worker's request once released with `fields` (run/release.py): no longer held."""
        return self.with_part(wait_for_release=False, baselines=list(fields["baselines"]),
                              compile_modes=list(fields["compile_modes"]))

    # --- the file -----------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The flat JSON object (module docstring): common fields, the part's, the events, the backend's values."""
        clashing = RESERVED_KEYS & set(self.solution.prepared)
        if clashing:
            raise UsageError(f"backend {self.solution.backend!r} prepared values named {sorted(clashing)}, which the "
                             "child request uses itself")
        spec = self.solution.to_json()
        payload = {"mode": self.mode} if self.part.names_its_mode else {}
        payload |= {"backend": spec.pop("backend"), "solution": spec.pop("solution"), "reference": self.reference,
                    "device": self.device, "cli_dims": self.cli_dims, **self.part.to_json()}
        payload |= {"events": self.events} if self.events is not None else {}
        return payload | spec  # the backend's values, then backend_module

    @classmethod
    def from_json(cls, payload: dict[str, Any], mode: str | None = None) -> ChildRequest:
        """The request in a parsed file; `mode` is the reading program's own (else the file's, else correctness)."""
        mode = payload.get("mode") or mode or DEFAULT_MODE
        part_type = PARTS.get(mode)
        if part_type is None:
            raise UsageError(f"unknown worker mode {mode!r}")
        spec = {key: value for key, value in payload.items() if key not in RESERVED_KEYS - {"backend", "solution",
                                                                                               "backend_module"}}
        return cls(SolutionSpec.from_json(spec), payload["reference"], payload.get("device", "cuda"),
                   dict(payload.get("cli_dims") or {}), part_type.from_json(payload), payload.get("events"))

    def write(self, path: Path, indent: int | None = None) -> Path:
        path.write_text(json.dumps(self.to_json(), indent=indent))
        return path

    @classmethod
    def read(cls, path: str | Path, mode: str | None = None) -> ChildRequest:
        return cls.from_json(json.loads(Path(path).read_text()), mode)
