"""add --from DIR/vN: numbers copied from the version's JSON, the outcome from the measurement."""

import json

import pytest
from experience_fixtures import HYPOTHESIS, comparison, profile, version_folder, write_json

from kernel_opt.core.errors import UsageError
from kernel_opt.experience.evidence import read_version
from kernel_opt.experience.recording import build_record


def _run(tmp_path, speedup=1.40, ci=(1.36, 1.44), verdict="success", passed=True):
    v2 = version_folder(tmp_path, 2, median_us=140.0, profile=profile("memory_bound", 41.0, 20.0, 60.0))
    v3 = version_folder(
        tmp_path, 3, median_us=100.0, passed=passed,
        comparison=comparison(v2, speedup, ci[0], ci[1], verdict),
        profile=profile("memory_bound", 78.0, 25.0, 62.0, stall="lg_throttle"),
        hypothesis=HYPOTHESIS,
    )
    return v2, v3


def test_every_number_is_copied_from_the_version_files(tmp_path):
    _, v3 = _run(tmp_path)
    new = build_record({"kernel": "softmax", "strategy": "vector_loads", "optimization": "float4 row loads"},
                       read_version(v3))
    r = new.record
    assert (r.kernel, r.backend, r.chip, r.chip_name) == ("softmax", "cuda", "sm_90", "H100")
    assert (r.dims, r.iteration, r.baseline, r.correct) == ({"N": 4096, "D": 4096}, 3, "v2", True)
    assert (r.speedup, r.speedup_ci_low, r.speedup_ci_high) == (1.40, 1.36, 1.44)
    assert (r.latency_before_us, r.latency_after_us) == (140.0, 100.0)
    assert (r.memory_sol_before_pct, r.memory_sol_after_pct) == (41.0, 78.0)
    assert (r.sm_sol_before_pct, r.sm_sol_after_pct) == (20.0, 25.0)
    assert (r.occupancy_before_pct, r.occupancy_after_pct) == (60.0, 62.0)
    assert (r.bottleneck, r.bottleneck_after, r.stall) == ("memory_bound", "memory_bound", "long_scoreboard")
    assert r.hypothesis.startswith("Loading each row with float4")
    assert r.expected.startswith("DRAM throughput rises")
    assert (r.outcome, r.outcome_source, r.strategy) == ("success", "measured", "vector_loads")
    assert r.version_dir == str(v3)
    assert new.not_measured == [] and new.warnings == []


@pytest.mark.parametrize(
    "speedup, ci, verdict, outcome",
    [
        (1.40, (1.36, 1.44), "success", "success"),
        (1.02, (0.99, 1.05), "neutral", "neutral"),
        (0.80, (0.78, 0.82), "failure", "failure"),
    ],
)
def test_outcome_is_the_measured_verdict(tmp_path, speedup, ci, verdict, outcome):
    _, v3 = _run(tmp_path, speedup, ci, verdict)
    record = build_record({"kernel": "softmax", "optimization": "x"}, read_version(v3)).record
    assert (record.outcome, record.outcome_source) == (outcome, "measured")


def test_an_incorrect_version_is_a_failure(tmp_path):
    _, v3 = _run(tmp_path, passed=False, verdict="failure")
    record = build_record({"kernel": "softmax", "optimization": "x"}, read_version(v3)).record
    assert (record.outcome, record.correct) == ("failure", False)
    with pytest.raises(UsageError, match="failed its correctness check"):
        build_record({"kernel": "softmax", "optimization": "x", "outcome": "success"}, read_version(v3))


def test_an_invalid_benchmark_is_a_failure_whose_time_counts_for_nothing(tmp_path):
    """A cached-output kernel's benchmark (verdict invalid) claimed a big win: the log must record a failure."""
    _, v3 = _run(tmp_path, speedup=60.0, ci=(58.0, 62.0), verdict="failure")
    path = v3 / "benchmark.json"
    write_json(path, {**json.loads(path.read_text()), "verdict": "invalid"})
    evidence = read_version(v3)
    assert evidence.invalid and evidence.median_us is None and evidence.measured_outcome == "failure"
    assert any("the time is invalid" in warning for warning in evidence.warnings)
    record = build_record({"kernel": "softmax", "optimization": "x"}, evidence).record
    assert (record.outcome, record.latency_after_us) == ("failure", None)


