"""merge --from (idempotent import with provenance) and merge --groups (duplicates collapsed)."""

import json

import pytest
from experience_fixtures import record

from kernel_opt.core.errors import UsageError
from kernel_opt.experience.merge import merge
from kernel_opt.experience.records import validate
from kernel_opt.experience.store import append_records, load_experience, read_log


def _teammate_log(path):
    lines = [
        validate(record(id=1, kernel="gemm", strategy="smem_tiling", speedup=2.0)).to_json_line(),
        validate(record(id=2, kernel="softmax", strategy="vector_loads", speedup=1.3)).to_json_line(),
        "this line is not JSON\n",
        validate(
            record(id=5, kernel="rmsnorm", strategy="vector_loads", provenance={"merged_ids": [3, 4]})
        ).to_json_line(),
    ]
    path.write_text("".join(lines))
    return path


def test_import_dedupes_by_content_keeps_provenance_and_is_idempotent(tmp_path):
    log = tmp_path / "mine.jsonl"
    append_records(log, [record(kernel="softmax", strategy="vector_loads", speedup=1.3)])  # same content as theirs #2
    log.chmod(0o644)
    theirs = _teammate_log(tmp_path / "theirs.jsonl")

    report = merge(log, source=theirs)
    assert report.imported == [{"id": 2, "source_id": 1}, {"id": 3, "source_id": 5}]
    assert report.duplicates == [{"source_id": 2, "existing_id": 1}]
    assert [line.line_number for line in report.skipped_in_source] == [3]
    assert report.backup == str(log) + ".bak"
    assert len(read_log(tmp_path / "mine.jsonl.bak", lock=False).records) == 1

    records = {r.id: r for r in read_log(log).records}
    assert sorted(records) == [1, 2, 3]
    assert records[2].kernel == "gemm"
    assert records[2].provenance == {"imported_from": [{"log": str(theirs.resolve()), "id": 1}]}
    # the teammate's own merged ids belong to their log, so they are nested, not taken as ours
    assert records[3].provenance == {
        "imported_from": [{"log": str(theirs.resolve()), "id": 5, "provenance": {"merged_ids": [3, 4]}}]
    }
    assert oct(log.stat().st_mode & 0o777) == oct(0o644)  # the rewrite kept the log's permissions
    before = log.read_bytes()
    again = merge(log, source=theirs)
    assert again.imported == [] and not again.changed
    assert [d["existing_id"] for d in again.duplicates] == [2, 1, 3]
    assert log.read_bytes() == before


def test_groups_collapse_duplicates_into_the_highest_id_with_provenance(tmp_path):
    log = tmp_path / "mine.jsonl"
    append_records(log, [record(kernel="softmax", created_at="2025-01-01T00:00:00+00:00")])
    append_records(log, [record(kernel="gemm")])
    append_records(log, [record(kernel="softmax", created_at="2025-03-01T00:00:00+00:00")])
    append_records(log, [record(kernel="softmax", created_at="2025-02-01T00:00:00+00:00")])
    with log.open("a") as stream:
        stream.write("{broken\n")

    report = merge(log, groups=True)
    assert report.groups == [{"kept_id": 4, "merged_ids": [1, 3]}]
    assert [s.line_number for s in report.skipped_in_log] == [5]
    contents = read_log(log)
    assert [r.id for r in contents.records] == [2, 4]
    kept = contents.records[1]
    assert kept.provenance == {"merged_ids": [1, 3]}
    assert kept.created_at == "2025-01-01T00:00:00+00:00"
    assert "{broken" in log.read_text().splitlines()  # unreadable lines are carried, not dropped
    experience = load_experience(log, None)
    assert experience.find("1").record.id == 4  # an old id still finds its record
    assert merge(log, groups=True).groups == []  # idempotent
    [new] = append_records(log, [record(kernel="layernorm")])
    assert new.id == 5  # the highest id survived, so no id is reused


def test_merge_needs_something_to_do_and_refuses_itself(tmp_path):
    log = tmp_path / "mine.jsonl"
    append_records(log, [record()])
    with pytest.raises(UsageError, match="--from OTHER.jsonl, --duplicates or --groups"):
        merge(log)
    with pytest.raises(UsageError, match="names the log itself"):
        merge(log, source=log)
    with pytest.raises(UsageError, match="no such file"):
        merge(log, source=tmp_path / "missing.jsonl")


def test_import_into_an_empty_log(tmp_path):
    theirs = _teammate_log(tmp_path / "theirs.jsonl")
    report = merge(tmp_path / "new" / "mine.jsonl", source=theirs, groups=True)
    assert [item["id"] for item in report.imported] == [1, 2, 3]
    assert report.backup is None
    lines = (tmp_path / "new" / "mine.jsonl").read_text().splitlines()
    assert [json.loads(line)["kernel"] for line in lines] == ["gemm", "softmax", "rmsnorm"]
