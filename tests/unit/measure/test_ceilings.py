"""Measured-ceiling cache logic (measurement mocked) and the CLI's no-GPU exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kernel_opt.commands import measure_ceilings as command
from kernel_opt.core.cache import CACHE_DIR_ENV
from kernel_opt.main import main as kernel_opt_main
from kernel_opt.measure import ceilings

H100 = ceilings.DeviceIdentity(
    name="NVIDIA H100 80GB HBM3",
    driver_version="550.54.15",
    torch_version="2.13.0",
    cuda_version="12.8",
    compute_capability="9.0",
    sm_count=132,
    l2_cache_bytes=50 * 2**20,
    total_memory_bytes=80 * 10**9,
)


def _fake_measurement(identity: ceilings.DeviceIdentity, stamp: str) -> ceilings.MeasuredCeilings:
    return ceilings.MeasuredCeilings(
        device=identity,
        measured_at=stamp,
        copy=ceilings.CopyCeiling(
            buffer_bytes=2**30, bytes_moved=2**31, bandwidth_gbps=3000.0, median_us=715.8, p20_us=715.0, p80_us=717.0
        ),
        matmul={
            "bfloat16": ceilings.MatmulCeiling("bfloat16", 8192, 700.0, 1570.0, 1565.0, 1580.0, "bf16"),
            "float16": ceilings.MatmulCeiling("float16", 8192, 720.0, 1527.0, 1520.0, 1530.0, "fp16"),
            "tf32": ceilings.MatmulCeiling("tf32", 8192, 380.0, 2893.0, 2890.0, 2900.0, "tf32"),
            "float32": ceilings.MatmulCeiling("float32", 4096, 50.0, 2748.0, 2740.0, 2750.0, "strict fp32"),
        },
    )


class FakeDevice:
    """Stands in for the GPU: a fixed identity and a measurement that counts its calls."""

    def __init__(self, identity: ceilings.DeviceIdentity = H100):
        self.identity = identity
        self.measurements = 0

    def install(self, monkeypatch):
        monkeypatch.setattr(ceilings, "current_device_identity", lambda device=None: self.identity)
        monkeypatch.setattr(ceilings, "measure_ceilings", self.measure)
        return self

    def measure(self, identity, device=None):
        self.measurements += 1
        return _fake_measurement(identity, f"2026-01-0{self.measurements}T00:00:00+00:00")


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path))
    return tmp_path


# --- where the cache lives ---------------------------------------------------------------


def test_cache_file_is_named_by_gpu_and_driver(tmp_path):
    path = ceilings.cache_path(H100, tmp_path)
    assert path == tmp_path / "ceilings-nvidia-h100-80gb-hbm3-550.54.15.json"
    assert ceilings.slugify("NVIDIA GeForce RTX 4090 / weird:name") == "nvidia-geforce-rtx-4090-weird-name"


# --- measure once, then reuse ------------------------------------------------------------


def test_first_call_measures_and_writes_the_cache(cache, monkeypatch):
    fake = FakeDevice().install(monkeypatch)
    result = ceilings.load_or_measure()
    assert fake.measurements == 1 and result.from_cache is False
    assert result.cache_path == cache / "ceilings-nvidia-h100-80gb-hbm3-550.54.15.json"
    written = json.loads(result.cache_path.read_text())
    assert written["device"]["name"] == "NVIDIA H100 80GB HBM3"
    assert written["device"]["driver_version"] == "550.54.15"
    assert written["device"]["torch_version"] == "2.13.0"
    assert written["measured_at"] == "2026-01-01T00:00:00+00:00"
    assert written["copy"]["bandwidth_gbps"] == 3000.0
    assert written["matmul"]["float32"]["tflops"] == 50.0


def test_second_call_reads_the_cache_without_measuring(cache, monkeypatch):
    fake = FakeDevice().install(monkeypatch)
    ceilings.load_or_measure()
    again = ceilings.load_or_measure()
    assert fake.measurements == 1
    assert again.from_cache is True
    assert again.ceilings.measured_at == "2026-01-01T00:00:00+00:00"
    assert again.ceilings.memory_bandwidth_gbps == 3000.0


def test_refresh_measures_again_and_overwrites(cache, monkeypatch):
    fake = FakeDevice().install(monkeypatch)
    first = ceilings.load_or_measure()
    refreshed = ceilings.load_or_measure(refresh=True)
    assert fake.measurements == 2 and refreshed.from_cache is False
    assert json.loads(first.cache_path.read_text())["measured_at"] == "2026-01-02T00:00:00+00:00"
    assert sorted(p.name for p in cache.iterdir()) == [first.cache_path.name]  # atomic write leaves no temp files


def test_a_new_driver_gets_its_own_measurement(cache, monkeypatch):
    fake = FakeDevice().install(monkeypatch)
    ceilings.load_or_measure()
    fake.identity = ceilings.DeviceIdentity(**{**H100.__dict__, "driver_version": "560.35.03"})
    result = ceilings.load_or_measure()
    assert fake.measurements == 2 and result.from_cache is False
    assert len(list(cache.glob("ceilings-*.json"))) == 2


@pytest.mark.parametrize(
    "spoil",
    [
        lambda payload: "{not json",
        lambda payload: json.dumps({**payload, "schema_version": 0}),
        lambda payload: json.dumps({**payload, "device": {**payload["device"], "driver_version": "1.0"}}),
        lambda payload: json.dumps({**payload, "device": {**payload["device"], "name": "NVIDIA L40S"}}),
        lambda payload: json.dumps({"measured_at": "x"}),
    ],
)
def test_a_corrupt_old_or_foreign_cache_is_measured_over(cache, monkeypatch, spoil):
    fake = FakeDevice().install(monkeypatch)
    path = ceilings.load_or_measure().cache_path
    path.write_text(spoil(json.loads(path.read_text())))
    result = ceilings.load_or_measure()
    assert fake.measurements == 2 and result.from_cache is False
    assert json.loads(path.read_text())["device"]["driver_version"] == "550.54.15"


def test_a_measurement_with_a_failure_is_not_cached(cache, monkeypatch):
    fake = FakeDevice().install(monkeypatch)

    def out_of_memory(identity, device=None):
        fake.measurements += 1
        measured = _fake_measurement(identity, "2026-01-01T00:00:00+00:00")
        measured.matmul["bfloat16"] = ceilings.MatmulCeiling("bfloat16", 8192, None, error="CUDA out of memory")
        return measured

    monkeypatch.setattr(ceilings, "measure_ceilings", out_of_memory)
    first = ceilings.load_or_measure()
    assert first.ceilings.complete is False and not first.cache_path.exists()
    assert ceilings.load_or_measure().from_cache is False and fake.measurements == 2


def test_load_cached_never_measures(cache, monkeypatch):
    fake = FakeDevice().install(monkeypatch)
    assert ceilings.load_cached() is None
    ceilings.load_or_measure()
    assert ceilings.load_cached().memory_bandwidth_gbps == 3000.0
    assert fake.measurements == 1


# --- the record ----------------------------------------------------------------------------


def test_record_round_trips_and_separates_strict_fp32_from_tf32():
    measured = _fake_measurement(H100, "2026-01-01T00:00:00+00:00")
    restored = ceilings.MeasuredCeilings.from_dict(json.loads(json.dumps(measured.to_dict())))
    assert restored == measured
    assert restored.peak_tflops("float32") == 50.0
    assert restored.peak_tflops("torch.float32", allow_tf32=True) == 380.0
    assert restored.peak_tflops("float8_e4m3fn") is None
    roof = restored.roofline_ceilings("float32")  # strict: the higher of FP32 and a third of TF32 (3xTF32)
    assert (roof.memory_bandwidth_gbps, roof.dtype) == (3000.0, "float32")
    assert roof.compute_tflops == pytest.approx(380.0 / 3)
    assert roof.source == "measured 2026-01-01; fp32 products as 3xTF32 on tensor cores: a third of the TF32 rate"
    assert restored.roofline_ceilings("float32", allow_tf32=True).dtype == "tf32"


def test_the_matmul_roof_is_the_best_of_its_sizes_and_keeps_every_size_tried():
    """cuBLAS can run faster at 4096^3 than at 8192^3 (issue 14): one size is not a roof."""
    rates = {4096: 770.0, 8192: 708.0}

    def fake(label, size):
        return ceilings.MatmulCeiling(label, size, rates[size], 2.0 * size**3 / (rates[size] * 1e6), precision="bf16")

    best = ceilings.best_matmul("bfloat16", (4096, 8192), fake)
    assert (best.size, best.tflops) == (4096, 770.0)
    assert best.tried == ({"size": 4096, "tflops": 770.0, "error": None},
                          {"size": 8192, "tflops": 708.0, "error": None})
    assert ceilings.MATMUL_SIZES["bfloat16"] == (4096, 8192)
    payload = json.loads(json.dumps(_fake_measurement(H100, "2026-01-01T00:00:00+00:00").to_dict()))
    payload["matmul"]["bfloat16"] = json.loads(json.dumps(best.__dict__))
    assert ceilings.MeasuredCeilings.from_dict(payload).matmul["bfloat16"] == best

    def failing_large(label, size):
        if size == 8192:
            return ceilings.MatmulCeiling(label, size, None, precision="bf16", error="CUDA out of memory")
        return fake(label, size)

    partial = ceilings.best_matmul("bfloat16", (4096, 8192), failing_large)
    assert partial.tflops == 770.0 and partial.tried[1]["error"] == "CUDA out of memory"


@pytest.mark.parametrize("schema", [1, 2])  # 1: one matmul size per precision; 2: no FP8 matmul
def test_a_cache_of_an_older_schema_is_measured_again(cache, monkeypatch, schema):
    device = FakeDevice().install(monkeypatch)
    path = ceilings.cache_path(H100, cache)
    older = {**_fake_measurement(H100, "2025-12-01T00:00:00+00:00").to_dict(), "schema_version": schema}
    path.write_text(json.dumps(older))
    result = ceilings.load_or_measure()
    assert not result.from_cache and device.measurements == 1
    assert ceilings.SCHEMA_VERSION == 3


def test_fp8_is_measured_only_where_the_gpu_has_fp8_tensor_cores():
    a100 = ceilings.DeviceIdentity("NVIDIA A100-SXM4-80GB", "550.54.15", "2.13.0", "12.8", compute_capability="8.0")
    ada = ceilings.DeviceIdentity("NVIDIA L4", "550.54.15", "2.13.0", "12.8", compute_capability="8.9")
    assert "float8_e4m3fn" in ceilings.matmul_labels(H100) and "float8_e4m3fn" in ceilings.matmul_labels(ada)
    assert ceilings.matmul_labels(a100) == ["bfloat16", "float16", "tf32", "float32"]
    measured = _fake_measurement(H100, "2026-01-01T00:00:00+00:00")
    measured.matmul["float8_e4m3fn"] = ceilings.MatmulCeiling("float8_e4m3fn", 8192, 1300.0, precision="fp8")
    # e5m2 runs at e4m3's rate: one roof for every float8 dtype, whatever the work dtype's spelling
    assert measured.peak_tflops("float8_e5m2") == measured.peak_tflops("torch.float8_e4m3fn") == 1300.0
    assert measured.roofline_ceilings("float8_e4m3fn").compute_tflops == 1300.0


def test_the_fp8_call_is_the_product_of_its_operands_rounded_to_e4m3():
    # torch._scaled_mm runs on the CPU too, so the call measured on the GPU can be checked here.
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(64, 64, generator=generator), torch.randn(64, 64, generator=generator)
    product = ceilings._fp8_product(a, b)()
    rounded = a.to(torch.float8_e4m3fn).float() @ b.to(torch.float8_e4m3fn).float()
    assert product.dtype == torch.bfloat16 and product.shape == (64, 64)
    assert torch.allclose(product.float(), rounded, rtol=1e-2, atol=1e-2)
    assert not torch.allclose(product.float(), a @ b, rtol=1e-2, atol=1e-2)  # e4m3's rounding shows



def test_matmul_precision_sets_and_restores_the_tf32_flags():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
    with ceilings.matmul_precision("float32"):
        assert torch.backends.cuda.matmul.allow_tf32 is False
        assert torch.get_float32_matmul_precision() == "highest"
    with ceilings.matmul_precision("tf32"):
        assert torch.backends.cuda.matmul.allow_tf32 is True
        assert torch.get_float32_matmul_precision() == "high"
    with pytest.raises(KeyError), ceilings.matmul_precision("tf32"):
        raise KeyError("boom")
    assert (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()) == before


# --- the CLI -------------------------------------------------------------------------------


def test_cli_json_shows_measured_beside_datasheet(cache, monkeypatch, capsys):
    FakeDevice().install(monkeypatch)
    assert command.main(["--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["ok"] is True and payload["from_cache"] is False
    assert payload["datasheet"]["key"] == "h100-sxm5-80gb"
    bandwidth = payload["comparison"][0]
    assert (bandwidth["measured"], bandwidth["datasheet"]) == (3000.0, 3350)
    assert bandwidth["measured_fraction_of_datasheet"] == pytest.approx(3000 / 3350)
    assert "https://" in bandwidth["datasheet_citation"]
    strict = next(row for row in payload["comparison"] if row["datasheet_field"] == "fp32_tflops")
    assert (strict["measured"], strict["datasheet"]) == (50.0, 67)
    assert "benchmark" in payload["next"]


def test_cli_summary_for_a_gpu_missing_from_the_datasheet(cache, monkeypatch, capsys):
    FakeDevice(ceilings.DeviceIdentity(name="NVIDIA H100 NVL", driver_version="550.54.15", torch_version="2.13.0",
                                       cuda_version="12.8")).install(monkeypatch)
    assert command.main([]) == 0
    assert command.main([]) == 0
    out = capsys.readouterr().out
    assert "measured now" in out and "read from cache" in out
    assert "not in kernel_opt/data/datasheet.yaml" in out
    assert "3000" in out and "next:" in out


def test_cli_without_gpu_exits_4_with_a_sentence(cache, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert command.main([]) == 4
    assert "no CUDA GPU is visible to torch on this machine, so ceilings cannot be measured" in capsys.readouterr().err
    assert command.main(["--json"]) == 4
    payload = json.loads(capsys.readouterr().out)
    assert payload["ok"] is False and payload["error"]["exit_code"] == 4
    assert kernel_opt_main(["measure-ceilings"]) == 4
    assert list(cache.iterdir()) == []  # nothing cached when nothing was measured


@pytest.mark.slow
def test_wrapper_script_exits_4_where_torch_sees_no_gpu(scripts_dir, tmp_path):
    environment = {**os.environ, "CUDA_VISIBLE_DEVICES": "", CACHE_DIR_ENV: str(tmp_path)}
    completed = subprocess.run(
        [sys.executable, str(scripts_dir / "measure_ceilings.py")],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 4, completed.stderr
    assert "no CUDA GPU" in completed.stderr


def test_cli_rejects_unknown_arguments(capsys):
    assert command.main(["--bogus"]) == 2
