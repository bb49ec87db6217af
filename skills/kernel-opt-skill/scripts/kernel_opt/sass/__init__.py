"""What a compiler produced, read from its binary: SASS and resource usage, the instruction mix, the report.

cuobjdump.py runs the disassembler and parses its two outputs; instruction_mix.py counts the
instructions that decide memory and math efficiency; report.py holds the per-kernel records,
their findings and the StaticReport. None of it needs a GPU. How a backend gets its binary
(nvcc for CUDA, a compile-only Triton launch) lives with the backend (`Backend.analyze`).
"""
