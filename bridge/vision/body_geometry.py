"""The geometry around MediaPipe Pose and Holistic's hand networks, rebuilt outside MediaPipe's runtime.

Constants and steps follow MediaPipe 0.10.21's graphs (pose_detection_cpu, pose_detection_to_roi,
pose_landmark_by_roi_cpu, pose_landmarks_to_roi; holistic_landmark's hand_landmarks_from_pose_to_recrop_roi,
hand_recrop_by_roi_cpu, hand_landmarks_to_roi and hand_tracking): BlazePose SSD anchors and weighted
NMS, regions of interest from alignment points (centre, and a second point giving size and rotation),
RectTransformation's shift / square-long / scale, and the projection of crop landmarks back into the
image. Regions are the face tracker's `Roi` (image pixels, radians clockwise as seen); the steps after
each network take every row of a batch at once.
"""

from __future__ import annotations

import math
import threading

import cv2
import numpy as np
import numpy.typing as npt

from bridge.state.slots import SlotLease, SlotPool
from bridge.vision.face_geometry import Roi, decode_ssd, sigmoid, ssd_anchor_centres, weighted_nms

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
Slots = npt.NDArray[np.int64]

DETECTOR_SIZE = 224
POSE_SIZE = 256
RECROP_SIZE = 256
HAND_SIZE = 224
MIN_DETECTION_SCORE = 0.5  # pose_detection_cpu min_score_thresh
MIN_POSE_PRESENCE = 0.5  # pose_landmark_cpu min_tracking_confidence default
MIN_HAND_PRESENCE = 0.5  # hand_landmark_cpu's hand flag threshold
MIN_WRIST_VISIBILITY = 0.1  # hand_visibility_from_hand_landmarks_from_pose threshold
POSE_ROI_SCALE = 1.25
HAND_FROM_POSE_SCALE = 2.7
HAND_FROM_LANDMARKS_SCALE = 2.0
HAND_SHIFT_Y = -0.1
# hand_landmark_cpu's TensorsToLandmarks divides the hands' z by this ("the Z coordinate distribution
# in the training data"): MediaPipe's hand depths are the network's / 0.4.
HAND_NORMALIZE_Z = 0.4
# MediaPipe's ImageToTensor default outside the image: the edge pixels repeated (the body region of a
# half-body shot reaches far below the frame; zeros there move the landmarks by several % of the torso).
BORDER = cv2.BORDER_REPLICATE
# The heatmap refinement's kernel: 9 cells, the option's default. The graph text of 0.10.21
# (tensors_to_pose_landmarks_and_segmentation) names 7, but the wheel's own Holistic refines as 9 does:
# against it, 9 puts every seen landmark within 0.15 crop pixels, 7 leaves low-confidence ones (elbows,
# hips) 1.2 crop pixels (2.4 % of the torso) away (docs/body-tracking.md).
_REFINE_HALF = 4
MIN_REFINE_CONFIDENCE = 0.5
# Pose landmarks: 33 body points, then the two auxiliary alignment points the next region comes from.
NUM_POSE = 33
AUX_CENTRE, AUX_SCALE = 33, 34
# Per side (left, right as the subject's): wrist, pinky, index in the pose's 33 (Holistic's hand input).
HAND_FROM_POSE = np.array([[15, 17, 19], [16, 18, 20]], np.intp)
# hand_landmarks_to_roi's palm subset, and within it wrist, index MCP, middle MCP, ring MCP.
PALM_SUBSET = np.array([0, 1, 2, 3, 5, 6, 9, 10, 13, 14, 17, 18], np.intp)
_WRIST, _INDEX_MCP, _MIDDLE_MCP, _RING_MCP = 0, 5, 9, 13


# BlazePose (2254 anchors): strides 8, 16, 32, 32, 32 with two anchors per layer cell (aspect 1 and the
# interpolated scale), fixed size.
ANCHORS = ssd_anchor_centres(DETECTOR_SIZE, ((8, 2), (16, 2), (32, 6)))


def letterbox(image: npt.NDArray[np.uint8], size: int = DETECTOR_SIZE) -> tuple[npt.NDArray[np.uint8], F64]:
    """The frame fitted into size x size with zero padding (uint8 HWC), and the 2x3 map from its pixels
    back to the image's."""
    h, w = image.shape[:2]
    scale = size / max(h, w)
    px, py = (size - w * scale) / 2, (size - h * scale) / 2
    m = np.array([[scale, 0, px], [0, scale, py]])
    tensor = cv2.warpAffine(image, m, (size, size), flags=cv2.INTER_LINEAR)
    back = np.array([[1 / scale, 0, -px / scale], [0, 1 / scale, -py / scale]])
    return np.asarray(tensor, np.uint8), back


