"""Face tracking's post-processing for a whole batch: the tracked channels (52 ARKit blendshapes, head
rotation and position) filtered per channel with One-Euro, held and eased to neutral while the face
is lost, neutral calibration applied; then the derived channels (jaw, eyelids, gaze) and the frames.

Every session's state is one row of `FacePost` at its slot (bridge.state), as the motion
post-processing's: a batch reads and writes its sessions' rows by index. Face sessions and the face
pipelines built on them (a voice, the body) run on different scheduler threads and share the rows of
their tracker, so a batch holds the store's lock while it reads, writes or grows them.

Tracking loss: while no face is found, the frame says so (`face_found` false) and the last values
hold for HOLD_S, then ease to neutral over EASE_S.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bridge.filters.one_euro import D_CUTOFF_DEFAULT, OneEuroRows
from bridge.protocol.frames import encode_face_frame
from bridge.rig.arkit import ARKIT_NAMES
from bridge.rig.rotations import axis_angle_to_quat
from bridge.state.slots import SlotLease, SlotPool

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
Slots = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

_ARKIT = {n: i for i, n in enumerate(ARKIT_NAMES)}
# Channels: 52 blendshapes (ARKit order), head rotation (axis-angle, 3), head position (metres, 3).
N_BLEND = len(ARKIT_NAMES)
HEAD_ROT = slice(N_BLEND, N_BLEND + 3)
HEAD_POS = slice(N_BLEND + 3, N_BLEND + 6)
N_CHANNELS = N_BLEND + 6
# One-Euro (min_cutoff Hz, beta) per group at camera rates: eyes lightest (blinks last ~100 ms),
# mouth heavier, brows/cheeks/nose steadier still; head in radians and metres.
SMOOTHING_DEFAULTS: dict[str, tuple[float, float]] = {
    "eyes": (4.0, 20.0),
    "mouth": (1.5, 5.0),
    "brows": (1.0, 2.0),
    "head": (1.0, 3.0),
}
HOLD_S = 0.5
EASE_S = 1.0
# Gaze range the eyeLook channels span (ARKit-style rigs: about 30 degrees sideways, 25 up/down).
GAZE_YAW = math.radians(30.0)
GAZE_PITCH = math.radians(25.0)
# Jaw derived from the jaw channels: full jawOpen ~ 0.35 rad, full jawLeft/Right ~ 0.1 rad.
JAW_OPEN_RAD = 0.35
JAW_SIDE_RAD = 0.1


def _group(name: str) -> str:
    if name.startswith("Eye"):
        return "eyes"
    if name.startswith(("Mouth", "Jaw", "Tongue")):
        return "mouth"
    return "brows"


# Each channel's smoothing group: blendshapes by name, then head rotation and position.
_GROUPS = (*(_group(n) for n in ARKIT_NAMES), *("head",) * 6)
BETA = np.array([SMOOTHING_DEFAULTS[g][1] for g in _GROUPS], np.float32)  # One-Euro beta per channel
D_CUTOFF = np.full(N_CHANNELS, D_CUTOFF_DEFAULT, np.float32)


def min_cutoffs(cutoffs: dict[str, float]) -> F32:
    """One-Euro min cutoff per channel from each group's (a session's `smoothing_*` options)."""
    return np.array([cutoffs[g] for g in _GROUPS], np.float32)


@dataclass(frozen=True)
class CameraFace:
    """What the camera says in one frame of n sessions, ready to encode (or to mix with a voice)."""

    found: Mask  # (n,)
    blend: F32  # (n, 52) calibrated ARKit weights
    rotation: F32  # (n, 3) head axis-angle
    position: F32  # (n, 3) metres
    dark: Mask  # (n,)


class FacePost:
    """Every face session's post-processing state, one row per slot: its One-Euro filter, the last
    output channels, the channels and time when the face was lost (NaN while tracked), and the
    neutral calibration's offset and gain (blendshapes)."""

    def __init__(self) -> None:
        self.pool = SlotPool()
        self.filter = OneEuroRows(N_CHANNELS, beta=BETA, d_cutoff=D_CUTOFF)  # min cutoffs: per session
        self.last = np.zeros((0, N_CHANNELS), np.float32)
        self.lost_from = np.zeros((0, N_CHANNELS), np.float32)
        self.lost_since = np.zeros(0, np.float64)
        self.offset = np.zeros((0, N_BLEND), np.float32)
        self.gain = np.zeros((0, N_BLEND), np.float32)
        self._lock = threading.Lock()

    def open(self) -> SlotLease:
        """A new session's row (I/O thread); it starts afresh at the next batch that sees it."""
        return self.pool.acquire()

    def _prepare(self) -> None:
        """Grow to the pool's rows and start new sessions' rows afresh (under the lock)."""
        fresh = self.pool.grow(self, "last", "lost_from", "lost_since", "offset", "gain")
        self.filter.prepare(self.pool.size, fresh)
        self.last[fresh] = 0.0
        self.lost_from[fresh] = 0.0
        self.lost_since[fresh] = math.nan
        self.offset[fresh] = 0.0
        self.gain[fresh] = 1.0

    def camera(
        self,
        slots: Slots,
        t: F64,
        tracked: F32,
        *,
        found: Mask,
        smooth: Mask,
        min_cutoff: F32,
        calibrate: Mask,
        dark: Mask,
    ) -> CameraFace:
        """One frame of the distinct sessions at `slots` (n,), taken at `t` (n,) seconds: `tracked`
        (n, N_CHANNELS) the tracker's channels where `found`; filtered where `smooth` (their min
        cutoffs `min_cutoff`, (smooth rows, N_CHANNELS)), held then eased where lost, calibrated
        (the next found frame of a `calibrate` row becomes its neutral)."""
        with self._lock:
            self._prepare()
            lost = ~found
            values = tracked.copy()
            # Lost: hold the last values, then ease them to neutral.
            lost_since = self.lost_since[slots]
            newly_lost = lost & np.isnan(lost_since)
            lost_since[newly_lost] = t[newly_lost]
            self.lost_from[slots[newly_lost]] = self.last[slots[newly_lost]]
            values[lost] = eased(self.lost_from[slots[lost]], t[lost] - lost_since[lost])
            # Found: filtered; a re-found face starts its filter afresh (no glide from where it was lost).
            if smooth.any():
                rows = slots[smooth]
                self.filter.reset(rows[~np.isnan(lost_since[smooth])])
                values[smooth] = self.filter.step(rows, values[smooth], t[smooth], min_cutoff)
            lost_since[found] = math.nan
            self.lost_since[slots] = lost_since
            self.last[slots] = values
            # Neutral calibration: the next tracked frame's weights become the offsets.
            calibrate = calibrate & found
            if calibrate.any():
                offset = np.clip(values[calibrate, :N_BLEND], 0.0, 0.95)
                self.offset[slots[calibrate]] = offset
                self.gain[slots[calibrate]] = 1.0 / (1.0 - offset)
            return self._calibrated(slots, values, found=found, dark=dark)

    def held(self, slots: Slots, lost_for_s: F64) -> CameraFace:
        """The sessions' last values `lost_for_s` (n,) seconds after the camera stopped (held, then
        eased as when the face is lost), calibrated, `face_found` false. Their rows are unchanged."""
        with self._lock:
            self._prepare()
            held = eased(self.last[slots], lost_for_s)
            none = np.zeros(len(slots), bool)
            return self._calibrated(slots, held, found=none, dark=none)

    def _calibrated(self, slots: Slots, values: F32, *, found: Mask, dark: Mask) -> CameraFace:
        """Channels (n, C) -> a CameraFace, each session's neutral calibration applied."""
        offset, gain = self.offset[slots], self.gain[slots]
        blend = np.clip((values[:, :N_BLEND] - offset) * gain, 0.0, 1.0).astype(np.float32)
        return CameraFace(found, blend, values[:, HEAD_ROT], values[:, HEAD_POS], dark)


