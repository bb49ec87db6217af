"""The memory plan (check/memory_plan.py) on made-up GPUs: what it chooses for KernelBench's stock sizes.

The numbers are those of level1 23_Softmax at its stock size (4096 x 393216 float32: 6.4 GB per
tensor), of a softmax three times as wide (13.3 GB per tensor: its eager forward takes a third of an
80 GB GPU, the target), and a made-up GPU's free memory once the case's instance and the reference's
outputs are allocated.
"""

import pytest

from kernel_opt.check.memory_plan import (
    HEADROOM_MIN_BYTES,
    MAX_TRUTH_CHUNKS,
    SAMPLE_PIECES,
    Budget,
    TruthSizes,
    headroom,
    place,
    plan_truth,
)

GB, GIB = 10**9, 2**30
STOCK = 4096 * 393216 * 4  # 23_Softmax's input and output, bytes each
WIDE = 4096 * 812000 * 4  # 13.3 GB each: input + output take a third of 80 GB
CONTEXT = GIB // 2  # the CUDA context and torch's own


def softmax(tensor_bytes: int) -> TruthSizes:
    """A softmax's sizes as check/truth.py measures them: the reference's run took copies of the input and the
    output buffer and allocated its result (3 tensors)."""
    return TruthSizes(inputs=tensor_bytes, outputs=tensor_bytes, inputs_float64=2 * tensor_bytes,
                      outputs_float64=2 * tensor_bytes, row_inputs_float64=2 * tensor_bytes, rows=4096,
                      reference_transient=3 * tensor_bytes)


def gpu(total: int, tensor_bytes: int, host: int | None = 128 * GIB) -> Budget:
    """A GPU holding the case's instance (input, output buffer) and the reference's output."""
    return Budget(total - 3 * tensor_bytes - CONTEXT, total, host)


@pytest.mark.parametrize("total", [80 * GB, 141 * GB], ids=["80GB", "141GB"])
def test_stock_softmax_computes_its_truth_in_one_run_and_keeps_it_on_the_gpu(total):
    sizes = softmax(STOCK)
    assert sizes.whole == 6 * STOCK == pytest.approx(38.65 * GB, rel=1e-3)  # float64 input, output, result
    assert sizes.case_reserve == 2 * STOCK  # the input-mutation copy and the solution's result
    attempts = plan_truth(sizes, gpu(total, STOCK), sizes.case_reserve)
    assert [(a.how, a.kept_on) for a in attempts] == [("whole", "device"), ("row chunks", "device"), ("host", "host")]
    assert attempts[0].needed_bytes == sizes.whole
    assert attempts[1].chunk_rows == 2048  # two chunks at the least: the fallback when one run runs out of memory


def test_a_problem_of_a_third_of_an_80gb_gpu_chunks_its_truth_and_keeps_it_on_the_host():
    sizes = softmax(WIDE)
    budget = gpu(80 * GB, WIDE)
    assert sizes.whole > budget.device  # 79.8 GB in one run
    attempts = plan_truth(sizes, budget, sizes.case_reserve)
    chunks, host = attempts
    assert (chunks.how, chunks.kept_on, chunks.chunk_rows) == ("row chunks", "host", 1824)
    assert chunks.needed_bytes <= budget.device and host.how == "host"
    assert chunks.text(sizes) == ("the float64 truth in 3 row chunks of 1824 of 4096 rows, kept on the host "
                                  "(35.5 GB per chunk; 79.8 GB in one run would not fit)")
    assert place(WIDE, budget, sizes.case_reserve) == "host"  # the reference's outputs wait there too


def test_the_same_problem_on_a_141gb_gpu_runs_whole_and_keeps_the_truth_on_the_gpu():
    sizes = softmax(WIDE)
    attempts = plan_truth(sizes, gpu(141 * GB, WIDE), sizes.case_reserve)
    assert (attempts[0].how, attempts[0].kept_on) == ("whole", "device")


