"""GPU timers: per-call kernel time from CUDA events, with the L2 flushed before every call.

Three timers, all on the current torch stream of one CUDA device, one module per family:
- `events.time_callable`: the `triton.testing.do_bench` recipe. Estimate the per-call time from a few
  calls, derive warm-up and repetition counts from time budgets, then time each rep with its
  own pair of events. Before every call the L2 is flushed, outside the timed region: the start
  event is recorded after the flush is enqueued, so only `fn` lies between start and end.
  Nothing else happens between the events: no allocation, cloning or host synchronisation (the
  events are created before the loop; one synchronize at the end reads them all).
- `cuda_graph.time_callable_cudagraph`: capture many calls of `fn` in one CUDA graph and time replays,
  the `do_bench_cudagraph` recipe. A graph launches all its kernels with one host call, so this is the
  kernel time without launch overhead; for kernels under ~20 us the difference from `time_callable`
  is the launch overhead. Capture failure is a result, not an exception (a solution that
  synchronises inside `solve` cannot be captured, and the report should say so rather than crash).
  `cuda_graph.time_kernel_only` subtracts a graph of flushes alone from a graph of flushed calls:
  the kernel's own time on a cold L2, as Nsight Compute reports it.
- `interleaved.time_interleaved`: two callables timed A B A B ... in one process, the order inside each
  pair alternating, so drift (clocks, temperature) hits both equally. Sample i of A and
  sample i of B form a pair for `statistics.speedup_interval`.

Beside them: what a timer returns (`samples.py`), the L2 flush (`l2_flush.py`), the torch module and
the CUDA device they work on (`gpu.py`), and how many calls a time budget buys (`budget.py`).

`fn` must enqueue its GPU work on torch's current stream (a CUDA solution receives it as its
`cudaStream_t`); work launched on another stream escapes the events. A `fn` that
synchronises the host inside the timed region still works, and its time then includes the
host round trip: benchmark.py warns about that.

Timing starts only when the GPU reaches the start event. If the host enqueues `fn` more
slowly than the GPU runs the flush, the GPU idles between the events and the launch
overhead lands in the sample: that is what the CUDA-graph timing shows separately.

Needs a CUDA build of torch and a GPU: without one every timer raises EnvironmentFault
(exit 4). The statistics over the samples live in `measure/statistics.py` and run anywhere.
"""
