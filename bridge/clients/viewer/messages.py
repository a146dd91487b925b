"""The viewer's WebSocket messages (docs/protocol.md section 9): bridge frames and events as JSON text.

JSON because the page reads it with no library and the messages are small (a face frame is about
1.2 kB, a motion frame 1.1 kB). Times become milliseconds since the Unix epoch as floats: a double
holds them to well under a microsecond, where nanoseconds would not fit a JavaScript number.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from bridge.clients.outputs.session import SessionInfo
from bridge.protocol import FaceFrame, Frame
from bridge.protocol.events import BodyRig, FaceRig

VIEWER_PROTOCOL = 1
_DIGITS = 5  # decimals kept per float: 10 µm, 1e-5 of a weight or a quaternion component


def _floats(values: np.ndarray) -> list[float]:
    return [round(float(v), _DIGITS) for v in np.asarray(values, np.float64).reshape(-1)]


def rest_heights(rig: BodyRig) -> tuple[float, float]:
    """(pelvis height, lowest joint height) of the rig's rest pose with a zero root translation: the
    page maps the span between them onto its avatar's hips and feet, so the floor is where the rig's
    lowest contact is (bridge.motion.foot_plant's FLOOR_Y for SMPL)."""
    positions = np.zeros((len(rig.joints), 3))
    for j, parent in enumerate(rig.parents):
        positions[j] = rig.rest_offsets[j] + (positions[parent] if parent >= 0 else 0.0)
    return float(positions[0, 1]), float(positions[:, 1].min())


def opened_message(info: SessionInfo) -> dict[str, Any]:
    """What the page needs to show a session: its pipeline and the names its frames' arrays use."""
    message: dict[str, Any] = {
        "type": "opened",
        "session": info.session,
        "pipeline": info.pipeline,
        "model": info.model,
        "fps": info.fps,
    }
    rig = info.rig
    if isinstance(rig, FaceRig):
        message["blendshapes"] = list(rig.blendshapes)
    elif isinstance(rig, BodyRig):
        pelvis_y, floor_y = rest_heights(rig)
        message.update(
            joints=list(rig.joints),
            parents=list(rig.parents),
            rest_offsets=_floats(rig.rest_offsets),
            humanoid=list(rig.humanoid),
            rest_pelvis_y=round(pelvis_y, _DIGITS),
            floor_y=round(floor_y, _DIGITS),
        )
    return message


def frame_message(frame: Frame) -> dict[str, Any]:
    header = frame.header
    message: dict[str, Any] = {
        "type": "frame",
        "session": header.session,
        "seq": header.seq,
        "t_capture_ms": header.t_capture_ns / 1e6,
        "t_publish_ms": header.t_publish_ns / 1e6,
    }
    if isinstance(frame, FaceFrame):
        message.update(pipeline="face", face_found=frame.face_found, head=_floats(frame.head))
        message["blendshapes"] = _floats(frame.blendshapes)
        if frame.gaze.size:
            message["gaze"] = _floats(frame.gaze)
        if frame.vowels.size:
            message["vowels"] = _floats(frame.vowels)
    else:
        message.update(pipeline="motion", joints=_floats(frame.joints), root=_floats(frame.root))
    return message


def closed_message(session: str, reason: str) -> dict[str, Any]:
    return {"type": "closed", "session": session, "reason": reason}


def to_text(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))