def eased(values: F32, lost_for_s: F64) -> F32:
    """Channels (n, C) `lost_for_s` (n,) seconds after the face was lost: held HOLD_S, then eased to
    neutral over EASE_S (head position holds: it has no neutral)."""
    k = np.clip((lost_for_s - HOLD_S) / EASE_S, 0.0, 1.0)
    out = values * (1.0 - k).astype(np.float32)[:, None]
    out[:, HEAD_POS] = values[:, HEAD_POS]
    return out


class FrameInput(Protocol):
    """What a frame's header takes from the input it answers (a pipeline's step)."""

    @property
    def input_seq(self) -> int: ...

    @property
    def t_capture_ns(self) -> int: ...


def encode_tracked(
    sessions: Sequence[str],
    seqs: Sequence[int],
    steps: Sequence[FrameInput],
    face: CameraFace,
    with_blendshapes: Sequence[bool],
    *,
    engine_us: float,
    batch: int,
    visemes: F32 | None = None,
    vowels: F32 | None = None,
    voice: Sequence[bool] | None = None,
    body: F32 | None = None,
    body_found: Sequence[bool] | None = None,
    hands_found: Sequence[tuple[bool, bool]] | None = None,
) -> list[bytes]:
    """Face-tracking frames (docs/protocol.md 5.1), one per row, with the speech keys (visemes (n, 15),
    vowels (n, 5), voice (n,)) when a voice is mixed in, and the body keys (body (n, J, 4) local
    rotations, body_found (n,), hands_found (n,)) for body tracking (5.1.2). The derived channels are
    computed for all rows at once; only the message itself is built per row."""
    blend = face.blend
    eyelids = np.ascontiguousarray(blend[:, [_ARKIT["EyeBlinkLeft"], _ARKIT["EyeBlinkRight"]]])
    jaw = axis_angle_to_quat(jaw_rotation(blend)).astype(np.float32)
    head = axis_angle_to_quat(face.rotation).astype(np.float32)
    looks = gaze(blend)
    position = np.ascontiguousarray(face.position)
    no_expression = np.zeros(0, np.float32)
    too_dark = ("too_dark",)
    return [
        encode_face_frame(
            sessions[i],
            seqs[i],
            step.input_seq,
            step.t_capture_ns,
            face_found=found,
            expression=no_expression,
            eyelids=eyelids[i],
            jaw=jaw[i],
            head=head[i],
            blendshapes=blend[i] if with_blendshapes[i] else None,
            engine_us=engine_us,
            batch=batch,
            head_position=position[i],
            gaze=looks[i],
            warnings=too_dark if dark else (),
            visemes=None if visemes is None else visemes[i],
            vowels=None if vowels is None else vowels[i],
            voice=None if voice is None else voice[i],
            body=None if body is None else body[i],
            body_found=None if body_found is None else body_found[i],
            hands_found=None if hands_found is None else hands_found[i],
        )
        for i, (step, found, dark) in enumerate(
            zip(steps, face.found.tolist(), face.dark.tolist(), strict=True)
        )
    ]


