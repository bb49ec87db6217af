"""A tolerance that cannot judge, and outputs that pass only at KernelBench's 1e-2 (check/tolerance.py, verdict.py).

Where an all-zero or constant output would pass the atol/rtol in force, the reference-error rule
judges instead. Under --kernelbench-tolerances an output that passes only at 1e-2 is a precision
downgrade where the rounding probe shows one and a wrong result otherwise, with KernelBench's own
verdict beside it; `kernel-opt eval` counts it as incorrect and lists it apart. The Triton fixtures
for both live in reference/kernelbench_checks (tests/integration/test_fixture_corpus.py); the ModelNews here are
plain torch, so a whole check takes seconds.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch

from kernel_opt.check.compare import constant_would_pass
from kernel_opt.check.integrity.verdict import (
    correctness_failures,
    kernelbench_would_pass,
    tolerance_failures,
    unshown_kernelbench_passes,
)
from kernel_opt.check.records import CaseResult, CorrectnessReport, DeviceInfo, OutputComparison
from kernel_opt.check.tolerance import ATOL_RTOL, REFERENCE_ERROR, TolerancePolicy, expect, judge

KERNELBENCH = TolerancePolicy(kernelbench=True)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def softmax_case(policy: TolerancePolicy, rows: int = 4, columns: int = 4096, draw=torch.rand):
    """KernelBench's 23_Softmax in small: torch.rand rows (every softmax value under 1e-2 from 128 columns on)."""
    x = draw(rows, columns, generator=torch.Generator().manual_seed(0))
    values = {"x": x, "y": torch.empty_like(x)}
    return values, expect(lambda x, **_: torch.softmax(x, dim=1), policy, {}, values, ["y"])


def first_chunk_softmax(x: torch.Tensor, chunk: int = 256) -> torch.Tensor:
    """The denominator sums the first `chunk` columns only: every value about columns / chunk times the true one."""
    numerator = torch.exp(x - x.max(dim=1, keepdim=True).values)
    return numerator / numerator[:, :chunk].sum(dim=1, keepdim=True)


# --- which outputs a tolerance cannot judge ----------------------------------------------------------------


def test_constant_would_pass_names_zeros_a_constant_or_nothing():
    assert constant_would_pass(torch.full((8,), 3e-3), 1e-2, 1e-2) == "an all-zero output"
    assert constant_would_pass(torch.tensor([0.50, 0.51, 0.52]), 1e-2, 1e-2) == "a constant output (0.51 everywhere)"
    assert constant_would_pass(torch.tensor([0.5, 0.6]), 1e-2, 1e-2) is None  # 0.1 apart: no common point
    assert constant_would_pass(torch.tensor([2.0]), 1e-2, 1e-2) is None  # one element: zeros alone count
    assert constant_would_pass(torch.tensor([1e-3]), 1e-2, 1e-2) == "an all-zero output"
    assert constant_would_pass(torch.tensor([1e-3, float("nan")]), 1e-2, 1e-2) is None  # no constant is NaN
    assert constant_would_pass(torch.arange(4), 1.0, 0.0) is None  # integers are compared exactly
    assert constant_would_pass(torch.zeros(0), 1e-2, 1e-2) is None
    # the bounds at their edge: |0 - 0.0101| <= 0.01 + 0.01 * 0.0101 holds, 0.0102 does not
    assert constant_would_pass(torch.tensor([0.0101]), 1e-2, 1e-2) is not None
    assert constant_would_pass(torch.tensor([0.0102]), 1e-2, 1e-2) is None