def pose_roi_from_detection(raw: F32, logits: F32, back: F64) -> Roi | None:
    """The best detection's region: centred on its hip keypoint, side twice the distance to its
    size/rotation keypoint, rotated so that line points up, squared and scaled 1.25x."""
    scores, boxes, kps = decode_ssd(raw, logits, ANCHORS, DETECTOR_SIZE, 4, MIN_DETECTION_SCORE)
    if scores.size == 0:
        return None
    found = weighted_nms(scores, boxes, kps)
    best = max(found, key=lambda d: d.score)
    points = best.keypoints @ back[:, :2].T + back[:, 2]
    return transform(alignment_roi(points[None, 0], points[None, 1], math.pi / 2), 0.0, POSE_ROI_SCALE)[0]


def alignment_roi(start: F64, end: F64, target: float) -> list[Roi]:
    """AlignmentPointsRects: centre `start` (n, 2), side twice |end - start|, rotated so that
    start -> end points at `target` radians (counter-clockwise from +x as seen)."""
    d = end - start
    side = 2.0 * np.hypot(d[:, 0], d[:, 1])
    angle = _wrap(target - np.arctan2(-d[:, 1], d[:, 0]))
    return [
        Roi(float(c[0]), float(c[1]), float(s), float(s), float(t))
        for c, s, t in zip(start, side, angle, strict=True)
    ]


def transform(rois: list[Roi], shift_y: float, scale: float) -> list[Roi]:
    """RectTransformation: shift along the region's own y by a fraction of its height, square on the
    long side, scale."""
    out = []
    for r in rois:
        dy = r.height * shift_y
        cx, cy = r.cx - math.sin(r.angle) * dy, r.cy + math.cos(r.angle) * dy
        side = max(r.width, r.height) * scale
        out.append(Roi(cx, cy, side, side, r.angle))
    return out


class AuxRows:
    """MediaPipe's smoothing of a body's two auxiliary landmarks (pose_landmark_filtering: a One-Euro
    filter, min cutoff 0.01 Hz, beta 10, derivative cutoff 1 Hz, on always, in video mode), which makes
    the next region steady: its own One-Euro, not the bridge's, for the same regions. Values are image
    pixels, speeds scaled by the points' size (the mean side of their bounding box); the rate comes from
    the frames' times (30 Hz before the second frame).

    Every session's filter is one row at its slot (bridge.state): the last unfiltered points (`started`
    False: the next ones pass through), the filtered points and speeds, the last frame's time and the
    rate. A batch steps its sessions' rows at once, float64 as MediaPipe's. The face + body pipeline and
    its voiced variant run the tracker on different scheduler threads, so a batch holds the lock."""

    MIN_CUTOFF, BETA, D_CUTOFF = 0.01, 10.0, 1.0

    def __init__(self) -> None:
        self.pool = SlotPool()
        self.started = np.zeros(0, bool)
        self.raw = np.zeros((0, 2, 3))
        self.value = np.zeros((0, 2, 3))
        self.speed = np.zeros((0, 2, 3))
        self.t = np.zeros(0)
        self.rate = np.zeros(0)
        self._lock = threading.Lock()

    def open(self) -> SlotLease:
        """A new session's row (I/O thread); it starts afresh at the next batch that sees it."""
        return self.pool.acquire()

    def reset(self, slots: Slots) -> None:
        """These rows start afresh: their next points pass through (a region found by detection)."""
        with self._lock:
            self._prepare()
            self.started[slots], self.t[slots], self.rate[slots] = False, 0.0, 30.0

    def step(self, slots: Slots, points: F64, t: F64) -> F64:
        """The points (n, 2, 3) of the frames taken at `t` (n,) seconds for the distinct sessions at
        `slots`, filtered; their rows advance."""
        with self._lock:
            self._prepare()
            return self._step(slots, points, t)

    def _prepare(self) -> None:
        """Grow to the pool's rows and start new sessions' rows afresh (under the lock)."""
        fresh = self.pool.grow(self, "started", "raw", "value", "speed", "t", "rate")
        self.started[fresh], self.t[fresh], self.rate[fresh] = False, 0.0, 30.0

    def _step(self, slots: Slots, points: F64, t: F64) -> F64:
        """MediaPipe's filter for each row: a first frame (or points of no size) passes through and
        starts the row, a frame whose time does not advance passes through and leaves it as it was."""
        started, last_t = self.started[slots], self.t[slots]
        moved = ~started | (t > last_t)  # a started row whose time does not advance keeps its state
        timed = started & moved & (last_t > 0.0)  # the rate from the last two frames' times
        rate = np.where(timed, 1.0 / np.where(timed, t - last_t, 1.0), self.rate[slots])
        size = (np.ptp(points[:, :, 0], axis=1) + np.ptp(points[:, :, 1], axis=1)) / 2.0
        fresh = moved & (~started | (size < 1e-6))
        step = moved & ~fresh
        r = rate[:, None, None]
        raw = self.raw[slots]
        speed = (points - raw) / np.where(step, size, 1.0)[:, None, None] * r
        a = _alpha(self.D_CUTOFF, r)
        speed = a * speed + (1.0 - a) * self.speed[slots]
        a = _alpha(self.MIN_CUTOFF + self.BETA * np.abs(speed), r)
        value = a * points + (1.0 - a) * self.value[slots]
        on = step[:, None, None]
        rows = slots[moved]
        self.rate[rows], self.t[rows], self.started[rows] = rate[moved], t[moved], True
        self.raw[rows] = points[moved]
        self.value[rows] = np.where(on, value, points)[moved]
        self.speed[rows] = np.where(on, speed, 0.0)[moved]
        out: F64 = np.where(on, value, points)
        return out


