"""Links into the optimization guides: GitHub's anchors, read from the guides' real headings."""

from kernel_opt.profile.guides import github_anchor, guide_anchors, guide_link


def test_links_use_githubs_anchors():
    assert github_anchor("`tma_pipeline` (sm_90)") == "tma_pipeline-sm_90"
    assert github_anchor("`tensor_cores` (sm_80: `mma.sync`)") == "tensor_cores-sm_80-mmasync"
    assert guide_link("cuda", "single_pass") == "experience/cuda/CUDA.md#single_pass-fewer-bytes-when-dram-is-at-peak"
    assert guide_link("triton", "memory_bound") == "experience/triton/TRITON.md#memory_bound"


def test_a_name_no_heading_carries_links_to_itself():
    assert "not_a_strategy" not in guide_anchors("cuda")
    assert guide_link("cuda", "not_a_strategy") == "experience/cuda/CUDA.md#not_a_strategy"
