"""experience_log.py end to end: the original skill's command lines, --json, exit codes."""

import json
import os
import subprocess
import sys

import pytest
from conftest import SKILL_ROOT
from experience_fixtures import HYPOTHESIS, comparison, profile, version_folder

from kernel_opt import main as dispatcher
from kernel_opt.commands import experience_log

LEGACY_WRAPPER = SKILL_ROOT / "experience" / "learned" / "scripts" / "experience_log.py"


def _legacy(args, log, *, check=True):
    environment = {**os.environ, "KERNEL_OPT_EXPERIENCE_LOG": str(log)}
    result = subprocess.run([sys.executable, str(LEGACY_WRAPPER), *args], capture_output=True, text=True,
                            env=environment, timeout=60)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def test_original_skill_add_and_recommend_command_lines_still_work(tmp_path):
    log = tmp_path / "experience.jsonl"
    added = _legacy([
        "add", "--kernel", "softmax", "--backend", "cuda", "--chip", "sm_90", "--dims", "N=4096,D=4096",
        "--iteration", "2", "--bottleneck", "memory", "--stall", "long_scoreboard",
        "--memory-sol-before", "41.5", "--memory-sol-after", "78.0", "--sm-sol-before", "20", "--sm-sol-after", "24",
        "--latency-before", "140", "--latency-after", "100", "--occupancy-before", "60", "--occupancy-after", "61",
        "--optimization", "float4 vectorized loads", "--hypothesis", "float4 loads raise DRAM throughput",
        "--outcome", "success", "--notes", "row length divisible by 4",
    ], log)
    assert added.stdout.startswith(
        "recorded #1: softmax · cuda · sm_90 · memory_bound → float4_vectorized_loads: success (given)"
    )
    # the original skill's latencies are milliseconds; the record stores microseconds and says how it read them
    assert "note: --latency-after 100 read as 100 ms = 100000 us (write 100us or --latency-unit us" in added.stdout
    [line] = log.read_text().splitlines()
    stored = json.loads(line)
    assert (stored["memory_sol_before_pct"], stored["latency_after_us"], stored["dims"]) == (
        41.5, 100000.0, {"N": 4096, "D": 4096}
    )
    assert (stored["bottleneck"], stored["iteration"], stored["notes"]) == (
        "memory_bound", 2, "row length divisible by 4"
    )

    _legacy(["add", "--kernel", "softmax", "--backend", "cuda", "--chip", "sm_90", "--bottleneck", "memory-bound",
             "--optimization", "stage the row in shared memory", "--outcome", "failure", "--notes", "bank conflicts"],
            log)
    # --curated none: the shipped H100 records would join in; this test is about the original command lines
    recommended = _legacy(["recommend", "--kernel", "softmax", "--backend", "cuda", "--chip", "sm_90",
                           "--bottleneck", "memory", "-n", "3", "--curated", "none"], log)
    text = recommended.stdout
    assert "1. float4_vectorized_loads: score 0.80, 1 success" in text
    assert ("#1 (relevance 0.80): same kernel softmax; same arch sm_90; same bottleneck memory_bound; "
            "same backend cuda") in text
    assert "Known failures in situations like this" in text
    assert "- #2 stage_the_row_in_shared_memory: stage the row in shared memory. Note: bank conflicts" in text
    as_json = json.loads(
        _legacy(["recommend", "--kernel", "softmax", "--chip", "sm_90", "--json", "--curated", "none"], log).stdout
    )
    assert [r["strategy"] for r in as_json["recommendations"]] == ["float4_vectorized_loads"]
    assert [a["ref"] for a in as_json["avoid"]] == ["2"]


def test_help_lists_the_aliases(capsys):
    with pytest.raises(SystemExit) as exit_:
        experience_log.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "memory_bound (memory, mem, mem_bound" in text
    assert "triton (tl, triton_lang" in text
    assert "failure (fail, failed, regression" in text
    assert "experience_log.py add --from out/v3" in text


