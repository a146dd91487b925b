"""numba's `njit` as the project uses it: compiled once per checkout and cached beside the module
(`cache=True`), and free of the GIL while it runs (`nogil=True`), so a scheduler thread in compiled
code leaves the I/O thread running. numba ships no type hints: `jit` keeps a function's Python
signature for mypy."""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar, cast

import numba
from numba.core.registry import CPUDispatcher

__all__ = ["jit", "uncached"]

_Fn = TypeVar("_Fn", bound=Callable[..., Any])
jit = cast(Callable[[_Fn], _Fn], numba.njit(cache=True, nogil=True))


def uncached(*modules: ModuleType) -> bool:
    """Whether some kernel of these modules has no index in numba's cache yet, so that its first call
    compiles (seconds on a small machine, where a cached load takes about one): callers say so before
    it starts. Reads numba's own cache locator (a private attribute; if numba moves it, this says
    uncached)."""
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher):
                index = getattr(
                    getattr(getattr(value, "_cache", None), "_cache_file", None), "_index_path", None
                )
                if not (isinstance(index, str) and os.path.exists(index)):
                    return True
    return False
