"""Face sessions opened with `cropped: true`: the client sends the aligned crop; no detection."""

from __future__ import annotations

import time

import numpy as np
from skimage import data

from bridge.clients.harness.client import BridgeClient
from bridge.pipelines.face_flame import CROP_SIZE
from bridge.protocol import ErrorCode, FaceFrame
from bridge.vision.face_crop import FaceDetector, crop_face

ASTRONAUT: np.ndarray = data.astronaut()  # type: ignore[no-untyped-call]


def first_frame(client: BridgeClient, session: str, timeout_s: float = 5.0) -> FaceFrame:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for r in client.recv_frames(50):
            if r.frame.header.session == session:
                assert isinstance(r.frame, FaceFrame)
                return r.frame
    raise AssertionError(f"no frame for {session}")


def test_a_cropped_session_gives_what_the_bridge_gives_for_the_same_crop(client: BridgeClient) -> None:
    client.subscribe()
    time.sleep(0.05)
    framed = client.open("face", smoothing=False)["session"]
    cropped = client.open("face", smoothing=False, cropped=True)["session"]
    # The crop the bridge's own tracker makes of this frame: its first box is the detector's first face.
    box = FaceDetector().detect(ASTRONAUT)[0]
    crop = crop_face(ASTRONAUT, box, CROP_SIZE)
    client.send_image(framed, 0, ASTRONAUT)
    a = first_frame(client, framed)
    client.send_image(cropped, 0, crop)
    b = first_frame(client, cropped)
    assert a.face_found and b.face_found
    np.testing.assert_allclose(b.expression, a.expression, atol=1e-6)
    np.testing.assert_allclose(b.blendshapes, a.blendshapes, atol=1e-6)


def test_a_cropped_session_refuses_an_image_of_another_size(client: BridgeClient) -> None:
    client.subscribe()
    time.sleep(0.05)
    session = client.open("face", cropped=True)["session"]
    client.send_image(session, 0, ASTRONAUT)  # a whole frame, not the crop
    deadline = time.monotonic() + 3
    while not client.errors and time.monotonic() < deadline:
        client.poll_replies()
        time.sleep(0.01)
    [error] = client.errors
    assert error["code"] == ErrorCode.BAD_VALUE and error["session"] == session
    assert "224x224" in error["message"] and "512x512" in error["message"]
    # The session itself goes on: the next image of the right size is served.
    client.send_image(session, 1, np.zeros((CROP_SIZE, CROP_SIZE, 3), np.uint8))
    assert first_frame(client, session).header.input_seq == 1
