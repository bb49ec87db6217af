"""Triton solutions: a .py defining run_kernel(**kwargs), run in Python (interpreted without a GPU)."""
