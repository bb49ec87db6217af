"""tools/demo_upkeep/reclassify_demo.py on the recorded demo: every version's label under today's rules, from what
it kept."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool

reclassify_demo = load_tool("reclassify_demo", DEMO_UPKEEP)
DEMO = REPO_ROOT / "demo"

# The versions profiled before issue 15 (tools/demo_upkeep/reprofile_demo.py's rule; the 44 its re-profile covered):
# version -> (label recorded then, label now). Issue 15's rules on the kept metrics (no SASS kept):
# wgmma kernels at low occupancy are overlap_bound; busy L1/shared in conflict-free tensor-core
# kernels is operand staging, which moves CUDA attention v10 off memory_bound; and wgmma kernels
# with nothing near its peak whose warps wait (CUDA GEMM v9, Triton attention v2/v3) are overlap_bound.
EXPECTED_LABELS = {
    "cuda/attention/v0": ("occupancy_bound", "occupancy_bound"),
    "cuda/attention/v1": ("memory_bound", "memory_bound"),  # 78% bank conflicts: a real L1/shared problem
    "cuda/attention/v2": ("occupancy_bound", "occupancy_bound"),
    "cuda/attention/v3": ("occupancy_bound", "occupancy_bound"),
    "cuda/attention/v4": ("occupancy_bound", "occupancy_bound"),
    "cuda/attention/v5": ("memory_bound", "memory_bound"),
    "cuda/attention/v6": ("occupancy_bound", "occupancy_bound"),
    "cuda/attention/v7": ("occupancy_bound", "occupancy_bound"),
    "cuda/attention/v8": ("occupancy_bound", "occupancy_bound"),
    "cuda/attention/v9": ("occupancy_bound", "occupancy_bound"),
    "cuda/attention/v10": ("memory_bound", "latency_bound"),
    "cuda/gemm/v0": ("memory_bound", "memory_bound"),
    "cuda/gemm/v1": ("occupancy_bound", "latency_bound"),  # 49.8% of a theoretical 50%: the line, not below it
    "cuda/gemm/v2": ("memory_bound", "memory_bound"),  # 77% bank conflicts
    "cuda/gemm/v3": ("occupancy_bound", "occupancy_bound"),
    "cuda/gemm/v4": ("memory_bound", "memory_bound"),
    "cuda/gemm/v5": ("occupancy_bound", "occupancy_bound"),
    "cuda/gemm/v6": ("memory_bound", "memory_bound"),
    "cuda/gemm/v7": ("occupancy_bound", "overlap_bound"),
    "cuda/gemm/v8": ("occupancy_bound", "overlap_bound"),
    "cuda/gemm/v9": ("memory_bound", "overlap_bound"),  # TMA + wgmma, L2 62%: nothing at its peak, warps wait
    "cuda/gemm/v10": ("compute_bound", "compute_bound"),
    "cuda/softmax/v0": ("memory_bound", "memory_bound"),
    "cuda/softmax/v1": ("memory_bound", "memory_bound"),
    "cuda/softmax/v2": ("memory_bound", "memory_bound"),
    "cuda/softmax/v3": ("memory_bound", "memory_bound"),
    "triton/attention/v0": ("compute_bound", "compute_bound"),
    "triton/attention/v1": ("occupancy_bound", "overlap_bound"),
    "triton/attention/v2": ("memory_bound", "overlap_bound"),
    "triton/attention/v3": ("memory_bound", "overlap_bound"),
    "triton/attention/v4": ("occupancy_bound", "overlap_bound"),
    "triton/attention/v5": ("occupancy_bound", "overlap_bound"),
    "triton/attention/v6": ("occupancy_bound", "overlap_bound"),
    "triton/gemm/v0": ("memory_bound", "memory_bound"),
    "triton/gemm/v1": ("memory_bound", "memory_bound"),
    "triton/gemm/v2": ("compute_bound", "compute_bound"),
    **{f"triton/rmsnorm/v{n}": ("memory_bound", "memory_bound") for n in range(6)},
    "triton/softmax/v0": ("memory_bound", "memory_bound"),
    "triton/softmax/v1": ("memory_bound", "memory_bound"),
}
# Verdicts that cp.async or setmaxnreg (not visible without the SASS the demo did not keep) could change.
PROVISIONAL = {"cuda/attention/v0", "cuda/attention/v2", "cuda/attention/v3", "cuda/attention/v4", "cuda/attention/v5",
               "cuda/attention/v6", "cuda/attention/v7", "cuda/attention/v8", "cuda/attention/v9", "cuda/attention/v10",
               "cuda/gemm/v3", "cuda/gemm/v5", "cuda/gemm/v6"}


# Versions recorded after the re-profile, evaluated with issue 15's classifier: (label, first advice) as recorded.
# The demo may gain more; each of these must keep its record, and every one must read back as it recorded.
RECORDED_SINCE = {
    "cuda/attention_r2/v0": ("overlap_bound", "wgmma"),  # attention v8 again: mma.sync fed by cp.async
    "cuda/attention_r2/v1": ("overlap_bound", "tma_pipeline"),
    "cuda/attention_r2/v2": ("overlap_bound", "tma_pipeline"),
    "cuda/attention_r2/v3": ("overlap_bound", "tma_pipeline"),
    "cuda/attention_r2/v4": ("overlap_bound", "coalesce_access"),
    "cuda/attention_r2/v5": ("overlap_bound", "pingpong_warpgroups"),
    **{f"triton/attention_r2/v{n}": ("overlap_bound", "warp_specialize") for n in range(3)},
    "triton/gemm/v3": ("compute_bound", "reduce_work"),
    "triton/gemm/v4": ("compute_bound", "reduce_work"),
}
CASE_STUDIES = [DEMO / "cuda", DEMO / "triton"]  # demo/kernelbench/runs/ is the KernelBench set's own loop


@pytest.fixture(scope="module")
def verdicts() -> dict:
    """The case studies' versions (demo/<backend>/<case>/vN) profiled before issue 15."""
    return {item.version: item for item in map(reclassify_demo.reclassify_version,
                                                reclassify_demo.version_folders(CASE_STUDIES))}


