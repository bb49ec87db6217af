"""WRONG (output memoized by pointer): reuses the output it computed the last time it saw these very tensors.

The harness exploit of issue 14: the cache key is the inputs' data_ptr() and n, and a hit also
needs the very same tensor objects (weak references), so a new tensor that happens to reuse
freed memory never hits. What must report it:
- correctness_check: PASS (exit 0) by design: every case builds new tensors, so it never hits;
- benchmark.py: FAIL (exit 1, verdict incorrect): the timed calls rotate input buffers and copy
  new values into them between calls (measure/input_pool.py); a hit returns the output of the
  values that buffer held before, and the check after timing finds it wrong.
"""

import weakref

import triton
import triton.language as tl

BLOCK = 1024

_cache: dict[tuple, tuple] = {}  # (x ptr, y ptr, n) -> (weak ref to x, weak ref to y, output computed then)


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def run_kernel(x, y, out, n, **_):
    key = (x.data_ptr(), y.data_ptr(), n)
    entry = _cache.get(key)
    if entry is not None and entry[0]() is x and entry[1]() is y:  # the bug: assumes the contents never change
        out.copy_(entry[2])
        return
    vector_add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
    _cache[key] = (weakref.ref(x), weakref.ref(y), out.clone())
