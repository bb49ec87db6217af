"""experience_log as the original skill's users type it (issue 18, item 3).

Short flags `-i`/`-o`, latencies in milliseconds with explicit unit handling, `merge` to review
and `merge --groups "1,3" "2,4,5"` to collapse, `add` without `--backend`, `sync` beside the log,
and `recommend` saying why each suggestion matched.
"""

from __future__ import annotations

import json

import pytest
from conftest import SKILL_ROOT
from experience_fixtures import record, version_folder

from kernel_opt.commands import experience_log
from kernel_opt.experience.labels import Chip
from kernel_opt.experience.ranking import Query, recommend
from kernel_opt.experience.records import validate
from kernel_opt.experience.store import Entry, append_records

ORIGINAL_ADD = ["add", "--kernel", "matmul", "--backend", "cuda", "--chip", "sm_86", "--dims", "M=1024,K=512,N=512",
                "-i", "v1", "--bottleneck", "latency_bound", "--latency-before", "4.2", "--latency-after", "1.8",
                "-o", "shared-memory-tiling{tile-size=128}", "--outcome", "success", "--notes", "fixed"]


def run(capsys, log, *arguments):
    code = experience_log.main(["--log", str(log), "--curated", "none", *arguments])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def stored(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


# --- add -------------------------------------------------------------------------------------------


def test_the_original_add_line_with_short_flags_and_millisecond_latencies(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    code, out, _ = run(capsys, log, *ORIGINAL_ADD)
    assert code == 0
    [saved] = stored(log)
    assert (saved["iteration"], saved["optimization"]) == (1, "shared-memory-tiling{tile-size=128}")
    assert (saved["latency_before_us"], saved["latency_after_us"]) == (4200.0, 1800.0)
    assert "note: --latency-before 4.2 read as 4.2 ms = 4200 us" in out


def test_latencies_with_a_unit_are_read_as_written_and_latency_unit_us_keeps_microseconds(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    base = ["add", "--kernel", "softmax", "--backend", "triton", "-o", "x", "--outcome", "neutral"]
    assert run(capsys, log, *base, "--latency-before", "140us", "--latency-after", "0.1ms")[0] == 0
    code, out, _ = run(capsys, log, *base, "--latency-before", "140", "--latency-after", "100",
                       "--latency-unit", "us", "--json")
    assert code == 0 and json.loads(out)["notes"][0].startswith("--latency-before 140 read as 140 us = 140 us")
    first, second = stored(log)
    assert (first["latency_before_us"], first["latency_after_us"]) == (140.0, 100.0)
    assert (second["latency_before_us"], second["latency_after_us"]) == (140.0, 100.0)
    code, _, err = run(capsys, log, *base, "--latency-before", "4.2 minutes")
    assert code == 2 and "--latency-before '4.2 minutes' is not a time" in err
    assert len(stored(log)) == 2


def test_add_without_backend_takes_it_from_the_version_folder_or_asks_for_it(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    code, _, err = run(capsys, log, "add", "--kernel", "softmax", "-o", "x", "--outcome", "success")
    assert code == 2 and "add needs --backend" in err and "Traceback" not in err
    assert not log.exists()
    # from correctness.json's backend
    v3 = version_folder(tmp_path / "out", 3)
    assert run(capsys, log, "add", "--from", str(v3), "--kernel", "softmax", "-o", "x", "--outcome", "neutral")[0] == 0
    assert stored(log)[-1]["backend"] == "cuda"
    # a folder without correctness.json: from its kernel file
    v4 = tmp_path / "out" / "v4"
    v4.mkdir()
    (v4 / "v4.py").write_text("def run_kernel(x, out, **_):\n    pass\n")
    assert run(capsys, log, "add", "--from", str(v4), "--kernel", "softmax", "-o", "y", "--outcome", "neutral")[0] == 0
    assert stored(log)[-1]["backend"] == "triton"


# --- merge -----------------------------------------------------------------------------------------


def _log_of(tmp_path, *records):
    log = tmp_path / "log.jsonl"
    append_records(log, list(records))
    return log


def test_merge_alone_lists_the_records_for_review_and_changes_nothing(tmp_path, capsys):
    log = _log_of(tmp_path, record(optimization="a"), record(kernel="gemm", optimization="b"))
    before = log.read_text()
    code, out, _ = run(capsys, log, "merge")
    assert code == 0
    assert "### gemm [cuda]" in out and "### softmax [cuda]" in out
    assert 'merge --groups "ID,ID" "ID,ID,ID"' in out
    assert log.read_text() == before


def test_merge_groups_with_id_lists_collapses_each_group(tmp_path, capsys):
    log = _log_of(
        tmp_path,
        record(optimization="tiling 64", speedup=1.2, notes="first"),
        record(optimization="other", outcome="failure"),
        record(optimization="tiling 128", speedup=1.5, notes="second", hypothesis="a longer hypothesis"),
        record(optimization="x1", outcome="neutral", latency_after_us=90.0),
        record(optimization="x2", outcome="neutral", latency_after_us=80.0),
    )
    code, out, _ = run(capsys, log, "merge", "--groups", "1,3", "4,5", "--json")
    assert code == 0
    assert json.loads(out)["groups"] == [{"kept_id": 3, "merged_ids": [1]}, {"kept_id": 5, "merged_ids": [4]}]
    by_id = {r["id"]: r for r in stored(log)}
    assert sorted(by_id) == [2, 3, 5]
    assert (by_id[3]["optimization"], by_id[3]["speedup"]) == ("tiling 128", 1.5)  # the fastest success
    assert by_id[3]["notes"] == "first | second" and by_id[3]["hypothesis"] == "a longer hypothesis"
    assert by_id[3]["provenance"]["merged_ids"] == [1]
    assert by_id[5]["optimization"] == "x2"  # the lowest time after
    code, out, _ = run(capsys, log, "show", "1")
    assert code == 0 and "(id 1 was merged into #3)" in out


@pytest.mark.parametrize("groups, message", [
    (["1,2", "2,3"], "id 2 appears in more than one group"),
    (["1,9"], "id(s) not in the log: 9"),
    (["1,curated:3"], "curated:3 is a curated record, which is read-only"),
    (["1,x"], "'x' is not a record id"),
])
def test_merge_groups_refuses_what_it_cannot_do(tmp_path, capsys, groups, message):
    log = _log_of(tmp_path, record(optimization="a"), record(optimization="b"), record(optimization="c"))
    before = log.read_text()
    code, _, err = run(capsys, log, "merge", "--groups", *groups)
    assert code == 2 and message in err
    assert log.read_text() == before


def test_groups_without_ids_and_duplicates_both_collapse_identical_records(tmp_path, capsys):
    for flag in (["--groups"], ["--duplicates"]):
        folder = tmp_path / flag[0].strip("-")
        folder.mkdir()
        log = _log_of(folder, record(), record(), record(optimization="different"))
        code, out, _ = run(capsys, log, "merge", *flag)
        assert code == 0 and "collapsed 1 group(s) of duplicates" in out
        assert [r["id"] for r in stored(log)] == [2, 3]


# --- sync ------------------------------------------------------------------------------------------


def test_sync_writes_beside_the_log_never_into_the_skill(tmp_path, capsys):
    in_skill = SKILL_ROOT / "experience" / "learned" / "experiences.md"
    existed = in_skill.exists()
    log = _log_of(tmp_path / "elsewhere", record())
    code, out, _ = run(capsys, log, "sync")
    assert code == 0
    assert (tmp_path / "elsewhere" / "experiences.md").is_file()
    assert f"wrote {tmp_path / 'elsewhere' / 'experiences.md'}" in out
    assert in_skill.exists() == existed


# --- recommend -------------------------------------------------------------------------------------


def _entries(*records):
    entries = [Entry("local", validate(r)) for r in records]
    for number, entry in enumerate(entries, start=1):
        entry.record.id = number
    return entries


def test_recommend_labels_each_suggestion_and_ranks_exact_matches_first():
    log = _entries(
        record(strategy="exact_one", speedup=1.1),
        # three other ops of its family agreeing, each with a big speedup: a higher score than the exact match
        record(kernel="layernorm", strategy="popular", speedup=3.0),
        record(kernel="rmsnorm", strategy="popular", speedup=3.0, optimization="other"),
        record(kernel="logsumexp", strategy="popular", speedup=3.0, optimization="third"),
    )
    query = Query(kernel="softmax", backend="cuda", chip=Chip("sm_90", "H100"), bottleneck="memory_bound")
    result = recommend(log, query)
    exact, popular = result.recommendations
    assert popular.score > exact.score
    assert (exact.strategy, exact.exact, popular.exact) == ("exact_one", True, False)
    assert exact.matched == ("exact match: same op softmax · same bottleneck memory_bound · same chip H100 (sm_90)"
                             " · same backend cuda")
    assert popular.matched.startswith("other op ")
    assert result.chip_note is None and result.to_dict()["recommendations"][0]["exact"] is True


def test_recommend_says_when_no_record_comes_from_the_chip_asked_about(tmp_path, capsys):
    log = _log_of(tmp_path, record(strategy="vector_loads", speedup=1.3))
    code, out, _ = run(capsys, log, "recommend", "--kernel", "softmax", "--backend", "cuda", "--chip", "A100",
                       "--bottleneck", "memory_bound")
    assert code == 0
    assert ("NOTE: no record comes from A100 (sm_80): every suggestion below was measured on H100 (sm_90)"
            in out)
    assert "why suggested: same op softmax · same bottleneck memory_bound · other chip H100 (sm_90)" in out
    code, out, _ = run(capsys, log, "recommend", "--kernel", "softmax", "--chip", "sm_90", "--json")
    payload = json.loads(out)
    assert payload["chip_note"] is None and payload["chip_matches"] == 1
    assert payload["recommendations"][0]["matched"].startswith("exact match: same op softmax · same chip")


def test_recommend_for_an_a100_from_the_curated_records_offers_no_hopper_hardware(tmp_path, capsys):
    """The shipped records all come from an H100: asked about an A100, wgmma and TMA are left out, and said why."""
    def recommend(*arguments):
        code = experience_log.main(["--log", str(tmp_path / "empty.jsonl"), "recommend", "--chip", "A100",
                                    *arguments])
        assert code == 0
        return capsys.readouterr().out

    out = recommend("--backend", "cuda", "--bottleneck", "compute_bound")
    assert "NOTE: no record comes from A100 (sm_80), and none from another chip matches this question either." in out
    assert "was none" not in out
    out = recommend("--backend", "cuda")
    listed = [line.split(":")[0][3:] for line in out.splitlines() if line[:1].isdigit() and line[1:3] == ". "]
    assert listed and not {"wgmma", "tma_pipeline", "softmax_mma_overlap", "pingpong_warpgroups"} & set(listed)
    assert "- wgmma: needs wgmma (sm_9x only); this chip is sm_80" in out
    out = recommend("--backend", "triton")
    assert "- tensor_descriptors: needs TMA (sm_90 or newer); this chip is sm_80" in out
    assert "tensor_descriptors:" not in [line[3:] for line in out.splitlines() if line[:1].isdigit()]
