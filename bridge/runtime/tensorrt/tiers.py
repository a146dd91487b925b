"""Which optimization profile (shape tier) serves a batch: pure logic, shared by every slot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bridge.runtime.manifest import Profile

__all__ = ["select_tier"]


def _fits(profile: Profile, shapes: Mapping[str, tuple[int, ...]]) -> bool:
    for name, (mn, _, mx) in profile.shapes.items():
        shape = shapes.get(name)
        if shape is None or len(shape) != len(mn):
            return False
        if any(not a <= s <= b for a, s, b in zip(mn, shape, mx, strict=True)):
            return False
    return True


def select_tier(profiles: Sequence[Profile], shapes: Mapping[str, tuple[int, ...]]) -> int:
    """Index of the tightest tier whose [min, max] holds every input shape.

    Tightest = smallest max volume: kernels were tuned for that tier's opt, which is nearer small batches.
    A plan without tiers (a fully static model) has the single implicit profile 0.
    """
    if not profiles:
        return 0
    fitting = [i for i, p in enumerate(profiles) if _fits(p, shapes)]
    if not fitting:
        tiers = "; ".join(
            f"{p.name}: " + ", ".join(f"{t} {list(mn)}..{list(mx)}" for t, (mn, _, mx) in p.shapes.items())
            for p in profiles
        )
        got = ", ".join(f"{t} {list(s)}" for t, s in shapes.items())
        raise ValueError(f"no shape tier of the plan holds this batch ({got}); tiers: {tiers}")

    def volume(i: int) -> int:
        return sum(int(np.prod(mx)) for _, _, mx in profiles[i].shapes.values())

    return min(fitting, key=volume)
