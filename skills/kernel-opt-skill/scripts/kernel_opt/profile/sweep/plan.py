"""A size sweep's plan: which dim, which sizes, what nsight-python collects, and how its child starts.

Everything here is decided before anything runs and is a pure function of the command line
(the dims are checked against ref.py's syntax tree by solution/dims.check_dims, as every
command's are), so it is tested exactly on a machine without a GPU.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_opt.core.cli import parse_dim_value
from kernel_opt.core.errors import EnvironmentFault, UsageError
from kernel_opt.solution.dims import check_dims

# What nsight-python collects per annotation: the kernels' duration (ns) and their DRAM traffic
# (bytes read + bytes written, both names exist unchanged from Volta to Hopper). ncu_report hands
# them in its base units, nanoseconds and bytes.
TIME_METRIC = "gpu__time_duration.sum"
DRAM_METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
SWEEP_METRICS = (TIME_METRIC, *DRAM_METRICS)

# The annotations of every size, in the order they run: nsight-python names its rows by them.
SOLUTION_ANNOTATION = "solution"
REFERENCE_ANNOTATION = "reference"
# An elementwise copy kernel moving the problem's minimum bytes (half read, half written), profiled the
# same way: the same-size copy roof. A problem of tens of MB ends with part of its output still dirty in the 50 MB
# L2, which ncu's clock does not wait for, so a honest kernel can pass the datasheet's bandwidth
# (a Triton softmax at N = 2048 read 102.2% of it on an H100, 2026-11-25); a copy of the same size
# gets the same benefit, and the % of ceiling takes the stricter roof, as the benchmark's does.
COPY_ANNOTATION = "copy"

# The phase the child announces before each size: the parent files what follows under that size.
SIZE_PHASE = "sweep_size"
FRAME_FILE = "frame.csv"  # one size's DataFrame, in that size's nsight-python folder

# Runs per size: nsight-python averages them and flags a spread over 2% (StableMeasurement).
DEFAULT_SWEEP_RUNS = 3
MIN_SWEEP_VALUES = 2
SWEEP_SEED = 0  # the inputs ref.py's setup(seed=0) makes: the ones checked and the ones profiled
# The child reports each size as it starts; a size that takes longer than this without a word
# (a hung kernel under ncu) has its process group killed.
DEFAULT_SWEEP_TIMEOUT_S = 600.0

# Columns nsight-python 0.9.6 writes itself; the swept dim's column is named after the dim, so it
# must not be one of them.
NSIGHT_COLUMNS = frozenset({
    "Annotation", "Value", "Metric", "Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "AvgValue", "StdDev",
    "MinValue", "MaxValue", "NumRuns", "CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "StableMeasurement",
    "Normalized", "Geomean",
})

CHILD_SCRIPT = Path(__file__).resolve().with_name("nsight_child.py")
_SWEEP_ARGUMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$")


@dataclass(frozen=True)
class SweepPlan:
    """One dim over several sizes; the other dims as the command line gives them (ref.py's defaults otherwise)."""

    name: str
    values: tuple[int, ...]
    dims: dict[str, Any] = field(default_factory=dict)

    def dims_at(self, value: int) -> dict[str, Any]:
        return {**self.dims, self.name: value}

    def argument(self) -> str:
        """The plan as `--sweep` takes it: N=1024,2048."""
        return f"{self.name}={','.join(str(value) for value in self.values)}"


def parse_sweep(text: str) -> tuple[str, tuple[int, ...]]:
    """'N=4096,1024,2048' -> ('N', (1024, 2048, 4096)): integer sizes, at least two, no repeats, ascending."""
    match = _SWEEP_ARGUMENT.match(text.strip())
    if not match:
        raise UsageError(f"--sweep {text!r}: write it NAME=V1,V2,... (e.g. --sweep N=1024,2048,4096,8192)",
                         hint="NAME is one of ref.py's setup() sizes; the values are integers")
    name, listed = match.groups()
    values: list[int] = []
    for piece in listed.split(","):
        value = parse_dim_value(piece.strip())
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or value <= 0:
            raise UsageError(f"--sweep {name}=...: {piece.strip()!r} is not a positive integer size",
                             hint=f"write integers, e.g. --sweep {name}=1024,2048,4096")
        values.append(value)
    repeated = sorted({value for value in values if values.count(value) > 1})
    if repeated:
        raise UsageError(f"--sweep {name}=...: {', '.join(map(str, repeated))} given more than once")
    if len(values) < MIN_SWEEP_VALUES:
        raise UsageError(f"--sweep {name}={listed}: a sweep needs at least {MIN_SWEEP_VALUES} sizes",
                         hint=f"for one size, profile it without --sweep: --{name}={values[0]}")
    return name, tuple(sorted(values))


def plan_sweep(text: str, dims: dict[str, Any], reference: Path, solution: Path | None = None,
               backend: str = "auto") -> SweepPlan:
    """The checked plan: the swept name must be a size ref.py takes (a usage error with "did you mean" otherwise)."""
    name, values = parse_sweep(text)
    if name in dims:
        raise UsageError(f"--{name} is the size --sweep varies: drop --{name}={dims[name]}",
                         hint=f"the sizes come from --sweep {name}=..., the other sizes from --NAME=VALUE")
    if name in NSIGHT_COLUMNS:
        raise UsageError(f"--sweep {name}=...: nsight-python names a column of its own {name!r}, so this size "
                         "cannot be swept by name", hint="rename the size in ref.py's setup()")
    checked = check_dims(reference, {**dims, name: values[0]}, solution, backend)
    return SweepPlan(name, values, {key: value for key, value in checked.items() if key != name})


# The sizes `workspace.py status` suggests at Finish: the run's own size and three below it, each
# half the next, so every size fits where the run's did.
SUGGESTED_FRACTIONS = (8, 4, 2, 1)


def suggested_sweep(dims: dict[str, Any]) -> list[str] | None:
    """`--sweep` over the run's first integer size (its value and three halvings) plus the other dims, or None.

    {"N": 4096, "D": 4096} -> ["--sweep", "N=512,1024,2048,4096", "--D=4096"]; None when no size is an
    integer of at least 8 (nothing to halve three times).
    """
    name = next((key for key, value in dims.items()
                 if isinstance(value, int) and not isinstance(value, bool) and value >= SUGGESTED_FRACTIONS[0]), None)
    if name is None:
        return None
    values = ",".join(str(dims[name] // fraction) for fraction in SUGGESTED_FRACTIONS)
    return ["--sweep", f"{name}={values}", *(f"--{key}={value}" for key, value in dims.items() if key != name)]


def nsight_options(runs: int) -> dict[str, Any]:
    """The keyword arguments of `nsight.analyze.kernel` (JSON; the child adds each size's folder and the combiner).

    - clock_control "none": this project never changes GPU clocks (ncu's default locks them at base).
    - cache_control "all": caches flushed before each replay, so every run reads its inputs from DRAM.
    - replay_mode "kernel" with the combiner summing: an annotation that launches several kernels
      (PyTorch often does) is charted as the sum of their durations and DRAM bytes; the gaps
      between launches are not counted.
    - output_csv: nsight-python's per-run table (profiled_data-*.csv) is kept beside the report.
    """
    if runs < 1:
        raise UsageError("--sweep-runs must be at least 1")
    return {
        "runs": runs,
        "metrics": list(SWEEP_METRICS),
        "output": "quiet",
        "output_csv": True,
        "clock_control": "none",
        "cache_control": "all",
        "replay_mode": "kernel",
    }


def child_program(python: str = sys.executable, script: Path = CHILD_SCRIPT) -> list[str]:
    """The sweep child's command line before its request file: the script as a file, never `-m`.

    nsight-python re-runs `sys.executable sys.argv[0] ARGS` under ncu, so the child must be
    started as a file for that second run to find it.
    """
    return [python, str(script)]


def shell_unsafe_paths(paths: dict[str, str]) -> list[str]:
    """The paths that would break nsight-python's ncu command, which it runs as one shell string unquoted."""
    return [f"{what} ({path})" for what, path in paths.items() if shlex.quote(path) != path]


def check_output_dir(output_dir: Path) -> None:
    """A usage error for an output folder nsight-python's ncu command cannot carry (a space, a shell character).

    nsight-python 0.9.6 joins ncu's command line (the Python executable, the script, its argument
    and the report's prefix) into one shell string without quoting: a space would split it.
    """
    if shell_unsafe_paths({"--output-dir": str(output_dir.resolve())}):
        raise UsageError(f"--output-dir {output_dir}: its path holds a space or a shell character, which "
                         "nsight-python's ncu command line cannot carry",
                         hint="choose an output folder whose full path has only letters, digits and -_./=+@%:,")


def check_machine_paths(paths: dict[str, str]) -> None:
    """An environment fault (exit 4) when this machine's own paths would break nsight-python's ncu command."""
    unsafe = shell_unsafe_paths(paths)
    if unsafe:
        raise EnvironmentFault(f"nsight-python cannot run the sweep from here: {', '.join(unsafe)} holds a space or "
                               "a shell character, which its ncu command line cannot carry",
                               hint="use a Python, a checkout and a TMPDIR whose paths have no spaces",
                               kind="unsafe_path")