def _alpha(cutoff: F64 | float, rate: F64) -> F64:
    tau = 1.0 / (2.0 * math.pi * np.asarray(cutoff, np.float64))
    out: F64 = 1.0 / (1.0 + tau * rate)
    return out


def pose_rois_from_aux(aux: F64) -> list[Roi]:
    """The next frame's body regions from each body's two auxiliary landmarks (n, 2, >=2)."""
    rois = alignment_roi(aux[:, 0, :2], aux[:, 1, :2], math.pi / 2)
    return transform(rois, 0.0, POSE_ROI_SCALE)


def hand_rois_from_pose(points: F64) -> list[Roi]:
    """Holistic's hand search regions from the pose's wrist, pinky and index (n, 3, 2): centred on
    the estimated middle finger (two thirds of the way from pinky to index), side twice its distance
    to the wrist, rotated wrist -> middle up, shifted 0.1 towards the wrist, squared, scaled 2.7x."""
    wrist, pinky, index = points[:, 0], points[:, 1], points[:, 2]
    middle = (2.0 * index + pinky) / 3.0
    d = middle - wrist
    side = 2.0 * np.hypot(d[:, 0], d[:, 1])
    angle = _wrap(math.pi / 2 - np.arctan2(-d[:, 1], d[:, 0]))
    rois = [
        Roi(float(c[0]), float(c[1]), float(s), float(s), float(t))
        for c, s, t in zip(middle, side, angle, strict=True)
    ]
    return transform(rois, HAND_SHIFT_Y, HAND_FROM_POSE_SCALE)


def hand_rois_from_recrop(points: F64) -> list[Roi]:
    """The re-crop model's two points (n, 2, 2), image pixels -> the hand regions: alignment points at
    -90 degrees, shifted 0.1 from the wrist towards the fingertips, squared."""
    return transform(alignment_roi(points[:, 0], points[:, 1], -math.pi / 2), HAND_SHIFT_Y, 1.0)


def hand_rois_from_landmarks(landmarks: F64) -> list[Roi]:
    """HandLandmarksToRect on the palm subset of each hand (n, 21, >=2), then scaled 2x and shifted:
    rotated so the wrist -> middle-of-palm line points up, box around the palm in that frame."""
    lm = landmarks[:, :, :2]
    wrist = lm[:, _WRIST]
    across = (lm[:, _INDEX_MCP] + lm[:, _RING_MCP]) / 2
    mid = (across + lm[:, _MIDDLE_MCP]) / 2
    d = mid - wrist
    angle = _wrap(math.pi / 2 - np.arctan2(-d[:, 1], d[:, 0]))
    palm = lm[:, PALM_SUBSET]
    lo, hi = palm.min(1), palm.max(1)
    axis_centre = (lo + hi) / 2
    c, s = np.cos(-angle), np.sin(-angle)
    rel = palm - axis_centre[:, None]
    rx = rel[..., 0] * c[:, None] - rel[..., 1] * s[:, None]
    ry = rel[..., 0] * s[:, None] + rel[..., 1] * c[:, None]
    mx, my = (rx.min(1) + rx.max(1)) / 2, (ry.min(1) + ry.max(1)) / 2
    ca, sa = np.cos(angle), np.sin(angle)
    cx = axis_centre[:, 0] + mx * ca - my * sa
    cy = axis_centre[:, 1] + mx * sa + my * ca
    w, h = rx.max(1) - rx.min(1), ry.max(1) - ry.min(1)
    rois = [Roi(*map(float, v)) for v in zip(cx, cy, w, h, angle, strict=True)]
    return transform(rois, HAND_SHIFT_Y, HAND_FROM_LANDMARKS_SCALE)


