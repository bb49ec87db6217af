"""A toy backend, whole in this folder: what adding a kernel language takes
(tests/unit/solution/test_registry.py plugs it in).

backend.py is the `Backend` (claims `.toy` files, loads and launches them); suggestions.py is its
strategy advice, with TOY.md as its guide. Registering it is one line,
`registry.register_module("toy_backend.backend")`; nothing in kernel_opt names it.
"""
