"""The toy's strategy advice: its guide, TOY.md beside this file, and the strategy it suggests per label."""

from __future__ import annotations

from pathlib import Path

from kernel_opt.profile.advice import StrategyAdvice


class ToyAdvice(StrategyAdvice):
    guide = str(Path(__file__).with_name("TOY.md"))  # an absolute path: the skill root joined with it is itself
    default_strategies = {"memory_bound": ("fuse_ops",), "small_grid": ()}


ADVICE = ToyAdvice()
