"""tools/demo_upkeep/reprofile_demo.py: which demo versions a GPU run re-profiles, in what order, with which commands,
and how the run keeps to its deadline and packs what the device returns (fake commands, fake clock)."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool
from reprofile_fixtures import NEW_SUMMARY, FakeMachine, device_output

from kernel_opt.core.errors import UsageError

reprofile_demo = load_tool("reprofile_demo", DEMO_UPKEEP)
DEMO = REPO_ROOT / "demo"
# Each case's best version when the re-profile ran (2026-11-25), in the order it ran them. Triton GEMM's run
# went on to v3 and v4 (evaluated with today's classifier, so not re-profiled); its final benchmark names v4
# now, and v2, which v4 grew from, stays the best of the re-profiled versions.
BEST = ["cuda/gemm/v10", "cuda/attention/v8", "triton/attention/v2", "triton/gemm/v2", "cuda/softmax/v2",
        "triton/softmax/v1", "triton/rmsnorm/v0"]
# Versions recorded after the re-profile: their own profiles come from issue 15's classifier.
RECORDED_SINCE = {"triton/gemm/v3", "triton/gemm/v4", *(f"cuda/attention_r2/v{n}" for n in range(6)),
                  *(f"triton/attention_r2/v{n}" for n in range(3))}
# A kernel record of an ncu_summary.json as issue 15's classifier writes it, and as it was written before.
CURRENT_KERNEL = {"name": "k", "pipes": {}, "design": {}, "metrics": {}}
OLDER_KERNEL = {"name": "k", "metrics": {}}


def test_the_plan_covers_the_44_versions_without_pipe_and_design_records_best_first_then_tensor_core_cases():
    jobs = reprofile_demo.plan_versions(DEMO)
    keys = [job.key for job in jobs]
    assert len(keys) == len(set(keys)) == 44
    assert keys[:7] == BEST and all(job.best for job in jobs[:7]) and not any(job.best for job in jobs[7:])
    assert keys[7:18] == [f"cuda/gemm/v{n}" for n in range(10)] + ["cuda/attention/v0"]  # v2 before v10
    assert keys[-6:] == ["triton/softmax/v0"] + [f"triton/rmsnorm/v{n}" for n in range(1, 6)]
    reprofiled = {str(path.parents[1].relative_to(DEMO)) for path in DEMO.glob("*/*/v*/reprofile/ncu_summary.json")}
    assert set(keys) == reprofiled  # what the 2026-11-25 re-profile covered (demo_upkeep/apply_reprofile.py brought in)
    on_disk = {str(path.parent.relative_to(DEMO)) for path in DEMO.glob("*/*/v*/version.json")}
    assert RECORDED_SINCE <= on_disk - set(keys)
    for key in on_disk - set(keys):  # left out only because today's classifier wrote their own profiles
        summary = json.loads((DEMO / key / "ncu_summary.json").read_text())
        assert summary["kernels"] and not reprofile_demo.predates_pipe_and_design_records(summary), key


def test_a_summary_predates_the_pipe_and_design_records_when_a_kernel_lacks_either():
    older = json.loads((DEMO / "cuda/gemm/v9/ncu_summary.json").read_text())
    assert reprofile_demo.predates_pipe_and_design_records(older)
    assert not reprofile_demo.predates_pipe_and_design_records(
        json.loads((DEMO / "triton/gemm/v3/ncu_summary.json").read_text()))
    assert not reprofile_demo.predates_pipe_and_design_records({"kernels": [CURRENT_KERNEL]})  # empty assessments count
    assert reprofile_demo.predates_pipe_and_design_records({"kernels": [CURRENT_KERNEL, OLDER_KERNEL]})
    assert reprofile_demo.predates_pipe_and_design_records({"kernels": [{"name": "k", "pipes": {}}]})  # no design
    assert reprofile_demo.predates_pipe_and_design_records({"kernels": [{"name": "k", "design": {}}]})  # no pipes
    assert not reprofile_demo.predates_pipe_and_design_records(None)  # never profiled: evaluate it, not re-profile
    assert not reprofile_demo.predates_pipe_and_design_records({"kernels": []})


def test_each_version_is_profiled_and_analysed_as_its_run_recorded_it():
    jobs = {job.key: job for job in reprofile_demo.plan_versions(DEMO)}
    out = Path("/scratch/reprofile")
    assert reprofile_demo.profile_command(jobs["cuda/gemm/v9"], out, "python3", timeout_s=75) == [
        "python3", "skills/kernel-opt-skill/scripts/ncu_profile.py", "demo/cuda/gemm/v9/v9.cu",
        "--ref", "demo/cuda/gemm/ref.py", "--output-dir", "/scratch/reprofile/cuda/gemm/v9", "--backend", "cuda",
        "--timeout", "65", "--arch", "sm_90a", "--M=4096", "--N=4096", "--K=4096"]
    assert reprofile_demo.static_command(jobs["cuda/gemm/v9"], out, "python3") == [
        "python3", "skills/kernel-opt-skill/scripts/static_analysis.py", "demo/cuda/gemm/v9/v9.cu",
        "--output-dir", "/scratch/reprofile/cuda/gemm/v9", "--backend", "cuda", "--arch", "sm_90a"]
    # Triton: no --arch (run.json says auto: this GPU); the static analysis needs ref.py's inputs
    assert reprofile_demo.static_command(jobs["triton/attention/v2"], out, "python3") == [
        "python3", "skills/kernel-opt-skill/scripts/static_analysis.py", "demo/triton/attention/v2/v2.py",
        "--output-dir", "/scratch/reprofile/triton/attention/v2", "--backend", "triton",
        "--ref", "demo/triton/attention/ref.py", "--B=8", "--H=16", "--S=2048", "--D=64"]
    softmax = reprofile_demo.profile_command(jobs["cuda/softmax/v0"], out, "python3")
    assert "--arch" not in softmax and softmax[-2:] == ["--N=4096", "--D=4096"]


def test_only_keeps_cases_or_versions_and_refuses_unknown_ones():
    keys = [job.key for job in reprofile_demo.plan_versions(DEMO, ["triton/gemm", " cuda/gemm/v9 ", ""])]
    assert keys == ["triton/gemm/v2", "cuda/gemm/v9", "triton/gemm/v0", "triton/gemm/v1"]
    assert [job.key for job in reprofile_demo.plan_versions(DEMO, ["cuda/gemm/v1"])] == ["cuda/gemm/v1"]  # not v10
    with pytest.raises(UsageError, match="cuda/gemm/v99"):
        reprofile_demo.plan_versions(DEMO, ["cuda/gemm/v99"])
    with pytest.raises(UsageError, match="cuda/gem: no such"):
        reprofile_demo.plan_versions(DEMO, ["cuda/gem"])  # a prefix of a name is not a case
    with pytest.raises(UsageError, match="triton/gemm/v3, cuda/attention_r2: profiled with today's classifier"):
        reprofile_demo.plan_versions(DEMO, ["triton/gemm/v3", "cuda/attention_r2", "triton/gemm/v2"])
    with pytest.raises(UsageError, match="no demo version to re-profile"):
        reprofile_demo.plan_versions(REPO_ROOT / "tests")


def _version(case: Path, number: int, kernel: dict | None = OLDER_KERNEL, parent: str | None = None) -> None:
    """case/vN with its kernel, version.json and (unless `kernel` is None: never profiled) ncu_summary.json."""
    folder = case / f"v{number}"
    folder.mkdir(parents=True)
    (folder / f"v{number}.cu").write_text("// kernel\n")
    (folder / "version.json").write_text(json.dumps({"version": folder.name, "parent": parent, "copied_from": "x.cu",
                                                     "created_at": "2026-11-26T00:00:00+00:00"}))
    if kernel is not None:
        (folder / "ncu_summary.json").write_text(json.dumps({"bottleneck": "memory_bound", "kernels": [kernel]}))


def _synthetic_case(demo: Path, nvcc_flags: str = "--use_fast_math") -> Path:
    case = demo / "cuda" / "scale"
    for number in (0, 1, 2):
        _version(case, number, parent=f"v{number - 1}" if number else None)
    (case / "v2" / "v2.cu").unlink()  # a version folder whose solution is gone is not profiled
    (case / "run.json").write_text(json.dumps({
        "kernel_name": "scale", "backend": "cuda", "solution_pattern": "v{n}/v{n}.cu", "reference_file": "ref.py",
        "dims": {"N": 1024}, "iterations_budget": 2, "nvcc_flags": nvcc_flags, "arch": "auto"}))
    (case / "benchmark.json").write_text(json.dumps({"solution": {"path": str(case / "v1" / "v1.cu")}}))
    return case


def test_a_case_with_nvcc_flags_and_a_missing_solution(tmp_path):
    _synthetic_case(tmp_path)
    jobs = reprofile_demo.plan_versions(tmp_path)
    assert [(job.key, job.best) for job in jobs] == [("cuda/scale/v1", True), ("cuda/scale/v0", False)]
    assert jobs[0].build_arguments == ("--nvcc-flags=--use_fast_math",)
    command = reprofile_demo.profile_command(jobs[0], tmp_path / "out")
    assert command[-2:] == ["--nvcc-flags=--use_fast_math", "--N=1024"]


def test_a_run_continued_after_issue_15_is_left_out_and_its_best_passes_to_the_version_it_grew_from(tmp_path):
    case = _synthetic_case(tmp_path)
    _version(case, 3, CURRENT_KERNEL, parent="v1")  # evaluated with today's classifier
    _version(case, 4, None, parent="v3")  # not yet evaluated
    (case / "benchmark.json").write_text(json.dumps({"solution": {"path": str(case / "v4" / "v4.cu")}}))
    jobs = reprofile_demo.plan_versions(tmp_path)
    assert [(job.key, job.best) for job in jobs] == [("cuda/scale/v1", True), ("cuda/scale/v0", False)]
    for key in ("cuda/scale/v3", "cuda/scale/v4"):
        with pytest.raises(UsageError, match=f"{key}: profiled with today's classifier"):
            reprofile_demo.plan_versions(tmp_path, [key])
    (case / "v3" / "version.json").write_text(json.dumps({"version": "v3", "parent": None, "copied_from": "x.cu",
                                                          "created_at": "2026-11-26T00:00:00+00:00"}))
    # a best that grew from no re-profiled version: no version of the case goes first
    assert [(job.key, job.best) for job in reprofile_demo.plan_versions(tmp_path)] == [
        ("cuda/scale/v0", False), ("cuda/scale/v1", False)]
    (case / "v0" / "ncu_summary.json").write_text(json.dumps({"kernels": [CURRENT_KERNEL]}))
    (case / "v1" / "ncu_summary.json").unlink()
    with pytest.raises(UsageError, match="no demo version to re-profile"):
        reprofile_demo.plan_versions(tmp_path)


def test_reports_fill_archives_in_order_and_what_does_not_fit_is_named():
    mib = 2**20
    placement = reprofile_demo.place_reports(
        [("a", 6 * mib), ("b", 6 * mib), ("c", 5 * mib), ("d", None), ("e", 20 * mib), ("f", 2 * mib),
         ("g", 14 * mib), ("h", 1 * mib)], archive_bytes=15 * mib, archives=2)
    assert placement == {
        "a": "reports-1.tar.gz", "b": "reports-1.tar.gz", "c": "reports-2.tar.gz",
        "e": "left out: 20.0 MiB, more than one archive holds", "f": "reports-1.tar.gz",
        "g": "left out: the 2 report archives are full", "h": "reports-1.tar.gz"}


def test_profile_reading_reads_old_and_new_summaries():
    reading = reprofile_demo.profile_reading(NEW_SUMMARY)
    assert (reading["bottleneck"], reading["first_advice"], reading["busiest_pipe"], reading["tensor_pipe_pct"],
            reading["async_features"], reading["top_stall"], reading["achieved_occupancy_pct"]) == (
        "overlap_bound", "pipeline_depth", "tensor", 61.04, ["wgmma", "TMA"], "wait", 12.4)
    old = reprofile_demo.profile_reading(json.loads((DEMO / "cuda" / "gemm" / "v9" / "ncu_summary.json").read_text()))
    assert (old["bottleneck"], old["first_advice"], old["busiest_pipe"], old["async_features"]) == (
        "memory_bound", "l2_reuse", None, [])
    assert reprofile_demo.profile_reading(None) == {}


def test_a_run_past_its_deadline_skips_the_rest_lists_them_and_exits_1(tmp_path, capsys):
    machine = FakeMachine({"static_analysis.py": 2.0, "ncu_profile.py": 10.0})
    # statics end at 6 s; profiles start at 6 and 16; at 26 s the 25 s deadline has passed
    code, out = device_output(tmp_path, ["triton/gemm"], machine, deadline_s=25.0, static_deadline_s=5.0)
    assert code == 1
    assert sorted(path.name for path in out.iterdir()) == ["README.md", "reports-1.tar.gz", "reprofile.tar.gz",
                                                           "run.log"]
    assert [Path(command[1]).name for command in machine.commands] == ["static_analysis.py"] * 3 + [
        "ncu_profile.py"] * 2
    readme = (out / "README.md").read_text()
    assert "Skipped (rerun with `--only triton/gemm/v1`): triton/gemm/v1" in readme
    assert "skipped: past the 25 s deadline" in readme and "NVIDIA H100 80GB HBM3" in readme
    assert "compute_bound → overlap_bound" in " ".join(readme.split())  # triton/gemm/v2: the run's label, then today's
    with tarfile.open(out / "reprofile.tar.gz") as archive:
        names = set(archive.getnames())
        manifest = json.load(archive.extractfile("reprofile/manifest.json"))
    assert {"reprofile/README.md", "reprofile/run.log", "reprofile/triton/gemm/v2/ncu_summary.json",
            "reprofile/triton/gemm/v2/ncu_details.md", "reprofile/triton/gemm/v2/static_analysis.json",
            "reprofile/triton/gemm/v1/static_analysis.json", "reprofile/triton/gemm/v2/profile.console.txt"} <= names
    assert not any(name.endswith((".ncu-rep", ".so")) for name in names)  # reports apart, builds never
    versions = {version["key"]: version for version in manifest["versions"]}
    assert versions["triton/gemm/v1"]["profile"]["skipped"] == "past the 25 s deadline"
    assert versions["triton/gemm/v1"]["report"] is None and versions["triton/gemm/v2"]["report"] == "reports-1.tar.gz"
    assert versions["triton/gemm/v2"]["reading"]["bottleneck"] == "overlap_bound"
    assert versions["triton/gemm/v2"]["recorded"]["bottleneck"] == "compute_bound"
    with tarfile.open(out / "reports-1.tar.gz") as archive:
        assert sorted(archive.getnames()) == ["reprofile/triton/gemm/v0/profile.ncu-rep",
                                              "reprofile/triton/gemm/v2/profile.ncu-rep"]
    assert "== triton/gemm/v1: static exit 0" in capsys.readouterr().out


def test_a_static_analysis_past_its_deadline_and_a_failed_profile_are_failures(tmp_path):
    machine = FakeMachine({"static_analysis.py": 4.0, "ncu_profile.py": 1.0}, failing=("cuda/softmax/v0",))
    code, out = device_output(tmp_path, ["cuda/softmax/v0", "cuda/softmax/v2"], machine, static_deadline_s=3.0)
    assert code == 1
    manifest = json.loads(tarfile.open(out / "reprofile.tar.gz").extractfile("reprofile/manifest.json").read())
    versions = {version["key"]: version for version in manifest["versions"]}
    assert versions["cuda/softmax/v2"]["static"]["exit_code"] == 0
    assert versions["cuda/softmax/v0"]["static"]["skipped"].startswith("past the 3 s static-analysis deadline")
    assert versions["cuda/softmax/v0"]["profile"]["exit_code"] == 3 and versions["cuda/softmax/v0"]["reading"] == {}


def test_a_complete_run_exits_0(tmp_path):
    code, out = device_output(tmp_path, ["cuda/softmax/v2"])
    assert code == 0 and "Skipped" not in (out / "README.md").read_text()


def test_the_readme_and_the_log_are_text_with_line_breaks(tmp_path):
    """The 2026-11-25 H100 run wrote both with a literal backslash-n between lines (one line each)."""
    _, out = device_output(tmp_path, ["cuda/softmax/v2"])
    readme, log = (out / "README.md").read_text(), (out / "run.log").read_text()
    assert "\\n" not in readme and "\\n" not in log
    assert readme.splitlines()[:2] == ["# Demo re-profile (issue 15)", ""] and readme.endswith("|\n")
    assert log.splitlines()[0] == "1 versions; deadline 450 s, 75 s per profile" and log.endswith("s\n")
    assert len(log.splitlines()) == 4  # versions, statics, the version, finished


def _git(folder: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *arguments], cwd=folder,
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_commit_line_names_the_files_that_ran_not_only_head(tmp_path):
    """The device runs a copy of the lead's files whose .git was older: HEAD alone named the wrong code."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.py").write_text("one\n")
    (repo / ".gitignore").write_text("build/\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "first")
    head = _git(repo, "rev-parse", "HEAD")
    (repo / "build").mkdir()
    (repo / "build" / "lib.so").write_text("ignored: a build output\n")
    assert reprofile_demo.checkout_identity(repo) == f"{head} (the files are HEAD's)"
    (repo / "a.py").write_text("two\n")  # the files of a later commit, under the old HEAD
    (repo / "new.py").write_text("untracked, not ignored: it travels\n")
    identity = reprofile_demo.checkout_identity(repo)
    assert _git(repo, "status", "--porcelain") == "M a.py\n?? new.py"  # the real index was left alone
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "second")
    tree = _git(repo, "rev-parse", "HEAD^{tree}")
    assert identity == (f"files of tree {tree}, not HEAD {head}'s (their commit: git log --all --format='%H %T' | "
                        f"grep {tree})")
    assert reprofile_demo.checkout_identity(tmp_path / "nowhere").startswith("HEAD unknown; the files' own tree")


