"""Pictures of a dance: the skeleton from a front camera as an MP4 with its music muxed in, and a
contact sheet of a few frames.

Takes world joint positions (SMPL 24 joints, metres, y up), so any source of motion can be drawn:
the demo's received frames, the benchmark's poses. Frames are drawn with matplotlib (the `demo`
extra) and encoded by the `ffmpeg` command (H.264 video, AAC audio); the song is handed to ffmpeg as
a 16-bit WAV file. Frames whose time is within two motion frames of a music beat get a red "BEAT" title,
so a viewer can see whether the moves land on the beat.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import soundfile

from bridge.rig.smpl import PARENTS
from bridge.system_packages import FFMPEG

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["VideoError", "check_video_tools", "write_contact_sheet", "write_dance_video"]

F64 = npt.NDArray[np.float64]
SIZE = 480  # pixels, square
BEAT_WINDOW = 2  # motion frames either side of a beat that show "BEAT"


class VideoError(RuntimeError):
    """What is missing to write the video (ffmpeg, matplotlib) or what ffmpeg said."""


def _use_agg() -> None:
    """matplotlib drawing off screen, or a VideoError saying how to install it."""
    try:
        import matplotlib
    except ImportError as exc:
        raise VideoError("the dance pictures need matplotlib: pip install 'avatar-bridge[demo]'") from exc
    matplotlib.use("Agg")


def _beat_marks(frames: int, fps: float, beats_s: npt.ArrayLike | None) -> npt.NDArray[np.bool_]:
    marks = np.zeros(frames, bool)
    if beats_s is not None:
        at = np.round(np.asarray(beats_s, np.float64) * fps).astype(np.int64)
        for d in range(-BEAT_WINDOW, BEAT_WINDOW + 1):
            near = at + d
            marks[near[(near >= 0) & (near < frames)]] = True
    return marks


class _Skeleton:
    """The skeleton's artists on one axes, moved from frame to frame (cheaper than drawing anew)."""

    def __init__(self, ax: Axes, joints: F64, fps: float) -> None:
        self.joints, self.fps = joints, fps
        self.bones = [(p, k) for k, p in enumerate(PARENTS) if p >= 0]
        self.lines = [ax.plot([], [], "-", color="tab:blue", lw=3)[0] for _ in self.bones]
        cx = float(joints[:, 0, 0].mean())  # the camera looks at the dance's mean root, not each frame's
        self.floor = ax.plot([cx - 1.0, cx + 1.0], [0.0, 0.0], color="gray", lw=1)[0]
        ax.set_xlim(cx - 1.0, cx + 1.0)
        ax.set_ylim(-1.3, 0.7)
        ax.set_aspect("equal")
        ax.axis("off")
        self.title = ax.set_title("")

    def show(self, i: int, beat: bool) -> None:
        j = self.joints[i]
        for line, (p, k) in zip(self.lines, self.bones, strict=True):
            line.set_data([j[p, 0], j[k, 0]], [j[p, 1], j[k, 1]])
        floor = float(j[:, 1].min()) - 0.01  # under the lowest joint
        self.floor.set_ydata([floor, floor])
        self.title.set_text(f"{i / self.fps:5.2f} s" + ("  BEAT" if beat else ""))
        self.title.set_color("red" if beat else "black")


def check_video_tools() -> None:
    """What the dance video needs (the ffmpeg command, matplotlib), checked before any work: a
    VideoError naming the fix."""
    if shutil.which("ffmpeg") is None:
        raise VideoError(f"the dance video needs the ffmpeg command; {FFMPEG.fix()}")
    _use_agg()


def write_dance_video(
    path: Path,
    joints: npt.ArrayLike,
    fps: float,
    pcm: npt.ArrayLike,
    sample_rate: int,
    beats_s: npt.ArrayLike | None = None,
    video_fps: int = 30,
) -> Path:
    """`joints` (T, 24, 3) at `fps` drawn at `video_fps` (every fps/video_fps-th frame) into an MP4
    at `path`, mono `pcm` in [-1, 1] muxed in; it ends with the shorter of motion and music."""
    check_video_tools()
    import matplotlib.pyplot as plt

    j = np.asarray(joints, np.float64)
    step = max(1, round(fps / video_fps))
    marks = _beat_marks(len(j), fps, beats_s)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = plt.figure(figsize=(SIZE / 100, SIZE / 100), dpi=100)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            wav = Path(tmp) / "music.wav"
            soundfile.write(
                str(wav), np.clip(np.asarray(pcm, np.float32), -1, 1), sample_rate, subtype="PCM_16"
            )
            cmd = ["ffmpeg", "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgba"]
            cmd += ["-s", f"{SIZE}x{SIZE}", "-r", f"{fps / step:g}", "-i", "-", "-i", str(wav)]
            cmd += ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", str(path)]
            with subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE) as ff:
                assert ff.stdin is not None
                skeleton = _Skeleton(fig.add_subplot(), j, fps)
                try:
                    for i in range(0, len(j), step):
                        skeleton.show(i, bool(marks[i]))
                        fig.canvas.draw()
                        ff.stdin.write(bytes(fig.canvas.buffer_rgba()))  # type: ignore[attr-defined]
                except BrokenPipeError:
                    pass  # ffmpeg stopped early: its error is reported below
                finally:
                    ff.stdin.close()
                err = ff.stderr.read().decode(errors="replace") if ff.stderr else ""
            if ff.returncode != 0:
                raise VideoError(f"ffmpeg failed ({ff.returncode}): {err.strip()}")
    finally:
        plt.close(fig)
    return path


def write_contact_sheet(
    path: Path, joints: npt.ArrayLike, fps: float, frames: Sequence[int], beats_s: npt.ArrayLike | None = None
) -> Path:
    """The skeleton at each of `frames`, side by side, as a PNG."""
    _use_agg()
    import matplotlib.pyplot as plt

    j = np.asarray(joints, np.float64)
    marks = _beat_marks(len(j), fps, beats_s)
    sheet = plt.figure(figsize=(1.5 * len(frames), 3), dpi=80)
    try:
        for n, i in enumerate(frames):
            _Skeleton(sheet.add_subplot(1, len(frames), n + 1), j, fps).show(i, bool(marks[i]))
        path.parent.mkdir(parents=True, exist_ok=True)
        sheet.savefig(path)
    finally:
        plt.close(sheet)
    return path
