#!/usr/bin/env python3
"""The original skill's path to experience_log.py; the CLI lives in $SKILL_ROOT/scripts/."""

import sys
from pathlib import Path

# experience/learned/scripts/ -> the skill root -> scripts/
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))

from kernel_opt.commands.experience_log import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
