"""The guides and the tools agree: example hypothesis passes, strategy names exist, usage parses."""

import re
import shlex

from conftest import SKILL_ROOT

from kernel_opt.commands import experience_log
from kernel_opt.experience.hypothesis import check_hypothesis

GUIDES = {
    "cuda": SKILL_ROOT / "experience" / "cuda" / "CUDA.md",
    "triton": SKILL_ROOT / "experience" / "triton" / "TRITON.md",
}
SECTIONS = ["## memory_bound", "## compute_bound", "## latency_bound", "## occupancy_bound", "## overlap_bound",
            "## small_grid"]


def _strategy_names(text: str) -> list[str]:
    return re.findall(r"^### `([a-z0-9_]+)`", text, flags=re.MULTILINE)


def test_guides_have_a_section_per_label_and_unique_strategy_names():
    for backend, path in GUIDES.items():
        text = path.read_text()
        positions = [text.index(section) for section in SECTIONS]
        assert positions == sorted(positions), backend
        names = _strategy_names(text)
        assert len(names) >= 12, backend
        assert len(names) == len(set(names)), backend
        for block in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
            if block.startswith("`"):
                for part in ("**When**", "**Change**", "**Expect**"):
                    assert part in block, (backend, block.splitlines()[0], part)


def test_strategy_names_used_in_the_other_docs_exist_in_a_guide():
    known = set()
    for path in GUIDES.values():
        known |= set(_strategy_names(path.read_text()))
    for doc in (SKILL_ROOT / "experience" / "learned" / "LEARNED.md", SKILL_ROOT / "experience" / "EXPERIENCE.md"):
        used = set(re.findall(r"--strategy (\w+)", doc.read_text())) | set(
            re.findall(r"`(vector_loads|smem_tiling|tma_pipeline|grouped_order|cp_async_pipeline)`", doc.read_text())
        )
        assert used <= known, (doc.name, used - known)
    usage = experience_log.__doc__
    assert set(re.findall(r"e\.g\. ([a-z_, ]+)\)", usage)[0].replace(" ", "").split(",")) <= known


def test_the_documented_example_hypothesis_passes_the_check():
    text = (SKILL_ROOT / "reference" / "hypothesis.md").read_text()
    example = text.split("## Example")[1].split("```text\n")[1].split("```")[0]
    check = check_hypothesis(example)
    assert check.ok, check.problems
    assert {"DRAM", "instructions", "stall reasons", "time"} <= set(check.metrics_named)


def test_every_usage_line_of_experience_log_parses():
    usage = experience_log.__doc__.split("Usage:")[1].split("\n\n")[0]
    commands = re.sub(r"\\\n\s*", "", usage).splitlines()
    lines = [line.strip() for line in commands if line.strip().startswith("experience_log.py")]
    assert len(lines) == 12
    parser = experience_log.build_parser()
    for line in lines:
        args = parser.parse_args(shlex.split(line)[1:])
        assert args.command in {"add", "recommend", "search", "list", "show", "merge", "sync", "stats"}
