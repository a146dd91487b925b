"""CSV export of one session: one row per received frame, a column per curve.

Columns: seq, input_seq, t_capture_ns, t_publish_ns, t_recv_ns, engine_us, batch, then
- face: face_found (0/1), the FLAME expression components and eyelids by their rig names,
  head_qx..head_qw and jaw_qx..jaw_qw (wire quaternions), then the ARKit blendshapes by name;
- motion: root_x, root_y, root_z (metres), then <joint>_qx, _qy, _qz, _qw per joint (wire axes).
Lost frames are not filled in: a gap in `seq` shows them. Names come from the log: one that starts
with = + - @ or a control character (a spreadsheet would run it as a formula) is written after a `'`.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.clients.outputs.recorder import Recording
from bridge.clients.outputs.session import BodyRig, FaceRig
from bridge.protocol import FaceFrame, Frame, MotionFrame

HEADER_COLUMNS = ("seq", "input_seq", "t_capture_ns", "t_publish_ns", "t_recv_ns", "engine_us", "batch")
_Q = ("qx", "qy", "qz", "qw")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def columns(recording: Recording) -> list[str]:
    rig = recording.info.rig
    out = list(HEADER_COLUMNS)
    if isinstance(rig, FaceRig):
        out += ["face_found", *rig.expression, *rig.eyelids]
        out += [f"head_{q}" for q in _Q] + [f"jaw_{q}" for q in _Q]
        out += list(rig.blendshapes)
    elif isinstance(rig, BodyRig):
        out += ["root_x", "root_y", "root_z"]
        out += [f"{joint}_{q}" for joint in rig.joints for q in _Q]
    return [text_cell(name) for name in out]


def text_cell(text: str) -> str:
    """A text cell no spreadsheet runs as a formula (OWASP's CSV injection advice)."""
    return "'" + text if text[:1] in _FORMULA_STARTS else text


def row(frame: Frame, t_recv_ns: int) -> list[str | int | float]:
    h = frame.header
    values: list[str | int | float] = [h.seq, h.input_seq, h.t_capture_ns, h.t_publish_ns, t_recv_ns]
    values += [h.engine_us, h.batch]
    if isinstance(frame, FaceFrame):
        values.append(int(frame.face_found))
        for array in (frame.expression, frame.eyelids, frame.head, frame.jaw, frame.blendshapes):
            values += _floats(array)
    elif isinstance(frame, MotionFrame):
        values += _floats(frame.root) + _floats(frame.joints.reshape(-1))
    return values


def _floats(array: npt.NDArray[np.float32]) -> list[str | int | float]:
    # str of a float32 is its shortest round-trip text ("0.1", not float64's 0.10000000149011612).
    return [str(v) for v in array]


def write_csv(recording: Recording, path: str | Path) -> int:
    """Write the recording as CSV; returns the number of rows."""
    header = columns(recording)
    with Path(path).open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        for frame, t in zip(recording.frames, recording.t_recv_ns, strict=True):
            values = row(frame, t)
            if len(values) != len(header):  # e.g. a face frame without blendshapes in a session with them
                raise ValueError(
                    f"frame seq {frame.header.seq}: {len(values)} values for {len(header)} columns"
                )
            writer.writerow(values)
    return len(recording.frames)
