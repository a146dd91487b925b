"""Deterministic construction: build modules under a private, seeded RNG."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import torch

T = TypeVar("T", bound=torch.nn.Module)


def seeded(factory: Callable[[], T], seed: int) -> T:
    """Call `factory` with the global torch RNG seeded to `seed`, restoring the caller's RNG after.

    Constructors and the models' `reset_reference_weights` draw from the global RNG; forking it keeps
    the weights a pure function of `seed` without disturbing the caller's random stream.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = factory()
    return module.eval()
