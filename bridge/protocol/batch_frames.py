"""Batched motion frames: every row of one engine call in one message (docs/protocol.md section 5.3).

The bridge keeps a call's motion frames as columns (`MotionColumns`, one row per frame). Publishing
turns the columns into one `batch/<pipeline>` message (`encode_batch`: each column one msgpack `bin`,
no per-row work) and, only for sessions someone subscribes to, into per-session `frame/<session>`
payloads (`MotionColumns.frames`, the fixed-layout encoder of bridge.protocol.motion_frames).
`ColumnFrames` is one session's rows of such columns, encoded on demand, so a pipeline can hand its
frames over without encoding any. `decode_batch` reads a batch message into typed views of its bins.

Batch groups: a session opened with the `batch_group` option has its rows published only on its
group's topic `batch/<pipeline>/<group>/` (the trailing slash: a subscription to group `g1` never
matches `g10`); rows of sessions without a group stay on `batch/<pipeline>`. A subscriber to
`batch/<pipeline>` or `batch/` (a prefix of both) still receives every row once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from bridge.protocol.codec import ProtocolError, pack, require, unpack_map
from bridge.protocol.errors import ErrorCode
from bridge.protocol.frames import SMPL_JOINTS, FrameHeader, MotionFrame
from bridge.protocol.motion_frames import encode_motion_frames
from bridge.protocol.versions import PROTOCOL_VERSION, SESSION_ID_LENGTH

__all__ = [
    "BATCH_GROUP_OPTION",
    "BATCH_MINOR",
    "BATCH_TOPIC_PREFIX",
    "MAX_BATCH_GROUP_CHARS",
    "MAX_BATCH_TOPIC_BYTES",
    "ColumnFrames",
    "MotionBatch",
    "MotionColumns",
    "batch_topic",
    "check_batch_group",
    "decode_batch",
    "encode_batch",
    "motion_columns",
]

BATCH_TOPIC_PREFIX = b"batch/"
BATCH_MINOR = 1  # protocol minor version that added batched frames
_SESSION = np.dtype(f"S{SESSION_ID_LENGTH}")
# Bytes per row of each column, in the order the encoder writes them.
_ROW_BYTES = {
    "session": SESSION_ID_LENGTH,
    "seq": 8,
    "input_seq": 8,
    "t_capture_ns": 8,
    "joints": SMPL_JOINTS * 4 * 4,
    "root": 3 * 4,
}


BATCH_GROUP_OPTION = "batch_group"  # the `open` option naming a session's batch group
MAX_BATCH_GROUP_CHARS = 16
_GROUP = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_BATCH_GROUP_CHARS}}}")


def batch_topic(pipeline: str, group: str | bytes = "") -> bytes:
    """`batch/<pipeline>`, or a group's `batch/<pipeline>/<group>/`."""
    topic = BATCH_TOPIC_PREFIX + pipeline.encode()
    if not group:
        return topic
    return b"%s/%s/" % (topic, group.encode() if isinstance(group, str) else group)


# The longest batch topic (motion is the only pipeline batched in protocol 1.1).
MAX_BATCH_TOPIC_BYTES = len(batch_topic("motion", "g" * MAX_BATCH_GROUP_CHARS))


NEW_BATCH_GROUP = "*"  # `batch_group: true`: the bridge makes an unguessable group (no name has a "*")


def check_batch_group(value: object) -> str:
    """A `batch_group` option's value, checked: 1-16 characters of [A-Za-z0-9_-], or `true` for a new
    group the bridge names (NEW_BATCH_GROUP); BAD_TYPE for another type, BAD_VALUE for another string."""
    if value is True:
        return NEW_BATCH_GROUP
    if not isinstance(value, str):
        raise ProtocolError(ErrorCode.BAD_TYPE, f"option '{BATCH_GROUP_OPTION}' must be a string or true")
    if not _GROUP.fullmatch(value):
        raise ProtocolError(
            ErrorCode.BAD_VALUE,
            f"option '{BATCH_GROUP_OPTION}' must be 1-{MAX_BATCH_GROUP_CHARS} characters of A-Z a-z 0-9 _ -, "
            f"got '{value[: MAX_BATCH_GROUP_CHARS + 8]}'",
        )
    return value


