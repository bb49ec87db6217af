"""The record schema and the normalisation of labels, chips and kernel names."""

import json
from dataclasses import fields

import pytest
from experience_fixtures import record

from kernel_opt.core.errors import UsageError
from kernel_opt.experience.labels import (
    BOTTLENECK_ALIASES,
    Chip,
    chip_similarity,
    normalize_backend,
    normalize_bottleneck,
    normalize_chip,
    normalize_outcome,
)
from kernel_opt.experience.records import (
    ExperienceRecord,
    content_key,
    parse_dims,
    record_from_dict,
    strategy_slug,
    validate,
)
from kernel_opt.solution.families import kernel_family, normalize_kernel


@pytest.mark.parametrize(
    "spelling, canonical",
    [
        ("memory", "memory_bound"), ("Memory-Bound", "memory_bound"), ("memory bound", "memory_bound"),
        ("memory_bound", "memory_bound"), ("DRAM", "memory_bound"), ("compute", "compute_bound"),
        ("compute-bound", "compute_bound"), ("latency", "latency_bound"), ("Latency Bound", "latency_bound"),
        ("occupancy", "occupancy_bound"), ("low-occupancy", "occupancy_bound"), ("overlap", "overlap_bound"),
        ("Overlap-Bound", "overlap_bound"), ("async pipeline", "overlap_bound"),
    ],
)
def test_bottleneck_aliases(spelling, canonical):
    assert normalize_bottleneck(spelling) == canonical


def test_labels_refuse_unknown_spellings_and_list_the_accepted_ones():
    with pytest.raises(UsageError) as error:
        normalize_bottleneck("slow")
    assert "unknown bottleneck 'slow'" in error.value.message
    assert "memory_bound (memory" in error.value.hint
    with pytest.raises(UsageError) as error:
        normalize_bottleneck("small_grid")
    assert "detail, not a primary label" in error.value.hint


def test_backend_and_outcome_aliases():
    assert [normalize_backend(t) for t in ("CUDA", "cu", "Triton", "tl")] == ["cuda", "cuda", "triton", "triton"]
    assert [normalize_outcome(t) for t in ("win", "Success", "no-change", "regression", "failed")] == [
        "success", "success", "neutral", "failure", "failure",
    ]
    assert normalize_outcome(None) is None and normalize_bottleneck("") is None


@pytest.mark.parametrize(
    "text, capability, arch, name",
    [
        ("H100", None, "sm_90", "H100"),
        ("h100 80gb hbm3", None, "sm_90", "H100"),
        ("NVIDIA H100 80GB HBM3", "9.0", "sm_90", "H100"),
        ("H100-SXM5-80GB", None, "sm_90", "H100"),
        ("h200", None, "sm_90", "H200"),
        ("H20", None, "sm_90", "H20"),
        ("sm_90", None, "sm_90", None),
        ("sm90a", None, "sm_90", None),
        ("9.0", None, "sm_90", None),
        ("90", None, "sm_90", None),
        ("NVIDIA A100-SXM4-40GB", None, "sm_80", "A100"),
        ("NVIDIA RTX A6000", None, "sm_86", "RTX A6000"),
        ("NVIDIA A10G", None, "sm_86", "A10G"),
        ("NVIDIA GeForce RTX 4090", None, "sm_89", "RTX 4090"),
        ("sm_89 L40S", None, "sm_89", "L40S"),
        ("B200", None, "sm_100", "B200"),
        ("NVIDIA RTX 4000 SFF Ada Generation", "8.9", "sm_89", "RTX 4000 SFF Ada Generation"),
        (None, "10.0", "sm_100", None),
    ],
)
def test_chip_normalisation(text, capability, arch, name):
    assert normalize_chip(text, capability) == Chip(arch, name)


def test_chip_contradictions_and_unknown_names_are_refused():
    with pytest.raises(UsageError, match="H100 is sm_90, not sm_80"):
        normalize_chip("H100 sm_80")
    with pytest.raises(UsageError, match="compute capability says sm_90"):
        normalize_chip("sm_80", "9.0")
    with pytest.raises(UsageError, match="unknown chip 'Frobnicator 9000'"):
        normalize_chip("Frobnicator 9000")


def test_chip_similarity_levels():
    h100, h200, a100, a6000 = (Chip("sm_90", "H100"), Chip("sm_90", "H200"), Chip("sm_80", "A100"),
                               Chip("sm_86", "RTX A6000"))
    assert chip_similarity(h100, h100) == "same_chip"
    assert chip_similarity(h100, h200) == "same_arch"
    assert chip_similarity(h100, Chip("sm_90", None)) == "same_arch"
    assert chip_similarity(a100, a6000) == "same_generation"
    assert chip_similarity(h100, a6000) == "other"
    assert chip_similarity(h100, Chip(None, None)) == "unknown"


