"""The codec and request decoder against docs/protocol.md: every message type, every error code."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from bridge.protocol import (
    AudioInput,
    BodyRig,
    ErrorCode,
    FaceFrame,
    FaceRig,
    FeaturesInput,
    ImageInput,
    MotionFrame,
    OpenSession,
    ProtocolError,
    decode_event,
    decode_frame,
    decode_request,
    decode_rig,
    encode_face_frame,
    encode_rig,
    pack,
    requests,
)
from bridge.protocol.events import (
    FACE_EXPRESSION_NAMES,
    FACE_EYELID_NAMES,
    encode_closed_event,
    encode_opened_event,
)
from tests.oracles.frames import encode_motion_frame


def code_of(payload: bytes, max_bytes: int | None = None) -> ErrorCode:
    with pytest.raises(ProtocolError) as info:
        decode_request(payload, max_bytes)
    return info.value.code


def test_image_input_is_a_zero_copy_view() -> None:
    pixels = np.arange(4 * 2 * 3, dtype=np.uint8)
    payload = pack(
        {
            "op": "input",
            "session": "s",
            "kind": "image",
            "seq": 7,
            "t_capture_ns": 5,
            "width": 2,
            "height": 4,
            "data": pixels.tobytes(),
        }
    )
    request = decode_request(payload)
    assert isinstance(request, ImageInput)
    assert request.pixels.shape == (4, 2, 3) and request.seq == 7 and request.t_capture_ns == 5
    assert np.array_equal(request.pixels.ravel(), pixels)


def test_audio_and_features_inputs() -> None:
    s16 = np.array([0, 1000, -1000], "<i2")
    audio = decode_request(
        pack(
            {
                "op": "input",
                "session": "s",
                "kind": "audio",
                "seq": 0,
                "t_capture_ns": 0,
                "rate": 48000,
                "format": "s16le",
                "data": s16.tobytes(),
            }
        )
    )
    assert isinstance(audio, AudioInput) and audio.samples.dtype == np.dtype("<i2") and audio.rate == 48000
    rows = np.ones((2, 35), "<f4")
    feats = decode_request(
        pack(
            {
                "op": "input",
                "session": "s",
                "kind": "features",
                "seq": 0,
                "t_capture_ns": 0,
                "rows": 2,
                "cols": 35,
                "data": rows.tobytes(),
            }
        )
    )
    assert isinstance(feats, FeaturesInput) and feats.rows.shape == (2, 35)


def test_open_defaults() -> None:
    request = decode_request(pack({"op": "open", "id": 3, "pipeline": "face"}))
    assert request == OpenSession(3, "face", None, {})


BASE = {"op": "input", "session": "s", "seq": 0, "t_capture_ns": 0}


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"\xc1garbage", ErrorCode.MALFORMED),
        (b"\x80\x00", ErrorCode.MALFORMED),  # a map missing `op`, then trailing bytes
        (msgpack.packb([1, 2, 3]), ErrorCode.MALFORMED),
        (msgpack.packb({1: 2}), ErrorCode.MALFORMED),
        (pack({"op": "hello", "v": 2}), ErrorCode.UNSUPPORTED_VERSION),
        (pack({"op": "dance"}), ErrorCode.UNKNOWN_OP),
        (pack({"id": 1}), ErrorCode.MISSING_FIELD),
        (pack({"op": 5}), ErrorCode.BAD_TYPE),
        (pack({"op": "open"}), ErrorCode.MISSING_FIELD),
        (pack({"op": "open", "pipeline": "face", "options": [1]}), ErrorCode.BAD_TYPE),
        (pack({"op": "close", "session": 12}), ErrorCode.BAD_TYPE),
        (pack({**BASE, "kind": "smell", "data": b""}), ErrorCode.BAD_VALUE),
        (pack({**BASE, "kind": "image", "width": 2, "height": 2, "data": b"x" * 11}), ErrorCode.BAD_SIZE),
        (pack({**BASE, "kind": "image", "width": 0, "height": 2, "data": b""}), ErrorCode.BAD_VALUE),
        (
            pack({**BASE, "kind": "image", "width": 1, "height": 1, "format": "bgr8", "data": b"xyz"}),
            ErrorCode.BAD_VALUE,
        ),
        (pack({**BASE, "kind": "image", "width": "2", "height": 2, "data": b""}), ErrorCode.BAD_TYPE),
        (
            pack({**BASE, "kind": "audio", "rate": 100, "format": "s16le", "data": b"\0\0"}),
            ErrorCode.BAD_VALUE,
        ),
        (
            pack({**BASE, "kind": "audio", "rate": 48000, "format": "mp3", "data": b"\0\0"}),
            ErrorCode.BAD_VALUE,
        ),
        (
            pack({**BASE, "kind": "audio", "rate": 48000, "format": "s16le", "data": b"\0"}),
            ErrorCode.BAD_SIZE,
        ),
        (
            pack(
                {
                    **BASE,
                    "kind": "audio",
                    "rate": 48000,
                    "format": "f32le",
                    "data": np.array([np.nan], "<f4").tobytes(),
                }
            ),
            ErrorCode.BAD_VALUE,
        ),
        (pack({**BASE, "kind": "features", "rows": 1, "cols": 35, "data": b"\0" * 4}), ErrorCode.BAD_SIZE),
        (pack({**BASE, "kind": "features", "rows": 1, "cols": 35, "data": "text"}), ErrorCode.BAD_TYPE),
        (
            pack({**BASE, "seq": -1, "kind": "features", "rows": 1, "cols": 1, "data": b"\0" * 4}),
            ErrorCode.BAD_VALUE,
        ),
        (
            pack({**BASE, "ack": 1, "kind": "features", "rows": 1, "cols": 1, "data": b"\0" * 4}),
            ErrorCode.BAD_TYPE,
        ),
        (pack({"op": "input", "kind": "image"}), ErrorCode.MISSING_FIELD),
    ],
)
def test_bad_requests_get_their_code(payload: bytes, code: ErrorCode) -> None:
    assert code_of(payload) == code


def test_oversize_is_refused_before_decoding() -> None:
    assert code_of(b"\x00" * 101, max_bytes=100) == ErrorCode.TOO_LARGE


BIG = "x" * (1 << 20)


class _NoFullDecode:
    def decode(self, payload: object) -> None:
        raise AssertionError("the full decode ran")


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ({"op": "close", "id": 7, "session": BIG}, ErrorCode.BAD_VALUE),
        ({"op": "ping", "pad": BIG}, ErrorCode.BAD_VALUE),  # an unknown key as large
        ({"op": "hello", "v": 2, "client": BIG}, ErrorCode.UNSUPPORTED_VERSION),  # the version first
        ({"op": "ping", "v": 1.0, "pad": BIG}, ErrorCode.BAD_TYPE),
        ({"op": BIG}, ErrorCode.UNKNOWN_OP),
    ],
)
def test_a_large_request_of_an_op_without_data_is_refused_on_its_op(
    message: dict[str, object], code: ErrorCode, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only calibrate, input and inputs carry data: a request of another op over
    MAX_SMALL_REQUEST_BYTES gets the code the full decode would give, from its `op` and `v` alone
    (the full decode would build the 1 MB string to find it too long)."""
    monkeypatch.setattr(requests, "_DECODER", _NoFullDecode())
    assert code_of(pack(message)) == code


