"""The compile check of a ModelNew that builds CUDA with load_inline, on a machine without a GPU.

load_inline writes its sources (main.cpp with the pybind11 bindings, cuda.cu) and then builds
them; the build needs a GPU build of torch to link, the sources only need the compilers. So the
solution file is imported in a child process (`python -m kernel_opt.backends.modelnew.inline_build`)
with torch's build step replaced by a recorder: every extension the file builds is written out
by torch itself, exactly as it would be on the GPU machine, and recorded with its flags. The
parent then compiles each source without linking: cuda.cu with nvcc for the target architecture
into an object beside it (ptxas's resource report kept with it, for static analysis), main.cpp with
the host compiler (syntax only). A compiler error is the solution's (exit 3, compile_error, the
compiler's lines); a missing compiler is this machine's (exit 4), and so is a missing header that
a GPU machine has: torch's, the CUDA libraries', or one an installed header includes (exit 4,
missing_headers).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kernel_opt.core.errors import EnvironmentFault, SolutionError
from kernel_opt.env.toolkit_headers import CUDA_LIBRARY_HEADER_PREFIXES, toolkit_include_flags

CAPTURE_TIMEOUT_S = 300
COMPILE_TIMEOUT_S = 600
MAX_ERROR_LINES = 6
# What torch's own build passes nvcc for an extension (torch.utils.cpp_extension.COMMON_NVCC_FLAGS, stable
# across the versions this skill supports): half and bfloat16 operators off, relaxed constexpr.
TORCH_NVCC_FLAGS = ("-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__", "--expt-relaxed-constexpr")


OBJECTS_FILE = "objects.json"  # under the build folder: what the last compile check compiled, for static analysis


@dataclass
class CompiledSource:
    """One CUDA source of an extension compiled without linking: its object and what nvcc and ptxas printed."""

    extension: str
    source: str
    object: str
    command: list[str]
    compiler_output: str


@dataclass
class InlineExtension:
    """One extension the solution asked load_inline (or load) to build: its sources as torch wrote them."""

    name: str
    sources: list[str]
    extra_cflags: list[str] = field(default_factory=list)
    extra_cuda_cflags: list[str] = field(default_factory=list)
    extra_include_paths: list[str] = field(default_factory=list)


# --- the child: import the solution with torch's build step recorded, not run ------------------------------------


def capture(solution: Path, build_dir: Path, result: Path) -> None:
    """Import `solution` with cpp_extension's build replaced by a recorder; write what it asked for to `result`."""
    import inspect

    import torch.utils.cpp_extension as cpp_extension

    from kernel_opt.solution.contract import load_module

    os.environ["TORCH_EXTENSIONS_DIR"] = str(build_dir)
    asked: list[InlineExtension] = []
    signature = inspect.signature(cpp_extension._jit_compile)  # its parameters differ between torch versions

    def record(*args, **kwargs):
        given = signature.bind_partial(*args, **kwargs).arguments
        asked.append(InlineExtension(given["name"], [str(Path(s).resolve()) for s in given["sources"]],
                                     list(given.get("extra_cflags") or []), list(given.get("extra_cuda_cflags") or []),
                                     list(given.get("extra_include_paths") or [])))
        return _NotBuilt(given["name"])

    cpp_extension._jit_compile = record
    load_module(solution, "solution")
    result.write_text(json.dumps([asdict(extension) for extension in asked]))