def refine_from_heatmap(landmarks: F32, heatmap: F32) -> F32:
    """RefineLandmarksFromHeatmap (kernel 9, min confidence 0.5): each landmark (n, k, >=2, crop pixels)
    whose heatmap (n, 64, 64, k logits) is confident somewhere in the 9x9 cells around it (those inside
    the heatmap) moves to the confidence-weighted mean cell there (a cell's index scaled to the crop, as
    MediaPipe's)."""
    n, h, w, k = heatmap.shape
    scale = POSE_SIZE / w
    col = np.trunc(landmarks[..., 0] / scale).astype(np.intp)  # C++'s int(): towards zero
    row = np.trunc(landmarks[..., 1] / scale).astype(np.intp)
    # MediaPipe skips a landmark left, right or above the heatmap, but not one below it (its check
    # tests the column twice): there the kernel's rows inside the heatmap still count.
    inside = (col >= 0) & (col < w) & (row >= 0)
    steps = np.arange(-_REFINE_HALF, _REFINE_HALF + 1)
    rows = row[..., None, None] + steps[:, None]  # (n, k, 7, 1)
    cols = col[..., None, None] + steps[None, :]  # (n, k, 1, 7)
    valid = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
    b = np.arange(n)[:, None, None, None]
    lm = np.arange(k)[None, :, None, None]
    conf = sigmoid(heatmap[b, np.clip(rows, 0, h - 1), np.clip(cols, 0, w - 1), lm]) * valid
    total = conf.sum((2, 3))
    refine = inside & (conf.max((2, 3)) >= MIN_REFINE_CONFIDENCE) & (total > 0)
    safe = np.where(total > 0, total, 1.0)
    x = (conf * cols).sum((2, 3)) / safe * scale
    y = (conf * rows).sum((2, 3)) / safe * scale
    out = landmarks.copy()
    out[..., 0] = np.where(refine, x, landmarks[..., 0])
    out[..., 1] = np.where(refine, y, landmarks[..., 1])
    return out


def keep_tracking(previous: Roi, recrop: Roi, landmarks: F64) -> bool:
    """RoiTracking: follow the previous frame's hand region while it agrees with this frame's re-crop
    (rotation within 40 degrees, centres within 0.2 and sides within 0.4 of the re-crop's side) and the
    previous landmarks lie inside the re-crop region shrunk by 0.1 of its side."""
    if abs(_wrap(np.array(previous.angle - recrop.angle))) > math.radians(40.0):
        return False
    side = max(recrop.width, recrop.height)
    if math.hypot(previous.cx - recrop.cx, previous.cy - recrop.cy) > 0.2 * side:
        return False
    if abs(max(previous.width, previous.height) - side) > 0.4 * side:
        return False
    c, s = math.cos(-recrop.angle), math.sin(-recrop.angle)
    rel = landmarks[:, :2] - (recrop.cx, recrop.cy)
    x, y = rel[:, 0] * c - rel[:, 1] * s, rel[:, 0] * s + rel[:, 1] * c
    limit = side / 2 - 0.1 * side
    return bool((np.abs(x) <= limit).all() and (np.abs(y) <= limit).all())


def rotate_world(points: F32, angles: F64) -> F64:
    """World landmarks (n, k, 3) from crop axes to camera axes: x, y turned by each region's angle."""
    c, s = np.cos(angles)[:, None], np.sin(angles)[:, None]
    p = points.astype(np.float64)
    x = p[..., 0] * c - p[..., 1] * s
    y = p[..., 0] * s + p[..., 1] * c
    return np.stack([x, y, p[..., 2]], -1)


def _wrap(a: F64) -> F64:
    wrapped: F64 = (a + math.pi) % (2 * math.pi) - math.pi
    return wrapped
