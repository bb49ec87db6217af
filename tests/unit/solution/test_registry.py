"""Backends are plugins: detection, the registry, and a toy backend run through the real check.

The toy (tests/toy_backend/) is the whole of what a new backend takes: its folder (a `Backend`
that claims `.toy` files and loads them, and its strategy advice with a guide) plus one registry
line, `registry.register_module("toy_backend.backend")`. Nothing in the package names it, yet the
correctness check (parent and child process), the CLIs' --backend choices, the workspace, the
profile's suggestions and the experience log accept it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TESTS_DIR

from kernel_opt.core.errors import UsageError
from kernel_opt.solution import registry
from kernel_opt.solution.backend import BuildOptions

TESTS_DIR = TESTS_DIR
REPO_ROOT = TESTS_DIR.parent
SCRIPTS_DIR = REPO_ROOT / "skills" / "kernel-opt-skill" / "scripts"
PACKAGE_DIR = SCRIPTS_DIR / "kernel_opt"
VECTOR_ADD = REPO_ROOT / "reference" / "vector_add"
TOY_MODULE = "toy_backend.backend"

GOOD_TOY = """\
import torch


def toy_solution(x, y, out, **_):
    torch.add(x, y, out=out)
"""
WRONG_TOY = """\
import torch


def toy_solution(x, y, out, **_):
    torch.sub(x, y, out=out)  # plausible, finite, and wrong
"""


@pytest.fixture
def toy_backend(monkeypatch):
    """The toy registered by its one line, and importable by name in the child (which inherits PYTHONPATH)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")])))
    backend = registry.register_module(TOY_MODULE)
    yield backend
    registry.unregister(backend.name)


def toy_class():
    from toy_backend.backend import ToyBackend

    return ToyBackend


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


# --- the toy through the real correctness check --------------------------------------------------


@pytest.mark.slow
def test_the_toy_backend_passes_the_real_correctness_check_on_the_cpu(toy_backend, tmp_path):
    from kernel_opt.check.correctness import CheckOptions, check_correctness

    solution = write(tmp_path, "toy_add.toy", GOOD_TOY)
    report = check_correctness(solution, VECTOR_ADD / "ref.py", "toy", "cpu", {"n": 1000}, CheckOptions(seeds=2),
                               BuildOptions(), tmp_path / "build", "test")
    assert report.error is None, report.error
    assert report.verdict == "pass" and report.passed
    assert report.backend == "toy" and report.interpreter is False and report.build is None
    # the CLI shape and ref.py's five SHAPES, two seeds each
    assert len(report.cases) == 12 and all(case.passed for case in report.cases)
    assert {case.dims["n"] for case in report.cases} == {1000, 1, 127, 128, 129, 4097}


@pytest.mark.slow
def test_the_toy_backend_goes_through_correctness_check_end_to_end(toy_backend, tmp_path, capsys):
    """correctness_check.py as a user runs it: the backend told by the .toy suffix, the solution run in the child."""
    from kernel_opt.commands.correctness_check import main

    verdicts = {}
    for name, text in (("toy_add.toy", GOOD_TOY), ("toy_sub.toy", WRONG_TOY)):
        code = main([str(write(tmp_path, name, text)), "--ref", str(VECTOR_ADD / "ref.py"), "--output-dir",
                     str(tmp_path / f"out_{name}"), "--device", "cpu", "--seeds", "1", "--n=1000", "--json"])
        payload = json.loads(capsys.readouterr().out)
        assert payload["backend"] == "toy" and payload["error"] is None  # no --backend given
        assert json.loads((tmp_path / f"out_{name}" / "correctness.json").read_text())["verdict"] == payload["verdict"]
        verdicts[name] = (code, payload["verdict"], [case["passed"] for case in payload["cases"]])
    assert verdicts == {"toy_add.toy": (0, "pass", [True] * 6), "toy_sub.toy": (1, "fail", [False] * 6)}


def test_the_child_registers_a_backend_from_the_module_the_request_names(toy_backend):
    from kernel_opt.solution.spec import solution_spec

    spec, build = solution_spec(Path("add.toy"), "toy", "cpu", Path("unused"), BuildOptions(), [])
    assert spec.to_json() == {"backend": "toy", "solution": "add.toy", "backend_module": TOY_MODULE} and build is None
    registry.unregister("toy")  # as in a fresh child process
    assert registry.get("toy", spec.backend_module) is toy_backend
    assert "toy" in registry.names()


def test_built_in_backends_need_no_module_in_the_request(tmp_path):
    from kernel_opt.solution.spec import solution_spec

    spec, build = solution_spec(VECTOR_ADD / "good" / "vector_add.py", "triton", "cpu", tmp_path, BuildOptions(), [])
    assert spec.to_json() == {"backend": "triton", "solution": str(VECTOR_ADD / "good" / "vector_add.py")}
    assert build is None


