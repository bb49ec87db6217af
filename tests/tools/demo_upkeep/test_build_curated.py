"""build_curated.py: curated.jsonl rebuilt from the case-study logs, and what recommend makes of it."""

import json

from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool
from experience_fixtures import H100, record, write_json

from kernel_opt.commands import experience_log
from kernel_opt.experience.records import validate
from kernel_opt.experience.store import CURATED, CURATED_PATH, read_log

build_curated = load_tool("build_curated", DEMO_UPKEEP)
DEMO = REPO_ROOT / "demo"


def _case(demo, case, *records):
    """demo/<case>/experience.jsonl with ids 1..n, and each record's vN/benchmark.json naming the GPU."""
    folder = demo / case
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for number, fields in enumerate(records, start=1):
        lines.append(
            validate(record(id=number, iteration=number, version_dir=f"demo/{case}/v{number}", **fields)).to_json_line()
        )
        write_json(folder / f"v{number}" / "benchmark.json", {"gpu": H100})
    (folder / "experience.jsonl").write_text("".join(lines))
    return folder / "experience.jsonl"


def _build(demo, output, *extra):
    return build_curated.main(["--demo", str(demo), "--output", str(output), *extra])


def test_the_shipped_curated_file_is_the_rebuild_of_the_case_logs():
    """Fails when a case gained a record: run build_curated.py (the assertion says so)."""
    text, dropped = build_curated.build(DEMO, read_log(CURATED_PATH, origin=CURATED, lock=False))
    assert text == CURATED_PATH.read_text(), "curated.jsonl is stale: run tools/demo_upkeep/build_curated.py"
    assert dropped == []
    curated = [json.loads(line) for line in text.splitlines()]
    logs = build_curated.case_logs(DEMO)
    assert logs == sorted(path.parent / "experience.jsonl" for path in DEMO.glob("*/*/run.json"))  # each case's
    assert len(logs) >= 9  # the seven case studies and the two second runs (cuda/attention_r2, triton/attention_r2)
    assert len(curated) == sum(len(log.read_text().splitlines()) for log in logs) >= 36
    for line in curated:
        provenance = line["provenance"]
        [origin] = provenance["imported_from"]
        assert origin["log"] == provenance["case"] + "/experience.jsonl"
        assert line["version_dir"] == f"{provenance['case']}/v{line['iteration']}"
        assert provenance["device"] == "NVIDIA H100 80GB HBM3" and line["chip"] == "sm_90"
        source = next(json.loads(s) for s in (REPO_ROOT / origin["log"]).read_text().splitlines()
                      if json.loads(s)["id"] == origin["id"])
        run_labels = provenance.get("run_labels", {})
        assert {k: v for k, v in line.items() if k not in ("id", "provenance", *run_labels)} == {
            k: v for k, v in source.items() if k not in ("id", "provenance", *run_labels)
        }  # measured figures, notes and times exactly as the run recorded them
        versions = {"bottleneck": line["baseline"], "bottleneck_after": f"v{line['iteration']}"}
        for name, run_label in run_labels.items():  # a label replaced by its version's re-profile
            assert source[name] == run_label != line[name]
            reprofile = REPO_ROOT / provenance["case"] / versions[name] / "reprofile" / "ncu_summary.json"
            assert json.loads(reprofile.read_text())["bottleneck"] == line[name]


def test_rebuild_is_idempotent_and_keeps_ids_when_a_case_gains_records(tmp_path, capsys):
    demo, output = tmp_path / "demo", tmp_path / "curated.jsonl"
    gemm = _case(demo, "cuda/gemm", dict(kernel="gemm", speedup=1.5),
                 dict(kernel="gemm", outcome="failure", speedup=0.9))
    _case(demo, "triton/softmax", dict(kernel="softmax", strategy="single_pass", speedup=1.55))
    assert _build(demo, output) == 0
    first = output.read_bytes()
    assert _build(demo, output) == 0 and output.read_bytes() == first
    assert _build(demo, output, "--check") == 0
    records = [json.loads(line) for line in first.decode().splitlines()]
    assert [(r["id"], r["provenance"]["case"], r["provenance"]["imported_from"][0]["id"]) for r in records] == [
        (1, "demo/cuda/gemm", 1), (2, "demo/cuda/gemm", 2), (3, "demo/triton/softmax", 1),
    ]
    assert records[0]["provenance"] == {
        "case": "demo/cuda/gemm", "device": "NVIDIA H100 80GB HBM3",
        "imported_from": [{"log": "demo/cuda/gemm/experience.jsonl", "id": 1}],
    }
    assert (records[1]["outcome"], records[1]["speedup"]) == ("failure", 0.9)

    with gemm.open("a") as stream:  # the case gains v3 later
        stream.write(
            validate(record(id=3, kernel="gemm", iteration=3, strategy="tma_pipeline", speedup=1.4)).to_json_line()
        )
    assert _build(demo, output, "--check") == 1 and output.read_bytes() == first
    assert _build(demo, output) == 0
    rebuilt = [json.loads(line) for line in output.read_text().splitlines()]
    assert rebuilt[:3] == records  # earlier curated ids never move
    assert (rebuilt[3]["id"], rebuilt[3]["strategy"], rebuilt[3]["provenance"]["imported_from"][0]["id"]) == (
        4, "tma_pipeline", 3
    )
    assert rebuilt[3]["provenance"]["device"] is None  # no v3/benchmark.json: not guessed
    again = output.read_bytes()
    assert _build(demo, output) == 0 and output.read_bytes() == again


