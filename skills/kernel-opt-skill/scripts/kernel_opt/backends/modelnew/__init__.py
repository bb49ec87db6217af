"""KernelBench ModelNew solutions: a .py defining class ModelNew, checked against a KernelBench problem file."""
