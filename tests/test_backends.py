"""Backends are plugins: detection, the registry, and a toy third backend run through the real check.

The toy "torch ops" backend below is the whole of what a new backend takes: one module that
defines a `Backend` subclass and `BACKEND`, registered with `registry.register`. Nothing else
in the package knows about it, yet the correctness check (parent and child process), the
CLIs' --backend choices and the experience log accept it.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_opt.backends import registry
from kernel_opt.backends.base import Backend, BuildOptions, Launcher
from kernel_opt.core.errors import UsageError

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
SCRIPTS_DIR = REPO_ROOT / "skills" / "kernel-opt-skill" / "scripts"
VECTOR_ADD = REPO_ROOT / "reference" / "vector_add"

# --- the toy backend ---------------------------------------------------------------------------

_DEFINES_TORCH_SOLUTION = re.compile(r"^def\s+torch_solution\b", re.MULTILINE)


class TorchOpsLauncher(Launcher):
    """torch_solution(**kwargs), called with the keyword arguments it accepts."""

    def __init__(self, path: Path):
        from kernel_opt.solution.contract import load_module

        module = load_module(path, "solution")
        self.function = module.torch_solution
        self.setup = getattr(module, "setup", None)

    def prepared(self, values, dims, outputs):
        from kernel_opt.solution.contract import accepted_kwargs

        kwargs = accepted_kwargs(self.function, {**dims, **values})
        return lambda: self.function(**kwargs)


class TorchOpsBackend(Backend):
    """A .py defining torch_solution(**kwargs) that writes its outputs with torch ops: runs wherever torch does."""

    name = "torch_ops"
    title = "torch ops"
    suffix = ".py"
    contract = "a .py that defines torch_solution(**kwargs)"
    aliases = ("torch", "pytorch_ops")
    runs_on_cpu = True

    def claims(self, solution, source):
        return solution.suffix == ".py" and source is not None and bool(_DEFINES_TORCH_SOLUTION.search(source))

    def load(self, request):
        return TorchOpsLauncher(Path(request.solution.path))


BACKEND = TorchOpsBackend()

GOOD_TOY = """\
import torch


def torch_solution(x, y, out, **_):
    torch.add(x, y, out=out)
"""
WRONG_TOY = """\
import torch


def torch_solution(x, y, out, **_):
    torch.sub(x, y, out=out)  # plausible, finite, and wrong
