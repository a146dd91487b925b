"""Pictures of a run: latency over time, a few animation channels, and the generated dance as skeletons."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from bridge.clients.harness.run import SessionTrack
from bridge.protocol.events import BodyRig
from bridge.protocol.frames import FaceFrame, MotionFrame
from bridge.rig.forward_kinematics import forward_kinematics_quat

SKELETON_POSES = 8


def plot_run(
    face: SessionTrack | None,
    motion: SessionTrack | None,
    rig: BodyRig,
    out: Path,
    models: Mapping[str, str],
) -> Path:
    """Write a PNG with latency, channels and skeleton snapshots; matplotlib is imported only here.
    `models`: a label per pipeline naming the model its session ran (and whether it is trained)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(14, 9), constrained_layout=True)
    grid = fig.add_gridspec(3, SKELETON_POSES)
    ax_lat = fig.add_subplot(grid[0, : SKELETON_POSES // 2])
    ax_hist = fig.add_subplot(grid[0, SKELETON_POSES // 2 :])
    for track, colour in ((face, "tab:orange"), (motion, "tab:blue")):
        if track is None or not track.frames:
            continue
        t0 = track.frames[0].recv_ns
        t = np.array([(r.recv_ns - t0) / 1e9 for r in track.frames])
        lat = np.array(track.latencies_ns[: len(t)]) / 1e6
        ax_lat.plot(t, lat, ".", ms=2, color=colour, label=f"{track.pipeline} (p50 {np.median(lat):.1f} ms)")
        ax_hist.hist(lat, bins=60, color=colour, alpha=0.6, label=track.pipeline)
    ax_lat.set(xlabel="time (s)", ylabel="end-to-end latency (ms)", title="input captured -> frame received")
    ax_lat.legend(loc="upper right")
    ax_hist.set(xlabel="latency (ms)", ylabel="frames", title="latency distribution")
    ax_hist.legend()

    ax_face = fig.add_subplot(grid[1, : SKELETON_POSES // 2])
    title = f"face channels: {models.get('face', 'model unknown')}"
    if face is not None and face.frames:
        frames = [r.frame for r in face.frames if isinstance(r.frame, FaceFrame)]
        expr = np.stack([f.expression[:4] for f in frames])
        for k in range(expr.shape[1]):
            ax_face.plot(expr[:, k], lw=1, label=f"Exp{k:02d}")
        if frames[0].blendshapes.size:
            # ARKit order: JawOpen, EyeBlinkLeft, MouthSmileLeft, BrowInnerUp.
            for index, name in (
                (17, "JawOpen"),
                (0, "EyeBlinkLeft"),
                (23, "MouthSmileLeft"),
                (43, "BrowInnerUp"),
            ):
                ax_face.plot([f.blendshapes[index] for f in frames], lw=1.5, label=f"{name} (ARKit)")
        ax_face.legend(ncol=5, fontsize=7)
    ax_face.set(xlabel="frame", title=title)

    ax_body = fig.add_subplot(grid[1, SKELETON_POSES // 2 :])
    motion_frames = (
        [] if motion is None else [r.frame for r in motion.frames if isinstance(r.frame, MotionFrame)]
    )
    positions = np.zeros((0, 24, 3))
    if motion_frames:
        joints = np.stack([f.joints for f in motion_frames])
        roots = np.stack([f.root for f in motion_frames])
        positions, _ = forward_kinematics_quat(joints, roots, rig.rest_offsets, rig.parents)
        names = list(rig.joints)
        for name in ("left_wrist", "right_wrist", "left_ankle", "head"):
            if name in names:
                ax_body.plot(positions[:, names.index(name), 1], lw=1, label=f"{name} height")
        ax_body.legend(fontsize=7)
    dance_title = f"dance: joint heights, {models.get('motion', 'model unknown')}"
    ax_body.set(xlabel="frame", ylabel="m", title=dance_title)

    if len(positions):
        parents = rig.parents
        picks = np.linspace(0, len(positions) - 1, SKELETON_POSES).astype(int)
        for k, i in enumerate(picks):
            ax = fig.add_subplot(grid[2, k])
            pose = positions[i]
            for j, p in enumerate(parents):
                if p >= 0:
                    # Front view: x to the viewer's right is the avatar's left, so mirror for the picture.
                    ax.plot([-pose[j, 0], -pose[p, 0]], [pose[j, 1], pose[p, 1]], "-", color="tab:blue", lw=2)
            ax.plot(-pose[:, 0], pose[:, 1], "o", ms=2, color="k")
            ax.set_aspect("equal")
            ax.set_xlim(-1.0, 1.0)
            ax.set_ylim(-1.3, 0.9)
            ax.set_title(f"frame {i}", fontsize=8)
            ax.axis("off")
    fig.suptitle("avatar-bridge demo: face and motion sessions over ZeroMQ on the CPU default (ONNX Runtime)")
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
