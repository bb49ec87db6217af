"""The package's shape, checked from its source: layers that import one way, no cycles, readable sizes.

The import graph counts every import, function-local and TYPE_CHECKING ones too: a cycle or an
upward import that only happens at run time, or only for a type checker, still ties a lower
stage to a higher one in a reader's head, and it is what made `benchmark` and `worker` one tangle.
Plugins are the one exception by design: solution/registry.py finds kernel_opt/backends/<name>/
by scanning that folder and importing by name (importlib), which is not an import statement.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import REPO_ROOT

PACKAGE_ROOT = REPO_ROOT / "skills" / "kernel-opt-skill" / "scripts" / "kernel_opt"
PACKAGE = "kernel_opt"
MAX_MODULE_LINES = 500
MAX_FUNCTION_BODY_LINES = 60
# A longer function must say why in its docstring, with these words.
LONG_FUNCTION_MARKER = "Kept whole:"

# The layers, low to high, each with the module-name prefixes it owns (a prefix covers that module
# or package and everything below it). A module imports only its own layer and the layers below.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("kernel_opt.core",)),  # errors, files, records, render, cli, dependencies
    ("env", ("kernel_opt.env",)),  # what this machine has
    ("run", ("kernel_opt.run",)),  # the child process: events, runner, release, tampering
    ("sass", ("kernel_opt.sass",)),  # what a compiler produced: SASS, resources, the static report
    ("solution", ("kernel_opt.solution",)),  # what a kernel under test is; the backend interface and registry
    ("check", ("kernel_opt.check",)),  # correctness
    ("measure", ("kernel_opt.measure",)),  # timing, benchmark, ceilings, roofline
    ("profile", ("kernel_opt.profile",)),  # Nsight Compute, classification, findings, strategy advice
    ("backends", ("kernel_opt.backends",)),  # plugins, reached only through the registry
    ("experience", ("kernel_opt.experience",)),  # the experience log
    ("loop", ("kernel_opt.loop",)),  # the optimization run
    ("suite", ("kernel_opt.suite",)),  # kernel-opt eval
    ("install", ("kernel_opt.install",)),  # putting the skill where an agent finds it
    ("commands", ("kernel_opt.commands",)),  # one module per CLI
    ("entry points", ("kernel_opt.child", "kernel_opt.main")),  # python -m kernel_opt.child, kernel-opt
]


def module_name(path: Path, root: Path = PACKAGE_ROOT) -> str:
    parts = [PACKAGE, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules(root: Path = PACKAGE_ROOT) -> dict[str, Path]:
    return {module_name(path, root): path for path in sorted(root.rglob("*.py"))}


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """Every package module `path` imports, at any depth of its code."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # `from pkg import mod` imports the module; `from mod import name` imports mod.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in known and target != name)
    return found


