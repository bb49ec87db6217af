"""The demo's H100 re-profile (2026-11-25, tools/demo_upkeep/reprofile_demo.sh in two calls, applied by
apply_reprofile.py): every version's label and first advice, as recorded in vN/reprofile/ and as today's
classifier reads those files, the DEMO.md table of what changed, and what stays out of git."""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import DEMO_UPKEEP, REPO_ROOT, load_tool

reprofile_demo = load_tool("reprofile_demo", DEMO_UPKEEP)
reclassify_demo = load_tool("reclassify_demo", DEMO_UPKEEP)
apply_reprofile = load_tool("apply_reprofile", DEMO_UPKEEP)
DEMO = REPO_ROOT / "demo"

# version -> (label, first advice) of its re-profile. demo/DEMO.md ("Classification (re-profiled
# 2026-11-25, H100)") says why each differs from the run's own profile.
REPROFILED = {
    "cuda/attention/v0": ("occupancy_bound", "register_limit"),
    "cuda/attention/v1": ("memory_bound", "smem_bank_conflicts"),
    "cuda/attention/v2": ("occupancy_bound", "cp_async_pipeline"),
    "cuda/attention/v3": ("occupancy_bound", "more_ilp"),
    "cuda/attention/v4": ("occupancy_bound", "more_ilp"),
    **{f"cuda/attention/v{n}": ("overlap_bound", "wgmma") for n in range(5, 11)},  # mma.sync fed by cp.async
    "cuda/gemm/v0": ("memory_bound", "smem_tiling"),
    "cuda/gemm/v1": ("latency_bound", "cp_async_pipeline"),  # 49.8% of a theoretical 50%: stalled at barriers
    "cuda/gemm/v2": ("memory_bound", "smem_bank_conflicts"),
    "cuda/gemm/v3": ("occupancy_bound", "cp_async_pipeline"),
    "cuda/gemm/v4": ("memory_bound", "smem_swizzle"),  # L2 85%, cp.async split by padded rows
    "cuda/gemm/v5": ("overlap_bound", "wgmma"),
    "cuda/gemm/v6": ("overlap_bound", "wgmma"),
    "cuda/gemm/v7": ("overlap_bound", "tma_pipeline"),
    "cuda/gemm/v8": ("overlap_bound", "tma_pipeline"),
    "cuda/gemm/v9": ("overlap_bound", "coalesce_access"),  # fragment-layout epilogue stores, 75% of its sectors
    "cuda/gemm/v10": ("compute_bound", "reduce_work"),  # tensor pipe 91%
    "cuda/softmax/v0": ("memory_bound", "vector_loads"),
    **{f"cuda/softmax/v{n}": ("memory_bound", "single_pass") for n in range(1, 4)},
    "triton/attention/v0": ("compute_bound", "mask_free_blocks"),
    **{f"triton/attention/v{n}": ("overlap_bound", "warp_specialize") for n in range(1, 7)},
    "triton/gemm/v0": ("memory_bound", "block_size"),
    "triton/gemm/v1": ("memory_bound", "block_size"),
    "triton/gemm/v2": ("compute_bound", "reduce_work"),  # tensor pipe 85%
    **{f"triton/rmsnorm/v{n}": ("memory_bound", "single_pass") for n in range(6)},
    "triton/softmax/v0": ("memory_bound", "single_pass"),
    "triton/softmax/v1": ("memory_bound", "single_pass"),
}
# Labels that changed from the run's own profile (the run's label first).
CHANGED_LABELS = {
    **{f"cuda/attention/v{n}": "occupancy_bound" for n in (6, 7, 8, 9)},
    "cuda/attention/v5": "memory_bound", "cuda/attention/v10": "memory_bound",
    "cuda/gemm/v1": "occupancy_bound", "cuda/gemm/v5": "occupancy_bound", "cuda/gemm/v6": "memory_bound",
    "cuda/gemm/v7": "occupancy_bound", "cuda/gemm/v8": "occupancy_bound", "cuda/gemm/v9": "memory_bound",
    **{f"triton/attention/v{n}": "occupancy_bound" for n in (1, 4, 5, 6)},
    "triton/attention/v2": "memory_bound", "triton/attention/v3": "memory_bound",
}


def reprofiled_folders():
    return reclassify_demo.version_folders([DEMO], reprofile=True)


