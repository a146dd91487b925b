"""The geometry around MediaPipe FaceLandmarker's networks, rebuilt outside MediaPipe's runtime.

Constants and steps follow MediaPipe's graphs (face_detector_graph.cc, face_landmarks_detector_graph.cc,
face_blendshapes_graph.cc): BlazeFace short-range anchors and weighted NMS, the rotated region of
interest (from the detection's eye keypoints, or from the last landmarks' eye corners 33/263 when
tracking), the crop, the projection of crop landmarks back into the image, and the head pose fitted
to the canonical mesh. Everything works in image pixels. The steps after the mesh network (projection,
tracking regions, head pose) take every face of a batch at once: arrays with a leading row axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

DETECTOR_SIZE = 128
MESH_SIZE = 256
MIN_DETECTION_SCORE = 0.5  # face_detector_graph.cc min_detection_confidence default
MIN_SUPPRESSION_IOU = 0.3  # min_suppression_threshold default
MIN_PRESENCE = 0.5  # face landmarker min_face_presence_confidence default
ROI_SCALE = 1.5
# Outside the frame, MediaPipe's detector input is black (face_detector_graph.cc sets BORDER_ZERO) but
# the mesh crop repeats the edge pixels (the image-to-tensor default, BORDER_REPLICATE): a black
# wedge in a rolled face's crop moves the mouth landmarks and blendshapes (by 0.1-0.25 on real photos).
DETECTOR_BORDER = cv2.BORDER_CONSTANT
MESH_BORDER = cv2.BORDER_REPLICATE
_SCORE_CLIP = 100.0

# face_blendshapes_graph.cc kLandmarksSubsetIdxs: the 146 landmarks the blendshape model reads.
BLENDSHAPE_SUBSET = np.array(
    [0, 1, 4, 5, 6, 7, 8, 10, 13, 14, 17, 21, 33, 37, 39, 40, 46, 52, 53, 54, 55, 58, 61, 63, 65, 66, 67,
     70, 78, 80, 81, 82, 84, 87, 88, 91, 93, 95, 103, 105, 107, 109, 127, 132, 133, 136, 144, 145, 146,
     148, 149, 150, 152, 153, 154, 155, 157, 158, 159, 160, 161, 162, 163, 168, 172, 173, 176, 178, 181,
     185, 191, 195, 197, 234, 246, 249, 251, 263, 267, 269, 270, 276, 282, 283, 284, 285, 288, 291, 293,
     295, 296, 297, 300, 308, 310, 311, 312, 314, 317, 318, 321, 323, 324, 332, 334, 336, 338, 356, 361,
     362, 365, 373, 374, 375, 377, 378, 379, 380, 381, 382, 384, 385, 386, 387, 388, 389, 390, 397, 398,
     400, 402, 405, 409, 415, 454, 466, 468, 469, 470, 471, 472, 473, 474, 475, 476, 477],
    np.intp,
)  # fmt: skip
LEFT_EYE_OUTER, RIGHT_EYE_OUTER = 33, 263  # the eye corners the tracking ROI is rotated by


def ssd_anchor_centres(size: int, layers: tuple[tuple[int, int], ...]) -> F32:
    """SSD anchor centres ((x, y) in [0, 1]) of fixed size 1: for each (stride, anchors per cell) a
    grid of size / stride cells; layers of equal stride share one grid, so they come merged here."""
    centres = []
    for stride, per_cell in layers:
        n = size // stride
        y, x = np.mgrid[0:n, 0:n]
        grid = np.stack([(x + 0.5) / n, (y + 0.5) / n], -1).reshape(-1, 1, 2)
        centres.append(np.repeat(grid, per_cell, axis=1).reshape(-1, 2))
    return np.concatenate(centres).astype(np.float32)


# BlazeFace short-range (896 anchors): strides 8, 16, 16, 16 with two anchors per cell.
ANCHORS = ssd_anchor_centres(DETECTOR_SIZE, ((8, 2), (16, 6)))


@dataclass(frozen=True)
class Detection:
    score: float
    box: F64  # (4,) x_min, y_min, x_max, y_max, image pixels
    keypoints: F64  # (6, 2) image pixels: right eye, left eye (as seen), nose, mouth, ears


@dataclass(frozen=True)
class Roi:
    """A rotated rectangle in image pixels; `angle` in radians, clockwise as seen (y down)."""

    cx: float
    cy: float
    width: float
    height: float
    angle: float

    def crop_to_image(self, size: int) -> F64:
        """2x3 affine map from crop pixels of a size x size crop to image pixels (aspect kept: the
        longer side fills the crop)."""
        side = max(self.width, self.height)
        c, s = math.cos(self.angle), math.sin(self.angle)
        k = side / size
        return np.array(
            [
                [c * k, -s * k, self.cx - (c * side - s * side) / 2],
                [s * k, c * k, self.cy - (s * side + c * side) / 2],
            ]
        )


def letterbox(image: npt.NDArray[np.uint8]) -> tuple[F32, float, float, float]:
    """The detector input (3, 128, 128) in [0, 1], the frame fitted with zero padding, and the map
    back: image = (tensor - pad) / scale per axis, (scale, pad_x, pad_y) in detector pixels."""
    h, w = image.shape[:2]
    scale = DETECTOR_SIZE / max(h, w)
    # Fractional padding, as MediaPipe's (the square region around the frame, mapped onto the
    # tensor): rounding the scaled size first moves the picture by up to half a detector pixel.
    px, py = (DETECTOR_SIZE - w * scale) / 2, (DETECTOR_SIZE - h * scale) / 2
    # A perspective warp, as MediaPipe's image-to-tensor step on the CPU: OpenCV's affine warp places
    # its samples in fixed point, the perspective warp in floating point; at a detector's downscale the
    # two move a small face's score by 0.01 (across the threshold) and its box by 5 px. (The mesh crop
    # keeps the affine warp, twice as fast: there the difference is below 1e-3 in the blendshapes.)
    m = np.array([[scale, 0, px], [0, scale, py], [0, 0, 1]])
    tensor = cv2.warpPerspective(
        image, m, (DETECTOR_SIZE, DETECTOR_SIZE), flags=cv2.INTER_LINEAR, borderMode=DETECTOR_BORDER
    )
    return np.ascontiguousarray(tensor.transpose(2, 0, 1), np.float32) / 255.0, scale, px, py


def decode_detections(
    raw: F32, logits: F32, scale: float, px: float, py: float, anchors: F32 = ANCHORS
) -> list[Detection]:
    """Scores over the threshold, boxes and keypoints decoded against the anchors, weighted NMS. The
    rows may be a subset of the detector's, each with its own anchor in `anchors` (the device path
    brings only the rows its score filter kept: bridge.pipelines.face_tracking_device)."""
    scores, boxes, kps = decode_ssd(raw, logits, anchors, DETECTOR_SIZE, 6, MIN_DETECTION_SCORE)
    if scores.size == 0:
        return []
    offset = np.array([px, py])
    boxes = (boxes - np.tile(offset, 2)) / scale
    kps = (kps - offset) / scale
    return weighted_nms(scores, boxes, kps)


def sigmoid(x: F32) -> F64:
    """The logistic function in float64, its input clipped so exp cannot overflow."""
    return 1.0 / (1.0 + np.exp(-np.clip(x.astype(np.float64), -_SCORE_CLIP, _SCORE_CLIP)))


def decode_ssd(
    raw: F32, logits: F32, anchors: F32, size: int, keypoints: int, min_score: float
) -> tuple[F64, F64, F64]:
    """An SSD detector's rows with a score of `min_score` or more: scores (n,), boxes (n, 4) x_min,
    y_min, x_max, y_max and keypoints (n, keypoints, 2), decoded against the anchors in detector pixels."""
    scores = sigmoid(logits)
    keep = np.flatnonzero(scores >= min_score)
    a = anchors[keep].astype(np.float64) * size
    r = raw[keep].astype(np.float64)
    centre = r[:, 0:2] + a
    half = r[:, 2:4] / 2
    boxes = np.concatenate([centre - half, centre + half], 1)
    kps = r[:, 4 : 4 + 2 * keypoints].reshape(-1, keypoints, 2) + a[:, None, :]
    return scores[keep], boxes, kps


def _iou(box: F64, boxes: F64) -> F64:
    lo = np.maximum(box[:2], boxes[:, :2])
    hi = np.minimum(box[2:], boxes[:, 2:])
    inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
    area = np.prod(box[2:] - box[:2])
    areas = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)
    result: F64 = inter / np.maximum(area + areas - inter, 1e-9)
    return result


def weighted_nms(scores: F64, boxes: F64, kps: F64) -> list[Detection]:
    """MediaPipe's WEIGHTED NMS: each cluster (IoU > threshold with its best box) becomes the
    score-weighted mean of its boxes and keypoints, with the best score."""
    order = np.argsort(-scores)
    out = []
    while order.size:
        best = order[0]
        cluster = order[_iou(boxes[best], boxes[order]) > MIN_SUPPRESSION_IOU]
        cluster = np.union1d(cluster, [best])
        w = scores[cluster][:, None]
        out.append(
            Detection(
                float(scores[best]),
                (boxes[cluster] * w).sum(0) / w.sum(),
                (kps[cluster] * w[:, :, None]).sum(0) / w.sum(),
            )
        )
        order = np.setdiff1d(order, cluster, assume_unique=False)
        order = order[np.argsort(-scores[order])]
    return out


def _angle(start: F64, end: F64) -> F64:
    """DetectionsToRects rotation with target angle 0: -atan2(-(dy), dx), wrapped to [-pi, pi); points
    (..., 2), angles (...)."""
    a = -np.arctan2(-(end[..., 1] - start[..., 1]), end[..., 0] - start[..., 0])
    wrapped: F64 = (a + math.pi) % (2 * math.pi) - math.pi
    return wrapped


def roi_from_detection(d: Detection) -> Roi:
    """Box scaled 1.5x, rotated by the eye keypoints (face_detector_graph.cc)."""
    w, h = d.box[2] - d.box[0], d.box[3] - d.box[1]
    cx, cy = (d.box[0] + d.box[2]) / 2, (d.box[1] + d.box[3]) / 2
    return Roi(
        float(cx),
        float(cy),
        float(w * ROI_SCALE),
        float(h * ROI_SCALE),
        float(_angle(d.keypoints[0], d.keypoints[1])),
    )


def rois_from_landmarks(landmarks: F64) -> list[Roi]:
    """Each face's next region from its landmarks (n, 478, 3): their bounding box, rotated by the eye
    corners, squared on its long side and scaled 1.5x (face_landmarks_detector_graph.cc)."""
    lo, hi = landmarks[:, :, :2].min(1), landmarks[:, :, :2].max(1)
    side = (hi - lo).max(1) * ROI_SCALE
    angle = _angle(landmarks[:, LEFT_EYE_OUTER], landmarks[:, RIGHT_EYE_OUTER])
    centre = (lo + hi) / 2
    return [
        Roi(cx, cy, d, d, a)
        for cx, cy, d, a in zip(
            centre[:, 0].tolist(), centre[:, 1].tolist(), side.tolist(), angle.tolist(), strict=True
        )
    ]


def crop(
    image: npt.NDArray[np.uint8], roi: Roi, size: int = MESH_SIZE, border: int = MESH_BORDER
) -> tuple[npt.NDArray[np.uint8], F64]:
    """The (size, size, 3) RGB crop (outside the image: the edge pixels repeated, or `border` as
    OpenCV's), as bytes: the engine takes them as they are (bridge.runtime.images); and its
    crop-to-image map."""
    m = roi.crop_to_image(size)
    patch = cv2.warpAffine(
        image, m, (size, size), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=border
    )
    return np.asarray(patch, np.uint8), m


def project(landmarks: F32, m: F64) -> F64:
    """Crop landmarks (n, 478, 3) in crop pixels to image pixels through each face's crop-to-image map
    (n, 2, 3); z scales with x (as MediaPipe's)."""
    xy = landmarks[..., :2].astype(np.float64) @ np.swapaxes(m[:, :, :2], 1, 2) + m[:, None, :, 2]
    z = landmarks[..., 2:3].astype(np.float64) * np.hypot(m[:, 0, 0], m[:, 1, 0])[:, None, None]
    return np.concatenate([xy, z], 2)


@dataclass(frozen=True)
class HeadPose:
    """Head poses of n faces."""

    rotation: F64  # (n, 3, 3) head rotation, wire axes (right-handed, Y up, +Z towards the camera)
    translation: F64  # (n, 3) metres, camera at the origin looking along -Z
    scale: F64  # (n,) image pixels per canonical centimetre


def fit_head_pose(
    landmarks: F64,
    canonical: F64,
    weights: F64,
    image_w: F64,
    image_h: F64,
    vertical_fov_deg: float = 63.0,
) -> HeadPose:
    """Weighted similarity fit (Umeyama) of the canonical mesh to each face's landmarks (n, 478, 3) in
    wire axes (x right, y up, z towards the camera; image pixels); image sizes (n,). Depth comes from
    the fitted scale under a pinhole camera with MediaPipe's default 63-degree vertical field of view:
    a weak-perspective estimate."""
    obs = landmarks[:, :468] * np.array([1.0, -1.0, -1.0])
    w = weights / weights.sum()
    mu_o, mu_c = w @ obs, w @ canonical  # (n, 3), (3,)
    o, c = obs - mu_o[:, None], canonical - mu_c
    cov = np.swapaxes(o * w[:, None], 1, 2) @ c  # (n, 3, 3)
    u, s, vt = np.linalg.svd(cov)
    d = np.sign(np.linalg.det(u @ vt))
    fix = np.ones((len(d), 3))
    fix[:, 2] = d
    rotation = (u * fix[:, None, :]) @ vt  # u @ diag(1, 1, d) @ vt
    scale = (s * fix).sum(1) / (w @ (c**2).sum(1))
    focal = (image_h / 2) / math.tan(math.radians(vertical_fov_deg) / 2)
    centre = mu_o - scale[:, None] * (rotation @ mu_c)  # where the canonical origin lands, pixels
    translation = (
        np.stack(
            [(centre[:, 0] - image_w / 2) / scale, (centre[:, 1] + image_h / 2) / scale, -focal / scale], 1
        )
        / 100.0
    )
    return HeadPose(rotation, translation, scale)
