"""What outputs know about a session: the rig from its `opened` event (protocol section 7).

Events and rigs are decoded by bridge.protocol.events. When the router joins after a session opened
it never sees the rig; then the tables in bridge.rig stand in, and a warning says so once per session.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from bridge.protocol import FaceFrame, Frame
from bridge.protocol.events import (
    FACE_EXPRESSION_NAMES,
    FACE_EYELID_NAMES,
    BodyRig,
    FaceRig,
    Rig,
    SessionEvent,
)
from bridge.rig import arkit, smpl

__all__ = [
    "DEFAULT_BODY_RIG",
    "DEFAULT_FACE_RIG",
    "DEFAULT_FPS",
    "BodyRig",
    "FaceRig",
    "ObservedSessions",
    "Rig",
    "SessionEvent",
    "SessionInfo",
]

log = logging.getLogger(__name__)

DEFAULT_FPS = 60.0  # assumed when a session's opened event (which carries its fps) was not seen

DEFAULT_BODY_RIG = BodyRig(
    joints=smpl.JOINT_NAMES,
    parents=smpl.PARENTS,
    rest_offsets=smpl.REST_OFFSETS,
    humanoid=tuple(name or "" for name in smpl.UNITY_BONE_NAMES),
)
DEFAULT_FACE_RIG = FaceRig(
    expression=FACE_EXPRESSION_NAMES,
    eyelids=FACE_EYELID_NAMES,
    blendshapes=arkit.ARKIT_NAMES,
)


@dataclass(frozen=True)
class SessionInfo:
    session: str
    pipeline: str  # "face" or "motion"
    rig: Rig
    fps: float | None = None  # None when the opened event was not seen
    model: str = ""
    from_event: bool = True  # False: rig taken from bridge.rig defaults


@dataclass
class ObservedSessions:
    """Sessions seen on one frame stream: opened events in, SessionInfo for each frame out."""

    _sessions: dict[str, SessionInfo] = field(default_factory=dict)

    def observe(self, event: SessionEvent) -> None:
        if event.rig is not None:  # opened
            self._sessions[event.session] = SessionInfo(
                event.session, event.pipeline, event.rig, fps=event.fps, model=event.model
            )
        elif event.event == "closed":
            self._sessions.pop(event.session, None)

    def info_for(self, frame: Frame) -> SessionInfo:
        session = frame.header.session
        info = self._sessions.get(session)
        if info is None:
            info = _default_info(frame)
            log.warning(
                "session %s: no 'opened' event seen (subscribed after it opened?); using the default %s rig",
                session,
                info.pipeline,
            )
            self._sessions[session] = info
        return info


def _default_info(frame: Frame) -> SessionInfo:
    if isinstance(frame, FaceFrame):
        rig: Rig = (
            DEFAULT_FACE_RIG
            if frame.blendshapes.size
            else FaceRig(DEFAULT_FACE_RIG.expression, DEFAULT_FACE_RIG.eyelids, ())
        )
        return SessionInfo(frame.header.session, "face", rig, from_event=False)
    return SessionInfo(frame.header.session, "motion", DEFAULT_BODY_RIG, from_event=False)
