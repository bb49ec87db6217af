"""The rounding probe (check/integrity/rounding_probe.py): mantissa rounding, the verdict rule, the real check.

The fixtures (tests/fixtures/rounding/) are sums of non-negative values, where rounding the
inputs to TF32 averages out below the float32 floor of the reference-error rule: only the probe
tells those kernels from honest ones.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from conftest import FIXTURES_DIR

from kernel_opt.check.integrity.rounding_probe import (
    IGNORED_RATIO,
    MIN_REFERENCE_CHANGE,
    ROUNDINGS,
    RoundingProbe,
    judge_probe,
    probed_case,
    round_mantissa,
    roundings_for,
)
from kernel_opt.check.records import CorrectnessReport
from kernel_opt.commands.correctness_check import main as check_main

FIXTURES = FIXTURES_DIR / "rounding"
ROUNDING = {rounding.name: rounding for rounding in ROUNDINGS}


def values(count: int = 100_000, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(count, generator=generator) * torch.exp(torch.randn(count, generator=generator) * 3)


# --- rounding the mantissa --------------------------------------------------------------------------


def test_bf16_to_nearest_is_torch_s_bfloat16_conversion():
    x = values()
    assert torch.equal(round_mantissa(x, ROUNDING["bf16, to nearest"]), x.to(torch.bfloat16).to(torch.float32))


def test_tf32_to_nearest_keeps_what_a_float16_conversion_keeps_in_its_normal_range():
    x = values()
    x = x[(x.abs() > 2.0**-14) & (x.abs() < 60000)]
    assert torch.equal(round_mantissa(x, ROUNDING["tf32, to nearest"]), x.to(torch.float16).to(torch.float32))


def test_toward_zero_clears_the_low_bits_and_never_grows_a_value():
    x = values()
    for name, dropped in (("tf32, toward zero", 13), ("bf16, toward zero", 16)):
        rounded = round_mantissa(x, ROUNDING[name])
        assert torch.all(rounded.view(torch.int32) & ((1 << dropped) - 1) == 0)
        assert torch.all(rounded.abs() <= x.abs()) and torch.all(torch.sign(rounded) == torch.sign(x))


def test_ties_go_to_even_and_specials_are_kept():
    one_and_half_ulp = torch.tensor([1 + 2.0**-11, 1 + 3 * 2.0**-11], dtype=torch.float32)  # halfway cases
    assert round_mantissa(one_and_half_ulp, ROUNDING["tf32, to nearest"]).tolist() == [1.0, 1 + 4 * 2.0**-11]
    specials = torch.tensor([float("inf"), -float("inf"), float("nan"), 0.0, -0.0, 3.4e38])
    rounded = round_mantissa(specials, ROUNDING["bf16, to nearest"])
    assert rounded[:2].tolist() == [float("inf"), -float("inf")] and torch.isnan(rounded[2])
    assert rounded[3:5].tolist() == [0.0, -0.0] and torch.isfinite(rounded[5])  # 3.4e38 does not round to inf


def test_allow_tf32_leaves_only_the_bf16_probes():
    assert [r.name for r in roundings_for(True)] == ["bf16, to nearest", "bf16, toward zero"]
    assert len(roundings_for(False)) == 4


# --- the verdict ------------------------------------------------------------------------------------


def test_the_verdict_rule():
    above = 10 * MIN_REFERENCE_CHANGE
    assert judge_probe(above, above) == "followed"  # an honest kernel moves with the reference
    assert judge_probe(above, 3 * above) == "followed"  # ... plus its own, unrelated rounding
    assert judge_probe(above, above / IGNORED_RATIO * 1.01) == "followed"
    assert judge_probe(above, above / IGNORED_RATIO * 0.99) == "ignored"
    assert judge_probe(above, 0.0) == "ignored"  # a deterministic kernel that rounds the input itself
    assert judge_probe(MIN_REFERENCE_CHANGE * 0.99, 0.0) == "inconclusive"  # the bits barely reach the output
    assert judge_probe(float("nan"), 0.0) == "inconclusive"


def test_the_record_round_trips_and_names_the_first_downgrade():
    payload = {"ran": True, "dims": {"N": 4}, "seed": 5, "probes": [
        {"input": "y", "rounding": "bf16, to nearest", "output": "out", "reference_change": 1e-3,
         "solution_change": 1e-3, "verdict": "followed", "precision": "bfloat16"},
        {"input": "x", "rounding": "tf32, to nearest", "output": "out", "reference_change": 2e-5,
         "solution_change": 0.0, "verdict": "ignored", "precision": "TF32 or float16"}]}
    probe = RoundingProbe.from_dict(payload)
    assert probe.downgraded_outputs == ["out"] and probe.to_dict()["downgraded_outputs"] == ["out"]
    assert probe.finding() == ("output 'out' ignores the low bits of input 'x': rounding 'x' to TF32 or float16 "
                               "(tf32, to nearest) moved the reference's output by 2e-05 and the solution's by 0, so "
                               "the solution computes with 'x' already rounded to TF32 or float16")
    assert RoundingProbe.from_dict({**payload, "probes": payload["probes"][:1]}).finding() is None


class Session:
    """What probed_case reads of the correctness child's session."""

    def __init__(self, device: str, largest_inputs: dict[int, int]):
        self.device, self.largest_inputs = device, largest_inputs
        self.cases = [{"n": 1 << 20}, {"n": 1}, {"n": 4097}, {"n": 8192}]


