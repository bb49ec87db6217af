"""The benchmark's wrong-timed-output message names the cause its checks point at (measure/timed_outputs.py)."""

import pytest

from kernel_opt.check.integrity.launch_rules import LaunchCheck, LaunchedWork
from kernel_opt.measure.records import TimedOutputCheck
from kernel_opt.measure.timed_outputs import wrong_timed_outputs_text

PASS, FAIL = TimedOutputCheck(True), TimedOutputCheck(False)


@pytest.mark.parametrize("checks, cause", [
    ({"solution": FAIL, "solution (kernel time)": PASS}, "reuses results from earlier calls (cached by pointer"),
    ({"solution": FAIL, "solution (kernel time)": FAIL},
     "returns results kept from earlier calls (cached, or computed only on its first calls"),
    ({"solution": PASS, "solution (kernel time)": FAIL}, "wrong when replayed from a CUDA graph: the call does work on "
                                                         "the host"),
    ({"solution": PASS, "solution (kernel time)": PASS, "solution (interleaved)": FAIL, "against": PASS},
     "wrong only when timed alternately with the other version"),
    ({"solution": PASS, "solution (kernel time)": PASS, "solution (interleaved)": PASS, "against": FAIL},
     "the other version's own outputs were wrong"),
])
def test_each_pattern_of_failed_checks_names_its_cause(checks, cause):
    text = wrong_timed_outputs_text(checks, None)
    failed = ", ".join(name for name, check in checks.items() if not check.passed)
    assert text.startswith(f"the outputs of the timed calls are wrong ({failed}): ")
    assert cause in text and text.endswith("; its timing is not valid")


def test_the_correctness_gate_adds_what_ran_on_other_streams_and_library_only_calls():
    side = LaunchedWork("add(float const*, float*, int)", "kernel", 142, False, 1, 75.0, "own")
    mine = LaunchedWork("tail(float*)", "kernel", 17, True, 1, 1.0, "own")
    launches = LaunchCheck(profiled=True, work=[mine, side], own_kernels=2, values_passed=True)
    text = wrong_timed_outputs_text({"solution": FAIL, "solution (kernel time)": FAIL}, launches)
    assert "it also runs work on other streams (add on stream 142)" in text and "tail" not in text
    library = LaunchCheck(profiled=True, work=[LaunchedWork("cutlass::Kernel2", "kernel", 7, True, 1, 9.0,
                                                            "cuBLAS/CUTLASS")], own_kernels=0, library_kernels=1)
    assert "every kernel it launched in the correctness check was library code" in wrong_timed_outputs_text(
        {"solution": FAIL}, library)