"""


@pytest.fixture
def toy_backend(monkeypatch):
    """The toy registered in this process, and importable by name in the child (which inherits PYTHONPATH)."""
    registry.register(BACKEND)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")])))
    yield BACKEND
    registry.unregister(BACKEND.name)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


# --- the toy through the real correctness check --------------------------------------------------


def test_a_toy_backend_passes_the_real_correctness_check_on_the_cpu(toy_backend, tmp_path):
    from kernel_opt.check.correctness import CheckOptions, check_correctness

    solution = write(tmp_path, "toy_add.py", GOOD_TOY)
    report = check_correctness(solution, VECTOR_ADD / "ref.py", "torch_ops", "cpu", {"n": 1000}, CheckOptions(seeds=2),
                               BuildOptions(), tmp_path / "build", "test")
    assert report.error is None, report.error
    assert report.verdict == "pass" and report.passed
    assert report.backend == "torch_ops" and report.interpreter is False and report.build is None
    # the CLI shape and ref.py's five SHAPES, two seeds each
    assert len(report.cases) == 12 and all(case.passed for case in report.cases)
    assert {case.dims["n"] for case in report.cases} == {1000, 1, 127, 128, 129, 4097}


def test_a_wrong_toy_solution_fails_through_the_cli(toy_backend, tmp_path, capsys):
    from kernel_opt.commands.correctness_check import main

    solution = write(tmp_path, "toy_sub.py", WRONG_TOY)
    code = main([str(solution), "--ref", str(VECTOR_ADD / "ref.py"), "--output-dir", str(tmp_path / "out"),
                 "--device", "cpu", "--seeds", "1", "--n=1000", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1 and payload["exit_code"] == 1 and payload["verdict"] == "fail"
    assert payload["backend"] == "torch_ops"  # detected from the content: no --backend given
    assert payload["error"] is None and not any(case["passed"] for case in payload["cases"])


def test_the_child_registers_a_backend_from_the_module_the_request_names(toy_backend):
    from kernel_opt.solution.spec import solution_spec

    spec, build = solution_spec(Path("toy.py"), "torch_ops", "cpu", Path("unused"), BuildOptions(), [])
    assert spec.to_json() == {"backend": "torch_ops", "solution": "toy.py", "backend_module": __name__}
    assert build is None
    registry.unregister("torch_ops")  # as in a fresh child process
    assert registry.get("torch_ops", spec.backend_module) is BACKEND
    assert "torch_ops" in registry.names()


def test_built_in_backends_need_no_module_in_the_request(tmp_path):
    from kernel_opt.solution.spec import solution_spec

    spec, build = solution_spec(VECTOR_ADD / "good" / "vector_add.py", "triton", "cpu", tmp_path, BuildOptions(), [])
    assert spec.to_json() == {"backend": "triton", "solution": str(VECTOR_ADD / "good" / "vector_add.py")}
    assert build is None


def test_what_a_backend_does_not_provide_is_refused_with_its_name(toy_backend, tmp_path):
    """The interface's defaults: no --compile-only without a build step, no CPU run for a GPU-only backend."""
    from kernel_opt.check.correctness import CheckOptions, check_correctness

    class GpuOnlyToy(TorchOpsBackend):
        name = "gpu_only_toy"
        runs_on_cpu = False

    solution = write(tmp_path, "toy_add.py", GOOD_TOY)
    compile_only = check_correctness(solution, VECTOR_ADD / "ref.py", "torch_ops", "cpu", {},
                                     CheckOptions(compile_only=True), BuildOptions(), tmp_path / "build", "test")
    assert compile_only.verdict == "usage_error" and compile_only.error["message"] == (
        "--compile-only applies to CUDA solutions; torch ops kernels compile when they first run")
    registry.register(GpuOnlyToy())
    try:
        on_cpu = check_correctness(solution, VECTOR_ADD / "ref.py", "gpu_only_toy", "cpu", {}, CheckOptions(),
                                   BuildOptions(), tmp_path / "build", "test")
    finally:
        registry.unregister("gpu_only_toy")
    assert on_cpu.verdict == "environment_error" and on_cpu.error["kind"] == "no_gpu" and on_cpu.error["exit_code"] == 4
    assert on_cpu.error["message"] == ("toy_add.py: this kind of solution runs only on an NVIDIA GPU, and this run is "
                                       "on the CPU (no GPU, or --device cpu)")


def test_static_analysis_of_a_backend_without_it_is_a_usage_error(toy_backend, tmp_path, capsys):
    from kernel_opt.commands.static_analysis import main

    solution = write(tmp_path, "toy_add.py", GOOD_TOY)
    assert main([str(solution), "--output-dir", str(tmp_path / "out"), "--json"]) == 2
    assert "static analysis is not available for torch ops solutions" in capsys.readouterr().out
    assert not (tmp_path / "out" / "static_analysis.json").exists()


# --- detection -----------------------------------------------------------------------------------


def test_detection_reads_the_suffix_and_the_content(tmp_path):
    assert registry.detect(VECTOR_ADD / "good" / "vector_add.cu") == "cuda"
    assert registry.detect(VECTOR_ADD / "good" / "vector_add.py") == "triton"
    imported = write(tmp_path, "reexport.py", "from .kernels import (\n    helper,\n    run_kernel,\n)\n")
    assert registry.detect(imported) == "triton"
    # Unreadable (here: missing) files go by suffix, so the caller's "not found" error is the one shown.
    assert registry.detect(tmp_path / "missing.py") == "triton"