def _main(capsys, *args):
    code = experience_log.main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_add_from_version_folder_json_and_the_query_commands(tmp_path, capsys):
    log = str(tmp_path / "log.jsonl")
    v2 = version_folder(tmp_path / "out", 2, median_us=140.0, profile=profile("memory_bound", 41.0, 20.0, 60.0))
    v3 = version_folder(tmp_path / "out", 3, median_us=100.0, comparison=comparison(v2, 1.4, 1.36, 1.44, "success"),
                        profile=profile("memory_bound", 78.0, 25.0, 62.0), hypothesis=HYPOTHESIS)
    code, out, _ = _main(capsys, "--log", log, "add", "--from", str(v3), "--kernel", "softmax",
                         "--strategy", "vector_loads", "--optimization", "float4 row loads", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["ref"] == "1" and payload["measured_outcome"] == "success"
    assert (payload["record"]["speedup"], payload["record"]["chip_name"]) == (1.4, "H100")

    mine_only = ("--log", log, "--curated", "none")  # the shipped H100 records would match these queries too
    code, out, _ = _main(capsys, "list", *mine_only, "--kernel", "softmax", "--chip", "H100", "--json")
    assert code == 0 and [r["ref"] for r in json.loads(out)["records"]] == ["1"]
    code, out, _ = _main(capsys, "list", *mine_only, "--outcome", "failure", "--json")
    assert json.loads(out)["count"] == 0
    code, out, _ = _main(capsys, "search", *mine_only, "FLOAT4", "h100", "--json")
    assert json.loads(out)["count"] == 1
    code, out, _ = _main(capsys, "search", *mine_only, "float4", "wgmma", "--json")
    assert json.loads(out)["count"] == 0
    code, out, _ = _main(capsys, "show", "--log", log, "1")
    assert code == 0 and "speedup_ci_low" in out and "1.36" in out
    code, out, err = _main(capsys, "show", "--log", log, "7", "--json")
    assert code == 2 and json.loads(out)["error"]["message"].startswith("no record '7'")


def test_a_contradicting_outcome_exits_2_naming_the_problem(tmp_path, capsys):
    v2 = version_folder(tmp_path, 2)
    v3 = version_folder(tmp_path, 3, comparison=comparison(v2, 1.01, 0.98, 1.04, "neutral"))
    code, out, err = _main(capsys, "add", "--log", str(tmp_path / "log.jsonl"), "--from", str(v3),
                           "--kernel", "gemm", "--optimization", "x", "--outcome", "success")
    assert code == 2
    assert "error: --outcome success contradicts the measurement: speedup 1.010x [0.980, 1.040] is a neutral" in err
    assert "--force with --notes" in err
    assert not (tmp_path / "log.jsonl").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backend", "cuda", "--optimization", "x", "--outcome", "success", "--bottleneck", "slow"],
         "unknown bottleneck 'slow'"),
        (["--backend", "opencl", "--optimization", "x", "--outcome", "success"], "unknown backend 'opencl'"),
        (["--backend", "cuda", "--optimization", "x", "--outcome", "success", "--memory-sol-after", "130"],
         "field 'memory_sol_after_pct'"),
        (["--backend", "cuda", "--optimization", "x"], "--outcome is required"),
        (["--backend", "cuda", "--outcome", "success"], "field 'optimization' is required"),
        (["--backend", "cuda", "--optimization", "x", "--outcome", "success", "--chip", "Voodoo5"],
         "unknown chip 'Voodoo5'"),
    ],
)
def test_bad_input_exits_2_with_the_field_named(tmp_path, capsys, args, message):
    code, out, err = _main(capsys, "add", "--log", str(tmp_path / "log.jsonl"), "--kernel", "softmax", "--json", *args)
    assert code == 2
    assert message in json.loads(out)["error"]["message"]


def test_corrupt_line_is_reported_with_its_number_and_skipped(tmp_path, capsys):
    log = tmp_path / "log.jsonl"
    _main(capsys, "add", "--log", str(log), "--kernel", "softmax", "--backend", "cuda", "--optimization", "x",
          "--outcome", "win")
    with log.open("a") as stream:
        stream.write("garbage\n")
    _main(capsys, "add", "--log", str(log), "--kernel", "gemm", "--backend", "cuda", "--optimization", "y",
          "--outcome", "fail")
    code, out, err = _main(capsys, "list", "--log", str(log), "--curated", "none", "--json")
    assert code == 0
    payload = json.loads(out)
    assert [r["ref"] for r in payload["records"]] == ["1", "2"]
    assert payload["skipped_lines"] == [f"{log}:2: not valid JSON (Expecting value at column 1)"]
    assert f"warning: skipped {log}:2: not valid JSON" in err


def test_merge_sync_and_stats_commands(tmp_path, capsys):
    mine, theirs = tmp_path / "mine.jsonl", tmp_path / "theirs.jsonl"
    for log, kernel in ((mine, "softmax"), (theirs, "softmax"), (theirs, "gemm")):
        _main(capsys, "add", "--log", str(log), "--kernel", kernel, "--backend", "cuda", "--chip", "H100",
              "--optimization", "tile", "--speedup", "1.5")
    code, out, _ = _main(capsys, "merge", "--log", str(mine), "--from", str(theirs), "--json")
    report = json.loads(out)
    assert code == 0 and report["imported"] == [{"id": 2, "source_id": 2}] and len(report["duplicates"]) == 1
    code, out, _ = _main(capsys, "merge", "--log", str(mine), "--from", str(theirs))
    assert "imported 0 record(s)" in out and "unchanged" in out
    summary = tmp_path / "experiences.md"
    code, out, _ = _main(capsys, "sync", "--log", str(mine), "--curated", "none", "--output", str(summary))
    first = summary.read_bytes()
    _main(capsys, "sync", "--log", str(mine), "--curated", "none", "--output", str(summary))
    assert code == 0 and summary.read_bytes() == first
    assert "### row_reduction on H100 (sm_90)" in first.decode()
    code, out, _ = _main(capsys, "stats", "--log", str(mine), "--curated", "none", "--json")
    stats = json.loads(out)
    assert stats["total"]["records"] == 2 and stats["total"]["median_speedup"] == 1.5


def test_a_missing_curated_file_is_a_usage_error(tmp_path, capsys):
    code, out, err = _main(capsys, "list", "--log", str(tmp_path / "l.jsonl"),
                           "--curated", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "--curated" in err and "no such file" in err


def test_unwritable_log_is_an_environment_fault(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, out, err = _main(capsys, "add", "--log", str(blocker / "log.jsonl"), "--kernel", "x", "--backend", "cuda",
                           "--optimization", "y", "--outcome", "success")
    assert code == 4 and "cannot open the lock file" in err


def test_dispatcher_knows_the_commands(tmp_path, capsys):
    assert dispatcher.COMMANDS["experience_log"] == "experience_log"
    assert dispatcher.COMMANDS["hypothesis_check"] == "hypothesis_check"
    assert dispatcher.main(["experience-log", "list", "--log", str(tmp_path / "l.jsonl"), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    assert records and {r["origin"] for r in records} == {"curated"}  # an empty log still sees the shipped records