def test_an_explicit_atol_an_all_zero_output_would_pass_hands_the_output_to_the_reference_error_rule():
    policy = TolerancePolicy(ref_atol=1e-5, ref_rtol=1e-5)
    x = torch.randn(256, generator=torch.Generator().manual_seed(2)) * 1e-8
    values = {"x": x, "out": torch.empty(256)}
    expectation = expect(lambda x, **_: x * 2, policy, {}, values, ["out"])
    assert expectation.truth is not None  # measured because the tolerance cannot judge
    zeros, rule = judge("out", torch.zeros(256), expectation, policy)
    assert not zeros.passed and rule.kind == REFERENCE_ERROR and zeros.tolerance_rule == REFERENCE_ERROR
    assert zeros.tolerance_cannot_judge == "an all-zero output would pass at atol=1e-05, rtol=1e-05 (ref.py)"
    assert rule.source.endswith("; an all-zero output would pass at atol=1e-05, rtol=1e-05 (ref.py), so that "
                                "tolerance cannot judge it")
    exact, _ = judge("out", x * 2, expectation, policy)
    assert exact.passed and exact.tolerance_cannot_judge is not None and not exact.precision_downgrade
    assert "tolerance_cannot_judge" in exact.to_dict()
    large = {"x": torch.randn(256), "out": torch.empty(256)}
    judged = expect(lambda x, **_: x * 2, policy, {}, large, ["out"])
    assert judged.truth is None  # a tolerance that can judge: exactly as before, no float64 run
    comparison, rule = judge("out", large["x"] * 2, judged, policy)
    assert comparison.passed and rule.kind == ATOL_RTOL and "tolerance_cannot_judge" not in comparison.to_dict()


def test_kernelbench_s_tolerance_cannot_judge_a_wide_softmax():
    values, expectation = softmax_case(KERNELBENCH)
    x = values["x"]
    zeros, rule = judge("y", torch.zeros_like(x), expectation, KERNELBENCH)
    assert not zeros.passed and zeros.kernelbench_would_pass is True and zeros.solution_error == 1.0
    assert zeros.tolerance_cannot_judge == "an all-zero output would pass at KernelBench's atol = rtol = 1e-2"
    assert rule.kind == REFERENCE_ERROR
    chunk, _ = judge("y", first_chunk_softmax(x), expectation, KERNELBENCH)
    assert not chunk.passed and chunk.kernelbench_would_pass is True  # about 16 times the true values, under 1e-2
    assert chunk.tolerance_cannot_judge == "an all-zero output would pass at KernelBench's atol = rtol = 1e-2"
    assert chunk.solution_error > 10  # normwise, against the float64 truth
    assert not chunk.precision_downgrade and not chunk.kernelbench_only  # wrong, never "a precision downgrade"
    honest, _ = judge("y", torch.softmax(x.double(), dim=1).float(), expectation, KERNELBENCH)
    assert honest.passed and honest.kernelbench_would_pass is True and not honest.kernelbench_only
    narrow_values, narrow = softmax_case(KERNELBENCH, columns=64, draw=torch.randn)  # up to ~0.2: 1e-2 can judge
    judged, rule = judge("y", torch.zeros_like(narrow_values["x"]), narrow, KERNELBENCH)
    assert rule.kind == ATOL_RTOL and judged.tolerance_cannot_judge is None and not judged.passed


def test_the_default_rule_calls_no_failure_a_downgrade_on_a_tolerance_that_cannot_judge():
    policy = TolerancePolicy()
    values, expectation = softmax_case(policy)
    chunk, _ = judge("y", first_chunk_softmax(values["x"]), expectation, policy)
    assert not chunk.passed and not chunk.precision_downgrade  # within 1e-2 only because 1e-2 sees nothing here
    [sentence] = correctness_failures(report_of([chunk]))
    assert "precision downgrade" not in sentence and "KernelBench" not in sentence


# --- the record: passing only at 1e-2 needs the rounding probe's evidence --------------------------------


def kernelbench_only_output(name: str = "output") -> OutputComparison:
    return OutputComparison(name, "float32", [4], 4, 1e-2, 1e-2, True, 0, 0, 0, 1e-3, 1e-3, 1e-3, False,
                            solution_error=2e-3, reference_error=1e-7, allowed_error=1e-5,
                            kernelbench_would_pass=True, kernelbench_only=True)


