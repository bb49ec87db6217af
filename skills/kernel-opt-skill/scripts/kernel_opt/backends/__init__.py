"""Kernel languages (CUDA, Triton, ...): how each is detected, built, loaded, called and analysed.

base.py is the interface (`Backend`, and the `Launcher` a backend loads in the child process);
registry.py finds the backends and answers "which backend is this file?". Every tool asks the
registry rather than comparing backend names.

Adding a backend: a new folder here, `<name>/backend.py`, that defines a `Backend` subclass and
`BACKEND = ThatBackend()` (heavy imports such as torch inside its methods), plus its tests; the
registry finds it, and argparse choices, detection, the correctness check, the benchmark,
static analysis, profiling suggestions with links into its guide, and the experience log follow.
tests/test_backends.py plugs a toy backend in this way.
"""
