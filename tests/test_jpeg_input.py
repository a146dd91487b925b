"""JPEG image inputs (protocol 1.3, issue 45): the header checks on the request path, the decode on the
prepare thread, the tracker's results against the same frames sent raw, and a bystander that loses
nothing while a client floods bad and huge JPEGs at the bridge."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from bridge.clients.harness.client import BridgeClient
from bridge.clients.sources.feeder import FeederOptions, SourceFeeder
from bridge.clients.sources.specs import SourceSpec, open_source
from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.protocol import ErrorCode, FaceFrame, decode_frame, pack
from bridge.protocol.codec import ProtocolError
from bridge.protocol.jpeg import JpegError, read_header
from bridge.protocol.requests import (
    MAX_JPEG_BYTES,
    ImageInput,
    Inputs,
    ItemError,
    JpegInput,
    RequestError,
    decode_item,
    decode_request,
)
from bridge.serving.server import Bridge
from bridge.vision import jpeg
from bridge.vision.jpeg import decoded

from .bystander import Bystander
from .conftest import start_bridge, stop_bridge
from .test_face_tracking import bundle, models, pipeline  # noqa: F401  (module fixtures, reused)
from .test_sources import _face_clip

skimage_data = pytest.importorskip("skimage.data")

FACE = skimage_data.astronaut()  # 512x512, one real face


def jpeg_of(rgb: np.ndarray, quality: int = 85) -> bytes:
    return jpeg.encode(rgb, quality)


def with_size(data: bytes, width: int, height: int) -> bytes:
    """The same JPEG with its frame header claiming another size (a bomb when large)."""
    sof = data.index(b"\xff\xc0")
    out = bytearray(data)
    out[sof + 5 : sof + 9] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(out)


def corrupt_scan(data: bytes) -> bytes:
    """A JPEG whose header is intact and whose entropy-coded data is garbage halfway."""
    out = bytearray(data)
    mid = len(out) // 2
    out[mid : mid + 256] = b"\xff\xd9" * 128
    return bytes(out)


def image_message(data: bytes, **extra: Any) -> bytes:
    return pack(
        {"op": "input", "session": "0" * 16, "kind": "image", "seq": 1, "t_capture_ns": 5, "format": "jpeg",
         "data": data, **extra}
    )  # fmt: skip


def refused(data: bytes, **extra: Any) -> ProtocolError:
    with pytest.raises(RequestError) as info:
        decode_request(image_message(data, **extra), 8 * 1024 * 1024)
    return info.value


# ------------------------------------------------------------------------------ the request path
def test_a_jpeg_input_takes_its_size_from_the_header() -> None:
    data = jpeg_of(FACE)
    request = decode_request(image_message(data))
    assert isinstance(request, JpegInput)
    assert (request.width, request.height, request.seq, request.kind) == (512, 512, 1, "image")
    assert isinstance(decode_request(image_message(data, width=512, height=512)), JpegInput)
    image = decoded(request)
    assert isinstance(image, ImageInput) and image.pixels.shape == (512, 512, 3)
    assert np.abs(image.pixels.astype(int) - FACE).mean() < 4  # quality 85


def test_progressive_and_grey_jpegs_decode_to_rgb() -> None:
    ok, progressive = cv2.imencode(".jpg", FACE[:, :, ::-1], [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    assert ok
    request = decode_request(image_message(progressive.tobytes()))
    assert isinstance(request, JpegInput) and request.header.process == "progressive"
    assert np.abs(decoded(request).pixels.astype(int) - FACE).mean() < 4
    ok, grey = cv2.imencode(".jpg", cv2.cvtColor(FACE, cv2.COLOR_RGB2GRAY))
    request = decode_request(image_message(grey.tobytes()))
    assert isinstance(request, JpegInput) and request.header.components == 1
    pixels = decoded(request).pixels
    assert pixels.shape == (512, 512, 3) and (pixels[..., 0] == pixels[..., 2]).all()


def test_declared_size_must_agree_with_the_header() -> None:
    error = refused(jpeg_of(FACE), width=640, height=512)
    assert error.code == ErrorCode.BAD_SIZE and "512x512" in error.message
    assert refused(jpeg_of(FACE), height=480).code == ErrorCode.BAD_SIZE


def test_not_a_jpeg_or_a_broken_header_is_bad_image() -> None:
    good = jpeg_of(FACE)
    sof = good.index(b"\xff\xc0")
    for data in (
        b"GIF89a" + b"\0" * 64,  # another format
        FACE[:8, :8].tobytes(),  # raw pixels sent as jpeg
        good[: sof + 4],  # truncated inside the frame header
        good[:2] + b"\xff\xda\x00\x08" + good[4:],  # a scan before any frame header
        good[:2] + b"\xff\xe1\x00\x01" + good[6:],  # a segment length below 2
        good[:2] + b"\xff\xfe\x00\x02" * 100 + good[2:],  # 100 empty comments: past the walk's bound
        good.replace(b"\xff\xc0", b"\xff\xc3", 1),  # lossless JPEG
        with_size(good, 512, 0),  # height deferred to a DNL marker
    ):
        error = refused(data)
        assert error.code == ErrorCode.BAD_IMAGE, (data[:12], error)
        assert error.message.startswith("image input: ") and len(error.message) < 200


def test_a_bomb_is_refused_from_its_header_before_anything_is_allocated() -> None:
    small = jpeg_of(FACE[:64, :64])
    message = image_message(with_size(small, 65000, 65000))
    tracemalloc.start()
    try:
        with pytest.raises(RequestError) as info:
            decode_request(message, 8 * 1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.code == ErrorCode.BAD_VALUE and "65000x65000" in info.value.message
    assert peak < 64 * 1024  # 65000x65000 RGB would be 12 GB
    # Within the side bound but over the pixel bound: the same.
    assert refused(with_size(small, 4096, 4096)).code == ErrorCode.BAD_VALUE


def test_an_oversized_jpeg_is_refused_before_its_header_is_read() -> None:
    data = jpeg_of(FACE) + b"\0" * MAX_JPEG_BYTES  # a valid header, then padding past the bound
    error = refused(data)
    assert error.code == ErrorCode.BAD_VALUE and str(MAX_JPEG_BYTES) in error.message


def test_jpeg_items_of_an_inputs_message_are_checked_one_by_one() -> None:
    item = {"session": "0" * 16, "kind": "image", "seq": 1, "t_capture_ns": 5, "format": "jpeg"}
    items = [{**item, "data": jpeg_of(FACE)}, {**item, "data": b"not a jpeg"}]
    message = pack({"op": "inputs", "items": items})
    request = decode_request(message)
    assert isinstance(request, Inputs)
    first, second = (decode_item(raw) for raw in request.items)
    assert isinstance(first, JpegInput) and first.width == 512
    assert isinstance(second, ItemError) and second.error.code == ErrorCode.BAD_IMAGE


def test_corrupt_and_truncated_scans_fail_when_decoded() -> None:
    good = jpeg_of(FACE)
    for data in (corrupt_scan(good), good[: len(good) // 2]):
        request = decode_request(image_message(data))  # the header is fine: it is accepted
        assert isinstance(request, JpegInput)
        with pytest.raises(JpegError, match="corrupt or truncated"):
            decoded(request)


# ------------------------------------------------------------------------- tracking results
def track(pipeline: FaceTrackingPipeline, item: ImageInput | JpegInput) -> FaceFrame:  # noqa: F811
    state = pipeline.open_session({"smoothing": False})
    image = decoded(item) if isinstance(item, JpegInput) else item
    steps = pipeline.prepare(state, image)
    result = pipeline.run_batch([state], steps)
    frame = decode_frame(pipeline.finish_batch([state], ["s"], [0], steps, result)[0][0])
    assert isinstance(frame, FaceFrame)
    return frame


@pytest.mark.parametrize("quality", [50, 70, 85, 95])
def test_jpeg_frames_track_like_the_raw_frames(pipeline: FaceTrackingPipeline, quality: int) -> None:  # noqa: F811
    raw = track(pipeline, ImageInput(0, "s", 0, 0, False, FACE))
    data = jpeg_of(FACE, quality)
    compressed = track(pipeline, JpegInput(0, "s", 0, 0, False, read_header(data), memoryview(data)))
    assert raw.face_found and compressed.face_found
    diff = np.abs(compressed.blendshapes - raw.blendshapes)
    # Measured (astronaut): mean 0.014 / max 0.17 at quality 50 and 70, 0.005 / 0.035 at 85 and 95.
    assert diff.mean() < (0.01 if quality >= 85 else 0.025), diff
    assert diff.max() < (0.06 if quality >= 85 else 0.25), diff
    head_deg = np.degrees(2 * np.arccos(min(1.0, abs(float(np.dot(raw.head, compressed.head))))))
    assert head_deg < (1.0 if quality >= 85 else 3.0)
    assert np.abs(compressed.gaze - raw.gaze).max() < 0.08


# ----------------------------------------------------------------------------- a real bridge
@pytest.fixture(scope="module")
def bridge(models: Path) -> Iterator[Bridge]:  # noqa: F811
    server, thread = start_bridge(extra_model_dirs=(models,), idle_timeout_s=10.0, prepare_workers=2)
    yield server
    stop_bridge(server, thread)


def face_frames(client: BridgeClient, count: int, timeout_s: float = 20.0) -> list[FaceFrame]:
    """The next `count` face frames (one session sends at a time here: frames carry no session)."""
    frames: list[FaceFrame] = []
    deadline = time.monotonic() + timeout_s
    while len(frames) < count and time.monotonic() < deadline:
        frames += [r.frame for r in client.recv_frames(200) if isinstance(r.frame, FaceFrame)]
    return frames


def test_a_face_session_fed_jpeg_tracks_like_one_fed_rgb8(bridge: Bridge) -> None:
    client = BridgeClient("127.0.0.1", bridge.sockets.request_port, timeout_s=10.0)
    try:
        assert client.hello()["image_formats"] == ["rgb8", "jpeg"]
        client.subscribe()
        time.sleep(0.05)
        raw = client.open("face", smoothing=False)["session"]
        compressed = client.open("face", smoothing=False)["session"]
        client.send_image(raw, 0, FACE)
        (a,) = face_frames(client, 1)
        client.send_jpeg(compressed, 0, jpeg_of(FACE, 90))
        (b,) = face_frames(client, 1)
        assert a.face_found and b.face_found and b.header.input_seq == 0
        assert np.abs(a.blendshapes - b.blendshapes).mean() < 0.01
        # A corrupt scan passes the header check; its decode fails on the prepare thread and the error
        # names the session (id 0, as for any failure after acceptance). The session goes on.
        client.send_jpeg(compressed, 1, corrupt_scan(jpeg_of(FACE, 90)))
        deadline = time.monotonic() + 10
        while not client.errors and time.monotonic() < deadline:
            time.sleep(0.02)
            client.poll_replies()
        client.send_jpeg(compressed, 2, jpeg_of(FACE, 90))
        (c,) = face_frames(client, 1)
        assert c.header.input_seq == 2 and c.face_found
        (error,) = client.errors
        assert error["code"] == ErrorCode.BAD_IMAGE and error["session"] == compressed and error["id"] == 0
        assert "image input 1: corrupt or truncated" in error["message"]
    finally:
        client.close()


def jpeg_decodes(bridge: Bridge) -> int:
    """JPEG images the bridge's prepare threads decoded or failed to (the scheduler's stage "jpeg")."""
    stages = [child.histograms()[0] for child in bridge.stats.children]
    return sum(s["jpeg"].count for s in stages if "jpeg" in s)


def test_a_bystander_loses_nothing_while_a_client_floods_bad_and_huge_jpegs(bridge: Bridge) -> None:
    noise = np.random.default_rng(3).integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    huge = jpeg_of(noise, 100)  # ~3 MB of 1920x1080 noise: the largest image allowed, costly to decode
    good = jpeg_of(FACE, 85)
    small = jpeg_of(FACE[:64, :64])
    attacks = [
        huge,
        corrupt_scan(huge),
        huge[: len(huge) // 3],
        with_size(small, 65000, 65000),
        with_size(small, 2048, 2048),
        good + b"\0" * MAX_JPEG_BYTES,
        b"\xff\xd8" + b"\xff\xfe\x00\x02" * 4000,
        corrupt_scan(good),
    ]
    decoded_before = jpeg_decodes(bridge)
    bystander = Bystander(bridge.sockets.request_port)
    bystander.start()
    attacker = BridgeClient("127.0.0.1", bridge.sockets.request_port, timeout_s=10.0)
    try:
        attacker.hello()
        sessions = [attacker.open("face")["session"] for _ in range(2)]
        sent, end = 0, time.monotonic() + 3.0
        while time.monotonic() < end:
            for k, data in enumerate(attacks):
                attacker.send_jpeg(sessions[k % 2], sent, data)
                sent += 1
            attacker.send_jpeg(sessions[0], sent, good, t_capture_ns=time.time_ns())
            sent += 1
            attacker.poll_replies()
            time.sleep(0.005)
        time.sleep(1.0)
        attacker.poll_replies()
    finally:
        report = bystander.stop()
        attacker.close()
    assert report.clean, report
    assert jpeg_decodes(bridge) - decoded_before >= 8  # the flood reached the decoder (most were superseded)
    codes = {e["code"] for e in attacker.errors}
    assert {ErrorCode.BAD_VALUE, ErrorCode.BAD_IMAGE} <= codes, codes
    assert codes <= {ErrorCode.BAD_VALUE, ErrorCode.BAD_IMAGE, ErrorCode.OVERLOADED}, codes


def test_a_video_source_sends_jpeg_at_its_quality(bridge: Bridge, tmp_path: Path) -> None:
    clip = _face_clip(tmp_path / "face.avi", frames=10)
    client = BridgeClient("127.0.0.1", bridge.sockets.request_port)
    feeder = SourceFeeder(
        open_source(SourceSpec("video", str(clip), loop=True)),
        FeederOptions(pipeline="face", jpeg_quality=80),
        client,
    )
    watcher = BridgeClient("127.0.0.1", bridge.sockets.request_port)
    watcher.hello()
    decoded_before = jpeg_decodes(bridge)
    feeder.start()
    session = feeder.wait_open()
    watcher.subscribe(f"frame/{session}".encode())
    try:
        found = 0
        deadline = time.monotonic() + 15
        while found < 5 and time.monotonic() < deadline:
            frames = [r.frame for r in watcher.recv_frames(100)]
            found += sum(isinstance(f, FaceFrame) and f.face_found for f in frames)
    finally:
        feeder.stop()
        watcher.close()
    assert found >= 5 and feeder.errors == 0
    assert jpeg_decodes(bridge) - decoded_before >= 5  # they came as JPEG
