"""The viewer without a browser: the generated avatar, the avatar check, `--viewer` addresses, the
WebSocket feed's messages and its bounds (a flood of connections while a bystander keeps every frame)."""

from __future__ import annotations

import argparse
import json
import signal
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from bridge.cli.serve_config import ConfigError, load_serve_table
from bridge.clients.harness.client import BridgeClient
from bridge.clients.viewer.avatar import BONES, PRESETS, build_default_avatar
from bridge.clients.viewer.cli import parse_address, start_viewer, viewer_options
from bridge.clients.viewer.server import ViewerConfig, ViewerServer
from bridge.clients.viewer.vrm_check import AvatarError, load_avatar
from bridge.rig.arkit import ARKIT_NAMES, to_apple_name
from bridge.serving.server import Bridge

from .conftest import start_bridge, stop_bridge
from .viewer_support import features_feeder, flood_connections, viewer_on


def _gltf(data: bytes) -> dict[str, object]:
    (length,) = struct.unpack_from("<I", data, 12)
    parsed: dict[str, object] = json.loads(data[20 : 20 + length])
    return parsed


@pytest.fixture(scope="module")
def bridge() -> Iterator[Bridge]:
    server, thread = start_bridge(idle_timeout_s=3.0)
    yield server
    stop_bridge(server, thread)


@pytest.fixture(scope="module")
def avatar_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("avatar") / "default.vrm"
    path.write_bytes(build_default_avatar())
    return path


def test_default_avatar_is_a_vrm_1_humanoid_with_the_arkit_shapes(avatar_file: Path) -> None:
    avatar = load_avatar(avatar_file)  # the same check a user's file gets
    assert avatar.vrm_version == "1.0"
    gltf = _gltf(avatar.data)
    vrm = gltf["extensions"]["VRMC_vrm"]  # type: ignore[index]
    assert vrm["specVersion"] == "1.0"
    bones = vrm["humanoid"]["humanBones"]
    required = {"hips", "spine", "head"} | {
        f"{s}{b}"
        for s in ("left", "right")
        for b in ("UpperArm", "LowerArm", "Hand", "UpperLeg", "LowerLeg", "Foot")
    }
    assert required <= set(bones) == set(BONES)
    nodes = gltf["nodes"]  # type: ignore[index]
    assert all("rotation" not in nodes[b["node"]] for b in bones.values())  # VRM 1.0: no bone rotations
    apple = [to_apple_name(n) for n in ARKIT_NAMES]
    # The head's meshes carry the ARKit-named targets between them; each shape moves something.
    meshes = gltf["meshes"]  # type: ignore[index]
    accessors = gltf["accessors"]  # type: ignore[index]
    moved: dict[str, float] = {}
    for mesh in meshes:
        names = mesh.get("extras", {}).get("targetNames", [])
        (primitive,) = mesh["primitives"]
        assert len(primitive.get("targets", [])) == len(names) == len(mesh.get("weights", []))
        for name, target in zip(names, primitive.get("targets", []), strict=True):
            a = accessors[target["POSITION"]]
            moved[name] = max(moved.get(name, 0.0), *map(abs, a["min"] + a["max"]))
    assert set(moved) == set(apple) and min(moved.values()) > 0.001, moved  # each at least a millimetre
    assert set(vrm["expressions"]["custom"]) == set(apple)
    assert all(vrm["expressions"]["custom"][n]["morphTargetBinds"] for n in apple)
    assert set(PRESETS) <= set(vrm["expressions"]["preset"])
    # Every part is an unskinned mesh on a child node of its bone (the figure stands in its rest pose).
    assert "skins" not in gltf
    bone_of = {c: name for b, name in enumerate(BONES) for c in nodes[b].get("children", [])}
    lowest = min(
        BONES[bone_of[i]][1][1] + accessors[p["attributes"]["POSITION"]]["min"][1]
        for i, node in enumerate(nodes)
        if "mesh" in node
        for p in meshes[node["mesh"]]["primitives"]
    )
    assert -1e-6 <= lowest < 0.005  # the soles on the floor (float32 offsets from the bones)


