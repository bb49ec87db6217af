"""The eval's summary computed from its entries (suite/records.py): correct rate, fast_p, the geometric mean, and the
exit code they give."""

from __future__ import annotations

import pytest

from kernel_opt.commands.eval import exit_code_of
from kernel_opt.suite.records import EvalEntry, EvalReport, summarize

# --- the figures, on synthetic entries ----------------------------------------------------------------


def entry(name, verdict="correct", eager=None, compile_=None, **extra):
    return EvalEntry(name=name, problem=f"{name}.py", verdict=verdict, speedup_vs_eager=eager,
                     speedup_vs_compile=compile_, timed=eager is not None, **extra)


def test_fast_p_counts_every_problem_and_needs_more_than_p():
    entries = [entry("a", eager=2.5, compile_=1.2), entry("b", eager=1.5, compile_=0.9),
               entry("c", eager=1.0, compile_=0.5), entry("d", "incorrect"), entry("e", "missing"),
               entry("f", eager=4.0, compile_=3.0, precision_downgrade=True),
               entry("g", eager=1.6, compile_=1.1, library_only=True), entry("h", "solution_error")]
    summary = summarize(entries)
    assert (summary.problems, summary.correct, summary.timed) == (8, 5, 5)
    assert summary.correct_rate == 5 / 8
    # strictly more than p: 1.0x is not fast_1, 1.5x is not fast_1.5 (KernelBench's speed_up > p)
    assert summary.fast_p["eager"] == {"1": 4 / 8, "1.5": 3 / 8, "2": 2 / 8}
    assert summary.fast_p["compile"] == {"1": 3 / 8, "1.5": 1 / 8, "2": 1 / 8}
    assert summary.fast_p_own_kernels["eager"] == {"1": 2 / 8, "1.5": 1 / 8, "2": 1 / 8}  # without f and g
    assert summary.geomean_speedup["eager"] == pytest.approx((2.5 * 1.5 * 1.0 * 4.0 * 1.6) ** (1 / 5))
    assert summary.geomean_count == {"eager": 5, "compile": 5}
    assert (summary.precision_downgrades, summary.library_only) == (1, 1)


def test_without_timings_there_is_no_fast_p():
    summary = summarize([entry("a"), entry("b", "incorrect")])
    assert summary.fast_p == {"eager": None, "compile": None} and summary.geomean_speedup["eager"] is None
    assert summary.correct_rate == 0.5


@pytest.mark.parametrize("verdicts, code", [
    (["correct", "correct"], 0), (["correct", "incorrect"], 1), (["correct", "missing"], 1),
    (["correct", "environment_error"], 4), (["environment_error", "solution_error"], 1), (["internal_error"], 1),
])
def test_the_exit_code_says_whether_every_problem_is_correct(verdicts, code):
    entries = [entry(f"p{index}", verdict) for index, verdict in enumerate(verdicts)]
    report = EvalReport("p", "s", "eval.py", "now", {"type": "cpu"}, {}, entries, summarize(entries))
    assert exit_code_of(report) == code


# --- several GPUs -----------------------------------------------------------------------------------------------

H100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-a", "host": "node1"}
H200 = {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-b", "host": "node1"}


def test_figures_per_gpu_model_only_where_the_pairs_ran_on_more_than_one():
    from kernel_opt.suite.records import summarize_by_gpu_model

    same = [entry("a", eager=2.0, gpu=H100), entry("b", eager=1.0, gpu={**H100, "index": 1, "uuid": "GPU-c"})]
    assert summarize_by_gpu_model(same) == {}  # two boards of one model: one table is right
    mixed = [entry("a", eager=2.0, compile_=1.0, gpu=H100), entry("b", eager=8.0, compile_=4.0, gpu=H200),
             entry("c", "incorrect", gpu=H200), entry("d", "missing")]
    by_model = summarize_by_gpu_model(mixed)
    assert list(by_model) == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    h100, h200 = by_model.values()
    assert (h100.problems, h100.correct, h100.geomean_speedup["eager"]) == (1, 1, pytest.approx(2.0))
    assert (h200.problems, h200.correct, h200.geomean_speedup["eager"]) == (2, 1, pytest.approx(8.0))
    assert h200.fast_p["eager"] == {"1": 0.5, "1.5": 0.5, "2": 0.5}
    assert summarize(mixed).geomean_speedup["eager"] == pytest.approx(4.0)  # the overall figure mixes them


def test_the_spread_and_the_per_model_figures_read_back_and_older_records_read_without_them():
    from kernel_opt.suite.records import EvalExecution, summarize_by_gpu_model

    entries = [entry("a", eager=2.0, gpu=H100, device={"type": "cuda", "gpu": H100["name"]}),
               entry("b", eager=8.0, gpu=H200)]
    execution = EvalExecution("local workers", 2, [{**H100, "pairs": 1, "pair_s": 30.0}], wall_s=32.0, pairs_run=2,
                              pair_s=60.0)
    assert execution.parallel_speedup == pytest.approx(60.0 / 32.0)
    assert EvalExecution("ray", 4, wall_s=3.0).parallel_speedup is None  # nothing ran: no speedup to speak of
    report = EvalReport("p", "s", "eval.py", "now", {"type": "cuda"}, {}, entries, summarize(entries),
                        by_gpu_model=summarize_by_gpu_model(entries), execution=execution)
    again = EvalReport.from_dict(report.to_dict())
    assert again == report and again.entries[0].gpu_model == "NVIDIA H100 80GB HBM3"
    older = {key: value for key, value in report.to_dict().items() if key not in ("by_gpu_model", "execution")}
    older["entries"] = [{k: v for k, v in e.items() if k not in ("gpu", "device")} for e in older["entries"]]
    read = EvalReport.from_dict(older)
    assert read.execution is None and read.by_gpu_model == {} and read.entries[0].gpu is None
