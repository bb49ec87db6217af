"""Which strategies of the experience log cannot run on the chip asked about (wgmma or TMA on an A100).

A lesson measured on a Hopper GPU about wgmma is no lesson for an Ampere one: the instruction does
not exist there. The backends' advice says which hardware each guide strategy is built on
(`StrategyAdvice.chip_features`); a strategy's own name says it for free-form ones (`fp8_inputs`);
profile/chip_features.py says which chips have what.
"""

from __future__ import annotations

from collections.abc import Iterable

from kernel_opt.profile.advice import advice_for
from kernel_opt.profile.chip_features import missing_feature, requirement_of
from kernel_opt.solution import registry


def strategy_features(backend: str | None) -> dict[str, str]:
    """Strategy -> the chip feature it is built on, from the asked backend's advice (every backend's when None)."""
    features: dict[str, str] = {}
    for name in [backend] if backend else registry.names():
        advice = advice_for(name)
        for source in (advice, advice_for(advice.strategies_from) if advice.strategies_from else None):
            if source is not None:
                features.update(source.chip_features)
    return features


def unavailable_strategies(strategies: Iterable[str], arch: str | None, backend: str | None) -> dict[str, str]:
    """Strategy -> why it cannot run on a chip of `arch` ("sm_80"), for each strategy that cannot; {} for no chip."""
    if arch is None:
        return {}
    features = strategy_features(backend)
    unavailable = {}
    for strategy in strategies:
        why = missing_feature(strategy, arch, features)
        if why is not None:
            unavailable[strategy] = why
    return unavailable


def chip_requirements(strategies: Iterable[str], backend: str | None) -> dict[str, str]:
    """Strategy -> the chip it needs ("needs wgmma (sm_9x only)"), for a question whose chip is not known (a run
    checked on a CPU): such a strategy is shown, with what to check on the GPU first."""
    features = strategy_features(backend)
    return {strategy: why for strategy in strategies if (why := requirement_of(strategy, features)) is not None}
