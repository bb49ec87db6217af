"""Size sweeps through nsight-python: `ncu_profile.py --sweep N=1024,2048,4096,8192`.

The solution and PyTorch eager (as the benchmark times it) are profiled at each size, each in its own
nsight-python annotation, on the inputs ref.py's setup(seed=0) makes; each size is checked for
correctness first, and a size that fails is never charted.

- `plan`: the `--sweep` argument checked against ref.py, what nsight-python is asked to collect,
  the child's command line and the paths nsight-python passes through a shell (pure).
- `nsight_child`: the program run as a file (nsight-python re-runs it under ncu); its sweep side
  never imports torch, its profiled side never imports ncu_report.
- `frame`: nsight-python's DataFrame, read back from its CSV (the csv module; no pandas needed).
- `records`: the sweep's record (sweep.json) and how each size's numbers are computed from the
  frame, the work counts and the ceilings (pure).
- `report`: sweep.md's table and text; `chart`: sweep.png.
- `runner`: `sweep_solution`, the whole step as one library call.

Import from the module that holds a name; this package re-exports nothing.
"""