def test_a_python_file_no_backend_claims_is_a_usage_error_naming_the_backends(tmp_path):
    model = write(tmp_path, "cute_kernel.py", "import torch\n\n\nclass CuteSolution(torch.nn.Module):\n"
                                                "    def forward(self, x):\n        return x\n")
    with pytest.raises(UsageError) as caught:
        registry.detect(model)
    error = caught.value.to_dict()
    assert error["exit_code"] == 2
    assert error["message"] == "cannot tell the backend of 'cute_kernel.py': no backend claims it"
    assert "cuda: a .cu file" in error["hint"] and "triton: a .py that defines run_kernel" in error["hint"]
    assert "modelnew: a .py that defines class ModelNew" in error["hint"]
    assert error["hint"].endswith("or pass --backend cuda|modelnew|triton")
    with pytest.raises(UsageError, match="no backend claims it"):
        registry.detect(VECTOR_ADD / "ref.py")  # defines reference() and setup(), not run_kernel


def test_an_explicit_backend_wins_and_an_unknown_one_is_refused(tmp_path):
    assert registry.detect(VECTOR_ADD / "good" / "vector_add.py", "cuda") == "cuda"
    model = write(tmp_path, "plain.py", "x = 1\n")
    assert registry.detect(model, "triton") == "triton"
    with pytest.raises(UsageError, match="unknown backend 'cute'") as caught:
        registry.detect(model, "cute")
    assert caught.value.hint == "use one of: cuda, modelnew, triton"


def test_the_toy_claims_its_files_and_a_file_two_backends_claim_needs_a_choice(toy_backend, tmp_path):
    assert registry.detect(write(tmp_path, "toy.py", GOOD_TOY)) == "torch_ops"
    assert registry.detect(VECTOR_ADD / "good" / "vector_add.py") == "triton"
    both = write(tmp_path, "both.py", GOOD_TOY + "\n\ndef run_kernel(**kwargs):\n    pass\n")
    with pytest.raises(UsageError, match="could be a solution for triton or torch_ops") as caught:
        registry.detect(both)
    assert caught.value.hint == "pass --backend cuda|modelnew|triton|torch_ops"
    assert registry.detect(both, "torch_ops") == "torch_ops"


# --- every consumer reads the registry -----------------------------------------------------------


def _backend_choices(parser) -> list[str]:
    """The --backend choices of a parser or, for workspace.py, of its init subcommand."""
    import argparse

    for action in parser._actions:
        if "--backend" in action.option_strings:
            return list(action.choices)
        if isinstance(action, argparse._SubParsersAction):
            for subparser in action.choices.values():
                found = _backend_choices(subparser)
                if found:
                    return found
    return []


COMMANDS = ("benchmark", "correctness_check", "static_analysis", "ncu_profile", "workspace")


@pytest.mark.parametrize("command", COMMANDS)
def test_argparse_choices_come_from_the_registry(command, request):
    import importlib

    build_parser = importlib.import_module(f"kernel_opt.commands.{command}").build_parser
    assert _backend_choices(build_parser()) == ["auto", "cuda", "modelnew", "triton"]
    request.getfixturevalue("toy_backend")
    assert _backend_choices(build_parser()) == ["auto", "cuda", "modelnew", "triton", "torch_ops"]


def test_the_experience_log_accepts_a_registered_backend_and_its_aliases(toy_backend):
    from kernel_opt.experience.labels import backend_aliases, normalize_backend

    assert normalize_backend("Torch-Ops") == "torch_ops" and normalize_backend("pytorch ops") == "torch_ops"
    assert backend_aliases()["cuda"] == ("cuda", "cu", "cuda_c", "cuda_cpp", "cuda_c++", "nvcc")
    registry.unregister("torch_ops")
    with pytest.raises(UsageError, match="unknown backend 'torch_ops'"):
        normalize_backend("torch_ops")


