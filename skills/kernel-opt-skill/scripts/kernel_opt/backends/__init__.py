"""Kernel languages (CUDA, Triton, ...) as plugins: one folder each, with its build, launch and static analysis.

The interface they implement (`Backend`, and the `Launcher` a backend loads in the child
process) is kernel_opt/solution/backend.py; kernel_opt/solution/registry.py finds them by
scanning this folder and answers "which backend is this file?". Every tool asks the registry
rather than comparing backend names, and no module outside this folder imports a backend.

Adding a backend: a new folder here, `<name>/backend.py`, that defines a `Backend` subclass and
`BACKEND = ThatBackend()` (heavy imports such as torch inside its methods), plus its tests; the
registry finds it, and argparse choices, detection, the correctness check, the benchmark,
static analysis, profiling suggestions with links into its guide, and the experience log follow.
tests/unit/solution/test_registry.py plugs a toy backend in this way.
"""
