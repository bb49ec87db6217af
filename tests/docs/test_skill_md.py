"""SKILL.md is what an agent reads first: its frontmatter must be valid, and every script and
document it names must exist (scripts must answer --help)."""

import re
import subprocess
import sys

import pytest
import yaml
from conftest import SKILL_ROOT

ALLOWED_KEYS = {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}
TEXT = (SKILL_ROOT / "SKILL.md").read_text()


def frontmatter() -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", TEXT, re.DOTALL)
    assert match, "SKILL.md must start with a --- frontmatter block"
    return yaml.safe_load(match.group(1))


def test_frontmatter_follows_the_agent_skills_rules():
    meta = frontmatter()
    assert set(meta) <= ALLOWED_KEYS and {"name", "description"} <= set(meta)
    assert meta["name"] == SKILL_ROOT.name
    assert len(meta["description"]) <= 1024
    assert "Use when" in meta["description"] and "Not for" in meta["description"]
    assert len(TEXT.splitlines()) < 500


SCRIPTS = sorted(
    set(re.findall(r"\$SKILL_ROOT/scripts/(\w+)\.py", TEXT))
    | set(re.findall(r"`(\w+)\.py`", TEXT)) - {"v0", "vN", "vK", "vBEST", "ref"}
)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_named_script_exists_and_answers_help(script):
    path = SKILL_ROOT / "scripts" / f"{script}.py"
    assert path.exists(), f"SKILL.md names {script}.py, which does not exist"
    completed = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "usage" in completed.stdout.lower()


@pytest.mark.parametrize(
    "document",
    sorted(set(re.findall(r"`((?:env|profiling|experience|reference|report|benchmark)/[\w/]+\.md)`", TEXT))),
)
def test_every_named_document_exists(document):
    assert (SKILL_ROOT / document).exists(), f"SKILL.md names {document}, which does not exist"


def section(title: str) -> str:
    """The text under one `## title` heading, up to the next."""
    start = TEXT.index(f"\n## {title}\n")
    following = TEXT.find("\n## ", start + 1)
    return TEXT[start:following if following != -1 else len(TEXT)]


def test_the_layout_of_out_names_every_file_the_run_writes():
    """Each name is the constant the code writes it under, so a new file the layout misses fails here."""
    from kernel_opt.check.records import CORRECTNESS_FILE
    from kernel_opt.check.sanitizer import log_name
    from kernel_opt.commands.final_report import REPORT_FILE
    from kernel_opt.loop.evaluate import EVALUATE_LOG
    from kernel_opt.loop.records import EVALUATION_FILE, RUN_FILE, VERSION_FILE
    from kernel_opt.loop.report_charts import ROOFLINE_CHART, TIME_CHART
    from kernel_opt.loop.workspace import HYPOTHESIS_FILE
    from kernel_opt.measure.records import BENCHMARK_FILE
    from kernel_opt.measure.reference_cache import REFERENCE_CACHE_FILE
    from kernel_opt.profile.ncu_summary import DETAILS_MD, SUMMARY_MD
    from kernel_opt.profile.profiler import EVENTS_FILE
    from kernel_opt.profile.static_analysis import STATIC_ANALYSIS_FILE
    from kernel_opt.profile.sweep.records import CHECK_DIR, NSIGHT_DIR, SWEEP_CSV, SWEEP_EVENTS, SWEEP_PNG

    layout = section("Layout of OUT")
    names = [RUN_FILE, "env_check.md", REFERENCE_CACHE_FILE, VERSION_FILE, HYPOTHESIS_FILE, EVALUATION_FILE,
             EVALUATE_LOG, CORRECTNESS_FILE.replace(".json", ".md"), "correctness_memcheck.md", log_name("memcheck"),
             BENCHMARK_FILE.replace(".json", ".md"), SUMMARY_MD, DETAILS_MD, "ncu.log", "profile.ncu-rep",
             "profile_request.json", EVENTS_FILE, STATIC_ANALYSIS_FILE.replace(".json", ".md"), "build/",
             "compile_check/", REPORT_FILE, TIME_CHART, ROOFLINE_CHART, "sweep.md", SWEEP_PNG, SWEEP_CSV,
             SWEEP_EVENTS, f"{CHECK_DIR}/", f"{NSIGHT_DIR}/", "--keep-reports"]
    assert [name for name in names if name not in layout] == []


def test_an_agent_whose_gpu_is_elsewhere_is_told_how_to_split_the_loop():
    environment = " ".join(TEXT[TEXT.index("2. **Environment.**"):TEXT.index("3. **Evaluate v0.**")].split())
    assert "When the GPU is on another machine" in environment and "stop and report" in environment
    remote = section("When the GPU is on another machine")
    for part in ("**Here (CPU):**", "**On the GPU host:**", "**Carry back**"):
        assert part in remote
    here, host = remote.split("**On the GPU host:**")
    assert "evaluate OUT vN" in here and "interpreter" in here  # the cheap checks before the GPU
    assert "env_check.py --output-dir OUT" in host and "--sweep" in host and "OUT/vN/" in host


def test_v0_s_place_the_stop_rule_and_the_interpreter_limits_are_said():
    text = " ".join(TEXT.split())
    assert "`OUT/v0/v0.cu` (or `v0.py`): from then on that copy is v0" in text
    assert "is the user's decision: ask" in text and "--ignore-target" in text
    assert "libdevice" in text and "interpreter_limit" in text
    assert "## The CPU interpreter's limits" in (SKILL_ROOT / "experience" / "triton" / "TRITON.md").read_text()