def test_a_typed_outcome_against_the_measurement_needs_force_and_notes(tmp_path):
    _, v3 = _run(tmp_path, 1.02, (0.99, 1.05), "neutral")
    given = {"kernel": "softmax", "optimization": "x", "outcome": "success"}
    with pytest.raises(UsageError) as error:
        build_record(given, read_version(v3))
    assert error.value.message == (
        "--outcome success contradicts the measurement: speedup 1.020x [0.990, 1.050] is a neutral"
    )
    with pytest.raises(UsageError, match="--force needs --notes"):
        build_record(given, read_version(v3), force=True)
    forced = build_record({**given, "notes": "the baseline ran with a cold L2"}, read_version(v3), force=True)
    assert (forced.record.outcome, forced.record.outcome_source) == ("success", "forced")
    agreeing = build_record({**given, "outcome": "neutral"}, read_version(v3)).record
    assert (agreeing.outcome, agreeing.outcome_source) == ("neutral", "measured")


def test_typed_numbers_that_contradict_the_files_are_refused(tmp_path):
    _, v3 = _run(tmp_path)
    base = {"kernel": "softmax", "optimization": "x"}
    with pytest.raises(UsageError) as error:
        build_record({**base, "memory_sol_after_pct": 60.0}, read_version(v3))
    assert error.value.message.startswith("--memory-sol-after 60.0 contradicts the measured value 78.0")
    with pytest.raises(UsageError, match="--bottleneck 'compute' contradicts"):
        build_record({**base, "bottleneck": "compute"}, read_version(v3))
    with pytest.raises(UsageError, match="--chip 'A100' contradicts .* H100 \\(sm_90\\)"):
        build_record({**base, "chip": "A100"}, read_version(v3))
    with pytest.raises(UsageError, match="--iteration 4 contradicts"):
        build_record({**base, "iteration": 4}, read_version(v3))
    # the same number typed with fewer digits, or the same label spelled differently, is fine
    same = build_record({**base, "memory_sol_after_pct": 78.04, "bottleneck": "memory", "chip": "sm_90"},
                        read_version(v3))
    assert same.record.memory_sol_after_pct == 78.0 and same.record.chip_name == "H100"


def test_empty_recorded_dims_do_not_contradict_typed_ones(tmp_path):
    v1 = version_folder(tmp_path, 1)
    write_json(v1 / "correctness.json", {"passed": True, "backend": "cuda", "dims": {}, "device": None})
    new = build_record({"kernel": "softmax", "optimization": "x", "outcome": "neutral", "dims": {"N": 64}},
                       read_version(v1))
    assert new.record.dims == {"N": 64}


def test_missing_files_are_not_measured_and_never_guessed(tmp_path):
    v1 = tmp_path / "v1"
    v1.mkdir()
    evidence = read_version(v1)
    assert evidence.not_measured == [
        f"correctness: {v1 / 'correctness.json'} not found",
        f"speedup and time: {v1 / 'benchmark.json'} not found",
        f"metrics after: {v1 / 'ncu_summary.json'} not found",
        "metrics before: no baseline folder (comparison.against_dir) to read them from",
        f"hypothesis: {v1 / 'hypothesis.txt'} not found",
    ]
    with pytest.raises(UsageError, match="--outcome is required"):
        build_record({"kernel": "softmax", "backend": "cuda", "optimization": "x"}, evidence)
    record = build_record({"kernel": "softmax", "backend": "cuda", "optimization": "x", "outcome": "neutral"},
                          evidence).record
    assert (record.outcome_source, record.speedup, record.memory_sol_before_pct, record.chip) == (
        "given", None, None, None
    )
    assert record.iteration == 1


