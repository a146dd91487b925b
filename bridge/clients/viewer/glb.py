"""A small glTF 2.0 binary (GLB) builder: one buffer, typed accessors, JSON chunk, written by hand.

The default avatar (bridge.clients.viewer.avatar) is the only writer. It needs float/int vertex accessors,
morph targets and a skin; nothing here is specific to VRM.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import numpy as np
import numpy.typing as npt

# glTF componentType codes and the accessor type for each column count.
_COMPONENT = {
    np.dtype(np.float32): 5126,
    np.dtype(np.uint8): 5121,
    np.dtype(np.uint16): 5123,
    np.dtype(np.uint32): 5125,
}
_TYPE = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}
ARRAY_BUFFER = 34962
ELEMENT_ARRAY_BUFFER = 34963


class GlbBuilder:
    """Collects binary data and the glTF JSON; `to_bytes()` makes the .glb (or .vrm) file."""

    def __init__(self) -> None:
        self.gltf: dict[str, Any] = {
            "asset": {"version": "2.0", "generator": "avatar-bridge"},
            "buffers": [],
            "bufferViews": [],
            "accessors": [],
        }
        self._blob = bytearray()

    def accessor(
        self,
        data: npt.NDArray[Any],
        *,
        target: int | None = None,
        min_max: bool = False,
        normalized: bool = False,
    ) -> int:
        """Add `data` (rows × columns, or a vector) as one accessor with its own buffer view."""
        array = np.ascontiguousarray(data)
        columns = 1 if array.ndim == 1 else int(array.shape[1])
        while len(self._blob) % 4:
            self._blob.append(0)
        view: dict[str, Any] = {"buffer": 0, "byteOffset": len(self._blob), "byteLength": array.nbytes}
        if target is not None:
            view["target"] = target
        self._blob += array.tobytes()
        self.gltf["bufferViews"].append(view)
        accessor: dict[str, Any] = {
            "bufferView": len(self.gltf["bufferViews"]) - 1,
            "componentType": _COMPONENT[array.dtype],
            "count": int(array.shape[0]),
            "type": _TYPE[columns],
        }
        if normalized:
            accessor["normalized"] = True
        if min_max:
            rows = array.reshape(array.shape[0], columns)
            accessor["min"] = [float(v) for v in rows.min(axis=0)]
            accessor["max"] = [float(v) for v in rows.max(axis=0)]
        self.gltf["accessors"].append(accessor)
        return len(self.gltf["accessors"]) - 1

    def add(self, key: str, item: dict[str, Any]) -> int:
        """Append `item` to the top-level array `key` (nodes, meshes, ...) and return its index."""
        items: list[dict[str, Any]] = self.gltf.setdefault(key, [])
        items.append(item)
        return len(items) - 1

    def to_bytes(self) -> bytes:
        while len(self._blob) % 4:
            self._blob.append(0)
        self.gltf["buffers"] = [{"byteLength": len(self._blob)}]
        text = json.dumps(self.gltf, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 4)  # the JSON chunk is padded with spaces
        length = 12 + 8 + len(text) + 8 + len(self._blob)
        return b"".join(
            (
                struct.pack("<4sII", b"glTF", 2, length),
                struct.pack("<I4s", len(text), b"JSON"),
                text,
                struct.pack("<I4s", len(self._blob), b"BIN\0"),
                bytes(self._blob),
            )
        )
