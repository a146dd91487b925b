"""Issue 40 attack 12: the offline tools and the serve config refuse bad files and values with a message
and exit status 2, in time and memory bounded by the input's real size: `replay` (a 2^63 ns gap, NaN
frames), `export` (a joint name that would add BVH structure, formula cells in CSV, malformed and
tiny-but-greedy logs), `dance` (a WAV that claims 7 Hz) and `serve` (NaN, negative limits, port
99999, deep TOML)."""

from __future__ import annotations

import argparse
import csv
import resource
import subprocess
import sys
import time
import wave
from pathlib import Path

import msgpack
import numpy as np
import pytest

from bridge.cli.serve import add_arguments, config_from_args
from bridge.cli.serve_config import ConfigError, load_serve_table
from bridge.clients.outputs.recorder import LOG_FORMAT, LOG_VERSION

from .test_outputs_export import run, write_log
from .test_outputs_helpers import (
    SESSION,
    identity_joints,
    motion_frame,
    motion_rig,
    opened_event,
)

HEADER = msgpack.packb({"format": LOG_FORMAT, "version": LOG_VERSION, "t_start_ns": 0, "source": ""})


def record(t: object, topic: object, payload: object) -> bytes:
    return bytes(msgpack.packb({"t": t, "topic": topic, "payload": payload}))


def motion_log(path: Path, *, names: list[str] | None = None, seqs: tuple[int, ...] = (0, 1)) -> Path:
    rig = motion_rig()
    if names is not None:
        rig["joints"] = names
    messages = [(f"event/{SESSION}", opened_event(SESSION, "motion", rig))]
    messages += [(f"frame/{SESSION}", motion_frame(seq)) for seq in seqs]
    write_log(path, messages)
    return path


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------------------------ replay
def test_replay_refuses_a_huge_gap_and_nan_frames_before_sending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gap = tmp_path / "gap.abl"
    frame = motion_frame(0)
    gap.write_bytes(
        HEADER + record(0, f"frame/{SESSION}", frame) + record(2**63 - 1, f"frame/{SESSION}", frame)
    )
    t0 = time.monotonic()
    assert run("replay", str(gap), "--pub", "tcp://127.0.0.1:*") == 2
    assert time.monotonic() - t0 < 5  # PUB_JOIN_S and the check; it used to wait 292 years
    assert "s after the one before" in capsys.readouterr().err
    nan = tmp_path / "nan.abl"
    joints = identity_joints()
    joints[3, 0] = np.nan
    write_log(nan, [(f"frame/{SESSION}", motion_frame(0)), (f"frame/{SESSION}", motion_frame(1, joints))])
    assert run("replay", str(nan), "--pub", "tcp://127.0.0.1:*") == 2
    assert "non-finite" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ export
def test_a_joint_name_cannot_add_bvh_structure(tmp_path: Path) -> None:
    names = list(motion_rig()["joints"])
    names[1] = "L_Hip\n{\nMOTION\nFrames: 1"
    names[2] = ""
    log = motion_log(tmp_path / "names.abl", names=names)
    out = tmp_path / "x.bvh"
    assert run("export", str(log), "--bvh", str(out)) == 0
    lines = [line.strip() for line in out.read_text().splitlines()]
    declared = [line.split(maxsplit=1)[1] for line in lines if line.startswith(("ROOT ", "JOINT "))]
    assert len(declared) == 24 and all(len(name.split()) == 1 for name in declared)
    assert "L_Hip___MOTION_Frames:_1" in declared and "joint2" in declared
    assert lines.count("MOTION") == 1 and lines.count("Frames: 2") == 1 and lines.count("{") == 24 + 5


def test_csv_text_cells_cannot_be_formulas(tmp_path: Path) -> None:
    names = list(motion_rig()["joints"])
    names[:5] = ['=HYPERLINK("http://x")', "+1", "-2", "@SUM(A1)", "\tTab"]
    log = motion_log(tmp_path / "formula.abl", names=names)
    out = tmp_path / "x.csv"
    assert run("export", str(log), "--csv", str(out)) == 0
    with out.open(newline="") as f:
        header = next(csv.reader(f))
    cells = header[header.index("root_z") + 1 :]
    assert cells[:5] == [
        '\'=HYPERLINK("http://x")_qx',
        '\'=HYPERLINK("http://x")_qy',
        '\'=HYPERLINK("http://x")_qz',
        '\'=HYPERLINK("http://x")_qw',
        "'+1_qx",
    ]
    assert not [c for c in header if c[:1] in ("=", "+", "-", "@", "\t")]