@dataclass(frozen=True)
class MotionColumns:
    """Motion frames of one engine call as columns: row r is frame `seq[r]` of session `session[r]`."""

    session: np.ndarray  # (n,) S16, ASCII ids
    seq: np.ndarray  # (n,) uint64
    input_seq: np.ndarray  # (n,) uint64
    t_capture_ns: np.ndarray  # (n,) int64
    joints: np.ndarray  # (n, 24, 4) float32, xyzw
    root: np.ndarray  # (n, 3) float32, metres
    engine_us: float
    batch: int  # sessions (or padded tier) of the engine call

    def __len__(self) -> int:
        return len(self.session)

    def take(self, rows: npt.NDArray[np.bool_] | npt.NDArray[np.intp] | slice) -> MotionColumns:
        """The selected rows (a mask, indices or a slice), in order."""
        return MotionColumns(
            self.session[rows],
            self.seq[rows],
            self.input_seq[rows],
            self.t_capture_ns[rows],
            self.joints[rows],
            self.root[rows],
            self.engine_us,
            self.batch,
        )

    @staticmethod
    def concat(parts: Sequence[MotionColumns]) -> MotionColumns:
        """Rows of several calls' columns in one (engine_us and batch of the first)."""
        if len(parts) == 1:
            return parts[0]
        column = {name: np.concatenate([getattr(p, name) for p in parts]) for name in _ROW_BYTES}
        return MotionColumns(**column, engine_us=parts[0].engine_us, batch=parts[0].batch)

    def frames(self) -> list[bytes]:
        """One `frame/<session>` payload per row, in row order."""
        if not len(self):
            return []
        return encode_motion_frames(
            self.session,
            self.seq,
            self.input_seq,
            self.t_capture_ns,
            joints=self.joints,
            root=self.root,
            engine_us=self.engine_us,
            batch=self.batch,
        )


def motion_columns(
    sessions: Sequence[str],
    seqs: npt.ArrayLike,
    input_seqs: npt.ArrayLike,
    t_capture_ns: npt.ArrayLike,
    *,
    joints: np.ndarray,
    root: np.ndarray,
    engine_us: float,
    batch: int,
) -> MotionColumns:
    """Columns of one row per frame (the arguments of `encode_motion_frames`), checked and typed."""
    n = len(sessions)
    ids = "".join(sessions).encode()
    if len(ids) != n * SESSION_ID_LENGTH or not ids.isascii():
        raise ValueError(f"session ids must be {SESSION_ID_LENGTH} ASCII characters")
    return MotionColumns(
        np.frombuffer(ids, _SESSION),
        np.asarray(seqs, np.uint64).reshape(n),
        np.asarray(input_seqs, np.uint64).reshape(n),
        np.asarray(t_capture_ns, np.int64).reshape(n),
        np.asarray(joints, np.float32).reshape(n, SMPL_JOINTS, 4),
        np.asarray(root, np.float32).reshape(n, 3),
        float(engine_us),
        int(batch),
    )


class ColumnFrames(Sequence[bytes]):
    """One session's frames: rows [start, stop) of a call's shared columns, encoded only when read.

    Publishing reads `columns` directly (one batch message for all sessions, per-session payloads
    only for the sessions someone subscribes to); indexing encodes (the tests' and tools' view)."""

    def __init__(self, columns: MotionColumns, start: int, stop: int) -> None:
        self.columns, self.start, self.stop = columns, start, stop

    def __len__(self) -> int:
        return self.stop - self.start

    @overload
    def __getitem__(self, index: int) -> bytes: ...
    @overload
    def __getitem__(self, index: slice) -> list[bytes]: ...
    def __getitem__(self, index: int | slice) -> bytes | list[bytes]:
        rows = range(self.start, self.stop)[index]
        if isinstance(rows, int):
            return self.columns.take(slice(rows, rows + 1)).frames()[0]
        return self.columns.take(slice(rows.start, rows.stop, rows.step)).frames()

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.columns.take(slice(self.start, self.stop)).frames())