def report_of(outputs: list[OutputComparison], probe: dict | None = None, kernelbench: bool = False,
              verdict: str = "fail") -> CorrectnessReport:
    report = CorrectnessReport(verdict, "s.py", "p.py", "modelnew", DeviceInfo("cpu"), True, "test", {}, [0],
                               cases=[CaseResult({}, 0, all(o.passed for o in outputs), outputs)], planned_cases=1,
                               kernelbench_tolerances=kernelbench)
    if probe is not None:
        report.integrity["rounding_probe"] = probe
    return report


def test_passing_only_at_kernelbench_s_tolerance_is_wrong_without_the_probe_s_evidence():
    followed = {"ran": True, "probes": [], "downgraded_outputs": []}
    report = report_of([kernelbench_only_output()], followed, kernelbench=True)
    assert unshown_kernelbench_passes(report) == ["output"] and report.precision_downgrades == []
    [sentence] = tolerance_failures(report)
    assert sentence == (
        "output 'output' passes only at KernelBench's atol = rtol = 1e-2: its normwise error from the float64 truth "
        "is 0.002 against 1e-05 allowed by the reference-error rule, 2e+04x the reference's own error; the rounding "
        "probe found no input whose low bits it ignores, so this is a wrong result, not a precision downgrade "
        "(KernelBench's rule (atol = rtol = 1e-2) would pass it)")
    assert kernelbench_would_pass(report)
    shown = report_of([kernelbench_only_output()], {"ran": True, "downgraded_outputs": ["output"]}, kernelbench=True,
                      verdict="pass")
    assert unshown_kernelbench_passes(shown) == [] and shown.precision_downgrades == ["output"]
    assert not kernelbench_would_pass(shown)  # it passes here too
    not_run = report_of([kernelbench_only_output()], {"ran": False, "note": "not run: no float32 output"}, True)
    assert "the rounding probe did not run (not run: no float32 output)" in tolerance_failures(not_run)[0]
    assert CorrectnessReport.from_dict(json.loads(json.dumps(report.to_dict()))).kernelbench_only_outputs == ["output"]


def test_correctness_md_says_the_rule_took_over_only_where_it_did(tmp_path):
    from kernel_opt.check.records import ToleranceEntry
    from kernel_opt.check.report import write_correctness_reports

    said = "- an atol/rtol that an all-zero or constant output would pass (the outputs are too small for it)"
    for cannot_judge in (None, "an all-zero output would pass at KernelBench's atol = rtol = 1e-2"):
        output = kernelbench_only_output()
        output.tolerance_cannot_judge = cannot_judge
        report = report_of([output], kernelbench=True)
        report.tolerances = [ToleranceEntry("output", "float32", "atol/rtol", 1e-2, 1e-2, None, None, "KernelBench")]
        folder = tmp_path / str(cannot_judge is not None)
        folder.mkdir()
        write_correctness_reports(report, folder, 1)
        assert (said in (folder / "correctness.md").read_text()) is (cannot_judge is not None)


# --- through the real check and the eval (child processes, CPU) -----------------------------------------

GELU_PROBLEM = """\
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x):
            return torch.nn.functional.gelu(x)

    batch_size = 64
    dim = 256

    def get_inputs():
        return [3 * torch.randn(batch_size, dim)]

    def get_init_inputs():
        return []
    """

TANH_GELU = """\
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        \"\"\"GELU's tanh approximation: within 1e-2 of the exact GELU, far outside its rounding.\"\"\"

        def __init__(self):
            super().__init__()

        def forward(self, x):
            return torch.nn.functional.gelu(x, approximate="tanh")
    """

SOFTMAX_PROBLEM = """\
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x):
            return torch.softmax(x, dim=1)

    batch_size = 8
    dim = 16384

    def get_inputs():
        return [torch.randn(batch_size, dim)]

    def get_init_inputs():
        return []
    """

