"""WRONG (output memoized by pointer and tensor version): reuses its output while the inputs are unmodified.

The exploit of issue 14 (a bf16 GEMM caching its product on data_ptr() and _version won the
benchmark at "634.6% of ceiling"): torch bumps a tensor's _version on every in-place write, so
this cache is never stale, but it skips the work whenever the same inputs come back. What must
report it:
- correctness_check: PASS (exit 0): every case builds new tensors, so it never hits;
- benchmark.py: its true cost (exit 0, verdict measured, about the time of good/vector_add.py):
  the timed calls copy new values into their input buffers before every call
  (measure/input_pool.py), which bumps the version, so every timed call misses and computes.
  Were a hit ever timed, its time (a copy of the output, 2/3 of the bytes) would fall under the
  physical floor and the verdict would be invalid.
"""

import weakref

import triton
import triton.language as tl

BLOCK = 1024

_cache: dict[tuple, tuple] = {}  # (x ptr, y ptr, x version, y version, n) -> (weak refs, output)


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def run_kernel(x, y, out, n, **_):
    key = (x.data_ptr(), y.data_ptr(), x._version, y._version, n)
    entry = _cache.get(key)
    if entry is not None and entry[0]() is x and entry[1]() is y:  # skips the work for inputs seen before
        out.copy_(entry[2])
        return
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    _cache[key] = (weakref.ref(x), weakref.ref(y), out.clone())
