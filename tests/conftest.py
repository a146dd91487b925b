"""Shared fixtures: a real bridge on loopback with the bundled models, and clients for it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from bridge.clients.harness.client import BridgeClient
from bridge.serving.server import Bridge, ServeConfig
from bridge.transport.zmq_sockets import TransportConfig
from tests.loopback_guard import loopback_only, no_traffic_left_loopback  # noqa: F401  (autouse: loopback only)

MODELS = Path(__file__).resolve().parents[1] / "models"  # the bundled models: every test reads them here


def start_bridge(**overrides: object) -> tuple[Bridge, threading.Thread]:
    config = replace(
        ServeConfig(transport=TransportConfig(request_port=0, frames_port=0), models_dir=MODELS),
        **overrides,
    )
    bridge = Bridge(config)
    bridge.start()
    thread = threading.Thread(target=bridge.serve_forever, daemon=True)
    thread.start()
    return bridge, thread


def stop_bridge(bridge: Bridge, thread: threading.Thread) -> None:
    bridge.stop()
    thread.join(timeout=5)
    bridge.close()


@contextmanager
def running(**overrides: object) -> Iterator[Bridge]:
    """A bridge with these ServeConfig overrides for the length of a with block."""
    bridge, thread = start_bridge(**overrides)
    try:
        yield bridge
    finally:
        stop_bridge(bridge, thread)


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server, thread = start_bridge(idle_timeout_s=1.0)
    yield server
    stop_bridge(server, thread)


@pytest.fixture
def client(bridge: Bridge) -> Iterator[BridgeClient]:
    c = BridgeClient("127.0.0.1", bridge.sockets.request_port, timeout_s=5.0)
    c.hello()
    yield c
    c.close()