ZEROS = """\
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, x):
            return torch.zeros_like(x)
    """


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_an_approximation_that_passes_only_at_1e_2_fails_beside_kernelbench_s_verdict(tmp_path, capsys):
    from kernel_opt.commands.correctness_check import main

    problem = write(tmp_path / "problems", "gelu.py", GELU_PROBLEM)
    solution = write(tmp_path / "solutions", "gelu.py", TANH_GELU)
    code = main([str(solution), "--ref", str(problem), "--output-dir", str(tmp_path / "out"), "--seeds", "1",
                 "--kernelbench-tolerances"])
    printed = capsys.readouterr().out
    record = json.loads((tmp_path / "out" / "correctness.json").read_text())
    assert code == 1 and record["verdict"] == "fail", printed
    assert all(case["passed"] for case in record["cases"])  # every case within KernelBench's 1e-2
    output = record["cases"][0]["outputs"][0]
    assert output["kernelbench_only"] is True and output["kernelbench_would_pass"] is True
    assert "precision_downgrade" not in output and record["rounding_probe"]["downgraded_outputs"] == []
    assert printed.startswith("FAIL (on the CPU, Triton under its interpreter): all 4 cases are within "
                              "KernelBench's atol = rtol = 1e-2, but output 'output' passes only there and the "
                              "rounding probe shows no precision downgrade")
    assert "(KernelBench's own verdict: pass." in printed
    markdown = (tmp_path / "out" / "correctness.md").read_text()
    assert "| KernelBench's verdict | pass: its rule (atol = rtol = 1e-2, its seed-42 weights) would pass" in markdown
    assert "so this is a wrong result, not a precision downgrade (KernelBench's rule (atol = rtol = 1e-2) would " \
           "pass it)" in markdown


@pytest.mark.slow  # the correctness check end to end, in its child process
@pytest.mark.parametrize("kernelbench", [True, False], ids=["kernelbench tolerances", "default rule"])
def test_the_eval_counts_them_as_incorrect_and_lists_them_apart(tmp_path, kernelbench):
    """Under the default rule the approximation fails as before; within 1e-2 of a reference 1e-2 can judge, but the
    rounding probe shows no input rounded, so under neither rule is it called a precision downgrade. There is no
    KernelBench verdict to list beside it under the default rule."""
    from kernel_opt.commands.eval import main
    from kernel_opt.suite.records import EvalReport

    write(tmp_path / "problems", "gelu.py", GELU_PROBLEM)
    write(tmp_path / "problems", "softmax.py", SOFTMAX_PROBLEM)
    write(tmp_path / "solutions", "gelu.py", TANH_GELU)
    write(tmp_path / "solutions", "softmax.py", ZEROS)
    out = tmp_path / "eval"
    code = main([str(tmp_path / "problems"), str(tmp_path / "solutions"), "--output-dir", str(out), "--seeds", "1",
                 *(["--kernelbench-tolerances"] if kernelbench else [])])
    report = EvalReport.from_dict(json.loads((out / "eval.json").read_text()))
    assert code == 1
    assert {entry.name: (entry.verdict, entry.kernelbench_would_pass, entry.precision_downgrade)
            for entry in report.entries} == {"gelu": ("incorrect", kernelbench, False),
                                             "softmax": ("incorrect", kernelbench, False)}
    assert report.summary.correct == 0 and report.summary.kernelbench_would_pass == (2 if kernelbench else 0)
    markdown = (out / "eval.md").read_text()
    assert ("## Incorrect here, correct by KernelBench's rule" in markdown) is kernelbench
    assert ("| incorrect, though KernelBench's rule would pass | 2" in markdown) is kernelbench
    if kernelbench:
        apart = markdown.split("## Incorrect here, correct by KernelBench's rule")[1]
        assert "- gelu: incorrect: output 'output' passes only at KernelBench's atol = rtol = 1e-2" in apart
        assert "- softmax: incorrect: output 'output': an all-zero output would pass at KernelBench's atol = " \
               "rtol = 1e-2, so the reference-error rule judged it" in apart
        assert "## Why they are not correct" not in markdown


