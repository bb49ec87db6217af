"""Conventions shared by every kernel-opt CLI.

- `--NAME=VALUE` arguments that the parser does not know are problem sizes ("dims").
- `--json` prints exactly one JSON object on stdout; otherwise a short human summary.
- Errors become exit codes (see `errors.ExitCode`) and a message that says how to fix them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kernel_opt.core.dependencies import dependency_fault
from kernel_opt.core.errors import ExitCode, KernelOptError, UsageError

# skills/kernel-opt-skill/scripts: the thin wrappers beside the package (absent from a pip install).
SCRIPTS_DIR = Path(__file__).resolve().parents[2]
BROKEN_PIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for a tool whose reader closed the pipe

_DIM_ARGUMENT = re.compile(r"^--([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting, so `--json` can report it."""

    def error(self, message: str):  # noqa: D401 - argparse API
        raise UsageError(f"{self.prog}: {message}", hint=f"run `{self.prog} --help` for usage")


def make_parser(prog: str, doc: str) -> argparse.ArgumentParser:
    """A parser whose description and examples come from the command module's docstring."""
    summary, _, rest = doc.strip().partition("\n")
    return _Parser(
        prog=prog,
        description=summary,
        epilog=rest.strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # `--n=5` must be a dim, never an abbreviation of `--notes`
    )


def parse_dim_value(text: str) -> int | float | str:
    """'4096' -> 4096, '1e-5' -> 1e-05, '0x10' -> 16; anything else stays a string."""
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_args_with_dims(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> tuple[argparse.Namespace, dict[str, int | float | str]]:
    """Parse known options; every leftover must be a `--NAME=VALUE` dim."""
    args, leftovers = parser.parse_known_args(argv)
    dims: dict[str, int | float | str] = {}
    for item in leftovers:
        match = _DIM_ARGUMENT.match(item)
        if not match:
            raise UsageError(
                f"unrecognised argument {item!r}",
                hint="problem sizes are written --NAME=VALUE (e.g. --N=4096); "
                f"run `{parser.prog} --help` for the options",
            )
        dims[match.group(1)] = parse_dim_value(match.group(2))
    return args, dims


def comma_list(text: str) -> list[str]:
    """'eager,compile' -> ['eager', 'compile']; 'none' -> []: how list options (--baseline) are written."""
    return [] if text == "none" else [name.strip() for name in text.split(",") if name.strip()]


def dim_arguments(dims: dict[str, int | float | str]) -> list[str]:
    """The inverse of parse_args_with_dims' dims: {"N": 4096} -> ["--N=4096"]."""
    return [f"--{name}={value}" for name, value in dims.items()]


def print_json(payload: dict) -> None:
    sys.stdout.write(json.dumps(payload, indent=2, sort_keys=False, default=str) + "\n")


def run_command(body: Callable[[list[str]], int], argv: Sequence[str] | None) -> int:
    """Run a command body, turning KernelOptError into its exit code and message.

    An ImportError of a known package (torch, triton, ...) that a step needed is this machine's
    fault, not a bug: exit 4 with what to install (core/dependencies.py), never a traceback.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in argv
    try:
        code = int(body(argv))
        sys.stdout.flush()  # a reader that went away shows here, where the handler below can catch it
        return code
    except KernelOptError as error:
        return report_error(error, wants_json)
    except ImportError as error:
        fault = dependency_fault(error)
        if fault is None:
            raise
        return report_error(fault, wants_json)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return int(ExitCode.USAGE)
    except BrokenPipeError:
        # Whoever read stdout stopped (`... | head -1`): end as a tool killed by SIGPIPE does, quietly, and
        # point stdout at /dev/null so the interpreter's last flush cannot raise the same error again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_EXIT


def report_error(error: KernelOptError, wants_json: bool) -> int:
    """Print an error the way every command does (JSON on stdout with --json, the message on stderr); its code."""
    if wants_json:
        print_json({"ok": False, "error": error.to_dict()})
    print(f"error: {error.message}", file=sys.stderr)
    if error.hint:
        print(f"hint: {error.hint}", file=sys.stderr)
    return int(error.exit_code)


def script_command(name: str) -> str:
    """How to call another command: the wrapper in this skill's scripts/, else the console script.

    A pip-installed package has no scripts/ folder beside it, only `kernel-opt`.
    """
    if (SCRIPTS_DIR / f"{name}.py").is_file():
        return f"{python_command()} {script_path(f'{name}.py')}"
    return f"kernel-opt {name.replace('_', '-')}"


def script_path(file_name: str) -> str:
    """One of this skill's scripts as a printed command names it: relative to the working folder where the skill
    lies under it (a project's `.claude/skills/...`), so the line also runs in that folder's copy on a GPU host."""
    path = SCRIPTS_DIR / file_name
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def python_command(for_gpu: bool = False) -> str:
    """The interpreter a printed command names: `python`, or the virtual environment this one runs in.

    A step that needed its own environment (NumPy < 2.4 for the Triton interpreter) prints next steps that
    run there too; an activated environment is already `python`. A path under the working folder is
    printed relative to it (`.venv/bin/python`). A line `for_gpu`, meant for a machine with an NVIDIA GPU,
    names this machine's environment only where this machine has one (nvidia-smi): a CPU machine's
    environment does not exist on the GPU host.
    """
    if sys.prefix == sys.base_prefix or (for_gpu and shutil.which("nvidia-smi") is None):
        return "python"
    executable = Path(sys.executable).absolute()
    on_path = shutil.which("python")
    if on_path and Path(on_path).absolute().parent == executable.parent:
        return "python"
    try:
        return str(executable.relative_to(Path.cwd().absolute()))
    except ValueError:
        return str(executable)
