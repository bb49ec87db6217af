"""Library only (calls the reference's own op): run_kernel calls torch.add, no kernel of its own.

Correct, so correctness_check must PASS it (exit 0), but the launch check lists its only kernel
as torch's (`own_kernels: 0` in correctness.json) and correctness.md and benchmark.md say
plainly that no kernel of the solution's own ran: what a benchmark times here is library code.
Under the Triton interpreter (no GPU) it passes and nothing is profiled.
"""

import torch


def run_kernel(x, y, out, **_):
    torch.add(x, y, out=out)
