"""The child request (run/request.py) and the one entry point every child program starts through (run/entry.py)."""

import json
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from kernel_opt.core.errors import UsageError
from kernel_opt.run.entry import child_main, error_event
from kernel_opt.run.events import read_event_log
from kernel_opt.run.request import (
    BenchmarkPart,
    ChildRequest,
    CorrectnessPart,
    ProfileTargetPart,
    SolutionSpec,
    SweepPart,
    Tolerances,
)

CUDA_SPEC = SolutionSpec("cuda", "v1/v1.cu", {"library": "build/libv1.so", "signature": {"parameters": []}})
TOY_SPEC = SolutionSpec("torch_ops", "toy.py", backend_module="tests.toy")


def requests() -> list[ChildRequest]:
    tolerances = Tolerances(1e-3, None, True)
    return [
        ChildRequest(CUDA_SPEC, "ref.py", "cuda", {"n": 128}, CorrectnessPart([0, 1, 2], tolerances, [{"n": 7}]),
                     "events.jsonl"),
        ChildRequest(TOY_SPEC, "ref.py", "cpu", {}, CorrectnessPart([0], sanitized=True, integrity_checks=("m",))),
        ChildRequest(CUDA_SPEC, "ref.py", "cuda", {"n": 128},
                     BenchmarkPart(3, tolerances, TOY_SPEC, {"flops": 1.0}, True, True)),
        ChildRequest(CUDA_SPEC, "ref.py", "cuda", {}, BenchmarkPart(baselines=["eager"], compile_modes=[])),
        ChildRequest(CUDA_SPEC, "ref.py", "cuda", {"n": 8}, ProfileTargetPart(3, 1, "kernel_opt_solution"), "e"),
        ChildRequest(TOY_SPEC, "ref.py", "cpu", {"D": 64}, SweepPart("N", [2, 4], {"runs": 1}, "frames", "s.csv", 0)),
    ]


@pytest.mark.parametrize("request_", requests(), ids=lambda request: request.mode)
def test_every_mode_round_trips_through_its_file(request_, tmp_path):
    path = request_.write(tmp_path / "request.json")
    assert ChildRequest.read(path, request_.mode) == request_
    payload = json.loads(path.read_text())
    assert ("mode" in payload) is request_.part.names_its_mode
    assert payload["backend"] == request_.solution.backend and payload["solution"] == request_.solution.path


def test_a_kept_profile_request_reads_and_writes_back_byte_for_byte():
    kept = REPO_ROOT / "demo" / "cuda" / "attention" / "v1" / "profile_request.json"
    request = ChildRequest.read(kept, ProfileTargetPart.mode)
    assert request.profile_target == ProfileTargetPart(3, 1, "kernel_opt_solution")
    assert set(request.solution.prepared) == {"library", "signature"}  # the CUDA backend's own values
    assert json.dumps(request.to_json(), indent=2) == kept.read_text()


def test_the_backend_s_values_are_its_own_and_may_not_take_the_request_s_names():
    request = requests()[0]
    assert request.to_json()["library"] == "build/libv1.so"
    clashing = ChildRequest(SolutionSpec("cuda", "v1.cu", {"seeds": [9]}), "ref.py", "cuda", {}, CorrectnessPart([0]))
    with pytest.raises(UsageError, match=r"\['seeds'\]"):
        clashing.to_json()


def test_a_part_is_read_only_from_its_own_mode():
    request = requests()[0]
    assert request.correctness.seeds == [0, 1, 2] and request.correctness.tolerances.atol == 1e-3
    with pytest.raises(UsageError, match="a correctness request has no benchmark part"):
        request.benchmark  # noqa: B018
    with pytest.raises(UsageError, match="unknown worker mode 'teleport'"):
        ChildRequest.from_json({"mode": "teleport"})


def test_a_held_benchmark_is_released_with_what_it_was_told():
    held = requests()[2]
    assert held.benchmark.wait_for_release and held.benchmark.baselines is None
    released = held.released({"baselines": ["eager", "compile"], "compile_modes": ["default"]})
    assert not released.benchmark.wait_for_release
    assert (released.benchmark.baselines, released.benchmark.compile_modes) == (["eager", "compile"], ["default"])
    assert released.benchmark.against == TOY_SPEC and released.solution == held.solution


# --- run/entry.py ------------------------------------------------------------------------------------


def run_child(tmp_path: Path, runner, mode: str = CorrectnessPart.mode) -> tuple[int, list]:
    events = tmp_path / f"events{len(list(tmp_path.glob('events*')))}.jsonl"
    path = requests()[0].with_events(events).write(tmp_path / "request.json")
    return child_main([str(path)], {mode: runner}), read_event_log(events)


def test_a_runner_s_exit_code_and_its_errors_come_back_as_events(tmp_path):
    assert run_child(tmp_path, lambda request, events: None) == (0, [])
    code, [event] = run_child(tmp_path, lambda request, events: (_ for _ in ()).throw(UsageError("bad ref.py")))
    assert (code, event.kind, event.message) == (2, "usage", "bad ref.py")
    code, [event] = run_child(tmp_path, lambda request, events: 1 / 0)
    assert (code, event.kind, event.message) == (3, "internal_error", "ZeroDivisionError: division by zero")
    assert "Traceback (most recent call last)" in event.hint and "1 / 0" in event.hint


def test_a_mode_the_program_does_not_serve_is_a_usage_error(tmp_path):
    code, [event] = run_child(tmp_path, lambda request, events: None, mode=BenchmarkPart.mode)
    assert (code, event.message) == (2, "unknown worker mode 'correctness'")


def test_a_missing_package_is_this_machine_s_fault():
    missing = ModuleNotFoundError("No module named 'triton'", name="triton")
    event = error_event(missing)
    assert (event.exit_code, event.kind) == (4, "missing_dependency") and "pip install" in event.hint
    assert error_event(ModuleNotFoundError("No module named 'mine'", name="mine")).exit_code == 3