class _NotBuilt:
    """What the recorder hands back for a module: any function of it says it was compiled, not built."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        def not_built(*_args, **_kwargs):
            raise RuntimeError(f"extension {self._name!r} was only compiled (no GPU here): {attribute} cannot run")
        return not_built


# --- the parent: run the child, then the compilers -----------------------------------------------------------------


def compile_inline_extensions(solution: Path, build_dir: Path, arch: str) -> list[InlineExtension]:
    """Every extension the solution builds, compiled without linking for `arch`; their records.

    Raises SolutionError (import_error or compile_error) for the solution's faults and
    EnvironmentFault where a compiler is missing.
    """
    extensions = _captured(solution, build_dir)
    nvcc, host = shutil.which("nvcc"), shutil.which("c++") or shutil.which("g++")
    if nvcc is None or host is None:
        raise EnvironmentFault(f"compiling {solution.name}'s load_inline sources needs nvcc and a C++ compiler on "
                               "PATH", kind="no_compiler")
    includes = _includes(nvcc, build_dir)
    sources = [(extension, source) for extension in extensions for source in extension.sources]
    commands = [(extension.name, _nvcc_command(nvcc, source, extension, arch, includes) if source.endswith(".cu")
                 else _host_command(host, source, extension, includes)) for extension, source in sources]
    compiled = []
    for (extension, source), (_, command, finished) in zip(sources, _run_compilers(commands), strict=True):
        _judge_compiler(command, finished, solution, extension)
        if source.endswith(".cu"):
            compiled.append(CompiledSource(extension.name, source, object_path(source), command,
                                           (finished.stdout or "") + (finished.stderr or "")))
    (build_dir / OBJECTS_FILE).write_text(json.dumps({"solution": str(solution.resolve()), "arch": arch,
                                                       "sources": [asdict(item) for item in compiled]}))
    return extensions


def compiled_sources(solution: Path, build_dir: Path, arch: str) -> list[CompiledSource]:
    """The solution's CUDA sources compiled for `arch`: the last compile check's objects where they are newer than
    the solution (evaluate's CPU check has just made them: a second compile of torch's headers costs a minute or
    two), else compiled now."""
    record = build_dir / OBJECTS_FILE
    try:
        kept = json.loads(record.read_text())
        sources = [CompiledSource(**item) for item in kept["sources"]]
        fresh = (kept["solution"] == str(solution.resolve()) and kept["arch"] == arch
                 and record.stat().st_mtime >= solution.stat().st_mtime
                 and all(Path(item.object).is_file() for item in sources))
    except (OSError, ValueError, KeyError, TypeError):
        fresh = False
    if not fresh:
        compile_inline_extensions(solution, build_dir, arch)
        sources = [CompiledSource(**item) for item in json.loads(record.read_text())["sources"]]
    return sources


def _captured(solution: Path, build_dir: Path) -> list[InlineExtension]:
    from kernel_opt.run.runner import child_environment

    build_dir.mkdir(parents=True, exist_ok=True)
    result = build_dir / "inline_sources.json"
    result.unlink(missing_ok=True)
    environment = child_environment()
    command = [sys.executable, "-m", "kernel_opt.backends.modelnew.inline_build", str(solution.resolve()),
               str(build_dir.resolve()), str(result.resolve())]
    try:
        finished = subprocess.run(command, capture_output=True, text=True, timeout=CAPTURE_TIMEOUT_S, env=environment)
    except subprocess.TimeoutExpired as error:
        raise SolutionError(f"importing {solution.name} took over {CAPTURE_TIMEOUT_S} s", kind="timeout") from error
    if finished.returncode != 0 or not result.is_file():
        lines = [line for line in finished.stderr.strip().splitlines() if line.strip()]
        raise SolutionError(f"{solution.name} failed to import: {lines[-1] if lines else 'no message'}",
                            kind="import_error", hint="\n".join(lines[-15:]))
    return [InlineExtension(**entry) for entry in json.loads(result.read_text())]


# The one header torch's CUDA build generates that a CPU build of torch lacks, though it ships the c10/cuda
# headers that include it (c10/cuda/CUDAMacros.h); a wheel's value is a shared-library build.
CUDA_BUILD_ONLY_HEADERS = {"c10/cuda/impl/cuda_cmake_macros.h": "#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n"}
TORCH_HEADER_ROOTS = ("c10/", "ATen/", "torch/", "caffe2/")
# A missing include as the host compiler reports it ("FILE:LINE:COL: fatal error: HEADER: No such file ...") and as
# nvcc's front end does ("FILE(LINE): catastrophic error: cannot open source file "HEADER"").
_MISSING_INCLUDE = (re.compile(r"^(?P<file>[^\n:]+):\d+(?::\d+)?: fatal error: (?P<header>[^\s:]+): No such file",
                               re.MULTILINE),
                    re.compile(r'^(?P<file>[^\n(]+)\(\d+\): catastrophic error: cannot open source file '
                               r'"(?P<header>[^"]+)"', re.MULTILINE))


def _includes(nvcc: str, build_dir: Path) -> list[str]:
    """The CUDA toolkit's headers (the host compiler does not know them), where this torch is a CPU build the headers
    only its CUDA build generates (as that build writes them), torch's own and Python's."""
    import sysconfig

    from torch.utils.cpp_extension import include_paths

    roots = [Path(path) for path in include_paths()]
    flags = toolkit_include_flags(nvcc)
    stubs = build_dir / "cuda_build_headers"
    for header, text in CUDA_BUILD_ONLY_HEADERS.items():
        if not any((root / header).is_file() for root in roots):
            (stubs / header).parent.mkdir(parents=True, exist_ok=True)
            (stubs / header).write_text(text)
            flags.append(f"-I{stubs}")
    flags += [f"-I{path}" for path in [*roots, sysconfig.get_paths()["include"]]]
    return list(dict.fromkeys(flags))


def _defines(extension: InlineExtension) -> list[str]:
    return [f"-DTORCH_EXTENSION_NAME={extension.name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]


def object_path(source: str) -> str:
    """Where a CUDA source's object goes: beside it."""
    return str(Path(source).with_suffix(".o"))