def test_on_a_gpu_the_probe_runs_at_the_command_line_s_shape():
    assert probed_case(Session("cuda", {0: 1 << 20, 1: 1, 2: 4097, 3: 8192})) == ({"n": 1 << 20}, None)


def test_under_the_interpreter_the_probe_runs_at_the_smallest_shape_large_enough():
    dims, note = probed_case(Session("cpu", {0: 1 << 20, 1: 1, 2: 4097, 3: 8192}))
    assert dims == {"n": 4097} and note.startswith("probed at n=4097, the smallest checked shape with at least 4096")
    assert probed_case(Session("cpu", {0: 1 << 20, 1: 1})) == ({"n": 1 << 20}, None)  # none smaller is enough
    assert probed_case(Session("cpu", {0: 100, 1: 1})) == ({"n": 1 << 20}, None)  # none is enough


# --- the real check on the CPU ----------------------------------------------------------------------


def check(tmp_path: Path, problem: str, solution: str, *extra: str) -> tuple[int, dict]:
    code = check_main([str(FIXTURES / f"{solution}.py"), "--ref", str(FIXTURES / f"{problem}.py"), "--output-dir",
                       str(tmp_path), "--device", "cpu", "--seeds", "1", *extra])
    return code, json.loads((tmp_path / "correctness.json").read_text())


def verdicts(record: dict) -> dict[tuple[str, str], str]:
    return {(p["input"], p["rounding"]): p["verdict"] for p in record["rounding_probe"]["probes"]}


@pytest.mark.slow
def test_an_honest_sum_follows_every_rounding(tmp_path):
    code, record = check(tmp_path, "row_sum", "row_sum_honest")
    assert code == 0 and record["verdict"] == "pass"
    assert set(verdicts(record).values()) == {"followed"} and len(verdicts(record)) == 4
    # the check runs at the interpreter's sizes (64 x 65536 is 4M elements), and the probe at the smallest checked
    # shape with 4096 elements in an input, and each says so
    assert record["sizes_note"].startswith("checked under the interpreter at rows=32, length=32768, not the run's "
                                           "rows=64, length=65536")
    assert record["rounding_probe"]["dims"] == {"rows": 8, "length": 8192}
    assert record["rounding_probe"]["note"].startswith("probed at rows=8, length=8192, the smallest checked shape")
    assert "## Rounding probe" in (tmp_path / "correctness.md").read_text()


@pytest.mark.slow
def test_a_tf32_sum_within_every_tolerance_fails_by_the_probe_alone(tmp_path):
    code, record = check(tmp_path, "row_sum", "row_sum_tf32_nearest")
    assert code == 1 and record["verdict"] == "fail"
    assert all(case["passed"] for case in record["cases"])  # the error norms cannot see it
    assert verdicts(record)[("x", "tf32, to nearest")] == "ignored"
    assert verdicts(record)[("x", "bf16, to nearest")] == "followed"
    ignored = next(p for p in record["rounding_probe"]["probes"] if p["verdict"] == "ignored")
    assert ignored["solution_change"] == 0.0 and ignored["reference_change"] > MIN_REFERENCE_CHANGE
    report = CorrectnessReport.from_dict(record)
    assert report.precision_downgrades == ["output"]
    markdown = (tmp_path / "correctness.md").read_text()
    assert "output 'output' ignores the low bits of input 'x'" in markdown
    assert re.search(r"\.\n\n\| input +\| rounded to", markdown)  # a table after a blank line
    assert re.search(r"\| `x` +\| tf32, to nearest +\| `output` +\| [0-9.e-]+ +\| 0 +\| 0 +\| ignored +\|", markdown)


@pytest.mark.slow
def test_under_kernelbench_tolerances_the_tf32_sum_passes_flagged(tmp_path, capsys):
    code, record = check(tmp_path, "row_sum", "row_sum_tf32_nearest", "--kernelbench-tolerances")
    assert code == 0 and record["verdict"] == "pass"
    assert CorrectnessReport.from_dict(record).precision_downgrades == ["output"]
    assert "PRECISION DOWNGRADE: output output passes only at KernelBench's tolerance" in capsys.readouterr().out


@pytest.mark.slow
def test_timeout_bounds_each_of_the_probe_s_calls_not_all_of_them(tmp_path):
    code, record = check(tmp_path, "row_sum", "row_sum_slow_calls", "--timeout", "2")  # 0.8 s a call, 5 calls
    assert code == 0 and record["verdict"] == "pass" and len(verdicts(record)) == 4


@pytest.mark.slow
def test_a_truncating_sum_fails_by_the_error_norms_and_the_probe_does_not_run(tmp_path):
    code, record = check(tmp_path, "row_sum", "row_sum_tf32_truncated")
    assert code == 1 and not any(case["passed"] for case in record["cases"])
    assert "rounding_probe" not in record  # a failed comparison is verdict enough


@pytest.mark.slow
def test_each_input_is_probed_on_its_own(tmp_path):
    code, record = check(tmp_path, "row_dot", "row_dot_x_tf32")
    assert code == 1 and all(case["passed"] for case in record["cases"])
    probes = verdicts(record)
    assert probes[("x", "tf32, to nearest")] == "ignored"
    assert probes[("y", "tf32, to nearest")] == "followed"


@pytest.mark.slow
def test_explicit_tolerances_say_what_precision_is_allowed_so_no_probe_runs(tmp_path):
    code, record = check(tmp_path, "row_sum", "row_sum_tf32_nearest", "--atol", "1e-3", "--rtol", "1e-3")
    assert code == 0 and "rounding_probe" not in record
