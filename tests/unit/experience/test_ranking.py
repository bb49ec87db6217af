"""recommend on a small hand-made log: chip-aware relevance, agreement, and failures shown."""

import pytest
from experience_fixtures import record

from kernel_opt.experience.labels import Chip
from kernel_opt.experience.ranking import MIN_RELEVANCE, Query, judge, recommend, speedup_gain
from kernel_opt.experience.records import validate
from kernel_opt.experience.store import Entry

H100 = dict(chip="sm_90", chip_name="H100")
H200 = dict(chip="sm_90", chip_name="H200")
A6000 = dict(chip="sm_86", chip_name="RTX A6000")
QUERY = Query(kernel="softmax", backend="cuda", chip=Chip("sm_90", "H100"), bottleneck="memory_bound")


def entries(*records):
    return [Entry("local", validate(r)) for r in records]


def number(entries_, start=1):
    for offset, entry in enumerate(entries_):
        entry.record.id = start + offset
    return entries_


def test_same_chip_evidence_outranks_other_chip_evidence_even_with_a_bigger_speedup():
    log = number(entries(
        record(strategy="other_chip_trick", speedup=2.0, **A6000),
        record(strategy="same_chip_trick", speedup=1.3, **H100),
    ))
    result = recommend(log, QUERY)
    assert [r.strategy for r in result.recommendations] == ["same_chip_trick", "other_chip_trick"]
    same, other = result.recommendations
    assert same.score == pytest.approx(1.0 * speedup_gain(1.3))
    assert other.score == pytest.approx(0.25 * speedup_gain(2.0))
    assert "same chip H100 (sm_90)" in same.support[0].reasons
    assert "other RTX A6000 (sm_86)" in other.support[0].reasons


def test_same_architecture_sits_between_same_chip_and_other_chips():
    log = number(entries(
        record(strategy="on_h100", speedup=1.2, **H100),
        record(strategy="on_h200", speedup=1.2, **H200),
        record(strategy="on_a6000", speedup=1.2, **A6000),
    ))
    assert [r.strategy for r in recommend(log, QUERY).recommendations] == ["on_h100", "on_h200", "on_a6000"]


def test_a_failure_in_the_same_situation_is_a_warning_and_in_the_avoid_list():
    log = number(entries(
        record(strategy="smem_staging", kernel="layernorm", speedup=1.3, **H100),
        record(strategy="smem_staging", outcome="failure", speedup=0.85, notes="bank conflicts on the staged row",
               **H100),
        record(strategy="vector_loads", speedup=1.3, **H100),
    ))
    result = recommend(log, QUERY)
    by_name = {r.strategy: r for r in result.recommendations}
    assert list(by_name) == ["vector_loads", "smem_staging"]
    staging = by_name["smem_staging"]
    assert staging.score == pytest.approx(0.6 * speedup_gain(1.3) - 0.5 * 1.0)
    assert len(staging.warnings) == 1
    assert staging.warnings[0].startswith("failure in #2 (softmax, H100 (sm_90), memory_bound, 0.85x)")
    assert "bank conflicts on the staged row" in staging.warnings[0]
    assert [m.entry.ref for m in result.avoid] == ["2"]
    assert result.avoid[0].relevance == pytest.approx(1.0)
    assert result.to_dict()["avoid"][0]["why"].startswith("same kernel softmax; same chip H100 (sm_90)")


def test_a_strategy_whose_failures_outweigh_its_successes_is_not_recommended():
    log = number(entries(
        record(strategy="bigger_blocks", speedup=1.1, **A6000),
        record(strategy="bigger_blocks", outcome="failure", speedup=0.8, **H100),
    ))
    result = recommend(log, QUERY)
    assert result.recommendations == []
    assert [m.entry.record.strategy for m in result.avoid] == ["bigger_blocks"]


def test_irrelevant_records_are_left_out():
    log = number(entries(
        record(kernel="gemm", bottleneck="compute_bound", strategy="wgmma", speedup=3.0, **A6000),
        record(kernel="layernorm", strategy="family_other_chip", speedup=1.5, **A6000),
    ))
    matches = [judge(entry, QUERY) for entry in log]
    assert all(m.relevance < MIN_RELEVANCE for m in matches)
    result = recommend(log, QUERY)
    assert result.recommendations == [] and result.avoid == [] and result.considered == 2