def encode_batch(
    pipeline: str, columns: MotionColumns, t_publish_ns: int, group: str = "", rows: slice | None = None
) -> bytes:
    """One batch message payload: the keys of section 5.3 in their order, every column one bin; a
    group's message ends with its `group` (a message without one is unchanged). `rows`: only that
    contiguous run of rows (a group's, of columns sorted by group), without building its columns."""
    r = slice(None) if rows is None else rows
    message: dict[str, Any] = {
        "op": "frames",
        "v": PROTOCOL_VERSION,
        "minor": BATCH_MINOR,
        "pipeline": pipeline,
        "rows": len(columns) if rows is None else len(range(*rows.indices(len(columns)))),
        "t_publish_ns": t_publish_ns,
        "engine_us": float(columns.engine_us),
        "batch": columns.batch,
        "session": columns.session[r].tobytes(),
        "seq": columns.seq[r].astype("<u8", copy=False).tobytes(),
        "input_seq": columns.input_seq[r].astype("<u8", copy=False).tobytes(),
        "t_capture_ns": columns.t_capture_ns[r].astype("<i8", copy=False).tobytes(),
        "joints": columns.joints[r].astype("<f4", copy=False).tobytes(),
        "root": columns.root[r].astype("<f4", copy=False).tobytes(),
    }
    if group:
        message["group"] = group
    return pack(message)


@dataclass(frozen=True)
class MotionBatch:
    """A decoded batch message: read-only views of its bins, one row per frame."""

    pipeline: str
    minor: int
    t_publish_ns: int
    engine_us: float
    batch: int
    session: np.ndarray  # (n,) S16
    seq: np.ndarray  # (n,) <u8
    input_seq: np.ndarray  # (n,) <u8
    t_capture_ns: np.ndarray  # (n,) <i8
    joints: np.ndarray  # (n, 24, 4) <f4
    root: np.ndarray  # (n, 3) <f4
    group: str = ""  # the batch group of a group's message; "" on `batch/<pipeline>`

    def __len__(self) -> int:
        return len(self.session)

    def sessions(self) -> list[str]:
        return [s.decode() for s in self.session.tolist()]

    def frames(self) -> list[MotionFrame]:
        """Each row as the `frame/<session>` motion frame it means (views into the message)."""
        return [
            MotionFrame(
                FrameHeader(sid, seq, input_seq, capture, self.t_publish_ns, self.engine_us, self.batch),
                self.joints[r],
                self.root[r],
            )
            for r, (sid, seq, input_seq, capture) in enumerate(
                zip(
                    self.sessions(),
                    self.seq.tolist(),
                    self.input_seq.tolist(),
                    self.t_capture_ns.tolist(),
                    strict=True,
                )
            )
        ]


def decode_batch(payload: bytes) -> MotionBatch:
    """Decode and check one batch message (the second part of a `batch/` message); ProtocolError if it
    is malformed (a bin of the wrong length drops the whole message). Unknown keys are ignored."""
    m = unpack_map(payload)
    what = "batch"
    if require(m, "op", str, what) != "frames":
        raise ProtocolError(ErrorCode.BAD_VALUE, "batch: op must be 'frames'")
    if require(m, "v", int, what) != PROTOCOL_VERSION:
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, f"batch: version {m['v']} not supported")
    pipeline = require(m, "pipeline", str, what)
    if pipeline != "motion":
        raise ProtocolError(ErrorCode.BAD_VALUE, f"batch: unknown pipeline '{pipeline}'")
    rows = require(m, "rows", int, what)
    if rows < 1:
        raise ProtocolError(ErrorCode.BAD_VALUE, f"batch: rows must be at least 1, got {rows}")
    bins: dict[str, Any] = {}
    for key, size in _ROW_BYTES.items():
        blob = require(m, key, bytes, what)
        if len(blob) != rows * size:
            raise ProtocolError(
                ErrorCode.MALFORMED, f"batch: '{key}' has {len(blob)} bytes, {rows} rows need {rows * size}"
            )
        bins[key] = blob
    group = m.get("group", "")
    if not isinstance(group, str):
        raise ProtocolError(ErrorCode.BAD_TYPE, "batch: 'group' must be a string")
    return MotionBatch(
        pipeline=pipeline,
        minor=require(m, "minor", int, what),
        t_publish_ns=require(m, "t_publish_ns", int, what),
        engine_us=float(require(m, "engine_us", (float, int), what)),
        batch=require(m, "batch", int, what),
        session=np.frombuffer(bins["session"], _SESSION),
        seq=np.frombuffer(bins["seq"], "<u8"),
        input_seq=np.frombuffer(bins["input_seq"], "<u8"),
        t_capture_ns=np.frombuffer(bins["t_capture_ns"], "<i8"),
        joints=np.frombuffer(bins["joints"], "<f4").reshape(rows, SMPL_JOINTS, 4),
        root=np.frombuffer(bins["root"], "<f4").reshape(rows, 3),
        group=group,
    )
