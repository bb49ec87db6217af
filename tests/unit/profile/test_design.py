"""The design evidence: asynchronous features from executed or static SASS, or from the pipes, and what stays unseen."""

import json

import pytest

from kernel_opt.profile.design import (
    assess_design,
    base_kernel_name,
    count_text,
    design_from_opcodes,
    load_static_opcodes,
)
from kernel_opt.profile.ncu.metrics import KernelMetrics

# cuBLAS's Hopper GEMM as ncu recorded it (tests/fixtures/ncu/tensor_core_matmul, a few of its opcodes).
NVJET = {"HGMMA": 2097152.0, "UTMALDG": 163840.0, "USETMAXREG": 1584.0, "LDS": 262524.0, "SYNCS": 628900.0}


def test_every_asynchronous_feature_is_named_with_its_opcode_counts():
    design = design_from_opcodes(NVJET, "executed opcode mix (ncu)")
    assert design.async_features == ["wgmma (HGMMA x2.10M)", "TMA (UTMALDG x164k)",
                                     "warp specialization (USETMAXREG x1584)"]
    assert design.asynchronous and design.tensor_cores and design.unchecked == []
    assert design.tensor_instructions == {"HGMMA": 2097152.0} and design.key_opcodes == {
        "HGMMA": 2097152.0, "UTMALDG": 163840.0, "USETMAXREG": 1584.0}


@pytest.mark.parametrize("opcodes, features", [
    ({"LDGSTS": 4.0, "HMMA": 128.0}, ["cp.async (LDGSTS x4)"]),
    ({"UBLKCP": 2.0}, ["TMA (UBLKCP x2)"]),
    ({"QGMMA": 8.0, "HGMMA": 0.0}, ["wgmma (QGMMA x8)"]),  # a zero count is no evidence
    ({"FFMA": 100.0, "LDG": 10.0, "HMMA": 4.0}, []),  # mma.sync fed by plain loads is not a pipeline
])
def test_features_come_only_from_the_opcodes_that_show_them(opcodes, features):
    assert design_from_opcodes(opcodes, "static analysis (compiled SASS)").async_features == features


def test_the_executed_mix_wins_over_a_static_analysis_and_the_pipes_are_the_last_resort():
    executed = KernelMetrics(executed_opcodes={"LDGSTS": 1.0}, gmma_instructions_pct=0.0)
    assert assess_design(executed, {"HGMMA": 4.0}).async_features == ["cp.async (LDGSTS x1)"]
    assert assess_design(KernelMetrics(), {"HGMMA": 4.0}).source == "static analysis (compiled SASS)"
    pipes = assess_design(KernelMetrics(gmma_instructions_pct=0.0, tma_pipe_pct=1.5, tensor_pipe_pct=3.0))
    assert pipes.source == "pipe metrics (no SASS)" and pipes.async_features == ["TMA (TMA pipe 1.50%)"]
    assert pipes.unchecked == ["cp.async (LDGSTS)", "warp specialization (USETMAXREG)"]
    assert pipes.tensor_cores is False  # 3% is below tensor_pipe_idle_pct
    nothing = assess_design(KernelMetrics())
    assert nothing.unchecked == ["wgmma", "TMA", "cp.async (LDGSTS)", "warp specialization (USETMAXREG)"]
    assert nothing.tensor_cores is None


@pytest.mark.parametrize("name, base", [
    ("void gemm_kernel<(bool)1>(CUtensorMap_st, CUtensorMap_st, const __nv_bfloat16 *, int)", "gemm_kernel"),
    ("attention_kernel(__nv_bfloat16 const*, float)", "attention_kernel"),
    ("void ns::inner::tile<int, std::pair<int, float>>(int*)", "tile"),
    ("_Z16attention_kernelPK13__nv_bfloat16S1_S1_PS_if", "attention_kernel"),
    ("_ZN2ns6kernelEPf", "kernel"),
    ("matmul_kernel", "matmul_kernel"),
    ("", ""),
])
def test_kernel_names_reduce_to_the_function_name_ncu_reports(name, base):
    assert base_kernel_name(name) == base


def test_a_static_analysis_is_read_by_function_name_and_ambiguous_variants_are_left_out(tmp_path):
    path = tmp_path / "static_analysis.json"
    path.write_text(json.dumps({"kernels": [
        {"name": "attention_kernel(float*)", "mangled_name": "_Z16attention_kernelPf",
         "mix": {"opcode_counts": {"LDGSTS": 4, "HMMA": 128}}},
        {"name": "matmul_kernel", "mangled_name": "matmul_kernel", "mix": {"opcode_counts": {"HGMMA": 8}}},
        {"name": "matmul_kernel", "mangled_name": "matmul_kernel", "mix": {"opcode_counts": {"HGMMA": 16}}},
    ]}))
    assert load_static_opcodes(path) == {"attention_kernel": {"LDGSTS": 4, "HMMA": 128}}
    assert load_static_opcodes(tmp_path / "absent.json") == {}
    (tmp_path / "broken.json").write_text("{not json")
    assert load_static_opcodes(tmp_path / "broken.json") == {}


@pytest.mark.parametrize("count, text", [(2097152, "2.10M"), (163840, "164k"), (1584, "1584"), (4.0, "4")])
def test_counts_read_at_a_glance(count, text):
    assert count_text(count) == text
