"""Writes messages encoded by the bridge's own Python protocol code, for the C# decoder tests.

Usage: python make_fixtures.py OUTDIR. Each file holds one msgpack payload. The array values are
simple formulas the C# tests recompute (FrameDecoderTests, ReplyTests):
  expression[i] = i / 100, eyelids = (0.25, 0.75), jaw = (0, 0, 0, 1), head = (0, 0.6, 0, 0.8),
  blendshapes[i] = i / 51, joints[j] = (0, 0, 0, 1) except joint 1 = (0.6, 0, 0, 0.8),
  root = (0.1, 0.9, -0.2) (motion_batch has its own, beside it); speech frames:
  visemes[i] = (i + 1) / 120, vowels = (0.1, 0.2, 0.3, 0.4, 0.5),
  voice = true; face_body_frame: see its comment in main. speech_utterance holds a held-out eSpeak NG
  voice saying a held-out sentence
  ({"rate": int, "pcm": bin s16le}), for the live speech session; speech_calibration the same voice
  saying the five calibration vowels.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgpack
import numpy as np
from skimage import data as skimage_data

from bridge.protocol import encode_face_frame
from bridge.protocol.batch_frames import encode_batch, motion_columns
from bridge.protocol.errors import ErrorCode
from bridge.protocol.events import FaceRig, encode_rig
from bridge.protocol.motion_frames import encode_motion_frames
from bridge.protocol.replies import error_reply, reply
from bridge.rig import humanoid_solve, smpl
from bridge.rig.arkit import ARKIT_NAMES
from bridge.speech.corpus import Voice, calibration_clip, sentences, speak

SESSION = "0123456789abcdef"
COORDINATES = {"handedness": "right", "up": "+y", "forward": "+z", "units": "m"}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    face = dict(
        face_found=True,
        expression=np.arange(50, dtype=np.float32) / 100,
        eyelids=np.array([0.25, 0.75], np.float32),
        jaw=np.array([0, 0, 0, 1], np.float32),
        head=np.array([0, 0.6, 0, 0.8], np.float32),
        engine_us=1234.5,
        batch=3,
    )
    write(out, "face_frame", encode_face_frame(SESSION, 7, 5, 1_700_000_000_000_000_000,
                                              blendshapes=np.arange(52, dtype=np.float32) / 51, **face))
    write(out, "face_frame_no_blendshapes", encode_face_frame(SESSION, 8, 6, 1_700_000_000_000_000_001,
                                                              blendshapes=None, **face))
    speech = {**face, "expression": np.zeros(0, np.float32), "blendshapes": np.zeros(52, np.float32)}
    write(out, "speech_frame", encode_face_frame(SESSION, 9, 4, 1_700_000_000_000_000_003,
                                                 visemes=np.arange(1, 16, dtype=np.float32) / 120,
                                                 vowels=np.array([0.1, 0.2, 0.3, 0.4, 0.5], np.float32),
                                                 voice=True, **speech))
    joints = np.tile(np.array([0, 0, 0, 1], np.float32), (24, 1))
    joints[1] = (0.6, 0, 0, 0.8)
    (motion,) = encode_motion_frames([SESSION], [2**40], [2**33], [1_700_000_000_000_000_002],
                                     joints=joints[None], root=np.array([[0.1, 0.9, -0.2]], np.float32),
                                     engine_us=42.0, batch=1)
    write(out, "motion_frame", motion)
    # Batch rows r = 0, 1, 2: session f"{r:016x}", seq 2**40 + r, input_seq r, t_capture_ns 1.7e18 + r,
    # joints[r, j] = (r, j, 0.5, 1) / |(r, j, 0.5, 1)|, root[r] = (0.1 r, 0.9, -0.2).
    rows = np.arange(3)
    quats = np.stack([np.broadcast_to(rows[:, None], (3, 24)), np.broadcast_to(np.arange(24), (3, 24)),
                      np.full((3, 24), 0.5), np.ones((3, 24))], axis=-1).astype(np.float32)
    quats /= np.linalg.norm(quats, axis=-1, keepdims=True)
    columns = motion_columns([f"{r:016x}" for r in rows], 2**40 + rows, rows,
                             1_700_000_000_000_000_000 + rows, joints=quats,
                             root=np.stack([0.1 * rows, np.full(3, 0.9), np.full(3, -0.2)], 1),
                             engine_us=77.5, batch=4)
    write(out, "motion_batch", encode_batch("motion", columns, 1_700_000_000_000_000_123))

    face_rig = {"kind": "face", "coordinates": COORDINATES, "quaternion_order": "xyzw",
                "expression": [f"Exp{i:02d}" for i in range(50)], "eyelids": ["EyelidLeft", "EyelidRight"],
                "rotations": ["head", "jaw"], "blendshapes": list(ARKIT_NAMES)}
    body_rig = {"kind": "body", "coordinates": COORDINATES, "quaternion_order": "xyzw",
                "joints": list(smpl.JOINT_NAMES), "parents": list(smpl.PARENTS),
                "rest_offsets": np.asarray(smpl.REST_OFFSETS, "<f4").tobytes(),
                "humanoid": [n or "" for n in smpl.UNITY_BONE_NAMES]}
    write(out, "hello_reply", reply("hello", 1, server="avatar-bridge 0.1.0", frames_port=5571,
                                    max_message_bytes=8 << 20, pipelines=["face", "motion"],
                                    idle_timeout_s=10.0,
                                    future_key={"ignored": True}))
    write(out, "list_reply", reply("list", 2, models=[
        {"name": "face_expression_small", "pipeline": "face", "fps": 30.0, "trained": False,
         "backend": "onnxruntime", "default": True},
        {"name": "dance_lstm", "pipeline": "motion", "fps": 60.0, "trained": False, "backend": "onnxruntime",
         "default": True, "styles": ["house", "break"]}]))
    write(out, "open_face_reply", reply("open", 3, session=SESSION, topic="frame/" + SESSION, pipeline="face",
                                        model="face_expression_small", fps=30.0, accepts=["image"],
                                        rig=face_rig))
    write(out, "open_motion_reply", reply("open", 4, session=SESSION, topic="frame/" + SESSION,
                                          pipeline="motion",
                                          model="dance_lstm", fps=60.0, accepts=["audio", "features"],
                                          feature_cols=35, rig=body_rig))
    speech_rig = {**face_rig, "expression": [], "unsupported": ["EyeBlinkLeft"],
                  "extras": ["visemes", "vowels", "voice"]}
    write(out, "open_speech_reply", reply("open", 10, session=SESSION, topic="frame/" + SESSION,
                                          pipeline="speech", model="speech_visemes", fps=30.0,
                                          accepts=["audio"], rig=speech_rig))
    utterance = speak(Voice("en-us", "m6"), sentences("en-us", held_out=True)[0])
    # A face session opened with body: true (docs/protocol.md 5.1.2): the bridge's own humanoid rig, and a
    # frame whose body rotations are identity except LeftLowerArm (joint 8) = +90 degrees about wire +Z
    # (the forearm turns from the avatar's left to up), body found, the left hand found, the right not.
    humanoid = humanoid_solve.body_rig()
    face_body_rig = encode_rig(FaceRig((), ("EyelidLeft", "EyelidRight"), tuple(ARKIT_NAMES), ("TongueOut",),
                                       ("head_position", "gaze", "body"), humanoid))
    write(out, "open_face_body_reply", reply("open", 11, session=SESSION, topic="frame/" + SESSION,
                                             pipeline="face", model="mediapipe_face", fps=30.0,
                                             accepts=["image"], rig=face_body_rig))
    body = np.tile(np.array([0, 0, 0, 1], np.float32), (len(humanoid.joints), 1))
    body[humanoid.joints.index("LeftLowerArm")] = (0, 0, np.sqrt(0.5), np.sqrt(0.5))
    write(out, "face_body_frame", encode_face_frame(SESSION, 12, 11, 1_700_000_000_000_000_004,
                                                    blendshapes=np.zeros(52, np.float32),
                                                    **{**face, "expression": np.zeros(0, np.float32)},
                                                    head_position=np.array([0, 0, -0.5], np.float32),
                                                    gaze=np.zeros(4, np.float32), body=body, body_found=True,
                                                    hands_found=(True, False)))
    # A person with face, shoulders and arms in view for the live face + body session: scikit-image's
    # astronaut (public domain; a test dependency of the bridge), {"width", "height", "rgb": bin rgb8}.
    astronaut = skimage_data.astronaut()
    write(out, "astronaut", pack({"width": astronaut.shape[1], "height": astronaut.shape[0],
                                  "rgb": astronaut.tobytes()}))
    write(out, "speech_utterance", pack({"rate": utterance.rate,
                                         "pcm": utterance.audio.astype("<i2").tobytes()}))
    vowels, rate = calibration_clip(Voice("en-us", "m6"))
    write(out, "speech_calibration", pack({"rate": rate, "pcm": vowels.astype("<i2").tobytes()}))
    write(out, "close_reply", reply("close", 5, session=SESSION, frames_published=600))
    write(out, "pong_reply", reply("pong", 6, t_ns=1_700_000_000_123_456_789))
    write(out, "ack_reply", reply("ack", 9, session=SESSION, seq=12))
    write(out, "error_reply", error_reply(ErrorCode.BAD_SIZE, "data is 3 bytes short", 8, SESSION))
    write(out, "opened_event", pack({"op": "event", "v": 1, "session": SESSION, "event": "opened",
                                     "pipeline": "motion", "model": "dance_lstm", "fps": 60.0,
                                     "rig": body_rig}))
    write(out, "closed_event", pack({"op": "event", "v": 1, "session": SESSION, "event": "closed",
                                     "reason": "idle_timeout", "frames_published": 17}))


def pack(message: dict[str, object]) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


def write(out: Path, name: str, payload: bytes) -> None:
    (out / f"{name}.msgpack").write_bytes(payload)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