def test_what_a_backend_does_not_provide_is_refused_with_its_name(toy_backend, tmp_path):
    """The interface's defaults: no --compile-only without a build step, no CPU run for a GPU-only backend."""
    from kernel_opt.check.correctness import CheckOptions, check_correctness

    class GpuOnlyToy(toy_class()):
        name = "gpu_only_toy"
        runs_on_cpu = False

    solution = write(tmp_path, "toy_add.toy", GOOD_TOY)
    compile_only = check_correctness(solution, VECTOR_ADD / "ref.py", "toy", "cpu", {},
                                     CheckOptions(compile_only=True), BuildOptions(), tmp_path / "build", "test")
    assert compile_only.verdict == "usage_error" and compile_only.error.message == (
        "--compile-only applies to CUDA solutions; toy kernels compile when they first run")
    registry.register(GpuOnlyToy())
    try:
        on_cpu = check_correctness(solution, VECTOR_ADD / "ref.py", "gpu_only_toy", "cpu", {}, CheckOptions(),
                                   BuildOptions(), tmp_path / "build", "test")
    finally:
        registry.unregister("gpu_only_toy")
    assert on_cpu.verdict == "environment_error" and on_cpu.error.kind == "no_gpu" and on_cpu.error.exit_code == 4
    assert on_cpu.error.message == ("toy_add.toy: this kind of solution runs only on an NVIDIA GPU, and this run is "
                                       "on the CPU (no GPU, or --device cpu)")


def test_static_analysis_of_a_backend_without_it_is_a_usage_error(toy_backend, tmp_path, capsys):
    from kernel_opt.commands.static_analysis import main

    solution = write(tmp_path, "toy_add.toy", GOOD_TOY)
    assert main([str(solution), "--output-dir", str(tmp_path / "out"), "--json"]) == 2
    assert "static analysis is not available for toy solutions" in capsys.readouterr().out
    assert not (tmp_path / "out" / "static_analysis.json").exists()


def test_a_run_folder_keeps_the_toys_suffix(toy_backend, tmp_path, capsys):
    """workspace.py names a version's file with its backend's suffix, and reads it back with or without run.json."""
    from kernel_opt.commands.workspace import main
    from kernel_opt.loop.workspace import read_version

    kernel = write(tmp_path, "add.toy", GOOD_TOY)
    out = tmp_path / "run"
    assert main(["init", str(out), "--kernel", str(kernel), "--ref", str(VECTOR_ADD / "ref.py"), "--iterations", "1",
                 "--json", "--n=1000"]) == 0
    run = json.loads(capsys.readouterr().out)["run"]
    assert run["backend"] == "toy" and run["solution_pattern"] == "v{n}/v{n}.toy"
    assert (out / "v0" / "v0.toy").read_text() == GOOD_TOY
    (out / "run.json").unlink()
    assert read_version(out, 0).solution == str(out / "v0" / "v0.toy")


def test_nothing_in_the_package_names_the_toy():
    """The toy touches no file outside its folder: the package finds it only through its one registry line."""
    named = [str(path.relative_to(PACKAGE_DIR)) for path in PACKAGE_DIR.rglob("*.py")
             if "toy_backend" in path.read_text() or '".toy"' in path.read_text()]
    assert named == []


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
    assert error["message"] == (
        "cannot tell the backend of 'cute_kernel.py': no backend claims it (cuda looks for a .cu file with "
        "extern \"C\" void solve(...); modelnew looks for a .py that defines class ModelNew (KernelBench's format), "
        "checked against a KernelBench problem file; triton looks for a .py that defines run_kernel(**kwargs))")
    assert error["hint"] == "give the file what its backend looks for, or pass --backend cuda|modelnew|triton"
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
    class RivalToy(toy_class()):
        name = "rival_toy"

    both = write(tmp_path, "both.toy", GOOD_TOY)
    assert registry.detect(both) == "toy"
    assert registry.detect(VECTOR_ADD / "good" / "vector_add.py") == "triton"
    registry.register(RivalToy())
    try:
        with pytest.raises(UsageError, match="could be a solution for toy or rival_toy") as caught:
            registry.detect(both)
        assert caught.value.hint == "pass --backend cuda|modelnew|triton|toy|rival_toy"
        assert registry.detect(both, "toy") == "toy"
    finally:
        registry.unregister("rival_toy")


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
    assert _backend_choices(build_parser()) == ["auto", "cuda", "modelnew", "triton", "toy"]


