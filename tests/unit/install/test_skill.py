"""install / uninstall into a temporary home and project; the plugin files and the slash command parse."""

import hashlib
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT, SCRIPTS_DIR, SKILL_ROOT

from kernel_opt import __version__
from kernel_opt.commands import install as install_command
from kernel_opt.commands import uninstall as uninstall_command
from kernel_opt.core.errors import UsageError
from kernel_opt.install.skill import MANIFEST_NAME, install, resolve_target, source_files, uninstall
from kernel_opt.main import COMMANDS

COMMAND_SOURCE = SKILL_ROOT / "commands" / "kernel-opt-skill.md"
# Frontmatter keys Claude Code documents for command files (code.claude.com/docs/en/slash-commands).
COMMAND_KEYS = {"description", "argument-hint", "allowed-tools", "model", "disable-model-invocation"}


def frontmatter(text: str) -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert match, "must start with a --- frontmatter block"
    return yaml.safe_load(match.group(1))


def tree(root: Path) -> dict[str, str]:
    """Every path under root -> 'dir', 'link -> X' or the file's text (small test files only)."""
    listing = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            listing[key] = f"link -> {path.readlink()}"
        elif path.is_dir():
            listing[key] = "dir"
        else:
            listing[key] = path.read_bytes().decode(errors="replace")
    return listing


