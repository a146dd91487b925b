"""Which optimization profile (shape tier) serves a batch, and what batch it runs at: pure logic, shared by
every lane. The tiers are the PLAN's (its manifest's profiles: what the plan was built with, which may be a
subset of the ONNX manifest's, or tiers given by flags), never the ONNX manifest's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from bridge.runtime.manifest import Profile

__all__ = ["batch_tiers", "padded_tier", "select_tier"]

Shapes = Mapping[str, tuple[int, ...]]


def _fits(profile: Profile, shapes: Shapes) -> bool:
    for name, (mn, _, mx) in profile.shapes.items():
        shape = shapes.get(name)
        if shape is None or len(shape) != len(mn):
            return False
        if any(not a <= s <= b for a, s, b in zip(mn, shape, mx, strict=True)):
            return False
    return True


def _tightest(profiles: Sequence[Profile], shapes: Shapes) -> int | None:
    """Tightest = smallest max volume: kernels were tuned for that tier's opt, nearer small batches."""
    fitting = [i for i, p in enumerate(profiles) if _fits(p, shapes)]
    if not fitting:
        return None
    return min(fitting, key=lambda i: sum(int(np.prod(mx)) for _, _, mx in profiles[i].shapes.values()))


def _no_tier(profiles: Sequence[Profile], shapes: Shapes) -> ValueError:
    tiers = "; ".join(
        f"{p.name}: " + ", ".join(f"{t} {list(mn)}..{list(mx)}" for t, (mn, _, mx) in p.shapes.items())
        for p in profiles
    )
    got = ", ".join(f"{t} {list(s)}" for t, s in shapes.items())
    return ValueError(f"no shape tier of the plan holds this batch ({got}); tiers: {tiers}")


def select_tier(profiles: Sequence[Profile], shapes: Shapes) -> int:
    """Index of the tightest tier whose [min, max] holds every input shape.

    A plan without tiers (a fully static model) has the single implicit profile 0.
    """
    if not profiles:
        return 0
    tier = _tightest(profiles, shapes)
    if tier is None:
        raise _no_tier(profiles, shapes)
    return tier


def batch_tiers(profiles: Sequence[Profile]) -> tuple[int, ...]:
    """The batch sizes the plan's tiers end at, ascending (what the scheduler cuts calls to)."""
    return tuple(sorted({p.max_batch for p in profiles}))


def padded_tier(
    profiles: Sequence[Profile], shapes: Shapes, batch: int, batch_axes: Mapping[str, int]
) -> tuple[int, int]:
    """(tier, batch to run at) for a batch of `batch` rows: the tightest tier holding the shapes as they
    are, else the smallest tier batch above `batch` whose tier holds the shapes padded to it (a static
    tier, min = max, holds one batch size only: per-tier plans of fixed tiers need this). `batch_axes`
    gives each tensor's batch axis (0 unless named)."""
    if not profiles:
        return 0, batch
    tier = _tightest(profiles, shapes)
    if tier is not None:
        return tier, batch
    for size in batch_tiers(profiles):
        if size <= batch:
            continue
        padded = {}
        for name, shape in shapes.items():
            axis = batch_axes.get(name, 0)
            padded[name] = (*shape[:axis], size, *shape[axis + 1 :])
        tier = _tightest(profiles, padded)
        if tier is not None:
            return tier, size
    raise _no_tier(profiles, shapes)
