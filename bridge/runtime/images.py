"""Image inputs fed as bytes.

An engine's image input, a 4-D float32 tensor `[N, 3, H, W]` in [0, 1] (RGB planes), also takes the
batch as `[N, H, W, 3]` uint8, the layout crops and camera frames come in, a quarter of the bytes. A
backend that `converts_uint8_images` (torch: on the device, after the copy) gets the bytes as they are;
for the others the engine converts them on the host with `rgb_planes`, so every backend computes on
the same values.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["SCALE", "is_image_input", "rgb_planes"]

SCALE = np.float32(1.0 / 255.0)  # byte -> [0, 1], the same float32 factor on every backend


def is_image_input(dtype: str, shape: tuple[int | str, ...]) -> bool:
    """Whether a manifest input is an image that may be fed as uint8: float32 `[N, 3, H, W]`."""
    return dtype == "float32" and len(shape) == 4 and shape[1] == 3


def rgb_planes(rgb: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """`[N, H, W, 3]` uint8 -> `[N, 3, H, W]` float32 in [0, 1]."""
    out = np.empty((rgb.shape[0], 3, *rgb.shape[1:3]), np.float32)
    np.multiply(rgb.transpose(0, 3, 1, 2), SCALE, out=out)
    return out
