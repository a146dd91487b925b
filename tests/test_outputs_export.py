"""BVH and CSV export re-parsed from the files, and the record/replay/export commands through argparse."""

from __future__ import annotations

import argparse
import csv
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from bridge.cli.outputs import add_output_arguments, build_outputs, build_router, register_commands
from bridge.clients.outputs.livelink_face import LiveLinkFaceOutput
from bridge.clients.outputs.process import RouterProcess
from bridge.clients.outputs.recorder import Recorder
from bridge.clients.outputs.router import Received
from bridge.clients.outputs.udp import parse_host_port
from bridge.clients.outputs.vmc import VmcOutput
from bridge.rig import arkit, smpl

from .test_outputs_helpers import (
    FACE_SESSION,
    SESSION,
    OscCapture,
    Publisher,
    face_frame,
    face_rig,
    identity_joints,
    motion_frame,
    motion_rig,
    opened_event,
    wait_for,
)

OTHER = "1111111111111111"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="avatar-bridge")
    register_commands(p.add_subparsers(dest="command", required=True))
    return p


def run(*argv: str) -> int:
    args = parser().parse_args(list(argv))
    return int(args.func(args))


def write_log(path: Path, messages: list[tuple[str, bytes]]) -> None:
    recorder = Recorder(path)
    for t, (topic, payload) in enumerate(messages):
        received = Received(topic.encode(), payload, 1_000_000_000 + t * 33_000_000)
        recorder.write(received)
    recorder.close()


@dataclass
class Joint:
    name: str
    parent: str | None
    offset: list[float]
    channels: list[str]
    end_site: list[float] | None = None
    children: list[str] = field(default_factory=list)


def parse_bvh(text: str) -> tuple[dict[str, Joint], list[str], int, float, list[list[float]]]:
    """A small independent BVH reader: joints, their file (channel) order, frame count, time, rows."""
    tokens = text.split()
    joints: dict[str, Joint] = {}
    order: list[str] = []
    stack: list[str | None] = []
    i = tokens.index("HIERARCHY") + 1
    current: str | None = None
    while tokens[i] != "MOTION":
        tok = tokens[i]
        if tok in ("ROOT", "JOINT"):
            current = tokens[i + 1]
            parent = stack[-1] if stack else None
            joints[current] = Joint(current, parent, [], [])
            order.append(current)
            if parent:
                joints[parent].children.append(current)
            i += 2
        elif tok == "End":
            assert tokens[i + 1] == "Site" and tokens[i + 2] == "{" and tokens[i + 3] == "OFFSET"
            assert current is not None
            joints[stack[-1] or current].end_site = [float(v) for v in tokens[i + 4 : i + 7]]
            assert tokens[i + 7] == "}"
            i += 8
        elif tok == "{":
            stack.append(current)
            i += 1
        elif tok == "}":
            stack.pop()
            i += 1
        elif tok == "OFFSET":
            joints[stack[-1] or ""].offset = [float(v) for v in tokens[i + 1 : i + 4]]
            i += 4
        elif tok == "CHANNELS":
            n = int(tokens[i + 1])
            joints[stack[-1] or ""].channels = tokens[i + 2 : i + 2 + n]
            i += 2 + n
        else:
            raise AssertionError(f"unexpected token {tok}")
    assert not stack
    lines = text.split("MOTION", 1)[1].strip().splitlines()
    assert lines[0].startswith("Frames:") and lines[1].startswith("Frame Time:")
    frames = int(lines[0].split()[1])
    frame_time = float(lines[1].split()[2])
    rows = [[float(v) for v in line.split()] for line in lines[2:]]
    return joints, order, frames, frame_time, rows


