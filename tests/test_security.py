"""CURVE: a client without the bridge's key (or not on its list) cannot talk to it; a keyed one can."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zmq

from bridge.cli.main import build_parser, main
from bridge.cli.serve import config_from_args
from bridge.clients.harness.client import BridgeClient
from bridge.serving.server import Bridge
from bridge.transport.curve import KeyFileError, load_public_key, load_public_keys, load_secret_key
from bridge.transport.zmq_sockets import BridgeSockets, TransportConfig

from .conftest import start_bridge, stop_bridge

REFUSED_TIMEOUT_S = 1.0  # a refused CURVE handshake shows as silence; this is how long we listen


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("keys")
    assert main(["keys", "--out", str(out)]) == 0
    assert main(["keys", "--out", str(out / "clients"), "--name", "alice"]) == 0
    assert main(["keys", "--out", str(out)]) == 2  # never overwrites a key pair silently
    assert (out / "server.key_secret").stat().st_mode & 0o077 == 0
    return out


def curve_transport(keys: Path, **fields: Any) -> TransportConfig:
    return replace(
        TransportConfig(request_port=0, frames_port=0),
        curve_secret_key=load_secret_key(keys / "server.key_secret")[1],
        **fields,
    )


@pytest.fixture(scope="module")
def curve_bridge(keys: Path) -> Iterator[Bridge]:
    server, thread = start_bridge(transport=curve_transport(keys))
    yield server
    stop_bridge(server, thread)


def refused(client: BridgeClient) -> bool:
    try:
        client.hello()
    except TimeoutError:
        return True
    finally:
        client.close()
    return False


def streams_frames(client: BridgeClient) -> bool:
    """A full exchange: hello, open, input, and the frame back over the (encrypted) PUB socket."""
    try:
        client.hello()
        client.subscribe()
        time.sleep(0.1)
        session = client.open("motion")["session"]
        client.send_features(session, 0, np.zeros((3, 35), np.float32))
        deadline = time.monotonic() + 20
        frames = 0
        while frames < 3 and time.monotonic() < deadline:
            frames += len(client.recv_frames(100))
        return frames == 3
    finally:
        client.close()


def test_keyed_client_talks_to_a_curve_bridge(curve_bridge: Bridge, keys: Path) -> None:
    server_key = load_public_key(keys / "server.key")
    assert streams_frames(
        BridgeClient("127.0.0.1", curve_bridge.sockets.request_port, 10.0, server_key=server_key)
    )


def refusals_counted(bridge: Bridge, reason: str) -> bool:
    """The I/O thread counts refused handshakes as libzmq reports them; give it a moment."""
    deadline = time.monotonic() + 10
    while bridge.stats.handshake_failures[reason] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    return bridge.stats.handshake_failures[reason] > 0


def test_client_without_the_key_is_refused(curve_bridge: Bridge) -> None:
    port = curve_bridge.sockets.request_port
    assert refused(BridgeClient("127.0.0.1", port, REFUSED_TIMEOUT_S))
    wrong = zmq.curve_keypair()[0]
    assert refused(BridgeClient("127.0.0.1", port, REFUSED_TIMEOUT_S, server_key=wrong))
    assert refusals_counted(curve_bridge, "protocol")


def test_frames_do_not_reach_a_subscriber_without_the_key(curve_bridge: Bridge, keys: Path) -> None:
    plain: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
    plain.setsockopt(zmq.LINGER, 0)
    plain.setsockopt(zmq.SUBSCRIBE, b"")
    plain.connect(f"tcp://127.0.0.1:{curve_bridge.sockets.frames_port}")
    try:
        server_key = load_public_key(keys / "server.key")
        client = BridgeClient("127.0.0.1", curve_bridge.sockets.request_port, 10.0, server_key=server_key)
        assert streams_frames(client)
        assert not plain.poll(200)
    finally:
        plain.close(0)


def test_allow_list_admits_only_listed_clients(keys: Path) -> None:
    allowed = load_public_keys(keys / "clients")
    server, thread = start_bridge(transport=curve_transport(keys, curve_client_keys=allowed))
    try:
        port, server_key = server.sockets.request_port, load_public_key(keys / "server.key")
        alice = load_secret_key(keys / "clients" / "alice.key_secret")
        assert streams_frames(BridgeClient("127.0.0.1", port, 10.0, server_key=server_key, client_keys=alice))
        stranger = BridgeClient("127.0.0.1", port, REFUSED_TIMEOUT_S, server_key=server_key)
        assert refused(stranger)
        assert refusals_counted(server, "auth")
    finally:
        stop_bridge(server, thread)


def test_remote_bind_needs_curve_or_an_explicit_insecure_flag(keys: Path) -> None:
    with pytest.raises(ValueError, match="--curve-secret-key"):
        BridgeSockets(TransportConfig(host="0.0.0.0", request_port=0, frames_port=0))
    for config in (
        curve_transport(keys, host="0.0.0.0"),
        TransportConfig(host="0.0.0.0", request_port=0, frames_port=0, insecure_remote=True),
    ):
        BridgeSockets(config).close()


def test_key_files_are_checked(keys: Path, tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="no secret key"):
        load_secret_key(keys / "server.key")
    (tmp_path / "junk.key").write_text("not a key\n")
    with pytest.raises(KeyFileError):
        load_public_key(tmp_path / "junk.key")
    with pytest.raises(KeyFileError, match="not a folder"):
        load_public_keys(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(KeyFileError, match="key files"):
        load_public_keys(tmp_path / "empty")


def test_serve_flags_configure_curve_and_metrics(keys: Path) -> None:
    args = build_parser().parse_args(
        [
            "serve",
            "--host",
            "0.0.0.0",
            "--curve-secret-key",
            str(keys / "server.key_secret"),
            "--curve-client-keys",
            str(keys / "clients"),
            "--metrics-port",
            "0",
        ]
    )
    config = config_from_args(args)
    assert config.transport.curve_secret_key == load_secret_key(keys / "server.key_secret")[1]
    assert config.transport.curve_client_keys == load_public_keys(keys / "clients")
    assert config.metrics_port == 0 and config.metrics_host == "127.0.0.1"
