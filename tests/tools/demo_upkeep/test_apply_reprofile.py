"""tools/demo_upkeep/apply_reprofile.py: a GPU re-profile brought into demo/<version>/reprofile/ beside the run's
untouched records, and the DEMO.md table of the labels and first advice that changed."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool
from reprofile_fixtures import FakeMachine, device_output

from kernel_opt.core.errors import EnvironmentFault
from kernel_opt.profile.ncu.reading import locate_report_reader

apply_reprofile = load_tool("apply_reprofile", DEMO_UPKEEP)
DEMO = REPO_ROOT / "demo"
REPORT = REPO_ROOT / "tests" / "fixtures" / "ncu" / "library" / "gemm_bf16_4096.ncu-rep"


def demo_copy(tmp_path: Path, versions: tuple[str, ...] = ("v7", "v10")) -> Path:
    """demo/cuda/gemm with only some of its versions, in tmp_path/demo."""
    case = tmp_path / "demo" / "cuda" / "gemm"
    case.mkdir(parents=True)
    for name in ("run.json", "benchmark.json", "ref.py", "experience.jsonl"):
        shutil.copy(DEMO / "cuda" / "gemm" / name, case / name)
    for version in versions:
        shutil.copytree(DEMO / "cuda" / "gemm" / version, case / version, ignore=shutil.ignore_patterns("reprofile"))
    return tmp_path / "demo"


def digests(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file() and "reprofile" not in path.parts}


def test_the_device_summary_is_copied_beside_the_untouched_run_records(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(apply_reprofile, "_reader_available", lambda: False)  # as on a machine without ncu_report
    demo = demo_copy(tmp_path)
    before = digests(demo)
    _, out = device_output(tmp_path, ["cuda/gemm/v7", "cuda/gemm/v10"])
    assert apply_reprofile.main(["apply", str(out), "--demo", str(demo)]) == 0
    assert digests(demo) == before  # the run's own files, byte for byte
    folder = demo / "cuda" / "gemm" / "v7" / "reprofile"
    assert sorted(path.name for path in folder.iterdir()) == ["README.md", "ncu_details.md", "ncu_summary.json",
                                                              "static_analysis.json"]
    assert json.loads((folder / "ncu_summary.json").read_text())["bottleneck"] == "overlap_bound"
    readme = (folder / "README.md").read_text()
    assert "- device: NVIDIA H100 80GB HBM3, 580.159.04" in readme
    assert ("- profile: `python3 skills/kernel-opt-skill/scripts/ncu_profile.py demo/cuda/gemm/v7/v7.cu --ref "
            "demo/cuda/gemm/ref.py --output-dir OUT/cuda/gemm/v7 --backend cuda --timeout 65 --arch sm_90a") in readme
    assert "- summary: as the device classified it when profiling" in readme
    assert ("- label: occupancy_bound (the run) → overlap_bound (here); first advice: register_limit → "
            "pipeline_depth") in readme
    printed = capsys.readouterr().out
    assert "cuda/gemm/v7: copied from the device (occupancy_bound -> overlap_bound" in printed
    assert "next: python3 tools/demo_upkeep/apply_reprofile.py notes --update demo/DEMO.md" in printed


def test_with_the_report_here_the_summary_is_re_read_by_todays_classifier(tmp_path):
    try:
        locate_report_reader()
    except EnvironmentFault as error:
        pytest.skip(f"ncu_report is not available here ({error.message})")
    demo = demo_copy(tmp_path, ("v10",))
    _, out = device_output(tmp_path, ["cuda/gemm/v10"], FakeMachine({}, report=REPORT))
    results = apply_reprofile.apply_all(out, demo)
    assert [(item.key, item.outcome) for item in results] == [("cuda/gemm/v10", "re-read from the report")]
    folder = demo / "cuda" / "gemm" / "v10" / "reprofile"
    summary = json.loads((folder / "ncu_summary.json").read_text())
    # the fake device wrote overlap_bound; the report (cuBLAS at the tensor roof) reads compute_bound
    assert (summary["bottleneck"], summary["busiest_pipe"], summary["read_next"][0]["strategy"]) == (
        "compute_bound", "tensor", "reduce_work")
    assert summary["collection"]["mode"] == "from_report"
    assert summary["collection"]["report"].endswith("cuda/gemm/v10/reprofile/profile.ncu-rep")
    assert (folder / "profile.ncu-rep").read_bytes() == REPORT.read_bytes()  # kept here, git-ignored
    assert {"ncu_summary.md", "ncu_details.md", "README.md"} <= {path.name for path in folder.iterdir()}
    assert "re-read from the report" in (folder / "README.md").read_text()
    again = apply_reprofile.apply_all(out, demo)  # idempotent
    assert json.loads((folder / "ncu_summary.json").read_text()) == summary and again[0].applied


def test_a_skipped_version_is_not_applied_and_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(apply_reprofile, "_reader_available", lambda: False)
    demo = demo_copy(tmp_path)
    machine = FakeMachine({"ncu_profile.py": 10.0})
    _, out = device_output(tmp_path, ["cuda/gemm/v7", "cuda/gemm/v10"], machine, deadline_s=5.0)
    assert apply_reprofile.main(["apply", str(out), "--demo", str(demo)]) == 1
    assert (demo / "cuda" / "gemm" / "v10" / "reprofile" / "ncu_summary.json").is_file()  # the best version ran first
    assert not (demo / "cuda" / "gemm" / "v7" / "reprofile").exists()
    printed = capsys.readouterr().out
    assert "cuda/gemm/v7: not applied: past the 5 s deadline" in printed
    assert "1 versions had no profile to apply: cuda/gemm/v7" in printed


def test_an_unreadable_report_falls_back_to_the_device_summary(tmp_path, monkeypatch):
    monkeypatch.setattr(apply_reprofile, "_reader_available", lambda: True)
    monkeypatch.setattr(apply_reprofile, "reread", lambda report, dest, backend: (_ for _ in ()).throw(
        apply_reprofile.UsageError(f"{report} holds no profiled kernel")))
    demo = demo_copy(tmp_path, ("v7",))
    _, out = device_output(tmp_path, ["cuda/gemm/v7"])
    [result] = apply_reprofile.apply_all(out, demo)
    assert result.outcome.startswith("copied from the device (re-reading its report failed: ")
    folder = demo / "cuda" / "gemm" / "v7" / "reprofile"
    assert json.loads((folder / "ncu_summary.json").read_text())["bottleneck"] == "overlap_bound"
    assert not (folder / "profile.ncu-rep").exists()
    assert "as the device classified it when profiling (re-reading its report failed: " in (
        folder / "README.md").read_text()


def test_dry_run_writes_nothing_and_an_unpacked_folder_is_read_as_well(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(apply_reprofile, "_reader_available", lambda: False)
    demo = demo_copy(tmp_path)
    _, out = device_output(tmp_path, ["cuda/gemm/v7"])
    with tarfile.open(out / "reprofile.tar.gz") as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    assert apply_reprofile.main(["apply", str(tmp_path / "unpacked"), "--demo", str(demo), "--dry-run"]) == 0
    assert "cuda/gemm/v7: would be copied from the device" in capsys.readouterr().out
    assert not (demo / "cuda" / "gemm" / "v7" / "reprofile").exists()


def test_bad_input_is_refused_before_anything_is_written(tmp_path, capsys):
    demo = demo_copy(tmp_path, ("v7",))
    assert apply_reprofile.main(["apply", str(tmp_path / "nothing"), "--demo", str(demo)]) == 2
    assert "no manifest.json" in capsys.readouterr().err
    evil = tmp_path / "evil"
    evil.mkdir()
    with tarfile.open(evil / "reprofile.tar.gz", "w:gz") as archive:
        payload = b"x"
        member = tarfile.TarInfo("reprofile/../../escaped.txt")
        member.size = len(payload)
        archive.addfile(member, io.BytesIO(payload))
    assert apply_reprofile.main(["apply", str(evil), "--demo", str(demo)]) == 2
    assert "is not a file under reprofile/" in capsys.readouterr().err
    assert not (tmp_path / "escaped.txt").exists()
    _, out = device_output(tmp_path, ["cuda/gemm/v7", "cuda/gemm/v10"])  # v10: a version this demo copy lacks
    assert apply_reprofile.main(["apply", str(out), "--demo", str(demo)]) == 2
    assert "cuda/gemm/v10: the archive has it, the demo does not" in capsys.readouterr().err
    assert not (demo / "cuda" / "gemm" / "v7" / "reprofile").exists()  # refused before v7 was written


def _reprofiled(demo: Path, version: str, summary: dict) -> None:
    folder = demo / "cuda" / "gemm" / version / "reprofile"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ncu_summary.json").write_text(json.dumps(summary))


def test_the_notes_table_lists_only_changed_versions_with_their_evidence(tmp_path, capsys):
    demo = demo_copy(tmp_path, ("v7", "v9", "v10"))
    from reprofile_fixtures import NEW_SUMMARY

    _reprofiled(demo, "v7", NEW_SUMMARY)
    # v10 re-profiled with the same label and first advice as the run's own profile: not listed
    _reprofiled(demo, "v10", json.loads((demo / "cuda" / "gemm" / "v10" / "ncu_summary.json").read_text()))
    text = apply_reprofile.render_notes(demo)
    rows = [line for line in text.splitlines() if line.startswith("| cuda/")]
    assert len(rows) == 1
    cells = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert cells == ["cuda/gemm/v7", "occupancy_bound → overlap_bound", "register_limit → pipeline_depth",
                     "tensor 61.0%", "61.0%", "12.4%", "wgmma, TMA (executed opcode mix (ncu))", "wait 32%"]
    assert text.endswith("1 versions changed label or first advice; 1 re-profiled versions kept both.")

    notes = tmp_path / "DEMO.md"
    notes.write_text(f"intro\n{apply_reprofile.NOTES_START}\nold\n{apply_reprofile.NOTES_END}\nafter\n")
    assert apply_reprofile.main(["notes", "--demo", str(demo), "--check", str(notes)]) == 1
    assert apply_reprofile.main(["notes", "--demo", str(demo), "--update", str(notes)]) == 0
    assert apply_reprofile.main(["notes", "--demo", str(demo), "--check", str(notes)]) == 0
    assert notes.read_text().startswith("intro\n<!-- reprofile-table:start -->\n| version")
    (tmp_path / "plain.md").write_text("no markers\n")
    capsys.readouterr()
    assert apply_reprofile.main(["notes", "--demo", str(demo), "--check", str(tmp_path / "plain.md")]) == 2
    assert "needs one <!-- reprofile-table:start -->" in capsys.readouterr().err
    assert apply_reprofile.main(["notes", "--demo", str(tmp_path / "empty")]) == 2


def test_two_runs_are_applied_together_each_version_from_the_run_that_profiled_it(tmp_path, monkeypatch, capsys):
    """The 2026-11-25 H100 run hit its deadline; a second call profiled the rest with --only."""
    monkeypatch.setattr(apply_reprofile, "_reader_available", lambda: False)
    demo = demo_copy(tmp_path)
    first_code, first = device_output(tmp_path / "first", ["cuda/gemm/v7", "cuda/gemm/v10"],
                                      FakeMachine({"ncu_profile.py": 10.0}), deadline_s=5.0)
    second_code, second = device_output(tmp_path / "second", ["cuda/gemm/v7"])
    assert (first_code, second_code) == (1, 0)
    stale = demo / "cuda" / "gemm" / "v7" / "reprofile"
    stale.mkdir()
    (stale / "left_from_before.txt").write_text("an earlier application's file\n")
    assert apply_reprofile.main(["apply", str(first), str(second), "--demo", str(demo)]) == 0
    printed = capsys.readouterr().out
    assert "cuda/gemm/v10: copied from the device" in printed and "cuda/gemm/v7: copied from the device" in printed
    assert "had no profile to apply" not in printed
    assert sorted(path.name for path in stale.iterdir()) == ["README.md", "ncu_details.md", "ncu_summary.json",
                                                             "static_analysis.json"]  # one re-profile, nothing stale
    # in either order: a run that skipped a version never replaces one that profiled it
    roots = {name: apply_reprofile.unpacked(out, tmp_path / f"unpacked_{name}")
             for name, out in (("first", first), ("second", second))}
    for order in (("first", "second"), ("second", "first")):
        chosen = apply_reprofile.chosen_entries([roots[name] for name in order])
        assert {key: root for key, (_, root) in chosen.items()} == {"cuda/gemm/v10": roots["first"],
                                                                    "cuda/gemm/v7": roots["second"]}


def test_a_bare_commit_is_named_as_the_device_copy_s_head(tmp_path):
    sha = "769a625930361e038f36787bdaeab856646abf98"
    text = apply_reprofile._commit_text(sha)
    assert text.startswith("769a625 as recorded, which is the git HEAD of the device's copy, not necessarily the code")
    assert "demo/DEMO.md" in text
    named = "files of tree d5cf, not HEAD 769a625's (their commit: git log --all --format='%H %T' | grep d5cf)"
    assert apply_reprofile._commit_text(named) == named  # what reprofile_demo.py records now stays as it is
