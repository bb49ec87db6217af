"""Install the skill (and its `/kernel-opt-skill` command) where an agent looks for them, and undo it.

An install copies (or links) this skill folder into the agent's skills folder and the command file
into its commands folder, then writes a manifest beside the skill listing every file, link and
folder it created, with each file's SHA-256. Uninstall reads that manifest and removes exactly those
entries, and only where they are unchanged: a file edited since, or anything kernel-opt did not
create, stays where it is and is reported. Nothing outside the manifest is ever deleted; `--force`
moves a foreign folder aside instead of deleting it.

Where the agents look (checked against their documentation):
- Claude Code: personal skills in `~/.claude/skills/<name>/SKILL.md`, project skills in
  `<project>/.claude/skills/<name>/SKILL.md`; custom commands in `~/.claude/commands/<name>.md` and
  `<project>/.claude/commands/<name>.md` (code.claude.com/docs/en/skills, "Where skills live").
- Codex: user skills in `$HOME/.agents/skills/<name>/`, repository skills in `.agents/skills/<name>/`
  (developers.openai.com/codex/skills); Codex has no custom slash commands, so no command is placed.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from kernel_opt import __version__
from kernel_opt.core.errors import UsageError
from kernel_opt.core.files import file_sha256, write_json_atomic

Agent = Literal["claude", "codex"]
Scope = Literal["user", "project"]
Mode = Literal["copy", "link"]

SKILL_NAME = "kernel-opt-skill"
SKILL_ROOT = Path(__file__).resolve().parents[3]  # skills/kernel-opt-skill (or an installed copy)
COMMAND_SOURCE = Path("commands") / f"{SKILL_NAME}.md"  # inside the skill folder, so copies carry it
MANIFEST_NAME = f".{SKILL_NAME}.install.json"  # hidden: neither agent reads dotfiles as skills
MANIFEST_TOOL = "kernel-opt install"

# Python writes these beside the scripts whenever they run; never copied, removed on uninstall.
BYTECODE_DIRECTORY = "__pycache__"
BYTECODE_SUFFIXES = (".pyc", ".pyo")
# Build and tool artefacts that land in a checkout (`pip install -e .` writes
# scripts/kernel_opt_skill.egg-info, since the package lives in scripts/): never part of the skill.
ARTEFACT_DIRECTORIES = (BYTECODE_DIRECTORY, ".pytest_cache", ".ruff_cache", ".mypy_cache", ".git", "build", "dist")
ARTEFACT_DIRECTORY_SUFFIXES = (".egg-info", ".dist-info")
ARTEFACT_FILES = (".DS_Store",)

# agent -> (config folder under the home or project folder, skills folder, commands folder or None)
AGENT_LAYOUT: dict[str, tuple[str, str, str | None]] = {
    "claude": (".claude", "skills", "commands"),
    "codex": (".agents", "skills", None),
}


@dataclass(frozen=True)
class Target:
    """Where one install goes: the skill folder, the command file, and the manifest beside them."""

    agent: Agent
    scope: Scope
    base_dir: Path  # $HOME for --user, the project folder for --project
    skill_dir: Path
    command_path: Path | None
    manifest_path: Path

    def to_dict(self) -> dict:
        return {
            "agent": self.agent,
            "scope": self.scope,
            "base_dir": str(self.base_dir),
            "skill_dir": str(self.skill_dir),
            "command_path": str(self.command_path) if self.command_path else None,
            "manifest_path": str(self.manifest_path),
        }


@dataclass
class InstallManifest:
    """What one install created; uninstall removes exactly this and nothing else."""

    agent: Agent
    scope: Scope
    mode: Mode
    source_dir: str
    skill_dir: str
    command_path: str | None
    installed_at: str
    version: str = __version__
    tool: str = MANIFEST_TOOL
    files_sha256: dict[str, str] = field(default_factory=dict)  # absolute path -> SHA-256 (copy mode)
    links: dict[str, str] = field(default_factory=dict)  # absolute link path -> what it points to
    created_directories: list[str] = field(default_factory=list)  # in creation order, parents first

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class InstallResult:
    status: Literal["installed", "up_to_date"]
    target: Target
    mode: Mode
    source_dir: Path
    actions: list[str]
    next_step: str

    def to_dict(self) -> dict:
        return {
            "ok": True,
            "status": self.status,
            "mode": self.mode,
            "source_dir": str(self.source_dir),
            **self.target.to_dict(),
            "actions": self.actions,
            "next": self.next_step,
        }


@dataclass
class UninstallResult:
    status: Literal["uninstalled", "nothing_installed"]
    target: Target
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # "PATH: why it stayed"

    def to_dict(self) -> dict:
        return {"ok": True, "status": self.status, **self.target.to_dict(), "removed": self.removed, "kept": self.kept}


def resolve_target(
    agent: Agent = "claude",
    scope: Scope = "user",
    project_dir: str | os.PathLike | None = None,
    environ: Mapping[str, str] | None = None,
) -> Target:
    """The folders an install of `agent` at `scope` uses; `--user` honours $HOME."""
    if agent not in AGENT_LAYOUT:
        raise UsageError(f"unknown agent {agent!r}", hint=f"choose one of: {', '.join(AGENT_LAYOUT)}")
    if scope == "project":
        if project_dir is None:
            raise UsageError("--project needs a folder", hint="e.g. --project .")
        base_dir = Path(project_dir).expanduser().resolve()
        if not base_dir.is_dir():
            raise UsageError(f"project folder {base_dir} does not exist",
                             hint="create it first, or pass an existing folder")
    else:
        environ = os.environ if environ is None else environ
        home = environ.get("HOME") or str(Path.home())
        base_dir = Path(home).expanduser().resolve()
    config, skills, commands = AGENT_LAYOUT[agent]
    skills_dir = base_dir / config / skills
    return Target(
        agent=agent,
        scope=scope,
        base_dir=base_dir,
        skill_dir=skills_dir / SKILL_NAME,
        command_path=(base_dir / config / commands / f"{SKILL_NAME}.md") if commands else None,
        manifest_path=skills_dir / MANIFEST_NAME,
    )


def is_artefact_directory(name: str) -> bool:
    """A folder a build or a tool wrote into the checkout (egg-info, caches), not one of the skill's."""
    return name in ARTEFACT_DIRECTORIES or name.endswith(ARTEFACT_DIRECTORY_SUFFIXES)


