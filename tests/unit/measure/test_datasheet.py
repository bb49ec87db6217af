"""The datasheet table: a source for every value, dense tensor rates, lookup by torch names."""

from __future__ import annotations

import copy

import pytest
import yaml

from kernel_opt.measure import datasheet


@pytest.fixture(scope="module")
def sheet() -> datasheet.Datasheet:
    return datasheet.load_datasheet()


def _raw() -> dict:
    return yaml.safe_load(datasheet.DATASHEET_PATH.read_text(encoding="utf-8"))


def test_every_value_has_a_source_with_a_url_and_a_location(sheet):
    count = 0
    for gpu in sheet.gpus.values():
        assert gpu.specs, gpu.key
        for name, entry in gpu.specs.items():
            count += 1
            assert name in datasheet.SPEC_FIELDS
            assert entry.source.url.startswith("https://"), (gpu.key, name)
            assert entry.source.title.strip(), (gpu.key, name)
            assert entry.location.strip() and entry.quoted.strip(), (gpu.key, name)
            assert entry.value > 0
    assert count >= 50  # nine GPUs, most with six or more sourced values


def test_sparse_figures_are_stored_halved_and_marked(sheet):
    halved = 0
    for gpu in sheet.gpus.values():
        for name, entry in gpu.specs.items():
            if entry.sparse_quoted_tflops is not None:
                halved += 1
                assert name in datasheet.TENSOR_FIELDS
                assert entry.value == entry.sparse_quoted_tflops / 2
                assert datasheet.SPARSE_HALVED_NOTE in entry.note
    assert halved >= 12  # H100 SXM, H100 PCIe, H200 and B200 are quoted with sparsity


def test_the_gpus_the_issue_names_are_listed(sheet):
    expected = {"h100-sxm5-80gb", "h100-pcie-80gb", "h200-sxm-141gb", "a100-sxm4-80gb", "a100-pcie-40gb", "l40s",
                "rtx-4090", "rtx-a6000"}
    assert expected <= set(sheet.gpus)


def test_h100_sxm_values_are_dense(sheet):
    h100 = sheet.gpus["h100-sxm5-80gb"]
    assert h100.memory_bandwidth_gbps == 3350
    assert h100.value("bf16_tensor_tflops") == 989.5  # datasheet: 1,979 with sparsity
    assert h100.value("tf32_tensor_tflops") == 494.5  # datasheet: 989 with sparsity
    assert h100.value("fp32_tflops") == 67
    assert h100.value("sm_count") == 132 and isinstance(h100.value("sm_count"), int)


@pytest.mark.parametrize(
    ("torch_name", "key"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"),
        ("NVIDIA H100 PCIe", "h100-pcie-80gb"),
        ("NVIDIA H200", "h200-sxm-141gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA RTX A6000", "rtx-a6000"),
        ("NVIDIA B200", "b200"),
        ("  nvidia h100   80gb hbm3 ", "h100-sxm5-80gb"),  # case and spacing do not matter
    ],
)
def test_lookup_by_the_name_torch_reports(torch_name, key):
    found = datasheet.lookup_gpu(torch_name)
    assert found is not None and found.key == key


@pytest.mark.parametrize(
    "torch_name",
    ["NVIDIA H100 NVL", "NVIDIA A100-SXM4-40GB", "NVIDIA H200 NVL", "Tesla T4", "NVIDIA GeForce RTX 3090", "", None],
)
def test_unknown_gpus_get_none_not_a_guess(torch_name):
    assert datasheet.lookup_gpu(torch_name) is None


def test_peak_tflops_never_compares_strict_fp32_with_tf32(sheet):
    a100 = sheet.gpus["a100-sxm4-80gb"]
    assert a100.peak_tflops("float32") == 19.5
    assert a100.peak_tflops("float32", allow_tf32=True) == 156
    assert a100.peak_tflops("torch.bfloat16") == 312
    assert a100.peak_tflops("float8_e4m3fn") is None  # Ampere has no FP8 tensor cores: not listed
    assert sheet.gpus["h100-sxm5-80gb"].peak_tflops("float8_e4m3fn") == 1979
    assert a100.peak_tflops("int8") is None


def test_citation_names_document_place_and_url(sheet):
    entry = sheet.gpus["h100-sxm5-80gb"].specs["memory_bandwidth_gbps"]
    citation = entry.citation()
    assert "H100" in citation and "GPU memory bandwidth" in citation and entry.source.url in citation


# --- the loader refuses values without sources ---------------------------------------------


def _first_spec(document: dict) -> dict:
    return document["gpus"]["h100-sxm5-80gb"]["specs"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: _first_spec(d)["fp32_tflops"].pop("source"), "is not listed under sources"),
        (lambda d: _first_spec(d)["fp32_tflops"].update(source="nowhere"), "is not listed under sources"),
        (lambda d: _first_spec(d)["fp32_tflops"].pop("location"), "location"),
        (lambda d: _first_spec(d)["fp32_tflops"].pop("quoted"), "quoted"),
        (lambda d: d["sources"]["h100-datasheet"].pop("url"), "url"),
        (lambda d: d["sources"]["h100-datasheet"].update(url="http://example.com/x.pdf"), "https"),
        (lambda d: _first_spec(d).update(fp64_tflops={"value": 34}), "unknown field"),
        (lambda d: _first_spec(d)["bf16_tensor_tflops"].update(value=1979), "half the sparse figure"),
        (lambda d: _first_spec(d)["bf16_tensor_tflops"].pop("note"), "sparse figure halved"),
        (lambda d: _first_spec(d)["fp32_tflops"].update(sparse_quoted_tflops=134), "only tensor-core rates"),
        (lambda d: _first_spec(d)["fp32_tflops"].update(value=-1), "positive number"),
        (lambda d: d["gpus"]["l40s"]["torch_names"].append("NVIDIA H100 PCIe"), "also listed"),
        (lambda d: d.update(schema_version=99), "schema_version"),
    ],
)
def test_loader_rejects_unsourced_or_malformed_values(mutate, message):
    document = copy.deepcopy(_raw())
    mutate(document)
    with pytest.raises(datasheet.DatasheetError, match=message):
        datasheet.parse_datasheet(document)


def test_shipped_file_parses_as_is():
    parsed = datasheet.parse_datasheet(_raw())
    assert set(parsed.gpus) == set(datasheet.load_datasheet().gpus)
