"""Which strategies of the experience log are another backend's levers, not the asked backend's.

A record says `wgmma` helped a CUDA kernel; a Triton kernel cannot issue wgmma itself (its tl.dot
chooses the instruction), and TRITON.md has no such section. Each backend's guide lists its levers
as strategy sections, so a strategy that only another backend's guide has is left out of that
question's recommendations, with the reason; one that no guide names (typed freely into the log)
is kept, and so is every strategy where the asked backend has no guide.
"""

from __future__ import annotations

from collections.abc import Iterable

from kernel_opt.profile.guides import guide_anchors, guide_path, guide_strategies
from kernel_opt.solution import registry


def foreign_strategies(strategies: Iterable[str], backend: str | None) -> dict[str, str]:
    """Strategy -> why it is not a lever of `backend` (another backend's guide has it, this one's has not)."""
    if backend is None or not guide_strategies(backend):
        return {}
    own = set(guide_anchors(backend))  # its strategy sections and its other headings (fuse_kernels, the labels)
    elsewhere = {name: other for other in registry.names() if other != backend
                 for name in guide_strategies(other)}
    return {strategy: f"a {elsewhere[strategy]} strategy ({guide_path(elsewhere[strategy])}): "
                      f"{guide_path(backend)} has no such lever"
            for strategy in strategies if strategy in elsewhere and strategy not in own}