def test_bad_avatars_are_refused_with_a_reason(tmp_path: Path, avatar_file: Path) -> None:
    good = avatar_file.read_bytes()
    cases = {
        "text.vrm": (b"hello, not a model", "not a VRM file"),
        "truncated.vrm": (good[:1000], "header says"),
    }
    gltf = _gltf(good)
    del gltf["extensions"]
    cases["plain-gltf.vrm"] = (_glb(gltf, good), "without a VRM extension")
    remote = _gltf(good)
    remote["images"] = [{"uri": "http://avatar.invalid/x.png"}]
    cases["remote.vrm"] = (_glb(remote, good), "outside the file")
    overrun = _gltf(good)
    overrun["accessors"][0]["count"] = 10**9  # type: ignore[index]
    cases["overrun.vrm"] = (_glb(overrun, good), "reads")
    deep = b'{"a":' * 100000 + b"1" + b"}" * 100000
    header = struct.pack("<4sII", b"glTF", 2, 20 + len(deep)) + struct.pack("<I4s", len(deep), b"JSON")
    cases["deep.vrm"] = (header + deep, "does not parse")
    for name, (data, reason) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(AvatarError, match=reason):
            load_avatar(path)


def _glb(gltf: dict[str, object], original: bytes) -> bytes:
    """`gltf` as the JSON chunk with the original file's binary chunk."""
    (json_length,) = struct.unpack_from("<I", original, 12)
    binary = original[20 + json_length + (-json_length % 4) :]
    text = json.dumps(gltf).encode()
    text += b" " * (-len(text) % 4)
    body = struct.pack("<I4s", len(text), b"JSON") + text + binary
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body