def malformed_logs(tmp_path: Path) -> dict[str, bytes]:
    opened = record(0, f"event/{SESSION}", opened_event(SESSION, "motion", motion_rig()))
    frame = record(1, f"frame/{SESSION}", motion_frame(0))
    big = motion_rig()
    big |= {"joints": [*big["joints"], "extra"], "parents": [*big["parents"], 0]}
    big |= {"rest_offsets": big["rest_offsets"] + bytes(12), "humanoid": [*big["humanoid"], ""]}
    return {
        "not msgpack": b"\xc1" * 64,
        "no header": frame,
        "record is an array": HEADER + bytes(msgpack.packb([1, 2, 3])),
        "t is a float": HEADER + record(float("nan"), f"frame/{SESSION}", motion_frame(0)),
        "t is negative": HEADER + record(-1, f"frame/{SESSION}", motion_frame(0)),
        "payload is a str": HEADER + record(0, f"frame/{SESSION}", "x"),
        "deep record": HEADER + b"\x91" * 2000 + b"\xc0",
        "bin claims 4 GB": HEADER
        + b"\x83\xa1t\x00\xa5topic\xa5frame\xa7payload\xc6\xff\xff\xff\xff"
        + b"\0" * 1500,
        "array claims 4G items": HEADER + b"\xdd\xff\xff\xff\xff" + b"\xc0" * 1500,
        "topic not utf-8": HEADER + b"\x83\xa1t\x00\xa5topic\xa2\xff\xfe\xa7payload\xc4\x00",
        "2 KB, seq gap of 2^40": HEADER + opened + frame + record(2, f"frame/{SESSION}", motion_frame(2**40)),
        "rig of 25 joints, frames of 24": HEADER
        + record(0, f"event/{SESSION}", opened_event(SESSION, "motion", big))
        + frame,
    }


def test_export_refuses_malformed_logs_with_a_message_in_bounded_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = peak_rss_mib()
    for name, content in malformed_logs(tmp_path).items():
        log = tmp_path / "bad.abl"
        log.write_bytes(content)
        assert len(content) < 4096, name
        t0 = time.monotonic()
        status = run("export", str(log), "--bvh", str(tmp_path / "x.bvh"), "--csv", str(tmp_path / "x.csv"))
        err = capsys.readouterr().err
        # A record cut short is a crash's last record: skipped, so that log holds no session (1).
        expected = 1 if name == "bin claims 4 GB" else 2
        assert status == expected and err.startswith("export: "), (name, status, err)
        assert "Traceback" not in err and time.monotonic() - t0 < 5, name
    assert peak_rss_mib() - before < 200  # the 2^40 gap asked for 4.7 GB


# ------------------------------------------------------------------------------------ dance, serve
def cli(*argv: str, limit_mib: int = 3000) -> subprocess.CompletedProcess[str]:
    """The real command, with its address space capped: a greedy one fails instead of swapping."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_mib << 20, limit_mib << 20))

    return subprocess.run(
        [sys.executable, "-m", "bridge", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=cap,
        check=False,
    )


def test_dance_refuses_a_wav_that_claims_7_hz(tmp_path: Path) -> None:
    song = tmp_path / "seven.wav"
    with wave.open(str(song), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(7)
        w.writeframes(np.zeros(20_000, np.int16).tobytes())
    done = cli("dance", str(song), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and "sample rate 7 Hz" in done.stderr, done.stderr[-500:]


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ("idle_timeout = nan", "idle_timeout"),
        ("idle_timeout = inf", "idle_timeout"),
        ("max_sessions = -1", "max_sessions"),
        ("max_sessions_per_client = 0", "max_sessions_per_client"),
        ("request_port = 99999", "request_port"),
        ("metrics_port = -5", "metrics_port"),
        ("max_load = 2.0", "max_load"),
        ("x = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
    ],
)
def test_the_config_schema_checks_ranges(tmp_path: Path, toml: str, says: str) -> None:
    config = tmp_path / "bad.toml"
    config.write_text(f"[serve]\n{toml}\n")
    with pytest.raises(ConfigError, match=says):
        load_serve_table(config)


@pytest.mark.parametrize(
    "flags", [("--idle-timeout", "nan"), ("--request-port", "99999"), ("--max-sessions", "-3")]
)
def test_flags_pass_the_same_ranges(flags: tuple[str, str]) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    with pytest.raises(ConfigError, match=flags[0]):
        config_from_args(parser.parse_args(list(flags)))


def test_serve_exits_2_with_the_message(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[serve]\nidle_timeout = nan\n")
    done = cli("serve", "--config", str(config), "--no-face-tracking")
    assert done.returncode == 2 and "idle_timeout" in done.stderr and "Traceback" not in done.stderr, (
        done.stderr
    )
