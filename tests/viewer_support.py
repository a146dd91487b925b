"""Shared by the viewer's tests: a viewer on a test bridge, input feeders that run on a thread, and a
flood of connections."""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from bridge.clients.harness.client import BridgeClient
from bridge.clients.viewer.cli import viewer_config
from bridge.clients.viewer.server import ViewerServer, static_dir
from bridge.serving.server import Bridge


def page_built() -> bool:
    return (static_dir() / "viewer.js").is_file() and (static_dir() / "index.html").is_file()


@contextmanager
def viewer_on(bridge: Bridge, avatar: Path | None = None) -> Iterator[ViewerServer]:
    """`serve --viewer 127.0.0.1:0 [--avatar FILE]` for a bridge running in this process."""
    args = argparse.Namespace(viewer=("127.0.0.1", 0), avatar=avatar)
    # In this process (serve runs it in a child): the tests read its counters and its log.
    viewer = ViewerServer(viewer_config(args, bridge.sockets.frames_endpoint, insecure_remote=False))
    viewer.start()
    try:
        yield viewer
    finally:
        viewer.stop()


def flood_connections(url: str, count: int, stack: ExitStack) -> tuple[int, int]:
    """`count` WebSocket connections to `url` that never read, held open on `stack`: how many the viewer
    accepted and how many it refused (503)."""
    accepted = refused = 0
    for _ in range(count):
        try:
            stack.enter_context(connect(url, open_timeout=5, close_timeout=0.2))
            accepted += 1
        except InvalidStatus as exc:
            assert exc.response.status_code == 503
            refused += 1
    return accepted, refused


class Feeder:
    """Sends one session's inputs at `rate_hz` on a thread until stopped: `make(seq)` builds an item."""

    def __init__(
        self, client: BridgeClient, make: Callable[[int], dict[str, object]], rate_hz: float
    ) -> None:
        self.client = client
        self.sent = 0
        self._make = make
        self._period = 1.0 / rate_hz
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._lock = threading.Lock()

    def start(self) -> Feeder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.client.send_item(self._make(self.sent))
            self.sent += 1
            next_at += self._period
            self._stop.wait(max(0.0, next_at - time.monotonic()))


def features_feeder(client: BridgeClient, session: str, rate_hz: float = 30.0) -> Feeder:
    """Random music-feature rows (the motion model's input), one per frame."""
    rng = np.random.default_rng(7)
    return Feeder(
        client, lambda seq: client.features_item(session, seq, rng.random((1, 35), dtype=np.float32)), rate_hz
    )


def audio_feeder(client: BridgeClient, session: str, pcm: np.ndarray, rate: int, fps: float = 30.0) -> Feeder:
    """Real-time chunks of `pcm` (looped), one per 1/fps."""
    chunk = int(rate / fps)

    def item(seq: int) -> dict[str, object]:
        start = (seq * chunk) % max(1, len(pcm) - chunk)
        return client.audio_item(session, seq, pcm[start : start + chunk], rate)

    return Feeder(client, item, fps)


def image_feeder(
    client: BridgeClient, session: str, image: Callable[[], np.ndarray], fps: float = 15.0
) -> Feeder:
    """The image `image()` returns at the time of each send."""
    return Feeder(client, lambda seq: client.image_item(session, seq, image()), fps)
