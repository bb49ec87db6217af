"""Which backends exist: register them, look one up by name, tell a solution file's backend.

Built-in backends are the subpackages of `kernel_opt.backends` that have a `backend` module
defining `BACKEND` (an instance of `solution.backend.Backend`); they are found by scanning that
folder and imported by name with importlib the first time the registry is asked anything, so
adding one is adding its folder, and no module below the backends imports one. Any other
backend (a plugin outside this package, like the tests' toy) is a module that defines `BACKEND`
the same way, registered with one line: `register_module("its_package.backend")`.

Solutions run in a child process, which has a registry of its own. For a backend that is not
built in, `request_fields` puts its module's name in the request (`backend_module`), and the
child's `get` imports that module and registers its `BACKEND`; the module must therefore be
importable in the child (installed, or on PYTHONPATH, which the child inherits).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from pathlib import Path
from types import ModuleType
from typing import Any

from kernel_opt.core.errors import UsageError
from kernel_opt.solution.backend import Backend

BACKEND_ATTRIBUTE = "BACKEND"
BUILT_IN_PACKAGE = "kernel_opt.backends"  # the plugins' folder, imported by name: it sits above this layer
_BUILT_IN_PREFIX = f"{BUILT_IN_PACKAGE}."
_registered: dict[str, Backend] = {}
_built_ins_loaded = False


def _load_built_ins() -> None:
    """Register every kernel_opt/backends/<name>/backend.py, in name order (cuda, triton, ...)."""
    global _built_ins_loaded
    if _built_ins_loaded:
        return
    _built_ins_loaded = True
    package = importlib.import_module(BUILT_IN_PACKAGE)
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
        module_name = f"{_BUILT_IN_PREFIX}{module_info.name}.backend"
        if module_info.ispkg and importlib.util.find_spec(module_name) is not None:
            register_module(module_name)


def register_module(module_name: str) -> Backend:
    """Import a backend's module and register its `BACKEND`: the one line a backend outside kernel_opt takes."""
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise UsageError(f"backend module {module_name} cannot be imported: {error}",
                         hint="install it, or put its folder on PYTHONPATH (child processes inherit it)") from error
    backend = getattr(module, BACKEND_ATTRIBUTE, None)
    if not isinstance(backend, Backend):
        raise UsageError(f"backend module {module_name} defines no {BACKEND_ATTRIBUTE} (a kernel_opt Backend)")
    if _registered.get(backend.name) is not backend:
        register(backend)
    return backend


def register(backend: Backend) -> Backend:
    """Add a backend; its name must be new (the same object may be registered again)."""
    _load_built_ins()
    existing = _registered.get(backend.name)
    if existing is not None and existing is not backend:
        raise UsageError(f"a backend named {backend.name!r} is already registered ({type(existing).__module__})")
    _registered[backend.name] = backend
    return backend


def unregister(name: str) -> None:
    """Remove a backend added with register() (a test's toy backend, when the test ends)."""
    _registered.pop(name, None)


def backends() -> list[Backend]:
    _load_built_ins()
    return list(_registered.values())


def names() -> list[str]:
    """The backend names, for argparse choices: built-ins first, in name order, then the registered ones."""
    return [backend.name for backend in backends()]


def get(name: str, module: str | None = None) -> Backend:
    """The backend called `name`; `module` is imported first when it is not registered yet (the child's case)."""
    _load_built_ins()
    if name not in _registered and module:
        register_module(module)
    backend = _registered.get(name)
    if backend is None:
        raise UsageError(f"unknown backend {name!r}", hint=f"use one of: {', '.join(names())}")
    return backend


def backend_part(name: str, part: str) -> ModuleType | None:
    """Module `part` of the folder backend `name` comes from (its `suggestions`, ...); None where it has none.

    A backend is its folder: what it provides beyond the `Backend` interface (its strategy advice,
    profile/advice.py) the stage that reads it finds here, by the module's name.
    """
    package = type(get(name)).__module__.rpartition(".")[0]
    if not package:  # a backend defined in a module of its own, outside any folder
        return None
    module_name = f"{package}.{part}"
    try:
        found = importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        found = False
    return importlib.import_module(module_name) if found else None


def request_fields(backend: Backend) -> dict[str, Any]:
    """What a child request needs to find this backend: its module, unless it is built in."""
    module = type(backend).__module__
    return {} if module.startswith(_BUILT_IN_PREFIX) else {"backend_module": module}


def detect(solution: Path, requested: str = "auto") -> str:
    """The backend of a solution file: the one named, else the only backend that claims the file.

    Detection reads the content as well as the suffix, so that a .py that is not a Triton
    solution (a KernelBench ModelNew, a CuTe DSL kernel) is not taken for one.
    """
    if requested != "auto":
        return get(requested).name
    try:
        source: str | None = solution.read_text(errors="replace")
    except OSError:
        source = None
    claimants = [backend for backend in backends() if backend.claims(solution, source)]
    if len(claimants) == 1:
        return claimants[0].name
    choose = f"pass --backend {'|'.join(names())}"
    if not claimants:  # what each looks for goes in the message: eval's table and reports show only the message
        looked_for = "; ".join(f"{backend.name} looks for {backend.contract}" for backend in backends())
        raise UsageError(f"cannot tell the backend of {solution.name!r}: no backend claims it ({looked_for})",
                         hint=f"give the file what its backend looks for, or {choose}")
    raise UsageError(
        f"{solution.name!r} could be a solution for {' or '.join(backend.name for backend in claimants)}",
        hint=choose,
    )
