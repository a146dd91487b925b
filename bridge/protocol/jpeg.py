"""JPEG image inputs' headers: read where the input arrives, before anything is queued or decoded.

`read_header` walks the marker segments up to the frame header (SOF) in pure Python: at most
MAX_HEADER_SEGMENTS segments, no allocation, a few microseconds, so the I/O thread can afford it for
every input and refuse a bomb (huge dimensions in a small file) or a file that is not a JPEG. The
pixels are decoded later, on a prepare thread (bridge.vision.jpeg).

Accepted: 8-bit baseline, extended and progressive Huffman JPEGs (SOF0, SOF1, SOF2: what cameras,
browsers and game engines write), grey or three-component (YCbCr) colour; every other process
(lossless, arithmetic, hierarchical, 12-bit) and CMYK are refused with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_HEADER_SEGMENTS = 64  # a camera's JPEG has < 10 before its SOF (APPn, DQT, DHT); a walk is bounded
_SUPPORTED_SOF = {0xC0: "baseline", 0xC1: "extended", 0xC2: "progressive"}
# Every other SOFn (lossless, arithmetic, hierarchical); C4 (DHT), C8 (JPG) and CC (DAC) are not frames.
_OTHER_SOF = frozenset({0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM, RSTn: markers without a length
_SOI, _EOI, _SOS = 0xD8, 0xD9, 0xDA


class JpegError(ValueError):
    """The bytes are not a JPEG the bridge decodes: not a JPEG at all, corrupt, truncated, or of a
    kind it does not take. The message says which, in a few words."""


@dataclass(frozen=True)
class JpegHeader:
    width: int
    height: int
    components: int  # 1 grey, 3 colour
    process: str  # "baseline", "extended" or "progressive"


def read_header(data: memoryview | bytes) -> JpegHeader:
    """The frame header of a JPEG (JpegError when there is none in its first MAX_HEADER_SEGMENTS
    segments, or it is one the bridge does not decode). Reads no byte past the frame header."""
    view = memoryview(data).cast("B") if isinstance(data, memoryview) else memoryview(data)
    n = len(view)
    if n < 4 or view[0] != 0xFF or view[1] != _SOI:
        raise JpegError("not a JPEG (no start-of-image marker)")
    pos = 2
    for _ in range(MAX_HEADER_SEGMENTS):
        if pos + 4 > n:
            raise JpegError("truncated before its frame header")
        if view[pos] != 0xFF:
            raise JpegError(f"corrupt: no marker at byte {pos}")
        marker = view[pos + 1]
        if marker == 0xFF:  # fill byte before a marker
            pos += 1
            continue
        if marker in _STANDALONE:
            pos += 2
            continue
        if marker in (_SOI, _EOI, _SOS):
            raise JpegError(f"corrupt: marker 0x{marker:02X} before the frame header")
        length = view[pos + 2] << 8 | view[pos + 3]
        if length < 2:
            raise JpegError(f"corrupt: segment of length {length} at byte {pos}")
        if marker in _SUPPORTED_SOF:
            return _frame_header(view, pos, length, _SUPPORTED_SOF[marker])
        if marker in _OTHER_SOF:
            raise JpegError(
                f"JPEG process SOF{marker - 0xC0} not supported (baseline, extended or progressive only)"
            )
        pos += 2 + length
    raise JpegError(f"no frame header in its first {MAX_HEADER_SEGMENTS} segments")


def _frame_header(view: memoryview, pos: int, length: int, process: str) -> JpegHeader:
    if length < 8 or pos + 2 + length > len(view):
        raise JpegError("truncated in its frame header")
    precision = view[pos + 4]
    height = view[pos + 5] << 8 | view[pos + 6]
    width = view[pos + 7] << 8 | view[pos + 8]
    components = view[pos + 9]
    if precision != 8:
        raise JpegError(f"{precision}-bit samples not supported (8-bit only)")
    if width == 0 or height == 0:  # a height of 0 defers it to a DNL marker, which nobody writes
        raise JpegError(f"frame header of {width}x{height} pixels")
    if components not in (1, 3):
        raise JpegError(f"{components} colour components not supported (grey or YCbCr)")
    return JpegHeader(width, height, components, process)