def test_independent_agreeing_records_add_up_but_copies_count_once():
    one = record(strategy="vector_loads", speedup=1.3, dims={"N": 4096}, **H100)
    copy_of_one = record(strategy="vector_loads", speedup=1.3, dims={"N": 4096}, **H100)
    another_size = record(strategy="vector_loads", speedup=1.3, dims={"N": 8192}, **H100)
    single = recommend(number(entries(one)), QUERY).recommendations[0]
    copied = recommend(number(entries(record(**{**one.__dict__, "id": None}), copy_of_one)), QUERY).recommendations[0]
    agreed = recommend(number(entries(record(**{**one.__dict__, "id": None}), another_size)), QUERY).recommendations[0]
    assert copied.score == pytest.approx(single.score)
    assert agreed.score == pytest.approx(2 * single.score)
    assert len(agreed.support) == 2 and agreed.median_speedup == pytest.approx(1.3)


def test_speedup_gain_saturates():
    assert speedup_gain(None) == 1.0
    assert speedup_gain(0.9) == 1.0
    assert speedup_gain(2.0) == pytest.approx(1.5)
    assert speedup_gain(4.0) == pytest.approx(2.0)
    assert speedup_gain(700.0) == pytest.approx(2.0)


def test_limit_and_deterministic_order():
    log = number(entries(*[record(strategy=f"s{i}", speedup=1.2, **H100) for i in range(8)]))
    result = recommend(log, QUERY, limit=3)
    assert [r.strategy for r in result.recommendations] == ["s0", "s1", "s2"]  # equal scores: by name


def test_unset_query_fields_do_not_filter():
    log = number(entries(record(strategy="x", speedup=1.2, **A6000)))
    result = recommend(log, Query(kernel="softmax"))
    assert [r.strategy for r in result.recommendations] == ["x"]
    assert result.recommendations[0].support[0].relevance == pytest.approx(1.0)


# --- the problem's family and the chip's hardware ------------------------------------------------------

A100 = Chip("sm_80", "A100")


def test_records_of_another_known_family_are_left_out_and_the_same_family_kept():
    """The agent trial's GELU (elementwise) was offered a GEMM's tile_shape and a softmax's single_pass."""
    log = number(entries(
        record(kernel="gemm", backend="triton", strategy="tile_shape", speedup=2.16),
        record(kernel="softmax", backend="triton", strategy="single_pass", speedup=1.55),
        record(kernel="relu", backend="triton", strategy="block_size", speedup=1.14),
    ))
    query = Query(kernel="88_mingptnewgelu", backend="triton", chip=Chip("sm_90", "H100"),
                  bottleneck="memory_bound", problem_family="elementwise")
    result = recommend(log, query)
    assert [r.strategy for r in result.recommendations] == ["block_size"]
    assert result.recommendations[0].score == pytest.approx(0.6 * speedup_gain(1.14))
    gemm = judge(log[0], query)
    assert gemm.relevance == pytest.approx(0.1) and gemm.relevance < MIN_RELEVANCE
    assert gemm.reasons[0] == "other family matmul_like (gemm), asked about elementwise"
    # a name that says no family ("v0") and no family asked: every family weighs as before, 0.25
    by_name = recommend(log, Query(kernel="v0", backend="triton", chip=Chip("sm_90", "H100"),
                                   bottleneck="memory_bound"))
    assert [r.strategy for r in by_name.recommendations] == ["tile_shape", "single_pass", "block_size"]


def test_attention_and_a_plain_product_share_a_family_but_not_a_kind():
    """A symmetric-matrix GEMM was offered an attention kernel's key masks and exp2 beside a GEMM's tile shapes, and
    a convolution was warned by attention kernels' failures."""
    log = number(entries(
        record(kernel="gemm", backend="triton", strategy="tile_shape", speedup=2.16),
        record(kernel="flash_attention", backend="triton", strategy="mask_free_blocks", speedup=1.10),
    ))
    query = Query(kernel="matmul_symmetric", backend="triton")
    gemm, attention = (judge(entry, query) for entry in log)
    assert gemm.relevance == pytest.approx(0.6) and attention.relevance == pytest.approx(0.15)
    assert attention.relevance < MIN_RELEVANCE
    assert attention.reasons[0] == ("same family matmul_like, but flash_attention is attention, asked about a plain "
                                    "product")
    assert [r.strategy for r in recommend(log, query).recommendations] == ["tile_shape"]
    asked_about_attention = judge(log[0], Query(kernel="causal_attention_fp16", backend="triton"))
    assert asked_about_attention.relevance == pytest.approx(0.15)
    assert judge(log[1], Query(kernel="sdpa", backend="triton")).relevance == pytest.approx(0.6)


def test_a_family_asked_without_a_kernel_labels_each_match_by_family():
    log = number(entries(record(kernel="layernorm", strategy="vector_loads", speedup=1.3, **H100)))
    query = Query(backend="cuda", chip=Chip("sm_90", "H100"), bottleneck="memory_bound", problem_family="row_reduction")
    (found,) = recommend(log, query).recommendations
    assert found.matched == ("exact match: same family row_reduction (layernorm) · same bottleneck memory_bound · "
                             "same chip H100 (sm_90) · same backend cuda")