def test_the_experience_log_accepts_a_registered_backend_and_its_aliases(toy_backend):
    from kernel_opt.experience.labels import backend_aliases, normalize_backend

    assert normalize_backend("Toy-Ops") == "toy" and normalize_backend("torch toy") == "toy"
    assert backend_aliases()["cuda"] == ("cuda", "cu", "cuda_c", "cuda_cpp", "cuda_c++", "nvcc")
    registry.unregister("toy")
    with pytest.raises(UsageError, match="unknown backend 'toy'"):
        normalize_backend("toy")


def test_suggestions_come_from_each_backend_with_a_guide(toy_backend):
    from kernel_opt.profile import classify
    from kernel_opt.profile.advice import advice_for
    from kernel_opt.profile.ncu.metrics import KernelMetrics
    from kernel_opt.profile.suggestions import suggest

    metrics = KernelMetrics(dram_throughput_pct=92.0, memory_throughput_pct=92.0, sm_throughput_pct=20.0,
                            achieved_occupancy_pct=80.0, theoretical_occupancy_pct=100.0)
    result = classify.classify(metrics)
    assert result.label == "memory_bound"
    suggestions = suggest(result, metrics, None, "9.0")  # every backend, the toy's folder's advice too
    # modelnew follows the CUDA guide (strategies_from): its suggestions are CUDA's, listed once
    assert [s.guide for s in suggestions] == ["cuda"] * 4 + ["triton"] * 4 + ["toy"]
    assert suggest(result, metrics, ("modelnew",), "9.0") == suggestions[:4]
    assert [s.strategy for s in suggestions[:2]] == ["single_pass", "fuse_kernels"]  # DRAM at its peak
    assert suggestions[0].link == "experience/cuda/CUDA.md#single_pass-fewer-bytes-when-dram-is-at-peak"
    assert all(s.link.startswith(advice_for(s.guide).guide + "#") for s in suggestions)
    assert (suggestions[-1].strategy, suggestions[-1].why) == ("fuse_ops", "a memory_bound strategy")
    assert suggestions[-1].link == str(TESTS_DIR / "toy_backend" / "TOY.md") + "#fuse_ops-one-kernel-instead-of-three"


def test_a_modelnew_follows_the_guide_of_the_kernels_it_defines(tmp_path):
    """A Triton ModelNew is profiled and advised from Triton's guide and records; load_inline or libraries: CUDA's."""
    from kernel_opt.profile.advice import guide_backend

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
        guides[name] = guide_backend("modelnew", tmp_path / name)
    assert guides == {"triton_kernels.py": "triton", "bare_jit.py": "triton", "load_inline.py": "cuda",
                      "library_only.py": "cuda"}
    assert guide_backend("modelnew", tmp_path / "missing.py") == "cuda"
    assert guide_backend("triton", tmp_path / "triton_kernels.py") == "triton"


def test_a_guide_is_whatever_the_backends_folder_names(toy_backend):
    """A backend's advice comes from its folder's suggestions.py; a backend defined outside a folder has none."""
    from kernel_opt.profile import guides
    from kernel_opt.profile.advice import NO_ADVICE, advice_for

    class Unadvised(toy_class()):
        name = "unadvised_toy"

    guides.guide_anchors.cache_clear()
    try:
        assert guides.guide_link("toy", "fuse_ops") == (str(TESTS_DIR / "toy_backend" / "TOY.md")
                                                         + "#fuse_ops-one-kernel-instead-of-three")
        registry.register(Unadvised())
        assert advice_for("unadvised_toy") is NO_ADVICE
        with pytest.raises(UsageError, match="the unadvised_toy backend has no optimization guide"):
            guides.guide_link("unadvised_toy", "fuse_ops")
    finally:
        registry.unregister("unadvised_toy")
        guides.guide_anchors.cache_clear()


def test_a_backend_name_cannot_be_taken_twice(toy_backend):
    class Impostor(toy_class()):
        pass

    with pytest.raises(UsageError, match="already registered"):
        registry.register(Impostor())
    assert registry.register(toy_backend) is toy_backend  # the same object again is harmless
    assert registry.register_module(TOY_MODULE) is toy_backend


def test_loading_the_backends_imports_neither_torch_nor_triton():
    """--help must work where neither is installed: a backend imports them only when it runs."""
    code = ("import sys\nfrom kernel_opt.solution import registry\n"
            "print(registry.names(), [registry.get(n).title for n in registry.names()],\n"
            "      sorted(m for m in ('torch', 'triton') if m in sys.modules))")
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                               env={**os.environ, "PYTHONPATH": str(SCRIPTS_DIR)})
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "['cuda', 'modelnew', 'triton'] ['CUDA', 'ModelNew', 'Triton'] []"
