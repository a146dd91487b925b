"""JPEG image inputs' pixels: decoded where the input is prepared, encoded where a client sends one.

The header was read where the input arrived (bridge.protocol.jpeg). `decode` runs libjpeg-turbo
(simplejpeg's binding, which releases the GIL while it decodes) on a prepare thread, once the image is
known not to be superseded; its cost grows with the pixels the header announced, which the protocol
has already bounded.
"""

from __future__ import annotations

import numpy as np
import simplejpeg

from bridge.protocol.jpeg import JpegError, JpegHeader
from bridge.protocol.requests import ImageInput, JpegInput

__all__ = ["decode", "decoded", "encode"]


def decode(data: memoryview | bytes, header: JpegHeader) -> np.ndarray:
    """The RGB pixels (height, width, 3) uint8 of a JPEG whose header `read_header` returned; JpegError
    when the data is corrupt or truncated (libjpeg-turbo's warnings count as errors: a truncated file
    would otherwise decode to grey rows)."""
    try:
        pixels: np.ndarray = simplejpeg.decode_jpeg(data, colorspace="rgb", strict=True)
    except ValueError as exc:
        raise JpegError(f"corrupt or truncated: {str(exc)[:100]}") from None
    if pixels.shape != (header.height, header.width, 3):  # a second, different SOF the walk never read
        raise JpegError(f"decodes to {pixels.shape[1]}x{pixels.shape[0]}, its header says otherwise")
    return pixels


def encode(rgb: np.ndarray, quality: int) -> bytes:
    """A JPEG of an RGB (height, width, 3) uint8 image at `quality` (1..100), 4:2:0 as cameras and
    browsers write it: what the live sources and the harness send."""
    return bytes(simplejpeg.encode_jpeg(np.ascontiguousarray(rgb), quality=quality, colorsubsampling="420"))


def decoded(item: JpegInput) -> ImageInput:
    """The same input as RGB pixels (JpegError when the data is corrupt or truncated)."""
    pixels = decode(item.data, item.header)
    return ImageInput(item.id, item.session, item.seq, item.t_capture_ns, item.ack, pixels)