def test_bvh_export_hierarchy_channels_frames_and_rotations(tmp_path: Path) -> None:
    elbow = smpl.JOINT_NAMES.index("left_elbow")
    knee = smpl.JOINT_NAMES.index("right_knee")
    rotations = Rotation.random(4, random_state=11)
    poses = []
    for k in range(4):
        joints = identity_joints()
        joints[elbow] = rotations[k].as_quat()
        joints[knee] = Rotation.from_euler("x", 90, degrees=True).as_quat()  # a gimbal case for ZXY
        poses.append(joints)
    roots = [np.array([0.1 * k, 0.9, -0.2], np.float32) for k in range(4)]
    seqs = [0, 1, 2, 5]  # frames 3 and 4 were lost
    log = tmp_path / "motion.abl"
    write_log(
        log,
        [(f"event/{SESSION}", opened_event(SESSION, "motion", motion_rig(), fps=30.0))]
        + [(f"frame/{SESSION}", motion_frame(s, p, r)) for s, p, r in zip(seqs, poses, roots, strict=True)],
    )
    out = tmp_path / "motion.bvh"
    assert run("export", str(log), "--bvh", str(out)) == 0

    bvh, order, frames, frame_time, rows = parse_bvh(out.read_text())
    assert set(bvh) == set(smpl.JOINT_NAMES)
    for j, name in enumerate(smpl.JOINT_NAMES):
        parent = smpl.PARENTS[j]
        assert bvh[name].parent == (smpl.JOINT_NAMES[parent] if parent >= 0 else None)
        if parent >= 0:
            assert np.allclose(bvh[name].offset, smpl.REST_OFFSETS[j] * 100, atol=1e-3)  # centimetres
            assert bvh[name].channels == ["Zrotation", "Xrotation", "Yrotation"]
        if not bvh[name].children:
            assert bvh[name].end_site == [0.0, 0.0, 0.0]
    root = bvh["pelvis"]
    assert root.offset == [0.0, 0.0, 0.0]
    assert root.channels == ["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"]
    assert frames == 6 == len(rows)  # 4 frames + 2 filled gaps
    assert frame_time == pytest.approx(1 / 30, abs=1e-7)
    assert all(len(row) == 6 + 3 * 23 for row in rows)

    def channels(row: list[float], name: str) -> list[float]:
        start = 3 + 3 * order.index(name)  # root has 3 position channels first
        return row[start : start + 3]

    source_rows = [0, 1, 2, 2, 2, 3]  # the lost frames repeat frame seq 2
    for row, src in zip(rows, source_rows, strict=True):
        assert np.allclose(row[:3], (roots[src] + smpl.REST_OFFSETS[0]) * 100, atol=1e-3)
        for name, joint in (("left_elbow", elbow), ("right_knee", knee)):
            z, x, y = channels(row, name)
            rebuilt = Rotation.from_euler("ZXY", [z, x, y], degrees=True)
            assert np.allclose(
                rebuilt.as_matrix(), Rotation.from_quat(poses[src][joint]).as_matrix(), atol=1e-4
            )
        assert np.allclose(channels(row, "head"), 0.0, atol=1e-6)


def test_csv_export_face_session_columns_and_values(tmp_path: Path) -> None:
    weights = np.linspace(0, 1, 52, dtype=np.float32)
    log = tmp_path / "face.abl"
    write_log(
        log,
        [(f"event/{FACE_SESSION}", opened_event(FACE_SESSION, "face", face_rig()))]
        + [(f"frame/{FACE_SESSION}", face_frame(s, weights * (s + 1) / 3)) for s in range(3)],
    )
    out = tmp_path / "face.csv"
    assert run("export", str(log), "--csv", str(out)) == 0
    with out.open() as f:
        rows = list(csv.reader(f))
    header = rows[0]
    assert header[:7] == [
        "seq",
        "input_seq",
        "t_capture_ns",
        "t_publish_ns",
        "t_recv_ns",
        "engine_us",
        "batch",
    ]
    assert header[7] == "face_found" and header[8:58] == [f"Exp{i:02d}" for i in range(50)]
    assert header[58:60] == ["EyelidLeft", "EyelidRight"]
    assert header[60:68] == [
        "head_qx",
        "head_qy",
        "head_qz",
        "head_qw",
        "jaw_qx",
        "jaw_qy",
        "jaw_qz",
        "jaw_qw",
    ]
    assert header[68:] == list(arkit.ARKIT_NAMES)
    assert len(rows) == 4 and all(len(r) == len(header) for r in rows)
    assert [int(r[0]) for r in rows[1:]] == [0, 1, 2]
    assert [int(r[4]) for r in rows[1:]] == [1_033_000_000, 1_066_000_000, 1_099_000_000]
    jaw_open = header.index("JawOpen")
    assert float(rows[3][jaw_open]) == pytest.approx(weights[arkit.ARKIT_INDEX["JawOpen"]], abs=1e-6)
    assert rows[1][header.index("EyelidRight")] == "0.75"  # shortest float32 text


def test_export_refuses_ambiguous_or_wrong_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "two.abl"
    write_log(
        log,
        [
            (f"frame/{SESSION}", motion_frame(0)),
            (f"frame/{OTHER}", motion_frame(0, session=OTHER)),
            (f"frame/{FACE_SESSION}", face_frame(0, np.zeros(52, np.float32))),
        ],
    )
    assert run("export", str(log), "--bvh", str(tmp_path / "x.bvh")) == 1
    assert "choose one with --session" in capsys.readouterr().err
    assert run("export", str(log), "--bvh", str(tmp_path / "x.bvh"), "--session", FACE_SESSION) == 1
    assert "not among the log's motion sessions" in capsys.readouterr().err
    assert run("export", str(log), "--bvh", str(tmp_path / "x.bvh"), "--session", OTHER) == 0
    assert (tmp_path / "x.bvh").read_text().startswith("HIERARCHY")
    assert run("export", str(log)) == 2