def import_graph(root: Path = PACKAGE_ROOT) -> dict[str, set[str]]:
    modules = package_modules(root)
    known = set(modules)
    return {name: imported_modules(path, name, known) for name, path in modules.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a cycle to break."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for neighbour in sorted(graph.get(node, ())):
            if neighbour not in index:
                visit(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in on_stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def layer_of(name: str, layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> int | None:
    """The index in `layers` of the layer that owns module `name` (the longest prefix that covers it); None: none.

    kernel_opt itself (its __init__.py) runs before any module of the package and imports none of
    them: it is in the lowest layer.
    """
    if name == PACKAGE:
        return 0
    owners = [(len(prefix), index) for index, (_, prefixes) in enumerate(layers) for prefix in prefixes
              if name == prefix or name.startswith(prefix + ".")]
    return max(owners)[1] if owners else None


def layer_violations(graph: dict[str, set[str]], layers: Sequence[tuple[str, Sequence[str]]] = LAYERS) -> list[str]:
    """Every import of a higher layer's module, and every module that no layer owns, as sentences."""
    problems = [f"{name} belongs to no layer" for name in sorted(graph) if layer_of(name, layers) is None]
    for name in sorted(graph):
        own = layer_of(name, layers)
        for imported in sorted(graph[name]):
            other = layer_of(imported, layers)
            if own is not None and other is not None and other > own:
                problems.append(f"{name} ({layers[own][0]}) imports {imported} ({layers[other][0]})")
    return problems


def package_of(name: str) -> str:
    """The sub-package of kernel_opt a module is in (kernel_opt.profile for kernel_opt.profile.ncu.metrics);
    a module directly in kernel_opt is its own."""
    parts = name.split(".")
    return ".".join(parts[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph between kernel_opt's sub-packages (an import inside one package is no edge)."""
    packages: dict[str, set[str]] = {}
    for name, imported in graph.items():
        edges = packages.setdefault(package_of(name), set())
        edges.update(package_of(other) for other in imported if package_of(other) != package_of(name))
    return packages


def test_the_cycle_finder_finds_a_planted_cycle_through_a_function_local_import(tmp_path):
    package = tmp_path / "pkg"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "inner" / "__init__.py").write_text("")
    (package / "a.py").write_text("from kernel_opt.inner import b\n")
    (package / "inner" / "b.py").write_text("def f():\n    from kernel_opt.c import thing\n")
    (package / "c.py").write_text("import kernel_opt.a\nthing = 1\n")
    (package / "d.py").write_text("from kernel_opt.a import x\n")
    graph = import_graph(package)
    assert graph["kernel_opt.inner.b"] == {"kernel_opt.c"} and graph["kernel_opt.d"] == {"kernel_opt.a"}
    assert import_cycles(graph) == [["kernel_opt.a", "kernel_opt.c", "kernel_opt.inner.b"]]


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "kernel_opt.child" in graph and graph["kernel_opt.child"]  # the graph was really read
    assert import_cycles(graph) == []


def plant(root: Path, files: dict[str, str]) -> Path:
    """A package `kernel_opt` under root with the given modules (relative paths), every folder a package."""
    package = root / "pkg"
    for relative, text in files.items():
        path = package / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [package, *[path for path in package.rglob("*") if path.is_dir()]]:
        (folder / "__init__.py").touch()
    return package


PLANTED_LAYERS = [("low", ("kernel_opt.low",)), ("middle", ("kernel_opt.middle", "kernel_opt.tool")),
                  ("high", ("kernel_opt.high",))]


def test_the_layer_check_finds_planted_upward_imports_of_every_kind(tmp_path):
    """A module-level, a function-local and a TYPE_CHECKING import against the order; a module of no layer."""
    package = plant(tmp_path, {
        "low/a.py": "from kernel_opt.high import c\n",
        "low/b.py": "def f():\n    from kernel_opt.middle.m import thing\n",
        "middle/m.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kernel_opt.high.c import C\n"
                       "from kernel_opt.low import a\nthing = 1\n",
        "high/c.py": "from kernel_opt.middle import m\nfrom kernel_opt.low.b import f\nfrom kernel_opt import tool\n",
        "tool.py": "from kernel_opt.low import a\n",
        "stray.py": "",
    })
    problems = layer_violations(import_graph(package), PLANTED_LAYERS)
    assert problems == [
        "kernel_opt.stray belongs to no layer",
        "kernel_opt.low.a (low) imports kernel_opt.high.c (high)",
        "kernel_opt.low.b (low) imports kernel_opt.middle.m (middle)",
        "kernel_opt.middle.m (middle) imports kernel_opt.high.c (high)",
    ]


def test_every_module_has_a_layer_and_imports_only_its_own_layer_and_lower_ones():
    graph = import_graph()
    assert layer_of("kernel_opt.backends.cuda.backend") > layer_of("kernel_opt.profile.suggestions")
    assert layer_of(PACKAGE) == 0 and len(graph) > 100  # the graph was really read
    assert layer_violations(graph) == []


def test_the_package_cycle_finder_finds_a_planted_cycle_between_packages(tmp_path):
    """Two packages that import each other through different modules: no module-level cycle, a package-level one."""
    package = plant(tmp_path, {
        "first/a.py": "def f():\n    from kernel_opt.second.c import thing\n",
        "first/b.py": "x = 1\n",
        "second/c.py": "thing = 1\n",
        "second/d.py": "from kernel_opt.first.b import x\n",
        "third/e.py": "from kernel_opt.first import a\n",
    })
    graph = import_graph(package)
    assert import_cycles(graph) == []
    assert package_graph(graph)["kernel_opt.third"] == {"kernel_opt.first"}
    assert import_cycles(package_graph(graph)) == [["kernel_opt.first", "kernel_opt.second"]]


def test_no_two_sub_packages_import_each_other():
    packages = package_graph(import_graph())
    assert {"kernel_opt.core", "kernel_opt.solution", "kernel_opt.backends", "kernel_opt.child"} <= set(packages)
    assert import_cycles(packages) == []


def test_every_module_stays_readable_in_one_sitting():
    sizes = {name: len(path.read_text().splitlines()) for name, path in package_modules().items()}
    assert {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES} == {}


def long_functions(path: Path) -> list[str]:
    """Functions whose body (docstring aside) runs past the limit without saying why."""
    offenders = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        docstring = ast.get_docstring(node) or ""
        body = node.body[1:] if docstring else node.body
        if not body:
            continue
        lines = body[-1].end_lineno - body[0].lineno + 1
        if lines > MAX_FUNCTION_BODY_LINES and LONG_FUNCTION_MARKER not in docstring:
            offenders.append(f"{path.name}:{node.lineno} {node.name} ({lines} lines)")
    return offenders


def test_long_functions_are_found_unless_they_say_why(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_BODY_LINES + 1))
    (tmp_path / "m.py").write_text(
        f'def long():\n    """Does it."""\n{body}\n\ndef explained():\n    """Does it.\n\n    {LONG_FUNCTION_MARKER} '
        f'one sequence.\n    """\n{body}\n\ndef short():\n    """Does it."""\n' + body.split("\n", 1)[1]
    )
    assert long_functions(tmp_path / "m.py") == [f"m.py:1 long ({MAX_FUNCTION_BODY_LINES + 1} lines)"]


@pytest.mark.parametrize("name", sorted(package_modules()))
def test_functions_stay_short_or_say_why(name):
    assert long_functions(package_modules()[name]) == []
