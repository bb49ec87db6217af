#!/usr/bin/env python3
"""Time a solution against PyTorch and other versions (see --help)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_opt.run.bytecode import use_bytecode_cache  # noqa: E402

use_bytecode_cache()  # before torch is imported (run/bytecode.py)
from kernel_opt.commands.benchmark import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
