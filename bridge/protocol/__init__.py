"""The wire contract (docs/protocol.md): message types, events, error codes and the msgpack codec.

A leaf package: it imports nothing else from bridge, so a client needs only this to talk to the bridge.
"""

from __future__ import annotations

from bridge.protocol.codec import ProtocolError, pack, unpack_map
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import (
    BodyRig,
    FaceRig,
    Rig,
    SessionEvent,
    decode_event,
    decode_rig,
    encode_rig,
    event_topic,
)
from bridge.protocol.frames import (
    FaceFrame,
    Frame,
    MotionFrame,
    decode_frame,
    encode_face_frame,
    frame_topic,
)
from bridge.protocol.requests import (
    AudioInput,
    CloseSession,
    FeaturesInput,
    Hello,
    ImageInput,
    Input,
    JpegInput,
    ListModels,
    OpenSession,
    Ping,
    Request,
    decode_request,
)
from bridge.protocol.versions import DEFAULT_FRAMES_PORT, DEFAULT_REQUEST_PORT, PROTOCOL_VERSION

__all__ = [
    "DEFAULT_FRAMES_PORT",
    "DEFAULT_REQUEST_PORT",
    "PROTOCOL_VERSION",
    "AudioInput",
    "BodyRig",
    "CloseSession",
    "ErrorCode",
    "FaceFrame",
    "FaceRig",
    "FeaturesInput",
    "Frame",
    "Hello",
    "ImageInput",
    "Input",
    "JpegInput",
    "ListModels",
    "MotionFrame",
    "OpenSession",
    "Ping",
    "ProtocolError",
    "Request",
    "Rig",
    "SessionEvent",
    "decode_event",
    "decode_frame",
    "decode_request",
    "decode_rig",
    "encode_face_frame",
    "encode_rig",
    "event_topic",
    "frame_topic",
    "pack",
    "unpack_map",
]