# gaze's channels: (positive, negative, range) per output, left yaw, left pitch, right yaw, right pitch.
_GAZE = (
    ("EyeLookOutLeft", "EyeLookInLeft", GAZE_YAW),
    ("EyeLookUpLeft", "EyeLookDownLeft", GAZE_PITCH),
    ("EyeLookInRight", "EyeLookOutRight", GAZE_YAW),
    ("EyeLookUpRight", "EyeLookDownRight", GAZE_PITCH),
)
_GAZE_PLUS = np.array([_ARKIT[p] for p, _, _ in _GAZE], np.intp)
_GAZE_MINUS = np.array([_ARKIT[m] for _, m, _ in _GAZE], np.intp)
_GAZE_RANGE = np.array([r for _, _, r in _GAZE])


def gaze(blend: F32) -> F32:
    """Per eye (left, right) yaw and pitch in radians from the eyeLook channels (n, 52) -> (n, 4): yaw
    > 0 towards the subject's left, pitch > 0 up (rotations about +Y and -X of the wire axes)."""
    b = blend.astype(np.float64)
    looks: F32 = ((b[:, _GAZE_PLUS] - b[:, _GAZE_MINUS]) * _GAZE_RANGE).astype(np.float32)
    return looks


def jaw_rotation(blend: F32) -> F32:
    """FLAME-style jaw axis-angle (n, 3) from jawOpen (about +X) and jawLeft/jawRight (about Y)."""
    side = blend[:, _ARKIT["JawLeft"]] - blend[:, _ARKIT["JawRight"]]
    jaw = np.zeros((len(blend), 3), np.float32)
    jaw[:, 0] = blend[:, _ARKIT["JawOpen"]] * JAW_OPEN_RAD
    jaw[:, 1] = side * JAW_SIDE_RAD
    return jaw
