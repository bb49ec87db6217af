"""The JSONL store: stable ids, corrupt lines, the default location, concurrent appends."""

import json
import multiprocessing
from pathlib import Path

import pytest
from experience_fixtures import record

from kernel_opt.core.errors import UsageError
from kernel_opt.experience.store import (
    CURATED_PATH,
    ENVIRONMENT_VARIABLE,
    append_records,
    default_log_path,
    load_experience,
    next_id,
    read_log,
)


def test_default_path_is_per_user_and_outside_the_skill(tmp_path):
    assert default_log_path({"HOME": "/home/ada"}) == Path("/home/ada/.local/share/kernel-opt-skill/experience.jsonl")
    assert default_log_path({"HOME": "/home/ada", "XDG_DATA_HOME": "/data"}) == Path(
        "/data/kernel-opt-skill/experience.jsonl"
    )
    chosen = tmp_path / "team.jsonl"
    assert default_log_path({"HOME": "/home/ada", ENVIRONMENT_VARIABLE: str(chosen)}) == chosen


def test_curated_file_holds_only_records_of_the_case_studies():
    curated = read_log(CURATED_PATH, origin="curated", lock=False)
    assert curated.records and not curated.skipped
    for entry in curated.records:  # built by tools/demo_upkeep/build_curated.py, never by hand
        assert (entry.provenance["case"].startswith("demo/")
                and entry.version_dir.startswith(entry.provenance["case"] + "/v"))


def test_ids_are_sequential_and_start_lines(tmp_path):
    log = tmp_path / "experience.jsonl"
    first, second = append_records(log, [record(), record(kernel="gemm")])
    [third] = append_records(log, [record(kernel="layernorm")])
    assert [first.id, second.id, third.id] == [1, 2, 3]
    lines = log.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == [1, 2, 3]
    assert all(line.startswith('{"id": ') for line in lines)
    assert [r.kernel for r in read_log(log).records] == ["softmax", "gemm", "layernorm"]


def test_a_new_record_may_not_bring_an_id(tmp_path):
    with pytest.raises(UsageError, match="may not bring its own id"):
        append_records(tmp_path / "log.jsonl", [record(id=5)])


def test_invalid_record_is_refused_before_anything_is_written(tmp_path):
    log = tmp_path / "log.jsonl"
    with pytest.raises(UsageError, match="field 'memory_sol_after_pct'"):
        append_records(log, [record(), record(memory_sol_after_pct=180.0)])
    assert not log.exists() or log.read_text() == ""


def test_corrupt_lines_are_reported_with_line_numbers_and_skipped(tmp_path):
    log = tmp_path / "log.jsonl"
    append_records(log, [record(kernel="softmax"), record(kernel="gemm")])
    good = log.read_text().splitlines()
    bad_schema = json.dumps({**json.loads(good[0]), "id": 3, "memory_sol_after_pct": 250})
    duplicate_id = json.dumps({**json.loads(good[1]), "optimization": "something else"})
    log.write_text("\n".join([good[0], '{"id": 7, "kernel": "soft', "", good[1], bad_schema, duplicate_id]) + "\n")
    contents = read_log(log)
    assert [r.id for r in contents.records] == [1, 2]
    assert [(s.line_number, s.reason.split(" (")[0].split(":")[0]) for s in contents.skipped] == [
        (2, "not valid JSON"),
        (5, "invalid record"),
        (6, "id 2 already used on line 4"),
    ]
    assert "memory_sol_after_pct" in contents.skipped[1].reason
    assert contents.skipped[0].describe().startswith(f"{log}:2: not valid JSON")


def test_ids_are_never_reused_even_after_a_torn_line(tmp_path):
    log = tmp_path / "log.jsonl"
    append_records(log, [record()])
    with log.open("a") as stream:
        stream.write('{"id": 41, "kernel": "gemm", "back')  # a writer died mid-line, no newline
    assert next_id(log.read_bytes()) == 42
    [new] = append_records(log, [record(kernel="rmsnorm")])
    assert new.id == 42
    contents = read_log(log)
    assert [r.id for r in contents.records] == [1, 42]  # the new record did not fuse with the torn line
    assert [s.line_number for s in contents.skipped] == [2]


def test_missing_log_reads_as_empty_and_curated_entries_are_read_beside_it(tmp_path):
    curated = tmp_path / "curated.jsonl"
    curated.write_text(validated_line(record(kernel="gemm", id=1)))
    experience = load_experience(tmp_path / "none-yet.jsonl", curated)
    assert [entry.ref for entry in experience.entries()] == ["curated:1"]
    assert experience.find("curated:1").record.kernel == "gemm"
    with pytest.raises(UsageError, match="no record '1'"):
        experience.find("1")
    assert not (tmp_path / "none-yet.jsonl").exists()


def validated_line(rec) -> str:
    from kernel_opt.experience.records import validate

    return validate(rec).to_json_line()


def _append_many(path: str, worker: int, count: int) -> None:
    for index in range(count):
        append_records(Path(path), [record(optimization=f"worker {worker} step {index}", notes="n" * 300)])


def test_eight_processes_appending_100_records_each_leave_800_valid_records(tmp_path):
    log = tmp_path / "shared.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(str(log), worker, 100)) for worker in range(8)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
    assert [process.exitcode for process in workers] == [0] * 8
    contents = read_log(log)
    assert contents.skipped == []
    assert len(contents.records) == 800
    assert sorted(r.id for r in contents.records) == list(range(1, 801))
    written = {r.optimization for r in contents.records}
    assert written == {f"worker {w} step {i}" for w in range(8) for i in range(100)}
    assert len(log.read_text().splitlines()) == 800
