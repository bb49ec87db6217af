"""The package's shape, checked from its source: no import cycle, modules and functions of a readable size.

The import graph counts every import, function-local ones too: a cycle that only closes at run
time is still a cycle to a reader, and it is what made `benchmark` and `worker` one tangle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "skills" / "kernel-opt-skill" / "scripts" / "kernel_opt"
PACKAGE = "kernel_opt"
MAX_MODULE_LINES = 600
MAX_FUNCTION_BODY_LINES = 60
# A longer function must say why in its docstring, with these words.
LONG_FUNCTION_MARKER = "Kept whole:"


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
