"""Where a solution's error points: the solution's own line, found across the exceptions a library chains."""

from __future__ import annotations

import textwrap

import pytest

from kernel_opt.solution.contract import load_module
from kernel_opt.solution.loaded import interpreter_limit, solution_frame

SOLUTION = '''
def kernel(x):
    return 1.0 + x  # a libdevice.tanh(x) that gave None


def run_kernel(x):
    try:
        kernel(x)
    except TypeError as error:  # as Triton's interpreter re-raises a kernel's error
        raise RuntimeError(repr(error)) from error
'''


def raised(tmp_path, text=SOLUTION, argument=None):
    path = tmp_path / "solution.py"
    path.write_text(textwrap.dedent(text))
    module = load_module(path, "solution")
    with pytest.raises(Exception) as caught:
        module.run_kernel(argument)
    return caught.value, path


def test_the_frame_is_the_solutions_deepest_line_in_the_innermost_exception(tmp_path):
    error, path = raised(tmp_path)
    frame = solution_frame(error, str(path))
    assert (frame.lineno, frame.name) == (3, "kernel")
    assert frame.line == "return 1.0 + x  # a libdevice.tanh(x) that gave None"
    assert solution_frame(error, str(tmp_path / "other.py")) is None  # nothing of another file


def test_a_none_from_libdevice_or_inline_asm_under_the_interpreter_is_the_interpreters_limit(tmp_path, monkeypatch):
    error, path = raised(tmp_path)
    frame = solution_frame(error, str(path))
    message = "TypeError(\"unsupported operand type(s) for +: 'float' and 'NoneType'\")"
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert interpreter_limit(frame, message) is None  # on a GPU the same error is the kernel's
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert interpreter_limit(frame, message) == (
        "libdevice functions return None there, and solution.py line 3 (`return 1.0 + x  # a libdevice.tanh(x) that "
        f"gave None`) failed on such a None ({message})")
    assert interpreter_limit(frame, "TypeError('unsupported operand type(s) for +: float and str')") is None
    plain, plain_path = raised(tmp_path, SOLUTION.replace("# a libdevice.tanh(x) that gave None", ""))
    assert interpreter_limit(solution_frame(plain, str(plain_path)), message) is None  # no libdevice in the file
    inline = "InterpreterError: NotImplementedError('inline_asm not supported in interpreter mode')"
    assert interpreter_limit(None, inline) == f"the kernel uses what it does not implement ({inline})"
