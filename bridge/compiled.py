"""numba's `njit` as the project uses it: compiled once per checkout and cached beside the module
(`cache=True`), and free of the GIL while it runs (`nogil=True`), so a scheduler thread in compiled
code leaves the I/O thread running. numba ships no type hints: `jit` keeps a function's Python
signature for mypy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

__all__ = ["jit"]

_Fn = TypeVar("_Fn", bound=Callable[..., Any])
jit = cast(Callable[[_Fn], _Fn], numba.njit(cache=True, nogil=True))
