"""Which chips have the hardware a strategy is built on: wgmma, TMA, clusters, setmaxnreg, FP8, cp.async.

A strategy that needs a unit the chip lacks is not advice, it is a compile error: `wgmma` on an
A100, TMA tensor descriptors on an RTX 3090. The guides' advice and the experience log's
recommendations both ask `missing_feature` before they suggest a strategy. A strategy needs a
feature when its backend's advice says so (`StrategyAdvice.chip_features`: `pingpong_warpgroups`
is built on wgmma) or when its name says so (`fp8_inputs`, `cluster_reduce`: names typed into
the experience log).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

Capability = tuple[int, int]


@dataclass(frozen=True)
class ChipFeature:
    """A hardware feature and the compute capabilities that have it: [since, until)."""

    name: str
    since: Capability
    until: Capability | None  # the first capability without it again; None: every later one has it
    origin: str

    def available(self, capability: Capability) -> bool:
        return capability >= self.since and (self.until is None or capability < self.until)

    def requirement(self) -> str:
        """'sm_90 only', 'sm_89 or newer'."""
        since = f"sm_{self.since[0]}{self.since[1]}"
        if self.until is not None and self.until[0] == self.since[0] + 1 and self.until[1] == 0:
            return f"sm_{self.since[0]}x only"
        return f"{since} or newer" if self.until is None else f"{since} up to before sm_{self.until[0]}{self.until[1]}"


CHIP_FEATURES: dict[str, ChipFeature] = {
    feature.name: feature for feature in (
        ChipFeature("wgmma", (9, 0), (10, 0),
                    "PTX ISA: wgmma.mma_async needs sm_90a; Blackwell (sm_100, sm_120) has no wgmma and drives its "
                    "tensor cores with tcgen05 (CUDA.md, 'Newer chips')"),
        ChipFeature("TMA", (9, 0), None, "PTX ISA: cp.async.bulk.tensor and tensor maps need sm_90"),
        ChipFeature("thread-block clusters", (9, 0), None,
                    "CUDA programming guide: thread block clusters need compute capability 9.0"),
        ChipFeature("setmaxnreg", (9, 0), None, "PTX ISA: setmaxnreg needs sm_90a (and the later arch-specific "
                                                "targets)"),
        ChipFeature("FP8 tensor cores", (8, 9), None,
                    "PTX ISA: mma with .e4m3/.e5m2 operands needs sm_89 (Ada); Hopper's wgmma takes them on sm_90a"),
        ChipFeature("cp.async", (8, 0), None, "PTX ISA: cp.async needs sm_80"),
    )
}

# Words of a strategy's name that name a feature: the experience log's free-form strategies are gated too.
NAME_FEATURES: dict[str, str] = {
    "wgmma": "wgmma",
    "tma": "TMA",
    "cluster": "thread-block clusters",
    "clusters": "thread-block clusters",
    "setmaxnreg": "setmaxnreg",
    "fp8": "FP8 tensor cores",
}


def parse_capability(text: object) -> Capability | None:
    """'9.0', '8.9', 'sm_90', 'sm_90a', 'sm_100' -> (major, minor); None for anything else (unknown: nothing gated)."""
    if not isinstance(text, str):
        return None
    dotted = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", text)
    if dotted:
        return int(dotted.group(1)), int(dotted.group(2))
    arch = re.fullmatch(r"\s*(?:sm_|compute_)?(\d+)(\d)[a-z]?\s*", text.lower())
    if arch:
        return int(arch.group(1)), int(arch.group(2))
    return None


def features_of(strategy: str, named: Mapping[str, str] | None = None) -> list[str]:
    """The chip features a strategy needs: what its backend's advice names, then what its name's words say."""
    features = [named[strategy]] if named and strategy in named else []
    for word in re.split(r"[^a-z0-9]+", strategy.lower()):
        feature = NAME_FEATURES.get(word)
        if feature is not None and feature not in features:
            features.append(feature)
    return features


def missing_feature(strategy: str, capability: object, named: Mapping[str, str] | None = None) -> str | None:
    """Why `strategy` cannot run on a chip of `capability` ("9.0", "sm_80"), or None where it can (or nothing is known).

    Returns a sentence such as "needs wgmma (sm_9x only); this chip is sm_80".
    """
    parsed = parse_capability(capability) if not isinstance(capability, tuple) else capability
    if parsed is None:
        return None
    for name in features_of(strategy, named):
        feature = CHIP_FEATURES[name]
        if not feature.available(parsed):
            return f"needs {feature.name} ({feature.requirement()}); this chip is sm_{parsed[0]}{parsed[1]}"
    return None


def requirement_of(strategy: str, named: Mapping[str, str] | None = None) -> str | None:
    """What chip a strategy needs, for a question whose chip is not known: "needs wgmma (sm_9x only)"; None where it
    is built on nothing chip-specific beyond sm_80's cp.async."""
    needs = [CHIP_FEATURES[name] for name in features_of(strategy, named) if CHIP_FEATURES[name].since > (8, 0)]
    if not needs:
        return None
    return "needs " + ", ".join(f"{feature.name} ({feature.requirement()})" for feature in needs)
