"""Nsight Compute, in three parts that must agree on the metric names they share.

- `collection`: the ncu command line (a pure function), running ncu, its failure messages, the
  profiled program's environment.
- `metrics`: the canonical metrics (`METRIC_ALIASES`), the stall families, `KernelMetrics`, and the
  pure conversion from raw ncu metrics to canonical ones.
- `reading`: locating and importing `ncu_report`, reading a report in a child process
  (`python -m kernel_opt.profile.ncu REPORT`, see `__main__`), grouping launches per kernel, and
  ncu's own rule results.

Import from the module that holds a name (`from kernel_opt.profile.ncu.reading import read_profile`);
this package re-exports nothing, so a test that patches a function patches the one in use.
"""