def test_every_version_profiled_before_the_pipe_and_design_records_has_one_reprofile_with_its_label_and_first_advice():
    """The re-profile covered what reprofile_demo.py plans; a version recorded since has none and needs none."""
    planned = {job.key for job in reprofile_demo.plan_versions(DEMO)}
    assert set(REPROFILED) == planned and len(planned) == 44
    on_disk = {str(path.parent.relative_to(DEMO)) for path in DEMO.glob("*/*/v*/version.json")}
    assert planned < on_disk
    for key in on_disk - planned:  # evaluated with issue 15's classifier: their own summary is today's reading
        summary = json.loads((DEMO / key / "ncu_summary.json").read_text())
        assert not reprofile_demo.predates_pipe_and_design_records(summary), key
        assert not (DEMO / key / "reprofile").exists(), key
    found = {}
    for folder in reprofiled_folders():
        reading = reprofile_demo.profile_reading(json.loads((folder / "reprofile" / "ncu_summary.json").read_text()))
        found[str(folder.relative_to(DEMO))] = (reading["bottleneck"], reading["first_advice"])
        assert reading["design_source"] == "executed opcode mix (ncu)" and reading["unverified"] == []
    assert found == REPROFILED


def test_todays_classifier_reads_the_kept_files_as_recorded():
    """The kept summaries (no report, no ncu_details.md in git) give back every label and first advice."""
    verdicts = [reclassify_demo.reclassify_version(folder, reprofile=True) for folder in reprofiled_folders()]
    assert {item.version: (item.new_label, item.new_advice) for item in verdicts} == REPROFILED
    assert [item.version for item in verdicts if item.changed or item.provisional] == []


def test_the_labels_that_changed_from_the_runs_own_profiles():
    changed = {}
    for folder in reprofiled_folders():
        run = json.loads((folder / "ncu_summary.json").read_text())["bottleneck"]
        if run != REPROFILED[str(folder.relative_to(DEMO))][0]:
            changed[str(folder.relative_to(DEMO))] = run
    assert changed == CHANGED_LABELS and len(changed) == 18


def test_each_reprofile_says_where_it_came_from():
    for folder in reprofiled_folders():
        readme = (folder / "reprofile" / "README.md").read_text().splitlines()
        key = str(folder.relative_to(DEMO))
        assert readme[0] == f"# Re-profile of {key} (issue 15)"
        assert "- device: NVIDIA H100 80GB HBM3, 580.159.04" in readme
        assert any(line.startswith("- date: 2026-11-25T17:") for line in readme)
        assert any(line.startswith("- commit: 769a625 as recorded, which is the git HEAD of the device's copy")
                   for line in readme)
        profile = next(line for line in readme if line.startswith("- profile: `"))
        assert f"ncu_profile.py demo/{key}/" in profile and f"--output-dir OUT/{key} " in profile
        assert "- summary: re-read from the report" in " ".join(readme)


def test_demo_md_holds_the_current_table_of_changes():
    text = (DEMO / "DEMO.md").read_text()
    assert "## Classification (re-profiled 2026-11-25, H100)" in text
    assert apply_reprofile.main(["notes", "--check", str(DEMO / "DEMO.md")]) == 0
    table = text.split(apply_reprofile.NOTES_START)[1].split(apply_reprofile.NOTES_END)[0]
    rows = [line for line in table.splitlines() if line.startswith("| cuda/") or line.startswith("| triton/")]
    assert len(rows) == 27 and "27 versions changed label or first advice; 17 re-profiled versions kept both." in table
    assert " ".join("| cuda/gemm/v9 | memory_bound → overlap_bound | l2_reuse → coalesce_access |".split()) in (
        " ".join(table.split()))


def test_reports_and_details_tables_stay_out_of_git():
    try:
        tracked = subprocess.run(["git", "ls-files", "demo"], cwd=REPO_ROOT, capture_output=True, text=True,
                                 check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"not a git checkout: {error}")
    kept = [path for path in tracked if "/reprofile/" in path]
    if not kept:
        pytest.skip("the re-profile is not committed in this checkout")
    assert not [path for path in kept if path.endswith((".ncu-rep", "ncu_details.md"))]
    assert {path.rsplit("/", 1)[1] for path in kept} == {"README.md", "ncu.log", "ncu_summary.json", "ncu_summary.md",
                                                        "static_analysis.json", "static_analysis.md"}
