#!/usr/bin/env python3
"""Profile a solution with Nsight Compute and classify its bottleneck (see --help)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_opt.run.bytecode import use_bytecode_cache  # noqa: E402

use_bytecode_cache()  # before torch is imported (run/bytecode.py)
from kernel_opt.commands.ncu_profile import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