def run(main, argv, capsys) -> tuple[int, dict | str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    out = json.loads(captured.out) if "--json" in argv else captured.out
    return code, out, captured.err


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def fake_skill(tmp_path) -> Path:
    """A tiny skill folder, so copies stay fast and the test may edit the source."""
    root = tmp_path / "source" / "kernel-opt-skill"
    (root / "commands").mkdir(parents=True)
    (root / "scripts" / "kernel_opt" / "__pycache__").mkdir(parents=True)
    (root / "SKILL.md").write_text("---\nname: kernel-opt-skill\ndescription: d\n---\nbody\n")
    (root / "commands" / "kernel-opt-skill.md").write_text(COMMAND_SOURCE.read_text())
    (root / "scripts" / "run.py").write_text("print('run')\n")
    (root / "scripts" / "kernel_opt" / "core.py").write_text("VALUE = 1\n")
    (root / "scripts" / "kernel_opt" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"\x00bytecode")
    (root / "scripts" / "stale.pyc").write_bytes(b"\x00")
    return root


def test_user_install_copies_the_skill_and_the_command(home, capsys):
    code, out, _ = run(install_command.main, ["--user", "--json"], capsys)
    assert code == 0 and out["status"] == "installed" and out["mode"] == "copy"
    skill_dir = home / ".claude" / "skills" / "kernel-opt-skill"
    command = home / ".claude" / "commands" / "kernel-opt-skill.md"
    assert out["skill_dir"] == str(skill_dir) and out["command_path"] == str(command)
    assert (skill_dir / "SKILL.md").read_text() == (SKILL_ROOT / "SKILL.md").read_text()
    assert frontmatter((skill_dir / "SKILL.md").read_text())["name"] == "kernel-opt-skill"
    assert command.read_text() == COMMAND_SOURCE.read_text() and not command.is_symlink()
    assert "description" in frontmatter(command.read_text())
    installed = sorted(str(path.relative_to(skill_dir)) for path in skill_dir.rglob("*") if path.is_file())
    assert installed == sorted(str(path) for path in source_files(SKILL_ROOT))
    assert not list(skill_dir.rglob("__pycache__")) and not list(skill_dir.rglob("*.pyc"))
    assert (skill_dir / "scripts" / "env_check.py").is_file()
    manifest = json.loads((home / ".claude" / "skills" / MANIFEST_NAME).read_text())
    assert manifest["mode"] == "copy" and manifest["version"] == __version__
    assert len(manifest["files_sha256"]) == len(installed) + 1  # the skill's files and the command
    assert out["next"].startswith("start Claude Code in any project")


def test_the_human_summary_says_what_was_done_and_what_comes_next(home, capsys):
    code, out, _ = run(install_command.main, ["--user"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("copied ") and lines[0].endswith(str(home / ".claude" / "skills" / "kernel-opt-skill"))
    assert lines[1] == f"copied {COMMAND_SOURCE} to {home / '.claude' / 'commands' / 'kernel-opt-skill.md'}"
    assert any(line.startswith("undo with: ") and re.search(r"uninstall(\.py)? --user$", line) for line in lines)
    assert lines[-1].startswith("next: start Claude Code") and "/kernel-opt-skill " in lines[-1]


def test_project_install_goes_under_the_project(home, tmp_path, capsys):
    project = tmp_path / "project"
    project.mkdir()
    code, out, _ = run(install_command.main, ["--project", str(project), "--json"], capsys)
    assert code == 0 and out["scope"] == "project"
    assert (project / ".claude" / "skills" / "kernel-opt-skill" / "SKILL.md").is_file()
    assert (project / ".claude" / "commands" / "kernel-opt-skill.md").is_file()
    assert not (home / ".claude").exists()
    code, out, _ = run(uninstall_command.main, ["--project", str(project), "--json"], capsys)
    assert code == 0 and out["kept"] == []
    assert list(project.iterdir()) == []  # .claude was created by the install, so it goes too


def test_link_mode_makes_symlinks_into_the_checkout(home, capsys):
    code, out, _ = run(install_command.main, ["--user", "--link", "--json"], capsys)
    assert code == 0 and out["mode"] == "link"
    skill_dir = home / ".claude" / "skills" / "kernel-opt-skill"
    command = home / ".claude" / "commands" / "kernel-opt-skill.md"
    assert skill_dir.is_symlink() and skill_dir.resolve() == SKILL_ROOT
    assert command.is_symlink() and command.resolve() == COMMAND_SOURCE
    assert (skill_dir / "SKILL.md").read_text() == (SKILL_ROOT / "SKILL.md").read_text()
    code, out, _ = run(uninstall_command.main, ["--user", "--json"], capsys)
    assert code == 0 and out["removed"][:2] == [str(skill_dir), str(command)]
    assert SKILL_ROOT.is_dir() and COMMAND_SOURCE.is_file()  # unlinking never touches the checkout
    assert list(home.iterdir()) == []


def test_an_identical_reinstall_changes_nothing_and_a_different_one_is_refused(home, capsys):
    assert run(install_command.main, ["--user"], capsys)[0] == 0
    manifest = home / ".claude" / "skills" / MANIFEST_NAME
    recorded = manifest.read_text()
    code, out, _ = run(install_command.main, ["--user", "--json"], capsys)
    assert code == 0 and out["status"] == "up_to_date" and manifest.read_text() == recorded

    code, _, err = run(install_command.main, ["--user", "--link"], capsys)
    assert code == 2
    assert "is already installed at" in err and "(it is a copy, this would be a link)" in err
    assert "re-run with --force" in err
    assert not (home / ".claude" / "skills" / "kernel-opt-skill").is_symlink() and manifest.read_text() == recorded

    code, out, _ = run(install_command.main, ["--user", "--link", "--force", "--json"], capsys)
    assert code == 0 and out["status"] == "installed" and out["actions"][0].startswith("removed the earlier install")
    assert (home / ".claude" / "skills" / "kernel-opt-skill").is_symlink()
    assert not list((home / ".claude" / "skills").glob("*.bak-*"))  # our own install is replaced, not moved aside


def test_a_changed_source_counts_as_a_different_install(home, fake_skill):
    target = resolve_target("claude", "user")
    assert install(target, source_dir=fake_skill).status == "installed"
    (fake_skill / "SKILL.md").write_text("---\nname: kernel-opt-skill\ndescription: newer\n---\n")
    with pytest.raises(UsageError, match=r"differs \(.*SKILL.md has changed since\)"):
        install(target, source_dir=fake_skill)
    assert "newer" not in (target.skill_dir / "SKILL.md").read_text()


def test_copies_leave_out_bytecode(home, fake_skill):
    target = resolve_target("claude", "user")
    install(target, source_dir=fake_skill)
    assert sorted(str(path.relative_to(target.skill_dir)) for path in target.skill_dir.rglob("*")) == [
        "SKILL.md", "commands", "commands/kernel-opt-skill.md", "scripts", "scripts/kernel_opt",
        "scripts/kernel_opt/core.py", "scripts/run.py",
    ]


def test_copies_leave_out_what_an_editable_install_and_tools_leave_in_the_checkout(home, fake_skill):
    # `pip install -e .` writes scripts/kernel_opt_skill.egg-info (the package lives in scripts/)
    egg_info = fake_skill / "scripts" / "kernel_opt_skill.egg-info"
    egg_info.mkdir()
    (egg_info / "PKG-INFO").write_text("Name: kernel-opt-skill\n")
    for folder in (".pytest_cache", ".ruff_cache", "build", "scripts/kernel_opt/build"):
        (fake_skill / folder).mkdir(parents=True)
        (fake_skill / folder / "artefact").write_text("x")
    (fake_skill / ".DS_Store").write_bytes(b"\x00")
    target = resolve_target("claude", "user")
    install(target, source_dir=fake_skill)
    installed = sorted(str(path.relative_to(target.skill_dir)) for path in target.skill_dir.rglob("*"))
    assert installed == ["SKILL.md", "commands", "commands/kernel-opt-skill.md", "scripts", "scripts/kernel_opt",
                         "scripts/kernel_opt/core.py", "scripts/run.py"]
    assert not any("egg-info" in str(path) for path in source_files(fake_skill))


def test_a_folder_kernel_opt_did_not_make_is_refused_then_moved_aside_with_force(home, capsys):
    mine = home / ".claude" / "skills" / "kernel-opt-skill"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text("my own notes\n")
    code, _, err = run(install_command.main, ["--user"], capsys)
    assert code == 2
    assert f"error: {mine} already exists and was not installed by kernel-opt install; nothing was changed" in err
    assert (mine / "SKILL.md").read_text() == "my own notes\n"

    code, out, _ = run(install_command.main, ["--user", "--force", "--json"], capsys)
    assert code == 0
    backups = list(mine.parent.glob("kernel-opt-skill.bak-*"))
    assert len(backups) == 1 and (backups[0] / "SKILL.md").read_text() == "my own notes\n"
    assert out["actions"][0] == f"moved aside {mine} -> {backups[0]}"
    assert run(uninstall_command.main, ["--user"], capsys)[0] == 0
    assert (backups[0] / "SKILL.md").read_text() == "my own notes\n"  # never deleted
    assert not mine.exists()


def test_uninstall_removes_exactly_what_was_installed(home, fake_skill):
    other_skill = home / ".claude" / "skills" / "other-skill" / "SKILL.md"
    other_skill.parent.mkdir(parents=True)
    other_skill.write_text("someone else's skill\n")
    other_command = home / ".claude" / "commands" / "mine.md"
    other_command.parent.mkdir(parents=True)
    other_command.write_text("my command\n")
    before = tree(home)

    target = resolve_target("claude", "user")
    install(target, source_dir=fake_skill)
    result = uninstall(target)
    assert result.status == "uninstalled" and result.kept == []
    assert str(target.skill_dir) in result.removed and str(target.command_path) in result.removed
    assert str(target.manifest_path) in result.removed
    assert str(home / ".claude" / "skills") not in result.removed  # it was there before the install
    assert tree(home) == before


def test_uninstall_keeps_what_changed_or_was_added_and_clears_bytecode(home, fake_skill):
    target = resolve_target("claude", "user")
    install(target, source_dir=fake_skill)
    edited = target.skill_dir / "SKILL.md"
    edited.write_text("edited by the user\n")
    added = target.skill_dir / "scripts" / "notes.md"
    added.write_text("written after the install\n")
    cache = target.skill_dir / "scripts" / "kernel_opt" / "__pycache__"
    cache.mkdir()
    (cache / "core.cpython-311.pyc").write_bytes(b"\x00")  # what running the scripts leaves behind

    result = uninstall(target)
    assert result.kept == [
        f"{edited}: changed since it was installed",
        f"{target.skill_dir / 'scripts'}: holds files kernel-opt did not install (notes.md)",
    ]
    assert f"{cache} (Python bytecode)" in result.removed
    assert edited.read_text() == "edited by the user\n" and added.read_text() == "written after the install\n"
    assert sorted(str(path.relative_to(home)) for path in home.rglob("*")) == [
        ".claude", ".claude/skills", ".claude/skills/kernel-opt-skill", ".claude/skills/kernel-opt-skill/SKILL.md",
        ".claude/skills/kernel-opt-skill/scripts", ".claude/skills/kernel-opt-skill/scripts/notes.md",
    ]
    assert not target.manifest_path.exists()


def test_a_hand_edited_manifest_cannot_make_uninstall_delete_other_files(home, tmp_path, fake_skill):
    target = resolve_target("claude", "user")
    install(target, source_dir=fake_skill)
    precious = home / "thesis.tex"
    precious.write_text("years of work\n")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("not ours\n")
    manifest = json.loads(target.manifest_path.read_text())
    for path in (precious, outside):
        manifest["files_sha256"][str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest["created_directories"].append(str(home))
    target.manifest_path.write_text(json.dumps(manifest))

    result = uninstall(target)
    assert f"{precious}: outside the folders this install owns" in result.kept
    assert f"{outside}: outside the folders this install owns" in result.kept
    assert precious.read_text() == "years of work\n" and outside.read_text() == "not ours\n"


def test_an_unreadable_manifest_stops_uninstall_before_anything_is_removed(home, fake_skill, capsys):
    target = resolve_target("claude", "user")
    install(target, source_dir=fake_skill)
    target.manifest_path.write_text("[1, 2]")
    code, _, err = run(uninstall_command.main, ["--user"], capsys)
    assert code == 2 and "is not a readable kernel-opt install manifest" in err
    assert (target.skill_dir / "SKILL.md").is_file() and target.command_path.is_file()


def test_uninstall_without_a_manifest_removes_nothing(home, capsys):
    code, out, _ = run(uninstall_command.main, ["--user"], capsys)
    assert code == 0 and out.startswith("nothing to remove: no kernel-opt install at")
    mine = home / ".claude" / "commands" / "kernel-opt-skill.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("my own command\n")
    code, _, err = run(uninstall_command.main, ["--user", "--json"], capsys)
    assert code == 2 and "was not installed by kernel-opt install" in err
    assert mine.read_text() == "my own command\n"


def test_codex_gets_the_skill_in_agents_skills_and_no_command(home, tmp_path, capsys):
    code, out, _ = run(install_command.main, ["--user", "--agent", "codex", "--json"], capsys)
    assert code == 0 and out["command_path"] is None
    assert (home / ".agents" / "skills" / "kernel-opt-skill" / "SKILL.md").is_file()
    assert not (home / ".claude").exists() and out["next"].startswith("restart Codex")
    project = tmp_path / "repo"
    project.mkdir()
    assert run(install_command.main, ["--project", str(project), "--agent", "codex"], capsys)[0] == 0
    assert (project / ".agents" / "skills" / "kernel-opt-skill" / "SKILL.md").is_file()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--project", "/no/such/folder"], "project folder /no/such/folder does not exist"),
        (["--user", "--project", "."], "not allowed with argument"),
        (["--agent", "cursor"], "invalid choice: 'cursor'"),
    ],
)
def test_bad_arguments_exit_2_with_a_sentence(home, capsys, argv, message):
    code, _, err = run(install_command.main, argv, capsys)
    assert code == 2 and message in err
    assert not (home / ".claude").exists()


def test_installing_into_the_skill_folder_itself_is_refused(fake_skill):
    target = resolve_target("claude", "project", project_dir=fake_skill)
    with pytest.raises(UsageError, match="is this skill folder itself, or inside it"):
        install(target, source_dir=fake_skill)


def test_console_script_and_wrappers_know_the_commands():
    assert COMMANDS["install"] == "install" and COMMANDS["uninstall"] == "uninstall"
    for script in ("install.py", "uninstall.py"):
        completed = subprocess.run([sys.executable, str(SCRIPTS_DIR / script), "--help"],
                                   capture_output=True, text=True, timeout=60)
        assert completed.returncode == 0, completed.stderr
        assert "usage: " + script in completed.stdout and "--project DIR" in completed.stdout


# --- the plugin, the marketplace entry, the slash command and AGENTS.md ---

def test_plugin_manifest_names_the_skill_and_the_command():
    plugin = json.loads((REPO_ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["name"] == "kernel-opt-skill" and plugin["version"] == __version__
    assert re.search(rf'^version = "{re.escape(__version__)}"$', (REPO_ROOT / "pyproject.toml").read_text(), re.M)
    assert plugin["author"]["name"] and plugin["description"]
    assert all(path.startswith("./") and (REPO_ROOT / path).is_file() for path in plugin["commands"])
    assert [REPO_ROOT / path for path in plugin["commands"]] == [COMMAND_SOURCE]
    # The default skills/ folder at the plugin root holds the skill, as <name>/SKILL.md.
    assert frontmatter(
        (REPO_ROOT / "skills" / "kernel-opt-skill" / "SKILL.md").read_text()
    )["name"] == "kernel-opt-skill"


def test_marketplace_lists_this_repository_as_the_plugin():
    marketplace = json.loads((REPO_ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert marketplace["name"] and marketplace["owner"]["name"]
    [entry] = marketplace["plugins"]
    assert entry["name"] == "kernel-opt-skill" and entry["source"] == "./"
    plugin_root = (REPO_ROOT / entry["source"]).resolve()  # paths resolve from the folder holding .claude-plugin/
    assert (plugin_root / ".claude-plugin" / "plugin.json").is_file()
    assert json.loads((plugin_root / ".claude-plugin" / "plugin.json").read_text())["name"] == entry["name"]


def test_slash_command_frontmatter_parses_and_points_at_skill_md():
    text = COMMAND_SOURCE.read_text()
    meta = frontmatter(text)
    assert set(meta) <= COMMAND_KEYS and meta["description"] and meta["argument-hint"]
    assert meta["disable-model-invocation"] is True
    body = text.split("\n---\n", 1)[1]
    assert "$ARGUMENTS" in body and "SKILL.md" in body
    for installed_at in (".claude/skills/kernel-opt-skill/SKILL.md", "~/.claude/skills/kernel-opt-skill/SKILL.md",
                         "skills/kernel-opt-skill/SKILL.md"):
        assert f"`{installed_at}`" in body
    assert len(body.splitlines()) < 40  # a pointer to SKILL.md's loop, not a copy of it


def test_agents_md_points_at_real_paths_and_the_readme_test_command():
    text = (REPO_ROOT / "AGENTS.md").read_text()
    for path in re.findall(r"`((?:skills|tools|tests)/[\w./-]+)`", text):
        if "<" not in path:
            assert (REPO_ROOT / path).exists(), path
    readme = (REPO_ROOT / "README.md").read_text()
    test_command = 'python3 -m pip install -e ".[test]" && python3 -m pytest -q -n 2'
    assert test_command in text and test_command in readme
    assert "0 ok, 1 the check ran and failed, 2 bad arguments" in text


def install_block(name: str) -> list[list[str]]:
    text = (REPO_ROOT / name).read_text()
    section = re.search(r"^## (?:Install into Claude Code / Codex|安装到 Claude Code / Codex)\n(.*?)^## ", text,
                        re.S | re.M)
    block = re.search(r"```bash\n(.*?)```", section.group(1), re.S).group(1)
    return [shlex.split(line.split("#")[0]) for line in block.splitlines() if line.strip()]


def test_readme_install_commands_are_the_same_in_both_languages_and_run(home, tmp_path, monkeypatch, capsys):
    commands = install_block("README.md")
    assert commands == install_block("README_zh.md")
    assert ["kernel-opt", "install", "--user"] in commands and ["kernel-opt", "uninstall", "--user"] in commands
    for index, argv in enumerate(commands):
        assert argv[0] == "kernel-opt" and argv[1] in COMMANDS
        fresh = tmp_path / f"run{index}"
        (fresh / "home").mkdir(parents=True)
        monkeypatch.setenv("HOME", str(fresh / "home"))
        monkeypatch.chdir(fresh)
        main = install_command.main if argv[1] == "install" else uninstall_command.main
        if argv[1] == "uninstall":
            assert install_command.main(argv[2:]) == 0
            capsys.readouterr()
        code, out, err = run(main, argv[2:] + ["--json"], capsys)
        assert code == 0, err
        if argv[1] == "install":
            assert Path(out["skill_dir"], "SKILL.md").is_file()
        else:
            assert out["status"] == "uninstalled" and list((fresh / "home").iterdir()) == []
