"""Check a user's VRM file before the viewer hands it to browsers.

The page parses the file itself (three-vrm); this check refuses what it should never be asked to:
an oversized file, something that is not a GLB, a glTF without a VRM extension (0.x `VRM` or 1.0
`VRMC_vrm`), references to anything outside the file (a URI other than `data:` would make the page
fetch from elsewhere), and buffer views or accessors that point past their data. What passes may
still fail in the page (a broken mesh); the page then shows the error and reports it to the log.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_AVATAR_BYTES = 64 * 1024 * 1024
_COMPONENT_BYTES = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}
_TYPE_COLUMNS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


class AvatarError(ValueError):
    """The avatar file cannot be used; the message says why."""


@dataclass(frozen=True)
class Avatar:
    path: Path
    data: bytes
    name: str  # from the VRM meta (1.0 `name`, 0.x `title`), or the file name
    vrm_version: str  # "1.0" or "0.x"


def load_avatar(path: Path) -> Avatar:
    """Read and check a VRM file; raises AvatarError."""
    try:
        size = path.stat().st_size
        if size > MAX_AVATAR_BYTES:
            raise AvatarError(f"{path}: {size} bytes, more than the {MAX_AVATAR_BYTES} allowed")
        data = path.read_bytes()
    except OSError as exc:
        raise AvatarError(f"{path}: {exc.strerror or exc}") from None
    gltf, binary_length = _glb_json(data, path)
    extensions = gltf.get("extensions")
    if not isinstance(extensions, dict) or not ({"VRMC_vrm", "VRM"} & extensions.keys()):
        raise AvatarError(f"{path}: a glTF without a VRM extension (VRMC_vrm or VRM)")
    _check_references(gltf, binary_length, path)
    version = "1.0" if "VRMC_vrm" in extensions else "0.x"
    meta = _mapping(extensions.get("VRMC_vrm") or extensions.get("VRM")).get("meta")
    name = _mapping(meta).get("name" if version == "1.0" else "title")
    return Avatar(path, data, str(name)[:200] if isinstance(name, str) and name else path.name, version)


def _glb_json(data: bytes, path: Path) -> tuple[dict[str, Any], int]:
    """The JSON chunk of a GLB, and the length of its binary chunk (0 when it has none)."""
    if len(data) < 20 or data[:4] != b"glTF":
        raise AvatarError(f"{path}: not a VRM file (no binary glTF header)")
    version, length = struct.unpack_from("<II", data, 4)
    if version != 2:
        raise AvatarError(f"{path}: glTF container version {version}, expected 2")
    if length != len(data):
        raise AvatarError(f"{path}: the header says {length} bytes, the file has {len(data)}")
    json_length, kind = struct.unpack_from("<I4s", data, 12)
    if kind != b"JSON" or 20 + json_length > len(data):
        raise AvatarError(f"{path}: the first chunk is not a complete JSON chunk")
    try:
        gltf = json.loads(data[20 : 20 + json_length])
    except (ValueError, RecursionError) as exc:
        raise AvatarError(f"{path}: its glTF JSON does not parse ({exc})") from None
    if not isinstance(gltf, dict):
        raise AvatarError(f"{path}: its glTF JSON is not an object")
    binary_length = 0
    at = 20 + json_length + (-json_length % 4)
    if at + 8 <= len(data):
        binary_length, kind = struct.unpack_from("<I4s", data, at)
        if kind != b"BIN\0" or at + 8 + binary_length > len(data):
            raise AvatarError(f"{path}: the second chunk is not a complete binary chunk")
    return gltf, binary_length


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(gltf: dict[str, Any], key: str, path: Path) -> list[dict[str, Any]]:
    items = gltf.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise AvatarError(f"{path}: '{key}' is not a list of objects")
    return items


def _count(value: Any, what: str, path: Path) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise AvatarError(f"{path}: {what} is not a non-negative integer")
    return value


def _check_references(gltf: dict[str, Any], binary_length: int, path: Path) -> None:
    for key in ("buffers", "images"):
        for i, item in enumerate(_items(gltf, key, path)):
            uri = item.get("uri")
            if uri is not None and not (isinstance(uri, str) and uri.startswith("data:")):
                raise AvatarError(f"{path}: {key}[{i}] refers to {str(uri)[:80]!r} outside the file")
    buffers = _items(gltf, "buffers", path)
    sizes = []
    for i, buffer in enumerate(buffers):
        length = _count(buffer.get("byteLength"), f"buffers[{i}].byteLength", path)
        if "uri" not in buffer and length > binary_length:
            raise AvatarError(f"{path}: buffers[{i}] is {length} bytes, the file holds {binary_length}")
        sizes.append(length)
    views = _items(gltf, "bufferViews", path)
    for i, view in enumerate(views):
        owner = _count(view.get("buffer"), f"bufferViews[{i}].buffer", path)
        offset = _count(view.get("byteOffset", 0), f"bufferViews[{i}].byteOffset", path)
        length = _count(view.get("byteLength"), f"bufferViews[{i}].byteLength", path)
        if owner >= len(sizes) or offset + length > sizes[owner]:
            raise AvatarError(f"{path}: bufferViews[{i}] reaches past its buffer")
    for i, accessor in enumerate(_items(gltf, "accessors", path)):
        count = _count(accessor.get("count"), f"accessors[{i}].count", path)
        element = _COMPONENT_BYTES.get(accessor.get("componentType", 0), 0) * _TYPE_COLUMNS.get(
            str(accessor.get("type")), 0
        )
        if not element:
            raise AvatarError(f"{path}: accessors[{i}] has an unknown component type or type")
        if "bufferView" not in accessor:
            continue  # all zeros (or sparse): nothing to read past
        view_index = _count(accessor["bufferView"], f"accessors[{i}].bufferView", path)
        if view_index >= len(views):
            raise AvatarError(f"{path}: accessors[{i}] names a missing buffer view")
        view = views[view_index]
        stride = view.get("byteStride", element)
        offset = _count(accessor.get("byteOffset", 0), f"accessors[{i}].byteOffset", path)
        needed = offset + (stride * (count - 1) + element if count else 0)
        if needed > view["byteLength"]:
            raise AvatarError(
                f"{path}: accessors[{i}] reads {needed} bytes of a {view['byteLength']}-byte view"
            )
