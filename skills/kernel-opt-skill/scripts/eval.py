#!/usr/bin/env python3
"""Evaluate a folder of solutions against a folder of problems: correct rate, fast_p (see --help)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kernel_opt.run.bytecode import use_bytecode_cache  # noqa: E402

use_bytecode_cache()  # before torch is imported (run/bytecode.py)
from kernel_opt.commands.eval import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
