"""measure/reference_cache.py: what the reference costs, measured once per run, reused only under the same key."""

import json
from types import SimpleNamespace

import pytest

from kernel_opt.core.errors import UsageError
from kernel_opt.measure.records import TimedEntry
from kernel_opt.measure.reference_cache import (
    REFERENCE_CACHE_SCHEMA,
    ReferenceCache,
    baseline_names,
    reference_key,
    still_to_time,
    visible_gpu,
)
from kernel_opt.measure.roofline import FLOP_COUNTING

H100 = SimpleNamespace(index=0, name="NVIDIA H100 80GB HBM3", driver_version="580.159.04")
WORK = {"flops": None, "bytes": 134234112.0, "bytes_source": "ref.py bytes()", "dtype": "float16"}


@pytest.fixture
def key(tmp_path):
    reference = tmp_path / "ref.py"
    reference.write_text("def reference(x): return x\n")
    return reference_key(reference, {"N": 4096, "M": 8192}, 0, H100)


def entry(name, median_us, **extra):
    return TimedEntry(name, median_us=median_us, p20_us=median_us - 1, p80_us=median_us + 1, reps=100, **extra)


def test_names_follow_the_benchmark_order():
    assert baseline_names(["eager", "compile"], ["default", "max-autotune-no-cudagraphs"]) == [
        "eager", "torch.compile (default)", "torch.compile (max-autotune-no-cudagraphs)"]
    assert baseline_names(["compile"], ["default"]) == ["torch.compile (default)"]
    assert baseline_names([], ["default"]) == []


def test_only_what_is_not_cached_is_timed():
    cached = [entry("eager", 50.0)]
    assert still_to_time(["eager", "compile"], ["default"], cached) == (["compile"], ["default"])
    cached.append(entry("torch.compile (default)", 40.0))
    assert still_to_time(["eager", "compile"], ["default"], cached) == ([], [])
    assert still_to_time(["eager", "compile"], ["default", "max-autotune"], cached) == (["compile"], ["max-autotune"])


def test_the_key_names_what_moves_a_measurement(key):
    assert (key["gpu"], key["driver"], key["seed"]) == ("NVIDIA H100 80GB HBM3", "580.159.04", 0)
    assert list(key["dims"]) == ["M", "N"]  # sorted: the same sizes always compare equal
    assert key["torch"] is not None and len(key["reference_sha256"]) == 64


def test_entries_come_back_under_the_same_key_marked_as_reused(key, tmp_path):
    cache = ReferenceCache(tmp_path / "reference_cache.json")
    assert cache.baselines(key, ["eager"]) == [] and cache.work(key) is None  # no file yet
    cache.remember(key, [entry("eager", 50.0), entry("torch.compile (default)", 40.0, compile_s=13.6),
                         TimedEntry("torch.compile (max-autotune)", error="boom")], WORK, by="v0 (benchmark.py)")
    stored = json.loads((tmp_path / "reference_cache.json").read_text())
    assert stored["schema"] == REFERENCE_CACHE_SCHEMA and len(stored["baselines"]) == 2  # the failed one is not kept
    found = cache.baselines(key, ["eager", "torch.compile (default)", "torch.compile (max-autotune)"])
    assert [(e.name, e.median_us, e.compile_s) for e in found] == [("eager", 50.0, None),
                                                                  ("torch.compile (default)", 40.0, 13.6)]
    assert all(e.cached_from.startswith("timed by v0 (benchmark.py) at ") for e in found)
    work, origin = cache.work(key)
    assert work == WORK and origin.startswith("counted by v0 (benchmark.py) at ")


def test_another_key_misses_and_a_reused_entry_is_not_stored_again(key, tmp_path):
    cache = ReferenceCache(tmp_path / "reference_cache.json")
    cache.remember(key, [entry("eager", 50.0)], WORK, by="v0")
    for changed in ({"driver": "590.1"}, {"torch": "2.12.0"}, {"reference_sha256": "0" * 64},
                    {"dims": {"M": 8192, "N": 2048}}, {"seed": 1}, {"gpu": "NVIDIA H200"}):
        assert cache.baselines({**key, **changed}, ["eager"]) == [] and cache.work({**key, **changed}) is None
    cache.remember(key, cache.baselines(key, ["eager"]), None, by="v1")
    assert json.loads((tmp_path / "reference_cache.json").read_text())["baselines"][0]["by"] == "v0"
    cache.remember(key, [entry("eager", 49.0)], {**WORK, "bytes": 1.0}, by="v2")  # a re-measurement replaces
    assert [e.median_us for e in cache.baselines(key, ["eager"])] == [49.0]
    assert cache.work(key)[0]["bytes"] == 1.0
    assert len(json.loads((tmp_path / "reference_cache.json").read_text())["work"]) == 1


