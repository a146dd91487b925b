"""Deterministic construction: build modules under a private, seeded RNG."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, Self, TypeVar

import torch


class _ReferenceModel(Protocol):
    def reset_reference_weights(self) -> None: ...
    def eval(self) -> Self: ...


T = TypeVar("T", bound=_ReferenceModel)


def seeded(factory: Callable[[], T], seed: int) -> T:
    """Build with `factory` and draw its reference weights (`reset_reference_weights`) with the global
    torch RNG seeded to `seed`, restoring the caller's RNG after.

    Constructors and the models' `reset_reference_weights` draw from the global RNG; forking it keeps
    the weights a pure function of `seed` without disturbing the caller's random stream.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = factory()
        module.reset_reference_weights()
    return module.eval()
