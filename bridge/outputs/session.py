"""What outputs know about a session: the rig from its `opened` event (protocol section 7).

bridge.protocol has no event decoder yet, so the `event/<session>` payload is parsed here with the
protocol's own codec helpers. When the router joins after a session opened it never sees the rig;
then the tables in bridge.rig stand in, and a warning says so once per session.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from bridge.protocol import FaceFrame, Frame, ProtocolError, unpack_map
from bridge.protocol.codec import f32_view, optional, require
from bridge.protocol.errors import ErrorCode
from bridge.protocol.versions import PROTOCOL_VERSION
from bridge.rig import arkit, smpl

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BodyRig:
    joints: tuple[str, ...]
    parents: tuple[int, ...]
    rest_offsets: npt.NDArray[np.float64]  # (J, 3) metres, wire axes; row 0 is the root's rest position
    humanoid: tuple[str, ...]  # Unity HumanBodyBones name per joint, "" where none fits


@dataclass(frozen=True)
class FaceRig:
    expression: tuple[str, ...]
    eyelids: tuple[str, ...]
    blendshapes: tuple[str, ...]  # ARKit names in the frames' blendshape order; () when not sent


Rig = BodyRig | FaceRig

DEFAULT_BODY_RIG = BodyRig(
    joints=smpl.JOINT_NAMES,
    parents=smpl.PARENTS,
    rest_offsets=smpl.REST_OFFSETS,
    humanoid=tuple(name or "" for name in smpl.UNITY_BONE_NAMES),
)
DEFAULT_FACE_RIG = FaceRig(
    expression=tuple(f"Exp{i:02d}" for i in range(50)),
    eyelids=("EyelidLeft", "EyelidRight"),
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


@dataclass(frozen=True)
class SessionEvent:
    session: str
    event: str  # "opened", "closed", or a later addition (ignored by outputs)
    info: SessionInfo | None = None  # opened only
    reason: str = ""  # closed only
    frames_published: int = 0  # closed only


def parse_event(payload: bytes) -> SessionEvent:
    """Decode one `event/<session>` payload; raises ProtocolError when it breaks the contract."""
    m = unpack_map(payload)
    what = "event"
    if require(m, "op", str, what) != "event":
        raise ProtocolError(ErrorCode.BAD_VALUE, "event: op must be 'event'")
    if require(m, "v", int, what) != PROTOCOL_VERSION:
        raise ProtocolError(ErrorCode.UNSUPPORTED_VERSION, f"event: version {m['v']} not supported")
    session = require(m, "session", str, what)
    kind = require(m, "event", str, what)
    if kind == "opened":
        info = SessionInfo(
            session=session,
            pipeline=require(m, "pipeline", str, what),
            rig=parse_rig(require(m, "rig", dict, what)),
            fps=float(require(m, "fps", (float, int), what)),
            model=optional(m, "model", str, "", what),
        )
        return SessionEvent(session, kind, info=info)
    if kind == "closed":
        return SessionEvent(
            session,
            kind,
            reason=optional(m, "reason", str, "", what),
            frames_published=optional(m, "frames_published", int, 0, what),
        )
    return SessionEvent(session, kind)


def _names(m: dict[str, object], key: str, what: str) -> tuple[str, ...]:
    values = require(m, key, list, what)
    if not all(isinstance(v, str) for v in values):
        raise ProtocolError(ErrorCode.BAD_TYPE, f"{what}: '{key}' must be an array of str")
    return tuple(values)


def parse_rig(m: dict[str, object]) -> Rig:
    """A rig description (the `rig` map of an open reply or opened event) as a typed Rig."""
    what = "rig"
    kind = require(m, "kind", str, what)
    if kind == "body":
        joints = _names(m, "joints", what)
        parents = require(m, "parents", list, what)
        ordered = all(isinstance(p, int) and -1 <= p < i for i, p in enumerate(parents))
        if len(parents) != len(joints) or not ordered:
            raise ProtocolError(
                ErrorCode.BAD_VALUE, "rig: parents must name an earlier joint (or -1) per joint"
            )
        offsets = f32_view(require(m, "rest_offsets", bytes, what), len(joints) * 3, "rest_offsets")
        humanoid = _names(m, "humanoid", what)
        if len(humanoid) != len(joints):
            raise ProtocolError(ErrorCode.BAD_SIZE, "rig: humanoid must name every joint")
        return BodyRig(joints, tuple(parents), offsets.reshape(-1, 3).astype(np.float64), humanoid)
    if kind == "face":
        return FaceRig(
            expression=_names(m, "expression", what),
            eyelids=_names(m, "eyelids", what),
            blendshapes=_names(m, "blendshapes", what),
        )
    raise ProtocolError(ErrorCode.BAD_VALUE, f"rig: unknown kind '{kind}'")


@dataclass
class SessionTable:
    """Sessions seen on one frame stream: opened events in, SessionInfo for each frame out."""

    _sessions: dict[str, SessionInfo] = field(default_factory=dict)

    def observe(self, event: SessionEvent) -> None:
        if event.info is not None:
            self._sessions[event.session] = event.info
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
