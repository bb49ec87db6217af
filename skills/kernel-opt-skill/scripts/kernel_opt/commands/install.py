"""Install the skill and its /kernel-opt-skill command where Claude Code (or Codex) finds them.

Usage:
  kernel-opt install --user                      # ~/.claude/skills/kernel-opt-skill
                                                 #   + ~/.claude/commands/kernel-opt-skill.md
  kernel-opt install --project path/to/project   # path/to/project/.claude/skills/... and .claude/commands/...
  kernel-opt install --user --link               # symlinks into this checkout: edits show up at once
  kernel-opt install --user --agent codex        # ~/.agents/skills/kernel-opt-skill (Codex has no slash commands)
  python skills/kernel-opt-skill/scripts/install.py --user --json

Copies skip __pycache__. A manifest beside the skill (.kernel-opt-skill.install.json in the skills
folder) lists what was created, so `kernel-opt uninstall` removes exactly that. An identical
earlier install is left as it is; a different one, or a folder kernel-opt did not create, is refused
unless --force, which replaces an earlier kernel-opt install and moves anything else aside
(NAME.bak-DATE), never deleting it.

Exit codes: 0 installed (or already up to date); 2 bad arguments or refused.
"""

from __future__ import annotations

import shutil
import sys

from kernel_opt.core.cli import make_parser, print_json, python_command, run_command, script_path
from kernel_opt.core.errors import ExitCode
from kernel_opt.install.skill import AGENT_LAYOUT, install, resolve_target

PROG = "install.py"


def add_target_arguments(parser) -> None:
    """--user / --project DIR and --agent, shared with uninstall so both name the same place."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="install for your user: under $HOME (the default)")
    where.add_argument("--project", metavar="DIR", help="install into one project: under DIR")
    parser.add_argument("--agent", choices=sorted(AGENT_LAYOUT), default="claude",
                        help="claude: .claude/skills and .claude/commands (default); codex: .agents/skills")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def target_from(args):
    scope = "project" if args.project is not None else "user"
    return resolve_target(agent=args.agent, scope=scope, project_dir=args.project)


def main(argv=None) -> int:
    return run_command(_main, argv)


def _main(argv) -> int:
    parser = make_parser(PROG, __doc__)
    add_target_arguments(parser)
    parser.add_argument("--link", action="store_true", help="symlink to this checkout instead of copying")
    parser.add_argument("--force", action="store_true",
                        help="replace a different install; move aside what kernel-opt did not install")
    args = parser.parse_args(argv)
    result = install(target_from(args), mode="link" if args.link else "copy", force=args.force)
    if args.json:
        print_json(result.to_dict())
        return int(ExitCode.OK)
    for action in result.actions:
        print(action)
    print(f"skill: {result.target.skill_dir / 'SKILL.md'}")
    if result.target.command_path is not None:
        print(f"command: {result.target.command_path}")
    print(f"undo with: {_uninstall_command()} {_where(args)}")
    print(f"next: {result.next_step}")
    return int(ExitCode.OK)


def _uninstall_command() -> str:
    """The console script when it is on PATH, else this skill's wrapper script."""
    if shutil.which("kernel-opt"):
        return "kernel-opt uninstall"
    return f"{python_command()} {script_path('uninstall.py')}"


def _where(args) -> str:
    parts = [f"--project {args.project}" if args.project is not None else "--user"]
    if args.agent != "claude":
        parts.append(f"--agent {args.agent}")
    return " ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