def source_files(source_dir: Path) -> list[Path]:
    """Every file of the skill folder to copy, relative and sorted; bytecode, caches and build artefacts left out."""
    files = []
    for directory, subdirectories, names in os.walk(source_dir):
        subdirectories[:] = sorted(name for name in subdirectories if not is_artefact_directory(name))
        for name in sorted(names):
            if not name.endswith(BYTECODE_SUFFIXES) and name not in ARTEFACT_FILES:
                files.append((Path(directory) / name).relative_to(source_dir))
    return files


def read_manifest(target: Target) -> InstallManifest | None:
    """The manifest of an earlier install at `target`, or None when there is none."""
    if not target.manifest_path.is_file():
        return None
    try:
        payload = json.loads(target.manifest_path.read_text(encoding="utf-8"))
        if not isinstance(payload, dict) or payload.get("tool") != MANIFEST_TOOL:
            raise ValueError("not written by kernel-opt install")
        return InstallManifest(**payload)
    except (ValueError, TypeError) as error:
        raise UsageError(
            f"{target.manifest_path} is not a readable kernel-opt install manifest ({error})",
            hint="restore it, or move it aside and remove the install by hand",
        ) from None


def install(
    target: Target,
    mode: Mode = "copy",
    force: bool = False,
    source_dir: Path = SKILL_ROOT,
) -> InstallResult:
    """Copy or link the skill (and the command) into `target`; refuse to replace a different install.

    An identical earlier install is left as it is ("up_to_date"). A different one, or files that
    kernel-opt did not install, make it raise UsageError unless `force`: then the earlier install is
    uninstalled and whatever is left at the target paths is moved aside, never deleted.
    """
    source_dir = Path(source_dir).resolve()
    command_source = source_dir / COMMAND_SOURCE
    _check_source(source_dir, command_source, target)
    previous = read_manifest(target)
    actions: list[str] = []
    difference = None if previous is None else _difference(previous, target, mode, source_dir, command_source)
    if previous is not None and difference is None:
        return InstallResult("up_to_date", target, mode, source_dir,
                             [f"already installed at {target.skill_dir} ({mode} of {source_dir}); nothing changed"],
                             next_step(target))
    occupied = [path for path in (target.skill_dir, target.command_path) if path is not None and _exists(path)]
    if (previous is not None or occupied) and not force:
        raise UsageError(_refusal(target, previous, difference, occupied), hint="re-run with --force to replace it "
                         "(files kernel-opt did not install are moved aside, never deleted)")
    if previous is not None:
        removal = uninstall(target)
        actions.append(f"removed the earlier install ({len(removal.removed)} entries)")
    for path in (target.skill_dir, target.command_path):
        if path is not None and _exists(path):
            backup = _backup_path(path)
            path.rename(backup)
            actions.append(f"moved aside {path} -> {backup}")

    manifest = InstallManifest(
        agent=target.agent, scope=target.scope, mode=mode, source_dir=str(source_dir),
        skill_dir=str(target.skill_dir), command_path=str(target.command_path) if target.command_path else None,
        installed_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    try:
        _make_directories(target.manifest_path.parent, manifest)
        if mode == "link":
            _link(target.skill_dir, source_dir, manifest)
            actions.append(f"linked {target.skill_dir} -> {source_dir}")
        else:
            files = source_files(source_dir)
            _make_directories(target.skill_dir, manifest)
            for relative in files:
                _copy(source_dir / relative, target.skill_dir / relative, manifest)
            actions.append(f"copied {len(files)} files from {source_dir} to {target.skill_dir}")
        if target.command_path is not None:
            _make_directories(target.command_path.parent, manifest)
            if mode == "link":
                _link(target.command_path, command_source, manifest)
                actions.append(f"linked {target.command_path} -> {command_source}")
            else:
                _copy(command_source, target.command_path, manifest)
                actions.append(f"copied {command_source} to {target.command_path}")
        write_json_atomic(target.manifest_path, manifest.to_dict())
    except BaseException:
        _remove(manifest, target)  # leave nothing half-installed behind
        raise
    actions.append(f"recorded what was installed in {target.manifest_path}")
    return InstallResult("installed", target, mode, source_dir, actions, next_step(target))


def uninstall(target: Target) -> UninstallResult:
    """Remove what the manifest at `target` lists, where unchanged; report everything that stays."""
    manifest = read_manifest(target)
    if manifest is None:
        occupied = [path for path in (target.skill_dir, target.command_path) if path is not None and _exists(path)]
        if occupied:
            raise UsageError(
                f"{occupied[0]} was not installed by kernel-opt install (no manifest at {target.manifest_path}); "
                "nothing was removed",
                hint="delete it yourself if you mean to; kernel-opt only removes what it installed",
            )
        return UninstallResult("nothing_installed", target)
    return _remove(manifest, target)


def next_step(target: Target) -> str:
    where = "any project" if target.scope == "user" else str(target.base_dir)
    if target.agent == "codex":
        return (f"restart Codex in {where} and ask: $kernel-opt-skill optimize kernel.cu, run 3 iterations, "
                "output to out/")
    return (f"start Claude Code in {where} (restart a running session) and type: /kernel-opt-skill "
            "Please optimize this kernel kernel.cu, run 3 iterations, output to out/")


def _check_source(source_dir: Path, command_source: Path, target: Target) -> None:
    if not (source_dir / "SKILL.md").is_file() or not command_source.is_file():
        raise UsageError(
            f"{source_dir} is not a complete kernel-opt-skill folder (SKILL.md and {COMMAND_SOURCE} are needed)",
            hint="run the installer from a checkout: python -m pip install -e . (then kernel-opt install), "
            "or python skills/kernel-opt-skill/scripts/install.py",
        )
    skill_dir = target.skill_dir.parent.resolve() / target.skill_dir.name
    if skill_dir == source_dir or source_dir in skill_dir.parents:
        raise UsageError(
            f"the target {target.skill_dir} is this skill folder itself, or inside it",
            hint="install from the checkout (skills/kernel-opt-skill), not from an installed copy",
        )


def _difference(
    previous: InstallManifest, target: Target, mode: Mode, source_dir: Path, command_source: Path
) -> str | None:
    """How the earlier install differs from what this one would create; None when it is the same."""
    if previous.mode != mode:
        return f"it is a {previous.mode}, this would be a {mode}"
    if Path(previous.source_dir) != source_dir:
        return f"it came from {previous.source_dir}"
    if previous.skill_dir != str(target.skill_dir) or previous.command_path != (
        str(target.command_path) if target.command_path else None
    ):
        return "its manifest names other paths"
    if mode == "link":
        broken = [link for link, destination in previous.links.items() if not _points_to(Path(link), destination)]
        return f"{broken[0]} no longer points into the checkout" if broken else None
    expected = {str(target.skill_dir / relative): source_dir / relative for relative in source_files(source_dir)}
    if target.command_path is not None:
        expected[str(target.command_path)] = command_source
    if set(expected) != set(previous.files_sha256):
        added = len(set(expected) - set(previous.files_sha256))
        dropped = len(set(previous.files_sha256) - set(expected))
        return f"the skill has {added} new and {dropped} removed files since"
    for installed, source in expected.items():
        path = Path(installed)
        recorded = previous.files_sha256[installed]
        if not path.is_file() or path.is_symlink() or file_sha256(path) != recorded:
            return f"{path} was changed or removed there"
        if file_sha256(source) != recorded:
            return f"{source} has changed since"
    return None


def _refusal(target: Target, previous: InstallManifest | None, difference: str | None, occupied: list[Path]) -> str:
    if previous is not None:
        return (f"kernel-opt-skill is already installed at {target.skill_dir} ({previous.mode} of "
                f"{previous.source_dir}, {previous.installed_at}) and differs ({difference}); nothing was changed")
    return f"{occupied[0]} already exists and was not installed by kernel-opt install; nothing was changed"


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()  # a dangling link still occupies the name


def _backup_path(path: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    counter = 1
    while _exists(candidate):
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{counter}")
        counter += 1
    return candidate


def _make_directories(directory: Path, manifest: InstallManifest) -> None:
    """Create `directory` and any missing parents, recording each one made (parents first)."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir()
        manifest.created_directories.append(str(path))


def _copy(source: Path, destination: Path, manifest: InstallManifest) -> None:
    _make_directories(destination.parent, manifest)
    shutil.copy2(source, destination)
    manifest.files_sha256[str(destination)] = file_sha256(destination)


def _link(link: Path, destination: Path, manifest: InstallManifest) -> None:
    link.symlink_to(destination, target_is_directory=destination.is_dir())
    manifest.links[str(link)] = str(destination)


def _points_to(link: Path, destination: str) -> bool:
    return link.is_symlink() and os.readlink(link) == destination


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _remove_bytecode_caches(directories: list[Path], result: UninstallResult) -> None:
    """Python writes __pycache__ into the installed package when its scripts run: not a user's file."""
    for directory in directories:
        cache = directory / BYTECODE_DIRECTORY
        if cache.is_dir() and not cache.is_symlink():
            stale = [entry for entry in cache.iterdir() if entry.is_file() and entry.name.endswith(BYTECODE_SUFFIXES)]
            for entry in stale:
                entry.unlink()
            if not any(cache.iterdir()):
                cache.rmdir()
                result.removed.append(f"{cache} (Python bytecode)")


def _remove(manifest: InstallManifest, target: Target) -> UninstallResult:
    """Remove the manifest's entries that are unchanged; never touch a path outside the target."""
    result = UninstallResult("uninstalled", target)
    reported: set[Path] = set()  # kept paths already explained, so their folders do not repeat them

    def keep(path: Path, why: str) -> None:
        reported.add(path)
        result.kept.append(f"{path}: {why}")
    allowed_roots = [Path(manifest.skill_dir)] + ([Path(manifest.command_path)] if manifest.command_path else [])
    created = [Path(path) for path in manifest.created_directories]

    def allowed(path: Path) -> bool:
        # A manifest edited by hand must not be able to point uninstall at other files.
        return _inside(path, target.base_dir) and (
            any(_inside(path, root) for root in allowed_roots) or path in created
        )

    for link, destination in manifest.links.items():
        path = Path(link)
        if not allowed(path):
            keep(path, "outside the folders this install owns")
        elif not _exists(path):
            continue
        elif _points_to(path, destination):
            path.unlink()
            result.removed.append(str(path))
        else:
            keep(path, "no longer the link kernel-opt made")
    for name, recorded in manifest.files_sha256.items():
        path = Path(name)
        if not allowed(path):
            keep(path, "outside the folders this install owns")
        elif not _exists(path):
            continue
        elif path.is_file() and not path.is_symlink() and file_sha256(path) == recorded:
            path.unlink()
            result.removed.append(str(path))
        else:
            keep(path, "changed since it was installed")
    _remove_bytecode_caches([directory for directory in created if allowed(directory)], result)
    if _exists(target.manifest_path):
        target.manifest_path.unlink()
        result.removed.append(str(target.manifest_path))
    for directory in sorted(created, key=lambda path: len(path.parts), reverse=True):
        if not allowed(directory) or not directory.is_dir() or directory.is_symlink():
            continue
        entries = list(directory.iterdir())
        if not entries:
            directory.rmdir()
            result.removed.append(str(directory))
            continue
        foreign = sorted(entry.name for entry in entries if entry not in reported)
        if foreign:
            keep(directory, f"holds files kernel-opt did not install ({', '.join(foreign[:5])})")
        else:
            reported.add(directory)  # only holds what is already reported: not repeated
    return result