def test_hopper_only_strategies_are_never_recommended_for_an_ampere_chip():
    log = number(entries(
        record(kernel="gemm", bottleneck="compute_bound", strategy="wgmma", speedup=1.19, **H100),
        record(kernel="gemm", bottleneck="compute_bound", strategy="tensor_cores", speedup=1.51, **H100),
        record(kernel="gemm", bottleneck="compute_bound", strategy="fp8_inputs", speedup=1.8, **H100),
        record(kernel="gemm", backend="triton", bottleneck="compute_bound", strategy="tensor_descriptors",
               speedup=1.1, **H100),
        record(kernel="gemm", bottleneck="compute_bound", strategy="tma_pipeline", outcome="failure", speedup=0.9,
               **H100),
    ))
    result = recommend(log, Query(kernel="gemm", chip=A100, bottleneck="compute_bound"))
    assert [r.strategy for r in result.recommendations] == ["tensor_cores"]
    assert result.unavailable == [
        ("wgmma", "needs wgmma (sm_9x only); this chip is sm_80"),
        ("fp8_inputs", "needs FP8 tensor cores (sm_89 or newer); this chip is sm_80"),
        ("tensor_descriptors", "needs TMA (sm_90 or newer); this chip is sm_80"),
    ]
    assert result.avoid == []  # a failure of TMA on Hopper is nothing to avoid on a chip without TMA
    assert result.to_dict()["unavailable"][0] == {"strategy": "wgmma",
                                                  "why": "needs wgmma (sm_9x only); this chip is sm_80"}
    ada = recommend(log, Query(kernel="gemm", chip=Chip("sm_89", "L40S"), bottleneck="compute_bound"))
    assert [r.strategy for r in ada.recommendations] == ["fp8_inputs", "tensor_cores"]
    unknown = recommend(log, Query(kernel="gemm", bottleneck="compute_bound"))  # a run checked on a CPU: no chip
    assert unknown.unavailable == []  # no chip: no gate, but each chip-bound strategy says what it needs
    needs = {r.strategy: r.chip_requirement for r in unknown.recommendations}
    assert needs == {"fp8_inputs": "needs FP8 tensor cores (sm_89 or newer)", "tensor_cores": None,
                     "wgmma": "needs wgmma (sm_9x only)", "tensor_descriptors": "needs TMA (sm_90 or newer)"}
    wgmma = next(r for r in unknown.recommendations if r.strategy == "wgmma")
    assert wgmma.warnings[0] == ("needs wgmma (sm_9x only); the chip was not known here: check the GPU's compute "
                                 "capability first")


def test_when_nothing_matches_on_any_chip_the_note_says_so_instead_of_none():
    log = number(entries(record(kernel="gemm", bottleneck="compute_bound", strategy="wgmma", speedup=1.19, **H100)))
    result = recommend(log, Query(backend="cuda", chip=A100, bottleneck="compute_bound"))
    assert result.recommendations == []
    assert result.chip_note == ("no record comes from A100 (sm_80), and none from another chip matches this question "
                                "either")


def test_a_lever_only_another_backend_s_guide_has_is_left_out_with_the_reason():
    """wgmma helped a CUDA kernel; a Triton kernel cannot issue it (tl.dot chooses); TRITON.md has no section for it."""
    log = number(entries(
        record(kernel="gemm", bottleneck="compute_bound", strategy="wgmma", speedup=1.19, **H100),
        record(kernel="gemm", backend="triton", bottleneck="compute_bound", strategy="tile_shape", speedup=2.1,
               **H100),
        record(kernel="gemm", bottleneck="compute_bound", strategy="my_own_trick", speedup=1.3, **H100),
    ))
    triton = recommend(log, Query(kernel="gemm", backend="triton", chip=Chip("sm_90", "H100"),
                                  bottleneck="compute_bound"))
    assert [r.strategy for r in triton.recommendations] == ["tile_shape", "my_own_trick"]  # a free-form name stays
    assert triton.other_backend == [("wgmma", "a cuda strategy (experience/cuda/CUDA.md): "
                                              "experience/triton/TRITON.md has no such lever")]
    assert triton.to_dict()["other_backend"][0]["strategy"] == "wgmma"
    cuda = recommend(log, Query(kernel="gemm", backend="cuda", chip=Chip("sm_90", "H100"), bottleneck="compute_bound"))
    assert [r.strategy for r in cuda.recommendations] == ["my_own_trick", "wgmma"]  # by measured speedup
    assert [name for name, _ in cuda.other_backend] == ["tile_shape"]
    anywhere = recommend(log, Query(kernel="gemm", chip=Chip("sm_90", "H100"), bottleneck="compute_bound"))
    assert anywhere.other_backend == [] and len(anywhere.recommendations) == 3  # no backend asked: nothing left out