def test_without_room_on_the_host_a_sample_of_rows_comes_before_a_truth_that_would_crowd_the_solution():
    sizes = softmax(WIDE)
    attempts = plan_truth(sizes, gpu(80 * GB, WIDE, host=8 * GIB), sizes.case_reserve)
    sample = attempts[0]
    assert sample.how == "row sample" and sample.kept_on == "device"
    assert sample.sample_rows == 687 and sample.chunk_rows == -(-687 // SAMPLE_PIECES)
    assert sample.needed_bytes + sizes.case_reserve <= gpu(80 * GB, WIDE).device
    assert "a sample of 687 of 4096 rows in 3 pieces" in sample.text(sizes)
    assert attempts[1].how == "row chunks" and attempts[1].kept_on == "device"  # a last resort
    assert all(attempt.how != "host" for attempt in attempts)


def test_rows_that_cannot_be_cut_go_to_the_host_and_nothing_else_is_tried_first():
    sizes = TruthSizes(inputs=WIDE, outputs=WIDE, inputs_float64=2 * WIDE, outputs_float64=2 * WIDE,
                       reference_transient=3 * WIDE)  # rows=0: a ref.py, or a Model whose rows mix
    attempts = plan_truth(sizes, gpu(80 * GB, WIDE), sizes.case_reserve)
    assert [(a.how, a.kept_on) for a in attempts] == [("host", "host")]


def test_where_nothing_is_planned_to_fit_one_run_is_tried_all_the_same():
    sizes = TruthSizes(inputs=WIDE, outputs=WIDE, inputs_float64=2 * WIDE, outputs_float64=2 * WIDE,
                       reference_transient=3 * WIDE)
    attempts = plan_truth(sizes, gpu(80 * GB, WIDE, host=None), sizes.case_reserve)
    assert [(a.how, a.needed_bytes) for a in attempts] == [("whole", sizes.whole)]


def test_a_cpu_run_never_plans_the_host_as_somewhere_else():
    sizes = softmax(STOCK)
    budget = Budget(30 * GB, 30 * GB, None, on_gpu=False)
    attempts = plan_truth(sizes, budget, 0)
    assert [a.how for a in attempts] == ["row chunks"] and attempts[0].kept_on == "device"
    assert budget.host == 0 and place(STOCK, budget, 10**15) == "device"


def test_weights_are_not_divided_by_row_chunks():
    """A Linear's weight (fixed) is upcast whole in every chunk; only the rows' part scales."""
    sizes = TruthSizes(inputs=12 * GB, outputs=4 * GB, inputs_float64=24 * GB, outputs_float64=8 * GB,
                       row_inputs_float64=8 * GB, rows=1000, reference_transient=20 * GB)
    assert sizes.fixed == 16 * GB and sizes.whole == 24 * GB + 8 * GB + 8 * GB
    assert sizes.rows_run(500) == 16 * GB + 12 * GB
    attempts = plan_truth(sizes, Budget(40 * GB, 80 * GB, None), 0)
    assert attempts[0].how == "row chunks" and sizes.rows_run(attempts[0].chunk_rows) + 8 * GB <= 36 * GB


def test_too_many_chunks_are_not_planned():
    sizes = softmax(WIDE)
    tight = Budget(sizes.outputs_float64 + HEADROOM_MIN_BYTES + sizes.whole // (2 * MAX_TRUTH_CHUNKS), 10 * GB,
                   None)
    assert all(attempt.how != "row chunks" for attempt in plan_truth(sizes, tight, 0))


def test_headroom_is_five_percent_of_the_gpu_and_a_gib_at_least():
    assert headroom(80 * GB) == 4 * GB and headroom(8 * GB) == GIB
    assert Budget(10 * GB, 80 * GB, 100 * GB).device == 6 * GB
    assert Budget(10 * GB, 80 * GB, 100 * GB).host == 80 * GB


def test_a_copy_goes_to_the_host_only_where_the_gpu_lacks_room_and_the_host_has_it():
    budget = Budget(30 * GB, 100 * GB, 50 * GB)  # 25 GB for a step after the headroom
    assert place(10 * GB, budget, 15 * GB) == "device"
    assert place(10 * GB, budget, 16 * GB) == "host"
    assert place(45 * GB, budget, 0) == "device"  # the host (40 GB) could not take it either
