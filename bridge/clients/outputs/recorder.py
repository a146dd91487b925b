"""The frame log: every PUB message (frames and events) exactly as received, with receive times.

File format: a plain concatenation of msgpack maps. The first is the header
``{"format": "avatar-bridge-log", "version": 1, "t_start_ns": int, "source": str}``; each following
one is ``{"t": int, "topic": str, "payload": bin}`` - the router's wall clock when the message
arrived (int64 ns since the Unix epoch), the PUB topic and the untouched payload. Keeping payloads
byte-for-byte lets replay republish them unchanged and lets any msgpack reader decode them with
docs/protocol.md alone.

Reading a log trusts nothing in it: every length is bounded by the file's real size and by what the
bridge ever writes (a record of at most MAX_RECORD_BYTES, no arrays, a few keys), `t` must be an int64,
and anything else is a LogError naming the record, so a damaged or hostile 2 KB file costs kilobytes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import msgpack

from bridge.clients.outputs.router import Output, Received
from bridge.clients.outputs.session import ObservedSessions, SessionInfo
from bridge.protocol import Frame, ProtocolError, decode_frame
from bridge.protocol.events import SessionEvent, decode_event
from bridge.protocol.versions import EVENT_TOPIC_PREFIX, FRAME_TOPIC_PREFIX

log = logging.getLogger(__name__)

MAX_RECORD_BYTES = 64 * 1024 * 1024  # far above any PUB message the bridge sends
INT64_MAX = 2**63 - 1
LOG_FORMAT = "avatar-bridge-log"
LOG_VERSION = 1
FLUSH_EVERY_S = 1.0  # bound what a crash can lose without a write call per frame


class Recorder(Output):
    """Write every frame and event the router sees to a frame log."""

    keep_all = True

    def __init__(self, path: str | Path, source: str = "") -> None:
        self.name = f"record:{path}"
        self.path = Path(path)
        self.records = 0
        self._file: BinaryIO = self.path.open("wb")  # fail now, in the caller, if the path is bad
        self._packer = msgpack.Packer(use_bin_type=True)
        header = {
            "format": LOG_FORMAT,
            "version": LOG_VERSION,
            "t_start_ns": time.time_ns(),
            "source": source,
        }
        self._file.write(self._packer.pack(header))
        self._last_flush = time.monotonic()

    def on_frame(self, frame: Frame, session: SessionInfo, received: Received) -> None:
        self.write(received)

    def on_event(self, event: SessionEvent, received: Received) -> None:
        self.write(received)

    def close(self) -> None:
        self._file.close()
        log.info("%s: %d messages written", self.name, self.records)

    def write(self, received: Received) -> None:
        """Append one message to the log."""
        record = {"t": received.t_recv_ns, "topic": received.topic.decode(), "payload": received.payload}
        self._file.write(self._packer.pack(record))
        self.records += 1
        if time.monotonic() - self._last_flush > FLUSH_EVERY_S:
            self._file.flush()
            self._last_flush = time.monotonic()


class LogError(ValueError):
    """A frame log that cannot be read as one: the message names the file and the record."""


@dataclass(frozen=True)
class LogRecord:
    t_recv_ns: int
    topic: bytes
    payload: bytes


def read_log(path: str | Path) -> Iterator[LogRecord]:
    """The records of a frame log in file order; a truncated last record (a crash) is skipped.
    LogError (a ValueError) for a file that is not one, or a malformed record."""
    with Path(path).open("rb") as f:
        size = max(1, min(MAX_RECORD_BYTES, Path(path).stat().st_size))
        unpacker = msgpack.Unpacker(
            f,
            raw=False,
            strict_map_key=True,
            max_buffer_size=size,  # no declared length can reach past the file's real size
            max_str_len=size,
            max_bin_len=size,
            max_array_len=16,  # the bridge writes maps of scalars
            max_map_len=16,
            max_ext_len=0,
        )
        number = 0
        try:
            header = next(unpacker, None)
            if not isinstance(header, dict) or header.get("format") != LOG_FORMAT:
                raise LogError(f"{path}: not an avatar-bridge frame log")
            if header.get("version") != LOG_VERSION:
                raise LogError(f"{path}: frame log version {header.get('version')!r:.20} not supported")
            for number, record in enumerate(unpacker, 1):
                yield _record(record, path, number)
        except (msgpack.UnpackException, ValueError, RecursionError) as exc:
            if isinstance(exc, LogError):
                raise
            raise LogError(
                f"{path}: record {number + 1} is not readable ({type(exc).__name__}: {exc!s:.80})"
            ) from None


def _record(record: Any, path: str | Path, number: int) -> LogRecord:
    if isinstance(record, dict):
        t, topic, payload = record.get("t"), record.get("topic"), record.get("payload")
        if type(t) is int and 0 <= t <= INT64_MAX and isinstance(topic, str) and isinstance(payload, bytes):
            return LogRecord(t, topic.encode(), payload)
    raise LogError(f"{path}: record {number} is malformed ({record!r:.80})")


@dataclass
class Recording:
    """One session's frames from a log, with what its opened event said."""

    info: SessionInfo
    frames: list[Frame] = field(default_factory=list)
    t_recv_ns: list[int] = field(default_factory=list)


def load_recordings(path: str | Path) -> dict[str, Recording]:
    """Every session in a log, in order of first frame; undecodable messages are skipped with a warning."""
    table = ObservedSessions()
    out: dict[str, Recording] = {}
    skipped = 0
    for record in read_log(path):
        try:
            if record.topic.startswith(EVENT_TOPIC_PREFIX):
                table.observe(decode_event(record.payload))
            elif record.topic.startswith(FRAME_TOPIC_PREFIX):
                frame = decode_frame(record.payload)
                session = frame.header.session
                if session not in out:
                    out[session] = Recording(table.info_for(frame))
                out[session].frames.append(frame)
                out[session].t_recv_ns.append(record.t_recv_ns)
        except ProtocolError as exc:
            skipped += 1
            if skipped == 1:
                log.warning("%s: skipping undecodable messages (first: %s)", path, exc.message)
    return out


def select_recording(
    recordings: dict[str, Recording], session: str | None, pipeline: str | None
) -> Recording:
    """The session asked for, or the only one of the pipeline; ValueError explains otherwise."""
    candidates = {s: r for s, r in recordings.items() if pipeline is None or r.info.pipeline == pipeline}
    what = f"{pipeline} sessions" if pipeline else "sessions"
    if session is not None:
        if session not in candidates:
            raise ValueError(
                f"session {session} not among the log's {what}: {', '.join(candidates) or 'none'}"
            )
        return candidates[session]
    if len(candidates) != 1:
        found = ", ".join(candidates) or "none"
        raise ValueError(f"the log has {len(candidates)} {what} ({found}); choose one with --session")
    return next(iter(candidates.values()))
