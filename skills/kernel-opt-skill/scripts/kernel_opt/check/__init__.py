"""Correctness: the solution against the reference on fresh inputs, every shape and seed."""
