"""Nsight Compute profiles, SASS, and the bottleneck they point to."""