def _nvcc_command(nvcc: str, source: str, extension: InlineExtension, arch: str, includes: list[str]) -> list[str]:
    """nvcc's command for one source: its object (object_path) and ptxas's resource report (-Xptxas -v)."""
    number = arch.removeprefix("sm_")
    return [nvcc, "-c", source, "-o", object_path(source), "-Xptxas", "-v", "-std=c++17",
            "--compiler-options", "-fPIC",
            f"-gencode=arch=compute_{number},code=sm_{number}", *TORCH_NVCC_FLAGS, *_defines(extension),
            *includes, *(f"-I{path}" for path in extension.extra_include_paths), *extension.extra_cuda_cflags]


def _host_command(host: str, source: str, extension: InlineExtension, includes: list[str]) -> list[str]:
    return [host, "-fsyntax-only", "-std=c++17", "-fPIC", source, *_defines(extension), *includes,
            *(f"-I{path}" for path in extension.extra_include_paths), *extension.extra_cflags]


def _run_compilers(commands: list[tuple[str, list[str]]]) -> list[tuple[str, list[str], subprocess.CompletedProcess]]:
    """Every command at once (each parses torch's headers for tens of seconds); (extension, command, result)."""
    started = [(name, command, subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
               for name, command in commands]
    finished = []
    for name, command, process in started:
        try:
            stdout, stderr = process.communicate(timeout=COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            stderr += f"\nerror: the compiler took over {COMPILE_TIMEOUT_S} s and was stopped"
        finished.append((name, command, subprocess.CompletedProcess(command, process.returncode, stdout, stderr)))
    return finished


def missing_includes(output: str) -> list[tuple[str, str]]:
    """(including file, missing header) for every include the compiler could not open."""
    return [(found["file"].strip(), found["header"])
            for pattern in _MISSING_INCLUDE for found in pattern.finditer(output)]


def machine_gap(missing: list[tuple[str, str]], own_files: list[str]) -> str | None:
    """Why a missing header is this machine's and not the solution's, or None where the solution asked for it.

    Torch's headers and the CUDA libraries' come with a GPU build of torch and a full toolkit; a header that an
    installed header includes (not a file of the solution's) is the installation's.
    """
    own = [Path(path).resolve() for path in own_files]
    for including, header in missing:
        path = Path(including).resolve()
        if not any(path == mine or path.is_relative_to(mine) for mine in own):
            return f"{header}, which the installed header {including} includes, is not on this machine"
        if header.startswith(TORCH_HEADER_ROOTS):
            return (f"it includes {header}, which this machine's torch does not ship (a CPU build of torch lacks "
                    "some of its CUDA build's headers)")
        if header.startswith(CUDA_LIBRARY_HEADER_PREFIXES):
            return f"it includes {header}, a CUDA library header this machine's CUDA toolkit does not hold"
    return None


def _judge_compiler(command: list[str], finished: subprocess.CompletedProcess, solution: Path,
                    extension: InlineExtension) -> None:
    if finished.returncode == 0:
        return
    output = (finished.stderr or "") + (finished.stdout or "")
    gap = machine_gap(missing_includes(output), [*extension.sources, *extension.extra_include_paths])
    if gap:  # the check cannot judge the source here; a GPU machine's torch and toolkit have what is missing
        raise EnvironmentFault(f"{solution.name}'s CUDA extension {extension.name!r} cannot be compiled on this "
                               f"machine: {gap}. A GPU machine's torch and CUDA toolkit have it: check it there",
                               kind="missing_headers", hint=f"{shlex.join(command)}\n{output[-1500:]}")
    errors = [line.strip() for line in output.splitlines() if "error" in line.lower()]
    raise SolutionError(f"{solution.name}'s CUDA extension {extension.name!r} does not compile: "
                        + "; ".join(errors[:MAX_ERROR_LINES] or output.strip().splitlines()[-1:]),
                        kind="compile_error", hint=f"{shlex.join(command)}\n{output[-1500:]}")


if __name__ == "__main__":
    capture(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