def test_suggestions_come_from_each_backend_with_a_guide(toy_backend):
    from kernel_opt.profile import classify
    from kernel_opt.profile.ncu.metrics import KernelMetrics
    from kernel_opt.profile.suggestions import suggest

    metrics = KernelMetrics(dram_throughput_pct=92.0, memory_throughput_pct=92.0, sm_throughput_pct=20.0,
                            achieved_occupancy_pct=80.0, theoretical_occupancy_pct=100.0)
    result = classify.classify(metrics)
    assert result.label == "memory_bound"
    suggestions = suggest(result, metrics, None, "9.0")  # every backend; the toy has no guide
    # modelnew follows the CUDA guide (strategies_from): its suggestions are CUDA's, listed once
    assert [s.guide for s in suggestions] == ["cuda"] * 4 + ["triton"] * 4
    assert suggest(result, metrics, ("modelnew",), "9.0") == suggestions[:4]
    assert [s.strategy for s in suggestions[:2]] == ["single_pass", "fuse_kernels"]  # DRAM at its peak
    assert suggestions[0].link == "experience/cuda/CUDA.md#single_pass-fewer-bytes-when-dram-is-at-peak"
    assert all(s.link.startswith(registry.get(s.guide).guide + "#") for s in suggestions)


def test_a_modelnew_follows_the_guide_of_the_kernels_it_defines(tmp_path):
    """A Triton ModelNew is profiled and advised from Triton's guide and records; load_inline or libraries: CUDA's."""
    modelnew = registry.get("modelnew")
    header, model = "import torch.nn as nn\n", "\nclass ModelNew(nn.Module): pass\n"
    files = {
        "triton_kernels.py": header + "import triton\n\n@triton.jit\ndef k(x): pass\n" + model,
        "bare_jit.py": header + "from triton import jit\n\n@jit\ndef k(x): pass\n" + model,
        "load_inline.py": header + "from torch.utils.cpp_extension import load_inline\n"
                                   "ext = load_inline('e', '', cuda_sources='__global__ void k() {}')\n"
                                   "class ModelNew(nn.Module): pass\n",
        "library_only.py": header + "class ModelNew(nn.Module):\n    def forward(self, x): return x.relu()\n",
    }
    guides = {}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        guides[name] = modelnew.guide_backend(tmp_path / name)
    assert guides == {"triton_kernels.py": "triton", "bare_jit.py": "triton", "load_inline.py": "cuda",
                      "library_only.py": "cuda"}
    assert modelnew.guide_backend(tmp_path / "missing.py") == "cuda"
    assert registry.get("triton").guide_backend(tmp_path / "triton_kernels.py") == "triton"


def test_a_guide_is_whatever_the_backend_names(toy_backend, tmp_path, monkeypatch):
    from kernel_opt.profile import guides

    with pytest.raises(UsageError, match="the torch_ops backend has no optimization guide"):
        guides.guide_link("torch_ops", "single_pass")
    guide = tmp_path / "TORCH_OPS.md"
    guide.write_text("# torch ops\n\n## `fuse_ops` (one kernel instead of three)\n")
    monkeypatch.setattr(TorchOpsBackend, "guide", str(guide))  # an absolute path: SKILL_ROOT / it is itself
    guides.guide_anchors.cache_clear()
    try:
        assert guides.guide_link("torch_ops", "fuse_ops") == f"{guide}#fuse_ops-one-kernel-instead-of-three"
    finally:
        guides.guide_anchors.cache_clear()


def test_a_backend_name_cannot_be_taken_twice(toy_backend):
    class Impostor(TorchOpsBackend):
        pass

    with pytest.raises(UsageError, match="already registered"):
        registry.register(Impostor())
    assert registry.register(BACKEND) is BACKEND  # the same object again is harmless


def test_loading_the_backends_imports_neither_torch_nor_triton():
    """--help must work where neither is installed: a backend imports them only when it runs."""
    code = ("import sys\nfrom kernel_opt.backends import registry\n"
            "print(registry.names(), [registry.get(n).title for n in registry.names()],\n"
            "      sorted(m for m in ('torch', 'triton') if m in sys.modules))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                               env={**os.environ, "PYTHONPATH": str(SCRIPTS_DIR)})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "['cuda', 'modelnew', 'triton'] ['CUDA', 'ModelNew', 'Triton'] []"