def test_work_counted_another_way_is_counted_again_while_the_baselines_are_reused(key, tmp_path):
    """Runs from before FLOP_COUNTING "FlopCounterMode/2" hold no FLOPs for a matmul + epilogue: recount them."""
    path = tmp_path / "reference_cache.json"
    ReferenceCache(path).remember(key, [entry("eager", 50.0)], WORK, by="v0")
    stored = json.loads(path.read_text())
    assert stored["work"][0]["counting"] == FLOP_COUNTING
    del stored["work"][0]["counting"]  # as a file written before the counting changed
    path.write_text(json.dumps(stored))
    assert ReferenceCache(path).work(key) is None
    assert [e.median_us for e in ReferenceCache(path).baselines(key, ["eager"])] == [50.0]


def test_a_foreign_file_is_bad_input(key, tmp_path):
    path = tmp_path / "reference_cache.json"
    path.write_text(json.dumps({"schema": "kernel_opt.other/1"}))
    with pytest.raises(UsageError, match="schema"):
        ReferenceCache(path).baselines(key, ["eager"])
    path.write_text(json.dumps({"schema": REFERENCE_CACHE_SCHEMA, "baselines": "nope"}))
    with pytest.raises(UsageError, match="is not a list"):
        ReferenceCache(path).work(key)


def test_the_visible_gpu_follows_cuda_visible_devices(monkeypatch):
    gpus = [SimpleNamespace(index=0, name="A"), SimpleNamespace(index=1, name="B")]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert visible_gpu(gpus).name == "A"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert visible_gpu(gpus).name == "B"
    assert visible_gpu([]) is None


def test_a_reused_entry_is_written_with_its_origin_and_a_timed_one_without():
    assert "cached_from" not in entry("eager", 50.0).to_dict()
    assert entry("eager", 50.0, cached_from="timed by v0").to_dict()["cached_from"] == "timed by v0"


def test_the_key_names_the_board_so_two_gpus_of_one_model_keep_their_own_baselines(tmp_path):
    reference = tmp_path / "ref.py"
    reference.write_text("def reference(x): return x\n")
    first = SimpleNamespace(**vars(H100), uuid="GPU-00000000-aaaa")
    second = SimpleNamespace(**{**vars(H100), "index": 1}, uuid="GPU-11111111-bbbb")
    key_first = reference_key(reference, {"N": 1}, 0, first)
    key_second = reference_key(reference, {"N": 1}, 0, second)
    assert key_first["gpu_uuid"] == "GPU-00000000-aaaa" and key_first != key_second
    assert key_first["gpu"] == key_second["gpu"]  # same model: only the board tells them apart
    cache = ReferenceCache(tmp_path / "reference_cache.json")
    cache.remember(key_first, [entry("eager", 50.0)], None, by="pair a")
    assert [e.median_us for e in cache.baselines(key_first, ["eager"])] == [50.0]
    assert cache.baselines(key_second, ["eager"]) == []


def test_the_visible_gpu_may_be_named_by_its_uuid(monkeypatch):
    gpus = [SimpleNamespace(index=0, name="A", uuid="GPU-a"), SimpleNamespace(index=1, name="B", uuid="GPU-b")]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-b")
    assert visible_gpu(gpus).name == "B"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-c")
    assert visible_gpu(gpus) is None


def _remember_many(path, worker):
    cache = ReferenceCache(path)
    for number in range(15):
        cache.remember({"worker": worker, "number": number}, [entry("eager", 10.0 + number)], None, by=f"w{worker}")


def test_workers_writing_one_cache_at_once_lose_nothing(tmp_path):
    """The workers of eval.py --gpus share OUT/reference_cache.json: each write is a read-modify-write under a lock."""
    import multiprocessing

    path = tmp_path / "reference_cache.json"
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_remember_many, args=(path, worker)) for worker in range(3)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [process.exitcode for process in processes] == [0, 0, 0]
    stored = json.loads(path.read_text())["baselines"]
    assert sorted((item["key"]["worker"], item["key"]["number"]) for item in stored) == [
        (worker, number) for worker in range(3) for number in range(15)]
