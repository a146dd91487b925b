"""BVH export of a motion session: the rig's skeleton with its rest offsets, one BVH frame per frame.

Conventions: right-handed, Y up, the avatar facing +Z - the wire's own axes, which are also BVH's
usual ones, so no axis change. Lengths in centimetres (wire metres x 100). The ROOT has OFFSET 0 and
channels ``Xposition Yposition Zposition Zrotation Xrotation Yrotation``: its position channels
are the pelvis position, root translation + the root's rest position, as in forward kinematics.
Every other joint has ``Zrotation Xrotation Yrotation``: local rotation R = Rz @ Rx @ Ry, degrees.
Leaf joints end in an ``End Site`` with OFFSET 0. Frames lost on the wire (seq gaps) are filled by
repeating the previous pose, so Frame Time stays true; Frame Time is 1 / the session's fps.

The log is not trusted: a joint name keeps only the characters BVH readers take in a name (others
become `_`), so a name cannot add structure; every frame must have the rig's joints; and seq gaps may
add at most MAX_FILLED_FRAMES frames in all, so a small damaged log cannot ask for gigabytes.
"""

from __future__ import annotations

import itertools
import logging
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.clients.outputs.recorder import LogError, Recording
from bridge.clients.outputs.session import DEFAULT_FPS, BodyRig
from bridge.protocol import MotionFrame
from bridge.rig.rotations import quat_to_euler

log = logging.getLogger(__name__)

CM_PER_M = 100.0
ROTATION_CHANNELS = "Zrotation Xrotation Yrotation"
EULER_ORDER = "zxy"  # the rotation channels' order, as quat_to_euler reads it
MAX_FILLED_FRAMES = 3600  # frames seq gaps may add to an export (a minute at 60 fps)
_NOT_IN_A_NAME = re.compile(r"[^A-Za-z0-9_.:-]")


def write_bvh(recording: Recording, path: str | Path, *, scale: float = CM_PER_M) -> int:
    """Write the recording's motion frames as BVH; returns the number of BVH frames."""
    rig = recording.info.rig
    if not isinstance(rig, BodyRig):
        raise ValueError(
            f"session {recording.info.session} is a {recording.info.pipeline} session, not motion"
        )
    frames = [f for f in recording.frames if isinstance(f, MotionFrame)]
    if not frames:
        raise ValueError(f"session {recording.info.session} has no frames")
    fps = recording.info.fps
    if fps is None:
        log.warning(
            "session %s: fps unknown (no opened event in the log); assuming %g",
            frames[0].header.session,
            DEFAULT_FPS,
        )
        fps = DEFAULT_FPS
    shape = (len(rig.joints), 4)
    wrong = next((f for f in frames if f.joints.shape != shape), None)
    if wrong is not None:
        raise LogError(
            f"session {recording.info.session}: frame seq {wrong.header.seq} has {len(wrong.joints)} joints, "
            f"its rig {len(rig.joints)}"
        )
    joints, root = fill_gaps(frames)
    Path(path).write_text(bvh_text(rig, joints, root, 1.0 / fps, scale))
    return len(joints)


def fill_gaps(frames: list[MotionFrame]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Joint rotations (N, J, 4) and root translations (N, 3), one row per seq from the first frame
    to the last (a lost frame repeats the one before it, so row i stays at time i / fps)."""
    gaps = [max(b.header.seq - a.header.seq - 1, 0) for a, b in itertools.pairwise(frames)]
    if sum(gaps) > MAX_FILLED_FRAMES:
        raise LogError(
            f"session {frames[0].header.session}: seq gaps would add {sum(gaps)} frames (at most "
            f"{MAX_FILLED_FRAMES}); the log is damaged or lost too much to export"
        )
    index: list[int] = [0]  # frame per BVH frame: a seq gap repeats the frame before it
    for k, gap in enumerate(gaps, 1):
        index += [k - 1] * gap
        index.append(k)
    if len(index) > len(frames):
        log.warning("%d lost frames filled with the previous pose", len(index) - len(frames))
    joints = np.stack([f.joints for f in frames]).astype(np.float64)[index]
    root = np.stack([f.root for f in frames]).astype(np.float64)[index]
    return joints, root


def bvh_name(name: str, j: int) -> str:
    """A joint name as one BVH token: characters other than [A-Za-z0-9_.:-] become `_`."""
    return _NOT_IN_A_NAME.sub("_", name)[:64] or f"joint{j}"


def bvh_text(
    rig: BodyRig,
    joints: npt.NDArray[np.float64],
    root: npt.NDArray[np.float64],
    frame_time: float,
    scale: float,
) -> str:
    """BVH for joint rotations ``(N, J, 4)`` xyzw and root translations ``(N, 3)`` in metres."""
    children: dict[int, list[int]] = {j: [] for j in range(len(rig.joints))}
    for j, p in enumerate(rig.parents):
        if p >= 0:
            children[p].append(j)
    order: list[int] = []  # joints in the file's depth-first order, which is the channel order
    lines = ["HIERARCHY"]

    def write(j: int, depth: int) -> None:
        pad = "  " * depth
        order.append(j)
        if rig.parents[j] < 0:
            offset, channels = (0.0, 0.0, 0.0), f"6 Xposition Yposition Zposition {ROTATION_CHANNELS}"
            lines.append(f"{pad}ROOT {bvh_name(rig.joints[j], j)}")
        else:
            offset, channels = tuple(rig.rest_offsets[j] * scale), f"3 {ROTATION_CHANNELS}"
            lines.append(f"{pad}JOINT {bvh_name(rig.joints[j], j)}")
        lines.append(f"{pad}{{")
        # Rest offsets arrive as float32: 4 decimals (1 µm) hide their rounding (38.600001 -> 38.6000).
        lines.append(f"{pad}  OFFSET " + " ".join(f"{v:.4f}" for v in offset))
        lines.append(f"{pad}  CHANNELS {channels}")
        for c in children[j]:
            write(c, depth + 1)
        if not children[j]:
            lines.extend(
                (
                    f"{pad}  End Site",
                    f"{pad}  {{",
                    f"{pad}    OFFSET 0.000000 0.000000 0.000000",
                    f"{pad}  }}",
                )
            )
        lines.append(f"{pad}}}")

    roots = [j for j, p in enumerate(rig.parents) if p < 0]
    for r in roots:
        write(r, 0)
    angles = np.degrees(quat_to_euler(joints[:, order], EULER_ORDER))  # (N, J, 3) z, x, y
    positions = {r: (root + rig.rest_offsets[r]) * scale for r in roots}
    lines += ["MOTION", f"Frames: {len(joints)}", f"Frame Time: {frame_time:.8f}"]
    for n in range(len(joints)):
        values: list[float] = []
        for k, j in enumerate(order):
            if j in positions:
                values += positions[j][n].tolist()
            values += angles[n, k].tolist()
        lines.append(" ".join(f"{v:.6f}" for v in values))
    return "\n".join(lines) + "\n"
