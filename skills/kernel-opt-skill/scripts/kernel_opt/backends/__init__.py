"""Kernel languages (CUDA, Triton, ...): how each is detected, built, loaded, called and analysed."""
