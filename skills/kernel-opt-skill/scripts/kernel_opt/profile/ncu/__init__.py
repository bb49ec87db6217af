"""Nsight Compute, in three parts that must agree on the metric names they share.

- `collection`: the ncu command line (a pure function), running ncu, its failure messages, the
  profiled program's environment.
- the metrics, pure functions: the canonical names (`metric_aliases`: `METRIC_ALIASES`), raw metrics and
  their units (`raw_metrics`), the warp-stall schemes and meanings (`stalls`), and `KernelMetrics` read
  from one launch or averaged over launches (`metrics`).
- `reading`: locating and importing `ncu_report`, reading a report in a child process
  (`python -m kernel_opt.profile.ncu REPORT`, see `__main__`), grouping launches per kernel, and
  ncu's own rule results.

Import from the module that holds a name (`from kernel_opt.profile.ncu.reading import read_profile`);
this package re-exports nothing, so a test that patches a function patches the one in use.
"""