def test_labels_come_from_the_re_profiles_and_the_runs_labels_stay_in_provenance(tmp_path):
    demo, output = tmp_path / "demo", tmp_path / "curated.jsonl"
    log = _case(demo, "cuda/gemm",
                dict(kernel="gemm", baseline="v0", bottleneck="memory_bound", bottleneck_after="occupancy_bound"),
                dict(kernel="gemm", baseline="v1", bottleneck="occupancy_bound", bottleneck_after="occupancy_bound"))
    case_log = log.read_bytes()
    for version, label in (("v0", "memory_bound"), ("v1", "overlap_bound")):  # v2 was not re-profiled
        write_json(demo / "cuda" / "gemm" / version / "reprofile" / "ncu_summary.json",
                   {"schema": "kernel_opt.ncu_summary/1", "bottleneck": label})
    assert _build(demo, output) == 0
    first, second = (json.loads(line) for line in output.read_text().splitlines())
    assert (first["bottleneck"], first["bottleneck_after"]) == ("memory_bound", "overlap_bound")
    assert first["provenance"]["run_labels"] == {"bottleneck_after": "occupancy_bound"}  # v0 kept its label
    assert (second["bottleneck"], second["bottleneck_after"]) == ("overlap_bound", "occupancy_bound")
    assert second["provenance"]["run_labels"] == {"bottleneck": "occupancy_bound"}
    assert log.read_bytes() == case_log  # the run's log keeps the labels the run saw
    assert _build(demo, output, "--check") == 0


def test_a_curated_record_no_case_produced_is_refused(tmp_path, capsys):
    demo, output = tmp_path / "demo", tmp_path / "curated.jsonl"
    _case(demo, "cuda/softmax", dict(speedup=1.2))
    output.write_text(validate(record(id=1, kernel="gemm", notes="typed in by hand")).to_json_line())
    before = output.read_bytes()
    assert _build(demo, output) == 2
    assert "curated:1 did not come from a case study" in capsys.readouterr().err
    assert output.read_bytes() == before


def test_a_record_gone_from_its_case_is_dropped_and_named(tmp_path, capsys):
    demo, output = tmp_path / "demo", tmp_path / "curated.jsonl"
    log = _case(demo, "cuda/softmax", dict(speedup=1.2), dict(speedup=1.3))
    _build(demo, output)
    log.write_text(log.read_text().splitlines()[0] + "\n")
    capsys.readouterr()
    assert _build(demo, output) == 0
    assert "dropped curated:2" in capsys.readouterr().out
    assert [r.id for r in read_log(output, origin=CURATED, lock=False).records] == [1]


def test_no_case_logs_or_an_unreadable_line_is_a_usage_error(tmp_path, capsys):
    output = tmp_path / "curated.jsonl"
    assert _build(tmp_path / "nothing", output) == 2
    assert "no case logs" in capsys.readouterr().err
    log = _case(tmp_path / "demo", "cuda/softmax", dict(speedup=1.2))
    log.write_text(log.read_text() + "{torn\n")
    assert _build(tmp_path / "demo", output) == 2
    assert "unreadable line" in capsys.readouterr().err and not output.exists()


def _recommend(capsys, tmp_path, *query):
    code = experience_log.main(["--log", str(tmp_path / "empty.jsonl"), "--json", "recommend", *query])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_recommend_on_an_empty_log_draws_on_the_curated_hopper_records(tmp_path, capsys):
    result = _recommend(capsys, tmp_path, "--kernel", "attention", "--backend", "cuda", "--chip", "sm_90",
                        "--bottleneck", "occupancy_bound")
    strategies = {r["strategy"]: r for r in result["recommendations"]}
    assert {"tensor_cores", "cp_async_pipeline"} <= set(strategies)
    tensor_cores = strategies["tensor_cores"]["evidence"][0]
    assert (tensor_cores["ref"], tensor_cores["chip"], tensor_cores["relevance"]) == ("curated:1", "H100 (sm_90)", 0.8)
    assert round(tensor_cores["speedup"], 3) == 3.224
    assert any(m["ref"].startswith("curated:") and m["optimization"].startswith("16 query rows per warp")
               for m in result["avoid"])
    assert not (tmp_path / "empty.jsonl").exists()  # a query writes nothing

    for chip in ("H100", "NVIDIA H100 80GB HBM3"):  # the device's own name is the same chip: full relevance
        result = _recommend(capsys, tmp_path, "--kernel", "gemm", "--backend", "cuda", "--chip", chip,
                            "--bottleneck", "memory_bound")
        best = result["recommendations"][0]["evidence"][0]
        assert (best["kernel"], best["chip"], best["relevance"]) == ("gemm", "H100 (sm_90)", 1.0)
        assert any(m["kernel"] == "gemm" and m["outcome"] == "failure" for m in result["avoid"])

    result = _recommend(capsys, tmp_path, "--kernel", "softmax", "--backend", "triton", "--chip", "H100",
                        "--bottleneck", "memory_bound")
    top = result["recommendations"][0]
    assert (top["strategy"], top["evidence"][0]["ref"]) == ("single_pass", "curated:36")