def test_output_arguments_and_build_router() -> None:
    p = argparse.ArgumentParser()
    add_output_arguments(p)
    # 192.0.2.5 (TEST-NET-1): a destination that is parsed here, never dialled.
    argv = (
        "--osc vmc://127.0.0.1:9000 --osc vmc://localhost?rate=15 --livelink-face 192.0.2.5 --osc-no-bundle"
    )
    args = p.parse_args([*argv.split(), "--output-rate", "30"])
    router = build_router(args, "tcp://127.0.0.1:5571")
    assert isinstance(router, RouterProcess) and router.endpoint == "tcp://127.0.0.1:5571"
    assert len(router.specs) == 3  # built in the output process, as build_outputs builds them here
    outputs = build_outputs(args)
    names = [o.name for o in outputs]
    assert names == ["vmc://127.0.0.1:9000", "vmc://localhost:39539", "livelink-face://192.0.2.5:11111"]
    assert [o.max_rate_hz for o in outputs] == [30.0, 15.0, 30.0]  # ?rate= wins over --output-rate
    vmc = [o for o in outputs if isinstance(o, VmcOutput)]
    assert all(not o.bundle for o in vmc) and isinstance(outputs[2], LiveLinkFaceOutput)
    assert build_router(p.parse_args([]), "tcp://127.0.0.1:5571") is None
    bad_args = [
        ["--osc", "127.0.0.1:9000"],
        ["--osc", "vmc://host:99999"],
        ["--osc", "vmc://host?fps=3"],
        ["--livelink-face", "host:11111?rate=0"],
        ["--output-rate", "fast"],
    ]
    for bad in bad_args:
        with pytest.raises(SystemExit):
            p.parse_args(bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:9000", ("127.0.0.1", 9000)),
        ("studio-pc", ("studio-pc", 11111)),
        ("[::1]:9000", ("::1", 9000)),
        ("[::1]", ("::1", 11111)),
        ("2001:db8::1", ("2001:db8::1", 11111)),
    ],
)
def test_destinations_parse(text: str, expected: tuple[str, int]) -> None:
    assert parse_host_port(text, 11111) == expected


@pytest.mark.parametrize("text", ["host:port", "host:70000", ":9000", "[::1]9000", "[::1"])
def test_bad_destinations_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(text)):
        parse_host_port(text, 11111)


def test_outputs_from_a_config_table_unless_flags_say_otherwise() -> None:
    p = argparse.ArgumentParser()
    add_output_arguments(p)
    table = {"osc": ["vmc://127.0.0.1:9000?rate=10"], "livelink_face": "192.0.2.5", "output_rate": 20}
    outputs = build_outputs(p.parse_args([]), {**table, "osc_no_bundle": True})
    assert [(o.name, o.max_rate_hz) for o in outputs] == [
        ("vmc://127.0.0.1:9000", 10.0),
        ("livelink-face://192.0.2.5:11111", 20.0),
    ]
    assert not outputs[0].bundle  # type: ignore[attr-defined]
    flags = p.parse_args(["--osc", "vmc://127.0.0.1:7000", "--output-rate", "5"])
    outputs = build_outputs(flags, table)
    assert [(o.name, o.max_rate_hz) for o in outputs] == [
        ("vmc://127.0.0.1:7000", 5.0),
        ("livelink-face://192.0.2.5:11111", 5.0),
    ]
    with pytest.raises(ValueError, match="config: 'osc' must be a list of strings"):
        build_router(p.parse_args([]), "tcp://127.0.0.1:5571", {"osc": [1]})
    with pytest.raises(ValueError, match="expected vmc://"):
        build_router(p.parse_args([]), "tcp://127.0.0.1:5571", {"osc": ["127.0.0.1:9000"]})


def test_record_command_then_replay_command_into_vmc(tmp_path: Path) -> None:
    publisher = Publisher()
    log = tmp_path / "rec.abl"
    port = publisher.endpoint.rsplit(":", 1)[1]
    result: list[int] = []
    thread = threading.Thread(
        target=lambda: result.append(
            run("record", "--connect", f"127.0.0.1:{port}", "--out", str(log), "--seconds", "1")
        )
    )
    thread.start()
    publisher.wait_subscribed()
    publisher.send(f"event/{SESSION}", opened_event(SESSION, "motion", motion_rig()))
    for seq in range(5):
        publisher.send(f"frame/{SESSION}", motion_frame(seq))
    thread.join()
    publisher.close()
    assert result == [0]

    osc = OscCapture()
    try:
        assert run("replay", str(log), "--osc", f"vmc://127.0.0.1:{osc.port}", "--speed", "0") == 0
        wait_for(lambda: sum(a == "/VMC/Ext/Root/Pos" for a, _ in osc.messages) >= 1)
    finally:
        osc.close()
    assert {a for a, _ in osc.messages} >= {
        "/VMC/Ext/OK",
        "/VMC/Ext/T",
        "/VMC/Ext/Root/Pos",
        "/VMC/Ext/Bone/Pos",
    }
    assert run("replay", str(log)) == 2  # nothing to replay into
