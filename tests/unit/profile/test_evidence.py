"""The evidence rows for pipes, shared memory, the SASS and what was not verified: the classifier's numbers, worded."""

from kernel_opt.profile.classify import classify
from kernel_opt.profile.evidence import classification_details, design_rows, pipe_row, sass_row, shared_memory_row
from kernel_opt.profile.ncu.metrics import KernelMetrics

TENSOR_KERNEL = KernelMetrics(
    sm_throughput_pct=90.0, memory_throughput_pct=70.0, dram_throughput_pct=20.0, l2_throughput_pct=44.0,
    l1_throughput_pct=73.5, tensor_pipe_pct=95.0, fma_pipe_pct=0.0, alu_pipe_pct=2.8, lsu_pipe_pct=1.1,
    shared_load_bank_conflicts=917.0, shared_load_wavefronts=1090724.0, shared_load_instructions=262524.0,
    shared_store_bank_conflicts=131162.0, shared_store_wavefronts=636224.0, shared_store_instructions=98494.0,
    executed_opcodes={"HGMMA": 2097152.0, "UTMALDG": 163840.0, "USETMAXREG": 1584.0, "LDS": 262524.0},
)


def test_the_pipe_row_puts_the_busiest_math_pipe_first_with_its_roof():
    assert pipe_row(classify(TENSOR_KERNEL)) == ["busiest math pipe, % of its own peak (others)",
                                                 "tensor 95.0% (at its roof); FMA 0.0%, ALU 2.8%, LSU 1.1%"]
    assert pipe_row(classify(KernelMetrics(sm_throughput_pct=50.0))) is None


def test_the_shared_memory_row_gives_conflicts_per_direction_and_what_they_mean():
    assert shared_memory_row(classify(TENSOR_KERNEL)) == [
        "shared memory: bank conflicts (% of wavefronts)",
        "7.6% (loads 917 conflicts, 4.2 wavefronts/request; stores 131k conflicts, 6.5 wavefronts/request): "
        "operand staging for the tensor cores"]


def test_the_sass_row_names_its_source_and_what_it_could_not_see():
    assert sass_row(classify(TENSOR_KERNEL)) == [
        "SASS (executed opcode mix (ncu))",
        "HGMMA 2.10M, UTMALDG 164k, USETMAXREG 1584; asynchronous: wgmma (HGMMA x2.10M), TMA (UTMALDG x164k), "
        "warp specialization (USETMAXREG x1584)"]
    bare = classify(KernelMetrics(sm_throughput_pct=50.0, memory_throughput_pct=50.0))
    assert sass_row(bare) == ["SASS (pipe metrics (no SASS))", "no key opcode; not visible: wgmma, TMA, cp.async "
                              "(LDGSTS), warp specialization (USETMAXREG)"]


def test_design_rows_end_with_what_was_not_verified_and_details_carry_the_assessments():
    rows = design_rows(classify(KernelMetrics(sm_throughput_pct=50.0, memory_throughput_pct=70.0)))
    assert [row[0] for row in rows] == ["SASS (pipe metrics (no SASS))", "not verified (the report lacks it)"]
    details = classification_details(classify(TENSOR_KERNEL))
    assert details["pipes"]["busiest"] == "tensor" and details["shared_memory"]["operand_staging"] is True
    assert details["design"]["source"] == "executed opcode mix (ncu)" and details["unverified"] == []
