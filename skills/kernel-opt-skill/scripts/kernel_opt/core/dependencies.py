"""The third-party packages a step needs, imported only when that step runs, and what to install when one is missing.

Every CLI parses its arguments and answers `--help` with none of torch, triton or a GPU: the
package imports them inside the functions that need them. When such a function runs on a
machine without the package, the command ends with exit 4 (this machine cannot run the step)
and the install line, never with a traceback.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from kernel_opt.core.errors import EnvironmentFault

# import name -> what to install. torch first: without it no solution runs, and the CPU build
# is enough for the Triton interpreter and CUDA compile checks (README, Requirements).
INSTALL_HINTS: dict[str, str] = {
    "torch": "python3 -m pip install torch (the CPU build is enough without a GPU: "
             "--index-url https://download.pytorch.org/whl/cpu)",
    "triton": "python3 -m pip install triton (Linux)",
    "numpy": "python3 -m pip install numpy",
    "jinja2": "python3 -m pip install jinja2",
    "yaml": "python3 -m pip install pyyaml",
    "tabulate": "python3 -m pip install tabulate",
    "matplotlib": "python3 -m pip install matplotlib",
    "ncu_report": "python3 -m pip install ncu-report (or put Nsight Compute's extras/python on PYTHONPATH)",
    "ray": "python3 -m pip install \"ray[default]>=2.30,<3\" (in this repository: pip install -e \".[ray]\"); "
           "a cluster's nodes need the same Ray version",
}


def missing_dependency(error: BaseException) -> str | None:
    """The known package an ImportError is about ('torch' for 'torch._C'), or None for any other import."""
    if not isinstance(error, ImportError):
        return None
    name = (error.name or "").partition(".")[0]
    return name if name in INSTALL_HINTS else None


def dependency_fault(error: BaseException, purpose: str | None = None,
                     module: str | None = None) -> EnvironmentFault | None:
    """The exit-4 error for an ImportError of a known package (or of `module`); None for anyone else's import."""
    name = missing_dependency(error) or (module if isinstance(error, ImportError) else None)
    if name is None:
        return None
    needed = f"{purpose} needs {name}" if purpose else f"this step needs {name}"
    install = INSTALL_HINTS.get(name, f"python3 -m pip install {name}")
    return EnvironmentFault(f"{needed}, which cannot be imported here ({type(error).__name__}: {error})",
                            hint=f"install it: {install}; env_check.py lists what each step needs",
                            kind="missing_dependency")


def require(module: str, purpose: str) -> ModuleType:
    """Import `module` for `purpose` (e.g. "running a solution"), or raise the exit-4 error saying what to install."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise dependency_fault(error, purpose, module=module) from error
