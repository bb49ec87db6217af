"""Remove what `kernel-opt install` put in place, exactly that, and report anything left.

Usage:
  kernel-opt uninstall --user
  kernel-opt uninstall --project path/to/project
  kernel-opt uninstall --user --agent codex --json
  python skills/kernel-opt-skill/scripts/uninstall.py --user

Reads the manifest the install wrote (.kernel-opt-skill.install.json in the skills folder) and
removes the files, links and folders it lists, where they are unchanged. A file edited since, or
anything kernel-opt did not create (e.g. an experiences.md written later), stays and is listed.
Without a manifest nothing is removed.

Exit codes: 0 removed (or nothing was installed); 2 bad arguments, or the folder there was not
installed by kernel-opt.
"""

from __future__ import annotations

import sys

from kernel_opt.commands.install import add_target_arguments, target_from
from kernel_opt.core.cli import make_parser, print_json, run_command
from kernel_opt.core.errors import ExitCode
from kernel_opt.install.skill import uninstall

PROG = "uninstall.py"


def main(argv=None) -> int:
    return run_command(_main, argv)


def _main(argv) -> int:
    parser = make_parser(PROG, __doc__)
    add_target_arguments(parser)
    args = parser.parse_args(argv)
    result = uninstall(target_from(args))
    if args.json:
        print_json(result.to_dict())
        return int(ExitCode.OK)
    if result.status == "nothing_installed":
        print(f"nothing to remove: no kernel-opt install at {result.target.skill_dir}")
        return int(ExitCode.OK)
    print(f"removed {len(result.removed)} entries installed by kernel-opt at {result.target.skill_dir}")
    for kept in result.kept:
        print(f"kept {kept}")
    if result.kept:
        print("next: look at what was kept and delete it yourself if you no longer want it")
    else:
        print("next: nothing; reinstall any time with kernel-opt install")
    return int(ExitCode.OK)


if __name__ == "__main__":
    sys.exit(main())
