"""Install the skill and its /kernel-opt-skill command for Claude Code or Codex (see --help)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # so `import kernel_opt` works from any copy of the skill

from kernel_opt.run.bytecode import use_bytecode_cache  # noqa: E402

use_bytecode_cache()  # before torch is imported (run/bytecode.py)
from kernel_opt.commands.install import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
