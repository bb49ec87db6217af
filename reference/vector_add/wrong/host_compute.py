"""WRONG (no GPU work): adds on the host and copies the result into the output.

Right values, and no kernel: the inputs come to the host (two device-to-host copies), the sum
is made there, and one host-to-device copy fills `out`. A benchmark would time copies and a
host loop, not a kernel. What must report it:
- correctness_check on a GPU: FAIL (exit 1), "launched no GPU kernel during the call: it only
  made copies (2 x Memcpy DtoH (Device -> Pageable), 1 x Memcpy HtoD (Pageable -> Device)) ...";
- under the Triton interpreter (no GPU): PASS (exit 0): every tensor is on the host there, and
  nothing is profiled (the report says so).
"""


def run_kernel(x, y, out, **_):
    out.copy_(x.cpu() + y.cpu())  # the bug: the sum is made on the host