def test_viewer_addresses() -> None:
    assert parse_address("8080") == ("127.0.0.1", 8080)
    assert parse_address("0.0.0.0:9000") == ("0.0.0.0", 9000)
    assert parse_address("[::1]:0") == ("::1", 0)
    for bad in ("x", "host:port", "70000"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_address(bad)


def test_viewer_and_avatar_flags_win_over_the_config_keys(tmp_path: Path) -> None:
    flags = argparse.Namespace(viewer=None, avatar=None)
    assert viewer_options(flags, {}) == argparse.Namespace(viewer=None, avatar=None)
    table = {"viewer": 8080, "avatar": "me.vrm"}
    assert viewer_options(flags, table) == argparse.Namespace(
        viewer=("127.0.0.1", 8080), avatar=Path("me.vrm")
    )
    both = argparse.Namespace(viewer=("127.0.0.1", 9000), avatar=Path("mine.vrm"))
    assert viewer_options(both, table) == both
    assert viewer_options(flags, {"viewer": "[::1]:0"}).viewer == ("::1", 0)
    with pytest.raises(ValueError, match="config: viewer"):
        viewer_options(flags, {"viewer": "host:port"})
    config = tmp_path / "serve.toml"
    config.write_text('[serve]\nviewer = "0.0.0.0:8080"\navatar = "me.vrm"\n')
    assert load_serve_table(config).present() == {"viewer": "0.0.0.0:8080", "avatar": "me.vrm"}
    config.write_text("[serve]\nviewer = 70000\n")
    with pytest.raises(ConfigError, match="viewer"):
        load_serve_table(config)


def test_a_remote_viewer_needs_insecure_remote(bridge: Bridge) -> None:
    args = argparse.Namespace(viewer=("0.0.0.0", 0), avatar=None)
    with pytest.raises(ValueError, match="insecure-remote"):
        start_viewer(args, bridge.sockets.frames_endpoint, insecure_remote=False)


def _messages(ws: ClientConnection, until: float) -> list[dict[str, object]]:
    out = []
    while time.monotonic() < until:
        try:
            out.append(json.loads(ws.recv(timeout=max(0.01, until - time.monotonic()))))
        except TimeoutError:
            break
    return out


def test_feed_says_hello_opened_frames_closed_and_serves_the_files(bridge: Bridge) -> None:
    client = BridgeClient(request_port=bridge.sockets.request_port)
    client.hello()
    with viewer_on(bridge) as viewer:
        with urllib.request.urlopen(f"{viewer.url}avatar/default.vrm", timeout=5) as response:
            assert response.read(4) == b"glTF"
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{viewer.url}avatar/../../etc/passwd", timeout=5)
        assert missing.value.code == 404
        ws_url = viewer.url.replace("http", "ws") + "ws"
        with pytest.raises(InvalidStatus):  # another site's page may not read the frames
            connect(ws_url, origin="http://elsewhere.invalid").close()  # type: ignore[arg-type]
        with connect(ws_url) as ws:
            hello = json.loads(ws.recv(timeout=5))
            assert hello["type"] == "hello" and hello["avatar"]["url"] == "/avatar/default.vrm"
            session = client.open("motion")["session"]
            time.sleep(0.05)
            feeder = features_feeder(client, session).start()
            time.sleep(0.5)
            feeder.stop()
            client.close_session(session)
            got = _messages(ws, time.monotonic() + 2.0)
    client.close()
    mine = [m for m in got if m.get("session") == session]
    kinds = [m["type"] for m in mine]
    assert kinds[0] == "opened" and kinds[-1] == "closed" and kinds.count("frame") >= 5, kinds
    opened = mine[0]
    assert opened["pipeline"] == "motion" and len(opened["joints"]) == 24  # type: ignore[arg-type]
    assert opened["floor_y"] < opened["rest_pelvis_y"]  # type: ignore[operator]
    frame = next(m for m in mine if m["type"] == "frame")
    assert len(frame["joints"]) == 96 and len(frame["root"]) == 3  # type: ignore[arg-type]
    assert abs(frame["t_publish_ms"] - time.time() * 1000) < 10_000  # type: ignore[operator]


def test_connection_flood_is_bounded_and_a_bystander_keeps_every_frame(
    bridge: Bridge, avatar_file: Path
) -> None:
    limit = 4
    viewer = ViewerServer(
        ViewerConfig(
            "127.0.0.1", 0, bridge.sockets.frames_endpoint, load_avatar(avatar_file), max_connections=limit
        )
    )
    viewer.start()
    client = BridgeClient(request_port=bridge.sockets.request_port)
    client.hello()
    url = f"ws://127.0.0.1:{viewer.port}/ws"
    try:
        with ExitStack() as connections:
            bystander = connections.enter_context(connect(url, close_timeout=0.2))
            assert json.loads(bystander.recv(timeout=5))["type"] == "hello"
            session = client.open("motion")["session"]
            time.sleep(0.05)
            feeder = features_feeder(client, session, rate_hz=20.0).start()
            received: list[dict[str, object]] = []
            reader = threading.Thread(
                target=lambda: received.extend(_messages(bystander, time.monotonic() + 3.0))
            )
            reader.start()
            # 60 browsers that connect and never read: only limit - 1 get in
            flood, refused = flood_connections(url, 60, connections)
            time.sleep(1.0)
            feeder.stop()
            reader.join()
            assert (flood, refused) == (limit - 1, 60 - (limit - 1))
            assert viewer.connections() == limit and viewer.connections_refused == refused
        seqs = [m["seq"] for m in received if m["type"] == "frame" and m["session"] == session]
        assert len(seqs) >= 20 and seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs  # no gap
    finally:
        client.close()
        viewer.stop()


def test_serve_viewer_from_the_config_file_serves_the_page_and_stops_on_sigterm(tmp_path: Path) -> None:
    # `viewer` and `avatar` from the config file (the flags are the same options; see above).
    avatar = tmp_path / "vrm0.vrm"
    avatar.write_bytes(build_default_avatar(vrm0=True))
    config = tmp_path / "serve.toml"
    config.write_text(f'[serve]\nviewer = "127.0.0.1:0"\navatar = {json.dumps(str(avatar))}\n')
    ports = ["--request-port", "0", "--frames-port", "0"]
    serve = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bridge.cli.main",
            "serve",
            "--no-face-tracking",
            *ports,
            "--config",
            str(config),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert serve.stdout is not None
        lines = []
        for line in serve.stdout:  # the ready line, then the viewer's address
            lines.append(line)
            if line.startswith("viewer http"):
                break
        url = lines[-1].split()[-1]
        assert url.startswith("http://127.0.0.1:"), lines
        with urllib.request.urlopen(url + "avatar/default.vrm", timeout=10) as response:
            assert response.read(4) == b"glTF"
        with urllib.request.urlopen(url + "avatar/user.vrm", timeout=10) as response:
            assert response.read() == avatar.read_bytes()  # the config file's avatar
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