def test_a_large_data_request_is_decoded() -> None:
    image = {**BASE, "kind": "image", "width": 2048, "height": 1024, "data": bytes(2048 * 1024 * 3)}
    assert isinstance(decode_request(pack(image)), ImageInput)
    assert code_of(pack({"op": b"close", "pad": BIG})) == ErrorCode.BAD_TYPE  # no str op: decoded
    wide = "\U0001f600" * 63  # 4 bytes a character in UTF-8
    largest_open = pack(
        {"op": "open", "pipeline": wide, "model": wide, "options": {f"{i:x}{wide}": wide for i in range(16)}}
    )
    assert len(largest_open) < requests.MAX_SMALL_REQUEST_BYTES  # every legal `open` is small
    assert isinstance(decode_request(largest_open), OpenSession)


def test_frames_round_trip() -> None:
    face = decode_frame(
        encode_face_frame(
            "abc",
            3,
            9,
            100,
            face_found=True,
            expression=np.arange(50),
            eyelids=np.ones(2),
            jaw=np.array([0, 0, 0, 1]),
            head=np.array([0, 0, 0, 1]),
            blendshapes=np.zeros(52),
            engine_us=12.5,
            batch=2,
        )
    )
    assert isinstance(face, FaceFrame)
    assert face.header.seq == 3 and face.header.input_seq == 9 and face.header.batch == 2
    assert face.expression[49] == 49 and face.blendshapes.shape == (52,)
    assert face.header.t_publish_ns >= face.header.t_capture_ns
    motion = decode_frame(
        encode_motion_frame(
            "abc",
            0,
            0,
            1,
            joints=np.tile([0, 0, 0, 1], (24, 1)),
            root=np.array([0, 0.9, 0]),
            engine_us=1,
            batch=1,
        )
    )
    assert isinstance(motion, MotionFrame)
    assert motion.joints.shape == (24, 4) and motion.root[1] == pytest.approx(0.9)
    no_blend = decode_frame(
        encode_face_frame(
            "abc",
            0,
            0,
            0,
            face_found=False,
            expression=np.zeros(50),
            eyelids=np.zeros(2),
            jaw=np.zeros(4),
            head=np.zeros(4),
            blendshapes=None,
            engine_us=0,
            batch=1,
        )
    )
    assert isinstance(no_blend, FaceFrame) and no_blend.blendshapes.shape == (0,)


def test_frame_with_wrong_array_size_is_rejected() -> None:
    good = msgpack.unpackb(
        encode_motion_frame("a", 0, 0, 0, joints=np.zeros((24, 4)), root=np.zeros(3), engine_us=0, batch=1)
    )
    good["joints"] = good["joints"][:-4]
    with pytest.raises(ProtocolError) as info:
        decode_frame(msgpack.packb(good))
    assert info.value.code == ErrorCode.BAD_SIZE


def test_events_round_trip() -> None:
    body = BodyRig(("pelvis", "spine"), (-1, 0), np.array([[0, 1, 0], [0, 0.1, 0]]), ("Hips", "Spine"))
    opened = decode_event(
        encode_opened_event("a" * 16, pipeline="motion", model="m", fps=60, rig=encode_rig(body))
    )
    assert (opened.event, opened.pipeline, opened.model, opened.fps) == ("opened", "motion", "m", 60.0)
    assert isinstance(opened.rig, BodyRig) and opened.rig.parents == (-1, 0)
    np.testing.assert_allclose(opened.rig.rest_offsets, body.rest_offsets, atol=1e-7)
    face = FaceRig(FACE_EXPRESSION_NAMES, FACE_EYELID_NAMES, ())
    assert decode_rig(encode_rig(face)) == face
    closed = decode_event(encode_closed_event("a" * 16, reason="client", frames_published=3))
    assert (closed.event, closed.reason, closed.frames_published, closed.rig) == ("closed", "client", 3, None)
    with pytest.raises(ProtocolError) as info:
        decode_rig({**encode_rig(body), "parents": [0, 0]})
    assert info.value.code == ErrorCode.BAD_VALUE
