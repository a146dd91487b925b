"""JPEG image inputs' pixels: decoded where the input is prepared, encoded where a client sends one.

The header was read where the input arrived (bridge.protocol.jpeg). `decode` runs libjpeg-turbo
(simplejpeg's binding, which releases the GIL while it decodes) on a prepare thread, once the image is
known not to be superseded; its cost grows with the pixels the header announced, which the protocol
has already bounded. `decode_batch` decodes a batch's JPEGs onto a torch device (the face tracker's
device path): on CUDA through nvJPEG (torchvision), else with `decode`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import simplejpeg

from bridge.protocol.jpeg import JpegError, JpegHeader
from bridge.protocol.requests import ImageInput, JpegInput

if TYPE_CHECKING:
    import torch

__all__ = ["decode", "decode_batch", "decoded", "encode"]

_EOI = b"\xff\xd9"


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


def decode_batch(items: Sequence[JpegInput], device: torch.device) -> list[torch.Tensor | JpegError]:
    """Each JPEG's RGB pixels (height, width, 3) uint8 on `device`, or the JpegError that says why not.

    On CUDA: one nvJPEG batch (`torchvision.io.decode_jpeg` on the device; torchvision imported here,
    only then). When the batch fails, one by one, so a bad frame fails only itself; a frame nvJPEG
    refuses, or one that does not end in its end-of-image marker (a truncated file nvJPEG might decode
    to grey rows), goes to libjpeg-turbo (`decode`), whose verdict stands, as on the CPU path. Elsewhere:
    `decode` each, then uploaded. No test here runs the CUDA branch (CI has no GPU and no torchvision):
    only bench/gpu.py's tracking scenario does, on the GPU machine."""
    import torch

    if device.type != "cuda":
        return [_on_host(item, device) for item in items]
    from torchvision.io import ImageReadMode, decode_jpeg

    whole = [i for i, item in enumerate(items) if bytes(item.data[-2:]) == _EOI]
    data = [torch.from_numpy(np.frombuffer(items[i].data, np.uint8).copy()) for i in whole]
    out: list[torch.Tensor | JpegError | None] = [None] * len(items)
    pixels: list[torch.Tensor | None] = []
    try:
        pixels = list(decode_jpeg(data, mode=ImageReadMode.RGB, device=device)) if data else []
    except (RuntimeError, ValueError, TypeError):  # one failed (or a torchvision before 0.19, no lists)
        for one in data:
            try:
                pixels.append(decode_jpeg(one, mode=ImageReadMode.RGB, device=device))
            except (RuntimeError, ValueError):  # refused by nvJPEG: libjpeg-turbo decides below
                pixels.append(None)
    for i, planes in zip(whole, pixels, strict=True):
        header = items[i].header
        if planes is not None and tuple(planes.shape) == (3, header.height, header.width):
            out[i] = planes.permute(1, 2, 0)
    return [r if r is not None else _on_host(items[i], device) for i, r in enumerate(out)]


def _on_host(item: JpegInput, device: torch.device) -> torch.Tensor | JpegError:
    import torch

    try:
        return torch.from_numpy(decode(item.data, item.header)).to(device)
    except JpegError as exc:
        return exc