# --- under the default rule: within 1e-2 is a suspicion, and the rounding probe decides ----------------------

MATMUL_PROBLEM = """\
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self):
            super().__init__()

        def forward(self, a, b):
            return a @ b

    M = 32
    K = 4096
    N = 32

    def get_inputs():
        return [torch.rand(M, K), torch.rand(K, N)]

    def get_init_inputs():
        return []
    """

LAST_TERM_DROPPED = """\
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        \"\"\"The product without its last term of K: every element off by a[i, -1] * b[-1, j] <= 1 of about K/4.\"\"\"

        def __init__(self):
            super().__init__()

        def forward(self, a, b):
            return a[:, :-1] @ b[:-1, :]
    """


@pytest.mark.slow  # the correctness check end to end, in its child process
def test_a_small_wrong_term_within_1e_2_is_a_wrong_result_not_a_precision_downgrade(tmp_path, capsys):
    """Every element within KernelBench's 1e-2 and outside the reference's rounding: the probe runs on the failing
    cases, sees the solution follow every input bit, and the record calls it a wrong result."""
    from kernel_opt.commands.correctness_check import main

    problem = write(tmp_path / "problems", "matmul.py", MATMUL_PROBLEM)
    solution = write(tmp_path / "solutions", "matmul.py", LAST_TERM_DROPPED)
    code = main([str(solution), "--ref", str(problem), "--output-dir", str(tmp_path / "out"), "--seeds", "1"])
    record = json.loads((tmp_path / "out" / "correctness.json").read_text())
    report = CorrectnessReport.from_dict(record)
    assert code == 1 and record["verdict"] == "fail"
    assert all(output["precision_downgrade"] for case in record["cases"] for output in case["outputs"]
               if not output["passed"])  # the suspicion: within 1e-2, outside the reference's rounding
    probe = record["rounding_probe"]
    assert probe["ran"] and probe["downgraded_outputs"] == [] and probe["probes"]
    assert {item["verdict"] for item in probe["probes"]} <= {"followed", "inconclusive"}
    assert "followed" in {item["verdict"] for item in probe["probes"]}
    assert report.precision_downgrades == []
    [first, *_] = correctness_failures(report)
    assert "within KernelBench's atol = rtol = 1e-2 but not within the reference's own rounding, and nothing " \
           "shows lower-precision arithmetic (the rounding probe found no input rounded): a wrong result" in first
    markdown = (tmp_path / "out" / "correctness.md").read_text()
    assert "**precision downgrade**" not in markdown and "a precision downgrade:" not in markdown


def test_the_failure_text_says_downgrade_only_on_the_probe_s_word():
    from kernel_opt.check.records import output_failure_text

    values, expectation = softmax_case(TolerancePolicy(), columns=64, draw=torch.randn)
    wrong = torch.softmax(values["x"], dim=1) * 1.001  # within 1e-2, far outside float32 rounding
    comparison, _ = judge("y", wrong, expectation, TolerancePolicy())
    assert not comparison.passed and comparison.precision_downgrade
    within = "within KernelBench's atol = rtol = 1e-2 but not within the reference's own rounding"
    assert f"; {within}; max abs error" in output_failure_text(comparison)  # the caller cannot know: no diagnosis
    assert f"; a precision downgrade: {within}, and the rounding probe shows inputs rounded" in \
        output_failure_text(comparison, True)
    assert f"; {within}, and nothing shows lower-precision arithmetic" in output_failure_text(comparison, False)
    assert "a precision downgrade:" not in output_failure_text(comparison, False)
