"""kernel_opt: the code behind the kernel-opt-skill CLIs.

The skill's Markdown router tells an agent which script to run; every verdict those
scripts print (correct or not, faster or not, which bottleneck) is computed here.
"""

__version__ = "0.1.0"
