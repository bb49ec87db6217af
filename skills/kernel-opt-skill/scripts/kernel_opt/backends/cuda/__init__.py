"""CUDA C++ solutions: nvcc builds, the solve() signature, ctypes launches."""