@pytest.mark.parametrize(
    "name, normalised, family",
    [
        ("Softmax", "softmax", "row_reduction"),
        ("layer_norm", "layernorm", "row_reduction"),
        ("RMSNorm", "rmsnorm", "row_reduction"),
        ("fused_layer_norm_fwd", "fused_layer_norm_fwd", "row_reduction"),
        ("logsumexp", "logsumexp", "row_reduction"),
        ("GEMM", "gemm", "matmul_like"),
        ("flash-attn", "flash_attention", "matmul_like"),
        ("gemm_relu", "gemm_relu", "matmul_like"),  # a fused epilogue keeps the matmul family
        ("softmax_dropout", "softmax_dropout", "row_reduction"),
        ("depthwise_conv2d", "depthwise_conv2d", "stencil"),
        ("vector add", "vector_add", "elementwise"),
        ("cumsum", "cumsum", "scan"),
        ("transpose", "transpose", "data_movement"),
        ("my_kernel", "my_kernel", "other"),
        ("kl_div", "kl_div", "row_reduction"),  # per-row softmaxes, then their divergence
        ("distillation_kl_loss", "distillation_kl_loss", "row_reduction"),
        ("max_pool2d", "max_pool2d", "stencil"),  # not the "max" reduction: each output reads a window
        ("avg_pool2d", "avg_pool2d", "stencil"),
        ("smooth_l1_loss", "smooth_l1_loss", "reduction"),
        ("cross_entropy_loss", "cross_entropy_loss", "row_reduction"),
    ],
)
def test_kernel_names_and_families(name, normalised, family):
    assert normalize_kernel(name) == normalised
    assert kernel_family(name) == family


def test_validate_normalises_every_label():
    checked = validate(record(kernel="Layer-Norm", backend="CUDA", bottleneck="memory", outcome="win",
                              chip="NVIDIA H100 80GB HBM3", chip_name=None, stall="Long Scoreboard",
                              optimization="Vectorised float4 loads!"))
    assert (checked.kernel, checked.kernel_family, checked.backend) == ("layernorm", "row_reduction", "cuda")
    assert (checked.bottleneck, checked.outcome) == ("memory_bound", "success")
    assert (checked.chip, checked.chip_name, checked.stall) == ("sm_90", "H100", "long_scoreboard")
    assert checked.strategy == "vectorised_float4_loads"
    assert checked.created_at and checked.schema_version == 1


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"memory_sol_before_pct": 140.0}, "field 'memory_sol_before_pct' is a percentage"),
        ({"occupancy_after_pct": -1.0}, "field 'occupancy_after_pct' is a percentage"),
        ({"latency_after_us": 0.0}, "field 'latency_after_us' must be positive"),
        ({"speedup": "fast"}, "field 'speedup' must be a finite number"),
        ({"speedup": float("nan")}, "field 'speedup' must be a finite number"),
        ({"speedup_ci_low": 1.3, "speedup_ci_high": 1.1}, "are reversed"),
        ({"iteration": -2}, "field 'iteration' must be a version number"),
        ({"dims": [4096]}, "field 'dims' must be an object"),
        ({"optimization": "  "}, "field 'optimization' is required"),
        ({"outcome": "meh"}, "unknown outcome 'meh' in field 'outcome'"),
        ({"outcome_source": "forced", "notes": None}, "field 'notes' is required"),
        ({"id": 0}, "field 'id' must be a positive integer"),
        ({"created_at": "yesterday"}, "field 'created_at'"),
    ],
)
def test_validate_names_the_bad_field(fields, message):
    with pytest.raises(UsageError) as error:
        validate(record(**fields))
    assert message in error.value.message


def test_record_from_dict_round_trip_and_strictness():
    original = validate(record(id=7, speedup=1.4, dims={"N": 4096}))
    again = record_from_dict(json.loads(original.to_json_line()))
    assert again == original
    assert original.to_json_line().startswith('{"id": 7, ')  # the store reads ids from line starts
    with pytest.raises(UsageError, match="unknown field 'speed'"):
        record_from_dict({**original.to_dict(), "speed": 2})
    with pytest.raises(UsageError, match="field 'kernel' is required and missing"):
        record_from_dict({"backend": "cuda", "optimization": "x", "outcome": "success"})
    with pytest.raises(UsageError, match="schema_version"):
        record_from_dict({**original.to_dict(), "schema_version": 2})


def test_every_measured_number_carries_its_unit():
    floats = [f.name for f in fields(ExperienceRecord) if "float" in str(f.type)]
    without_unit = [name for name in floats if not name.endswith(("_pct", "_us"))]
    assert len(floats) == 11
    assert without_unit == ["speedup", "speedup_ci_low", "speedup_ci_high"]  # ratios: old time / new time


def test_content_key_ignores_bookkeeping_only():
    first = validate(record(id=1, created_at="2025-01-01T00:00:00+00:00"))
    second = validate(record(id=9, created_at="2025-02-01T00:00:00+00:00", provenance={"merged_ids": [3]}))
    assert content_key(first) == content_key(second)
    assert content_key(first) != content_key(validate(record(speedup=1.2)))


def test_parse_dims_and_strategy_slug():
    assert parse_dims("N=4096,D=1024") == {"N": 4096, "D": 1024}
    assert parse_dims("N=4096 eps=1e-5") == {"N": 4096, "eps": 1e-5}
    assert parse_dims('{"M": 1024, "K": 512}') == {"M": 1024, "K": 512}
    assert parse_dims("4096x4096") == {"shape": "4096x4096"}  # kept verbatim, not guessed at
    assert parse_dims(None) == {}
    assert strategy_slug("Use cp.async (3 stages)") == "use_cp_async_3_stages"
    assert len(strategy_slug("word " * 40)) <= 48


def test_every_classifier_label_is_an_accepted_bottleneck():
    """A label ncu_profile.py gives must be one the experience log stores as it is."""
    from kernel_opt.profile.assessments import LABELS

    assert set(LABELS) == set(BOTTLENECK_ALIASES)
    assert all(normalize_bottleneck(label) == label for label in LABELS)
