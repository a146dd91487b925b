"""Sessions: one client's stream through one pipeline, with all of its state."""

from __future__ import annotations

import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from bridge.pipelines.base import Pipeline, Step
from bridge.protocol.frames import frame_topic
from bridge.protocol.requests import Input
from bridge.protocol.versions import SESSION_ID_LENGTH


@dataclass
class Session:
    id: str
    pipeline: Pipeline[Any, Any]
    state: Any
    envelope: tuple[bytes, ...]  # ROUTER envelope of the client that opened it, for error replies
    # Who may feed, ping and close it: b"id:" + the opener's routing id, or b"key:" + its CURVE key.
    owner: bytes = b""
    opened_at: float = field(default_factory=time.monotonic)
    last_seen: float = field(default_factory=time.monotonic)
    out_seq: int = 0  # next frame number
    frames_published: int = 0
    frames_dropped: int = 0  # frames no subscriber got: add with `drop_frames`
    inputs_dropped: int = 0
    closed: bool = False
    # The sample rate of its audio so far and when it last changed (I/O thread only): each change
    # restarts the analysis, so changes are bounded per second (`note_rate`).
    audio_rate: int = 0
    rate_changes: deque[float] = field(default_factory=deque)
    # Decoded inputs waiting for pre-processing and engine steps waiting for the engine; both are
    # touched only by the session's scheduler thread, except `inbox`, which the I/O thread appends to.
    inbox: deque[tuple[float, Input]] = field(default_factory=deque)  # (perf_counter at submit, input)
    inbox_frames: int = 0  # the frames the inbox's inputs make (`steps_for`), kept with it under its lock
    steps: deque[Step[Any]] = field(default_factory=deque)
    steps_frames: int = 0  # the frames the steps make; the scheduler thread keeps it with `steps`
    topic: bytes = field(init=False)  # PUB topic of its frames, built once

    # The scheduler thread and its publisher thread both count drops of one session.
    _drops_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.topic = frame_topic(self.id)

    def note_rate(self, rate: int, now: float, per_second: int) -> bool:
        """Take `rate` as the rate of its next audio; False (nothing changed) when that would be its
        `per_second`+1-th change within the last second."""
        if rate == self.audio_rate:
            return True
        while self.rate_changes and now - self.rate_changes[0] >= 1.0:
            self.rate_changes.popleft()
        if self.audio_rate and len(self.rate_changes) >= per_second:
            return False
        if self.audio_rate:  # the first rate is no change
            self.rate_changes.append(now)
        self.audio_rate = rate
        return True

    def drop_frames(self, frames: int, *, were_published: bool = False) -> None:
        """Count frames this session lost (`were_published`: already counted as published)."""
        with self._drops_lock:
            self.frames_dropped += frames
            if were_published:
                self.frames_published -= frames


class SessionTable:
    """All open sessions. Mutated by the I/O thread; read by scheduler threads (a lock guards both)."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[str, Session] = {}
        self._owned: dict[bytes, int] = {}  # owner -> open sessions, for the per-client quota
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._sessions)

    def new_id(self) -> str:
        while True:
            sid = secrets.token_hex(SESSION_ID_LENGTH // 2)
            if sid not in self._sessions:
                return sid

    def add(self, session: Session) -> None:
        with self._lock:
            self._sessions[session.id] = session
            self._owned[session.owner] = self._owned.get(session.owner, 0) + 1

    def owned_by(self, owner: bytes) -> int:
        return self._owned.get(owner, 0)

    def get(self, sid: str) -> Session | None:
        return self._sessions.get(sid)

    def remove(self, sid: str) -> Session | None:
        with self._lock:
            session = self._sessions.pop(sid, None)
            if session is not None:
                left = self._owned.pop(session.owner) - 1
                if left:
                    self._owned[session.owner] = left
        if session is not None:
            session.closed = True
        return session

    def idle(self, now: float, timeout_s: float) -> list[Session]:
        with self._lock:
            return [s for s in self._sessions.values() if now - s.last_seen > timeout_s]

    def all(self) -> list[Session]:
        with self._lock:
            return list(self._sessions.values())