@pytest.fixture(scope="module")
def current_verdicts() -> dict:
    """The case studies' versions whose own profile issue 15's classifier wrote."""
    return {item.version: item for item in map(reclassify_demo.reclassify_version,
                                                reclassify_demo.version_folders(CASE_STUDIES, current=True))}


def test_every_demo_version_gets_its_expected_label(verdicts):
    assert {version: (item.old_label, item.new_label) for version, item in verdicts.items()} == EXPECTED_LABELS


def test_every_version_profiled_since_issue_15_reads_back_as_it_recorded(verdicts, current_verdicts):
    """Today's classifier on a newer version's kept files (summary with the SASS mix, details table, static
    analysis) gives back the label and first advice evaluate recorded: no re-profile needed, none provisional."""
    on_disk = {str(path.parent.relative_to(DEMO)) for root in CASE_STUDIES for path in root.glob("*/v*/version.json")}
    assert set(verdicts) | set(current_verdicts) == on_disk and not set(verdicts) & set(current_verdicts)
    assert {version: (item.old_label, item.old_advice) for version, item in current_verdicts.items()
            if version in RECORDED_SINCE} == RECORDED_SINCE
    for version, item in current_verdicts.items():
        assert item.old_label and item.old_advice, version
        assert (item.new_label, item.new_advice, item.new_limiter) == (item.old_label, item.old_advice,
                                                                       item.old_limiter), version
        assert (item.unverified, item.not_collected) == ([], []), version
        assert item.design_source == "executed opcode mix (ncu)", version
        assert item.source == "ncu_details.md raw table + ncu_summary.json", version


def test_every_demo_version_kept_its_evaluation_benchmark_and_profile():
    versions = sorted(path.parent for root in CASE_STUDIES for path in root.glob("*/v*/version.json"))
    assert len(versions) >= 55
    for folder in versions:
        missing = [name for name in ("evaluation.json", "benchmark.json", "ncu_summary.json", "ncu_details.md")
                   if not (folder / name).is_file()]
        assert missing == [], f"{folder.relative_to(DEMO)} lacks {missing}"
        assert json.loads((folder / "evaluation.json").read_text())["version"] == folder.name


def test_only_verdicts_that_needed_the_missing_sass_are_provisional(verdicts):
    assert {version for version, item in verdicts.items() if item.provisional} == PROVISIONAL
    for version in PROVISIONAL:
        assert "cp.async (LDGSTS)" in verdicts[version].unverified[0]
        assert "executed opcode mix (SASS)" in verdicts[version].not_collected


def test_the_tensor_roof_and_the_l1_reading_show_in_the_rebuilt_metrics(verdicts):
    assert verdicts["cuda/gemm/v10"].reason.startswith("the tensor pipe runs at 91.")
    assert verdicts["triton/gemm/v2"].reason.startswith("the tensor pipe runs at 85.")
    assert (verdicts["triton/gemm/v2"].old_limiter, verdicts["triton/gemm/v2"].new_limiter) == ("L1/shared", "L2")
    assert verdicts["cuda/gemm/v7"].design_source == "pipe metrics (no SASS)"
    assert all(item.source == "ncu_details.md raw table + ncu_summary.json" for item in verdicts.values())


def test_a_static_analysis_stands_in_for_the_sass_the_demo_did_not_keep(tmp_path):
    version = tmp_path / "sass" / "cuda" / "attention" / "v6"
    version.mkdir(parents=True)
    (version / "static_analysis.json").write_text(json.dumps({"kernels": [{
        "name": "attention_kernel(__nv_bfloat16 const*, float)", "mangled_name": "_Z16attention_kernelPKvf",
        "mix": {"opcode_counts": {"HMMA": 128, "LDGSTS": 4, "LDSM": 32}}}]}))
    verdict = reclassify_demo.reclassify_version(DEMO / "cuda" / "attention" / "v6", tmp_path / "sass")
    assert (verdict.new_label, verdict.provisional) == ("overlap_bound", False)
    assert verdict.design_source == "static analysis (compiled SASS)"