@pytest.mark.slow
def test_the_subprocess_executor_logs_the_command_and_kills_the_whole_group_at_the_timeout(tmp_path):
    execute = reprofile_demo.subprocess_executor({"PATH": "/usr/bin:/bin"})
    done = execute([sys.executable, "-c", "print('hello'); raise SystemExit(3)"], tmp_path / "a.txt", 30)
    assert (done.exit_code, done.timed_out) == (3, False)
    assert (tmp_path / "a.txt").read_text().splitlines()[1] == "hello"
    marker = tmp_path / "survived"
    child = f"import time; time.sleep(3); open({str(marker)!r}, 'w').write('x')"
    parent = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(60)"
    stuck = execute([sys.executable, "-c", parent], tmp_path / "b.txt", 1.0)
    assert stuck.timed_out and stuck.exit_code is None and stuck.seconds < 10
    assert stuck.describe().startswith("timed out after")
    import time

    time.sleep(3.5)
    assert not marker.exists()  # the grandchild died with its group (ncu's child, the profiled program)


def test_the_cli_dry_run_needs_no_gpu_and_a_real_run_without_ncu_is_exit_4(tmp_path, capsys, monkeypatch):
    assert reprofile_demo.main(["run", str(tmp_path / "out"), "--dry-run", "--only", "cuda/gemm/v9"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "# 1/1 cuda/gemm/v9"
    assert printed[2].endswith("--output-dir SCRATCH/reprofile/cuda/gemm/v9 --backend cuda --timeout 65 "
                               "--arch sm_90a --M=4096 --N=4096 --K=4096")
    assert not (tmp_path / "out").exists()
    assert reprofile_demo.main(["plan", "--json", "--only", "triton/gemm/v2"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert (entry["key"], entry["best"], entry["profile_command"][2]) == ("triton/gemm/v2", True,
                                                                          "demo/triton/gemm/v2/v2.py")
    monkeypatch.setattr(reprofile_demo.shutil, "which", lambda name: None)
    assert reprofile_demo.main(["run", str(tmp_path / "out")]) == 4
    assert "no ncu" in capsys.readouterr().err
    assert reprofile_demo.main(["plan", "--only", "nothing/here"]) == 2
    assert reprofile_demo.main(["plan", "--only", "triton/attention_r2"]) == 2
    assert "triton/attention_r2: profiled with today's classifier" in capsys.readouterr().err


def test_the_shell_entry_point_passes_its_arguments_through(tmp_path):
    completed = subprocess.run(["bash", str(DEMO_UPKEEP / "reprofile_demo.sh"), str(tmp_path / "out"),
                                "--dry-run", "--only", "triton/gemm/v2"], capture_output=True, text=True, cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0] == "# 1/1 triton/gemm/v2 (best version of its case)"
    assert " --timeout 65 " in lines[2]  # CASE_TIMEOUT_S's default (75 s) reached the command
    missing = subprocess.run(["bash", str(DEMO_UPKEEP / "reprofile_demo.sh")], capture_output=True, text=True)
    assert missing.returncode != 0 and "usage: tools/demo_upkeep/reprofile_demo.sh OUT_DIR" in missing.stderr
