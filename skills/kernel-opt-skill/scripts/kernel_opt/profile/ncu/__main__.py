"""`python -m kernel_opt.profile.ncu REPORT [--ncu PATH]`: the child process that reads a report with ncu_report."""

import sys

from kernel_opt.profile.ncu.reading import main

if __name__ == "__main__":
    sys.exit(main())