def test_the_raw_table_parser_keeps_each_kernel_apart_and_unescapes_pipes():
    details = "\n".join([
        "## Kernel `first`", "### Canonical metrics", "| canonical | x |", "| duration_us | 3 |",
        "### All 2 metrics in the report (first launch)", "| ncu metric | value | unit | description |",
        "| --- | --- | --- | --- |", "| gpu__time_duration.sum | 2500 | ns | a \\| b |", "| device__name | H100 | | |",
        "## Kernel `second`", "### All 1 metrics in the report (first launch)",
        "| sm__throughput.avg.pct_of_peak_sustained_elapsed | 61.5 | % | |",
    ])
    raw = reclassify_demo.raw_metrics_by_kernel(details)
    assert set(raw) == {"first", "second"} and set(raw["first"]) == {"gpu__time_duration.sum", "device__name"}
    duration = raw["first"]["gpu__time_duration.sum"]
    assert duration.value == 2500.0 and duration.description == "a | b"
    assert raw["first"]["device__name"].value == "H100" and raw["second"][
        "sm__throughput.avg.pct_of_peak_sustained_elapsed"].value == 61.5
    metrics = reclassify_demo.kernel_metrics({"metrics": {"sm_throughput_pct": 61.4567}}, raw["second"])
    assert metrics.sm_throughput_pct == 61.4567  # the summary's full precision wins over the table's four digits
    assert reclassify_demo.kernel_metrics({"metrics": {}}, raw["first"]).duration_us == 2.5


def test_the_cli_prints_the_changes_and_refuses_an_empty_folder(tmp_path, capsys):
    case = tmp_path / "demo" / "cuda" / "gemm"
    shutil.copytree(DEMO / "cuda" / "gemm" / "v7", case / "v7")
    shutil.copytree(DEMO / "cuda" / "gemm" / "v10", case / "v10")
    shutil.copytree(DEMO / "triton" / "gemm" / "v3", tmp_path / "demo" / "triton" / "gemm" / "v3")  # issue 15's
    assert reclassify_demo.main([str(tmp_path / "demo"), "--changed"]) == 0
    out = capsys.readouterr().out
    folded = " ".join(out.split())  # padding folded
    assert "| cuda/gemm/v7 | occupancy_bound → overlap_bound | register_limit → tma_pipeline |" in folded
    # v10 kept its label; its first advice moved from wgmma (which it runs) to reduce_work (the tensor roof)
    assert "| cuda/gemm/v10 | compute_bound (unchanged) | wgmma → reduce_work |" in folded
    assert "2 versions: 1 labels changed, 2 first advice changed, 0 provisional" in out
    assert reclassify_demo.main([str(tmp_path / "demo"), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [(record["version"], record["label_changed"], record["changed"]) for record in records] == [
        ("cuda/gemm/v7", True, True), ("cuda/gemm/v10", False, True)]
    assert reclassify_demo.main([str(tmp_path / "demo"), "--current", "--json"]) == 0
    assert [(record["version"], record["new_label"], record["changed"]) for record in
            json.loads(capsys.readouterr().out)] == [("triton/gemm/v3", "compute_bound", False)]
    assert reclassify_demo.main([str(tmp_path / "demo" / "cuda"), "--current"]) == 2
    assert "no version profiled with issue 15's classifier under" in capsys.readouterr().err
    assert reclassify_demo.main([str(tmp_path / "empty")]) == 2


LIBRARY = REPO_ROOT / "tests" / "fixtures" / "ncu" / "library"


@pytest.mark.parametrize("name", sorted(path.stem for path in LIBRARY.glob("*.ncu-rep")))
def test_a_reprofile_reclassifies_from_its_kept_files_to_the_label_it_recorded(name, tmp_path):
    """The summaries of the new collection keep the SASS mix: the kept files alone give back the same verdict."""
    from kernel_opt.core.errors import EnvironmentFault
    from kernel_opt.profile.ncu.reading import locate_report_reader
    from kernel_opt.profile.profiler import ProfileRequest, profile_solution

    try:
        locate_report_reader()
    except EnvironmentFault as error:
        pytest.skip(f"ncu_report is not available here ({error.message})")
    version = tmp_path / "demo" / "cuda" / "library" / "v0"
    summary = profile_solution(ProfileRequest(version / "reprofile", from_report=LIBRARY / f"{name}.ncu-rep",
                                              backend="cuda"))
    shutil.copy(DEMO / "cuda" / "gemm" / "v0" / "ncu_summary.json", version / "ncu_summary.json")  # the run's own
    assert reclassify_demo.version_folders([tmp_path / "demo"], reprofile=True) == [version]
    verdict = reclassify_demo.reclassify_version(version, reprofile=True)
    assert (verdict.old_label, verdict.new_label) == (summary.bottleneck, summary.bottleneck)
    assert (verdict.old_limiter, verdict.new_limiter) == (summary.memory_limiter, summary.memory_limiter)
    assert verdict.design_source == "executed opcode mix (ncu)" and verdict.unverified == []
    assert verdict.not_collected == []
    assert reclassify_demo.reclassify_version(version).old_label == "memory_bound"  # without the flag: the run's
