"""Timing, statistics, ceilings, roofline placement and the verdict of a comparison."""
