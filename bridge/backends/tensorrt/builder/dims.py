"""TensorRT `Dims` <-> tuples. The bindings convert tuples to Dims implicitly; going back is explicit
(the generated type stubs, rightly, do not promise that Dims is iterable)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tensorrt_rtx as trt

__all__ = ["to_tuple"]


def to_tuple(dims: trt.Dims | tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(dims[i]) for i in range(len(dims)))
