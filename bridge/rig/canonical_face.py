"""MediaPipe's canonical face mesh, read from `geometry_pipeline_metadata_landmarks.binarypb`.

The file is a protobuf `GeometryPipelineMetadata`: field 1 is the `Mesh3d` canonical mesh
(vertex_buffer = 3: x, y, z, u, v per vertex, centimetres, packed or not) and field 2 repeats
`WeightedLandmarkRef` (landmark_id = 1, weight = 2): the landmarks and weights of the Procrustes fit.
Three message types do not justify a generated-code dependency: a small wire-format reader does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class CanonicalMesh:
    vertices: npt.NDArray[np.float64]  # (468, 3) cm, Y up, facing +Z (the mesh without the irises)
    weights: npt.NDArray[np.float64]  # (468,) Procrustes weight per landmark (0 where unused)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varint and fixed32 (raw bits), bytes for length-delimited."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(data, pos)
            yield number, data[pos : pos + size]
            pos += size
        elif wire == 5:
            yield number, struct.unpack_from("<I", data, pos)[0]
            pos += 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire} (field {number})")


def _float(bits: int | bytes) -> float:
    value: float = struct.unpack("<f", struct.pack("<I", int(bits) if isinstance(bits, int) else 0))[0]
    return value


def parse_canonical_mesh(data: bytes) -> CanonicalMesh:
    refs: list[tuple[int, float]] = []
    floats: list[float] = []
    for number, value in _fields(data):
        if number == 2 and isinstance(value, bytes):
            ref = dict(_fields(value))
            refs.append((int(ref.get(1, 0)), _float(int(ref.get(2, 0)))))
        elif number == 1 and isinstance(value, bytes):
            for mesh_field, mesh_value in _fields(value):
                if mesh_field != 3:
                    continue
                if isinstance(mesh_value, bytes):  # packed
                    floats += np.frombuffer(mesh_value, "<f4").tolist()
                else:
                    floats.append(_float(mesh_value))
    vertices = np.array(floats, np.float64).reshape(-1, 5)[:, :3]
    weights = np.zeros(len(vertices))
    for index, weight in refs:
        weights[index] = weight
    if len(vertices) != 468 or not weights.any():
        raise ValueError(f"canonical mesh: {len(vertices)} vertices and {int((weights > 0).sum())} weights")
    return CanonicalMesh(vertices, weights)