def test_baseline_found_beside_the_version_when_against_dir_moved(tmp_path):
    v2 = version_folder(tmp_path, 2, median_us=140.0,
                        profile=profile("latency_bound", 30.0, 20.0, 25.0, stall="barrier"))
    v3 = version_folder(tmp_path, 3, comparison=comparison(tmp_path / "elsewhere" / "v2", 1.2, 1.1, 1.3, "success"))
    evidence = read_version(v3)
    assert evidence.baseline_dir == v2
    fields = evidence.record_fields()
    assert (fields["bottleneck"], fields["stall"], fields["occupancy_before_pct"]) == ("latency_bound", "barrier", 25.0)
    assert fields["memory_sol_after_pct"] is None  # v3 was not profiled


def test_bad_files_name_the_file_and_field(tmp_path):
    v3 = version_folder(tmp_path, 3)
    (v3 / "benchmark.json").write_text("{not json")
    with pytest.raises(UsageError, match=r"benchmark.json is not valid JSON \(line 1"):
        read_version(v3)
    write_json(v3 / "benchmark.json", {"solution": {"median_us": "fast"}})
    with pytest.raises(UsageError, match=r"field 'solution.median_us' must be int or float, got 'fast'"):
        read_version(v3)
    write_json(v3 / "benchmark.json",
               {"solution": {"median_us": 1.0}, "comparison": {"speedup": 1.2, "verdict": "great"}})
    with pytest.raises(UsageError, match="field 'comparison.verdict' must be one of success, neutral, failure"):
        read_version(v3)
    with pytest.raises(UsageError, match="no such folder"):
        read_version(tmp_path / "v9")


def test_a_recorded_verdict_that_disagrees_with_the_thresholds_is_kept_with_a_warning(tmp_path):
    _, v3 = _run(tmp_path, 1.03, (1.01, 1.05), "success")
    evidence = read_version(v3)
    assert evidence.measured_outcome == "success"
    assert "differs from 'neutral' computed from speedup 1.030" in evidence.warnings[0]


def test_hypothesis_line_stands_in_for_a_missing_optimization(tmp_path):
    _, v3 = _run(tmp_path)
    new = build_record({"kernel": "softmax"}, read_version(v3))
    assert new.record.optimization.startswith("Loading each row with float4")
    assert new.record.strategy.startswith("loading_each_row_with_float4")
    assert any("stands in" in warning for warning in new.warnings)


def test_typed_speedup_without_files_decides_the_outcome():
    record = build_record({"kernel": "gemm", "backend": "triton", "optimization": "GROUP_M=8", "speedup": 1.25}).record
    assert (record.outcome, record.outcome_source) == ("success", "computed")
    with pytest.raises(UsageError, match="speedup 0.900x is a failure"):
        build_record({"kernel": "gemm", "backend": "triton", "optimization": "x", "speedup": 0.9, "outcome": "success"})


def test_record_json_is_plain(tmp_path):
    _, v3 = _run(tmp_path)
    line = build_record({"kernel": "softmax", "optimization": "x"}, read_version(v3)).record.to_json_line()
    assert json.loads(line)["speedup"] == 1.4


@pytest.mark.parametrize("source, backend", [
    ("import triton\n\n@triton.jit\ndef k(x): pass\n\nclass ModelNew: pass\n", "triton"),
    ("from torch.utils.cpp_extension import load_inline\n\nclass ModelNew: pass\n", "cuda"),
])
def test_a_model_new_is_filed_under_the_kernels_it_defines(tmp_path, source, backend):
    """evaluate asks recommend about a Triton ModelNew as Triton (advice.guide_backend): its records say triton."""
    _, v3 = _run(tmp_path)
    correctness = json.loads((v3 / "correctness.json").read_text())
    write_json(v3 / "correctness.json", {**correctness, "backend": "modelnew", "solution": "/on/the/gpu/host/v3/v3.py"})
    (v3 / "v3.py").write_text(source)
    assert read_version(v3).backend == backend
