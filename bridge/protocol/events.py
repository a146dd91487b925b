"""Session events on the PUB socket (`event/<session>`, docs/protocol.md section 7) and the rig
description that the `opened` event and the `open` reply carry (section 4.3).

The bridge encodes both; observers (recorders, VMC / Live Link Face senders, the demo) decode them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bridge.protocol.codec import ProtocolError, f32_bin, f32_view, optional, pack, require, unpack_map
from bridge.protocol.errors import ErrorCode
from bridge.protocol.frames import FLAME_EXPRESSION
from bridge.protocol.versions import EVENT_TOPIC_PREFIX, PROTOCOL_VERSION

# Names the face rig gives its frames' `expression` and `eyelids` arrays.
FACE_EXPRESSION_NAMES = tuple(f"Exp{i:02d}" for i in range(FLAME_EXPRESSION))
FACE_EYELID_NAMES = ("EyelidLeft", "EyelidRight")
_COORDINATES = {"handedness": "right", "up": "+y", "forward": "+z", "units": "m"}


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
    # Blendshapes the model does not provide (always 0 in frames), and the optional frame fields
    # (head_position, gaze) this session's frames carry.
    unsupported: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    # Sessions opened with `body: true` (docs/protocol.md 5.1.2): the humanoid the frames' `body`
    # rotations are for.
    body: BodyRig | None = None


Rig = BodyRig | FaceRig


def encode_rig(rig: Rig) -> dict[str, Any]:
    """The rig description map of an open reply or opened event."""
    common = {"coordinates": _COORDINATES, "quaternion_order": "xyzw"}
    if isinstance(rig, BodyRig):
        return {
            "kind": "body",
            **common,
            "joints": list(rig.joints),
            "parents": list(rig.parents),
            "rest_offsets": f32_bin(rig.rest_offsets),
            "humanoid": list(rig.humanoid),
        }
    return {
        "kind": "face",
        **common,
        "expression": list(rig.expression),
        "eyelids": list(rig.eyelids),
        "rotations": ["head", "jaw"],
        "blendshapes": list(rig.blendshapes),
        "unsupported": list(rig.unsupported),
        "extras": list(rig.extras),
        **({} if rig.body is None else {"body": encode_rig(rig.body)}),
    }


def _names(m: dict[str, Any], key: str, what: str) -> tuple[str, ...]:
    values = require(m, key, list, what)
    if not all(isinstance(v, str) for v in values):
        raise ProtocolError(ErrorCode.BAD_TYPE, f"{what}: '{key}' must be an array of str")
    return tuple(values)


def decode_rig(m: dict[str, Any]) -> Rig:
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
            unsupported=_names(m, "unsupported", what) if "unsupported" in m else (),
            extras=_names(m, "extras", what) if "extras" in m else (),
            body=_body_rig(require(m, "body", dict, what)) if "body" in m else None,
        )
    raise ProtocolError(ErrorCode.BAD_VALUE, f"rig: unknown kind '{kind}'")


def _body_rig(m: dict[str, Any]) -> BodyRig:
    rig = decode_rig(m)
    if not isinstance(rig, BodyRig):
        raise ProtocolError(ErrorCode.BAD_VALUE, "rig: a face rig's 'body' must be a body rig")
    return rig


def event_topic(session: str) -> bytes:
    return EVENT_TOPIC_PREFIX + session.encode()


def _event(session: str, event: str, fields: dict[str, Any]) -> bytes:
    return pack({"op": "event", "v": PROTOCOL_VERSION, "session": session, "event": event, **fields})


def encode_opened_event(session: str, *, pipeline: str, model: str, fps: float, rig: dict[str, Any]) -> bytes:
    """`rig` is the encoded description (`encode_rig`), the same map the open reply carries."""
    return _event(session, "opened", {"pipeline": pipeline, "model": model, "fps": fps, "rig": rig})


def encode_closed_event(session: str, *, reason: str, frames_published: int) -> bytes:
    return _event(session, "closed", {"reason": reason, "frames_published": frames_published})


def encode_source_event(session: str, *, state: str, source: str, message: str) -> bytes:
    """A live source's state (`lost`, `resumed`, `ended`, `failed`) for the session it feeds."""
    return _event(session, "source", {"state": state, "source": source, "message": message})


@dataclass(frozen=True)
class SessionEvent:
    session: str
    event: str  # "opened", "closed", or a later addition (observers ignore it)
    pipeline: str = ""  # opened only
    model: str = ""  # opened only
    fps: float = 0.0  # opened only
    rig: Rig | None = None  # opened only
    reason: str = ""  # closed only
    frames_published: int = 0  # closed only


def decode_event(payload: bytes) -> SessionEvent:
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
        return SessionEvent(
            session,
            kind,
            pipeline=require(m, "pipeline", str, what),
            rig=decode_rig(require(m, "rig", dict, what)),
            fps=float(require(m, "fps", (float, int), what)),
            model=optional(m, "model", str, "", what),
        )
    if kind == "closed":
        return SessionEvent(
            session,
            kind,
            reason=optional(m, "reason", str, "", what),
            frames_published=optional(m, "frames_published", int, 0, what),
        )
    return SessionEvent(session, kind)
