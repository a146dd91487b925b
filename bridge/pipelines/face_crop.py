"""Face pre-processing: Haar-cascade face detection, a per-session box tracker, and the DECA crop.

Detection uses OpenCV's frontal-face Haar cascade (``haarcascade_frontalface_default.xml``). OpenCV
4.x wheels bundle it under ``cv2.data.haarcascades`` and run it with ``cv2.CascadeClassifier``.
OpenCV 5.x dropped both the bundled files and ``CascadeClassifier`` from the main wheels, so when
the class is missing the same XML is evaluated by ``HaarCascade`` below, a vectorised numpy port of
OpenCV's stump-based Haar evaluator. The XML is looked for (in order) at the path given, at
``$AVATAR_BRIDGE_FACE_CASCADE``, in ``cv2.data.haarcascades`` and in the Debian/Ubuntu
``opencv-data`` package's folders (``apt-get install opencv-data``).
"""

from __future__ import annotations

import functools
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import cv2
import numpy as np
import numpy.typing as npt

CASCADE_FILE = "haarcascade_frontalface_default.xml"
CASCADE_ENV = "AVATAR_BRIDGE_FACE_CASCADE"
_SYSTEM_CASCADE_DIRS = (
    "/usr/share/opencv4/haarcascades",
    "/usr/share/opencv/haarcascades",
    "/usr/local/share/opencv4/haarcascades",
)

# DECA's crop rule for detector boxes (decalib/datasets/datasets.py, bbox2point, type 'bbox'):
# square of side mean(w, h) × 1.25, centred on the box centre moved down by 0.12 × mean(w, h).
CROP_SCALE = 1.25
# Integral-image reads per chunk of windows in the cascade (~2 MB of float64).
_GATHER_ELEMS = 1 << 18
CROP_SHIFT_DOWN = 0.12


class Box(NamedTuple):
    """An axis-aligned face box in pixels of the full-resolution frame."""

    x: float
    y: float
    w: float
    h: float


def find_cascade(path: str | os.PathLike[str] | None = None) -> Path:
    """Locate the frontal-face cascade XML (see module docstring for the search order)."""
    candidates: list[Path] = []
    if path is not None:
        candidates.append(Path(path))
    env = os.environ.get(CASCADE_ENV)
    if env:
        candidates.append(Path(env))
    cv2_data = getattr(getattr(cv2, "data", None), "haarcascades", None)
    if cv2_data:
        candidates.append(Path(cv2_data) / CASCADE_FILE)
    candidates.extend(Path(d) / CASCADE_FILE for d in _SYSTEM_CASCADE_DIRS)
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(
        f"{CASCADE_FILE} not found (tried {', '.join(map(str, candidates))}); install opencv-data "
        f"(apt) or an OpenCV 4.x wheel, or set {CASCADE_ENV}"
    )


@dataclass(frozen=True)
class _Stage:
    threshold: float
    cx: npt.NDArray[np.intp]  # (T, K) corner x in the window; K = most distinct corners in the stage
    cy: npt.NDArray[np.intp]  # (T, K) corner y
    coef: npt.NDArray[np.float64]  # (T, K) signed rect weight per corner, 0 for padding
    node_threshold: npt.NDArray[np.float64]  # (T,)
    left: npt.NDArray[np.float64]  # (T,) leaf value when feature < threshold
    right: npt.NDArray[np.float64]  # (T,)


def _feature_corners(rects: list[list[float]]) -> dict[tuple[int, int], float]:
    # A rect sum is I[br] - I[tr] - I[bl] + I[tl]; rects of one feature share corners, so merging
    # them leaves ~6-9 integral-image reads per feature instead of 8-12.
    corners: dict[tuple[int, int], float] = {}
    for x, y, w, h, weight in rects:
        xi, yi, wi, hi = int(x), int(y), int(w), int(h)
        for cx, cy, sign in (
            (xi, yi, 1.0),
            (xi + wi, yi, -1.0),
            (xi, yi + hi, -1.0),
            (xi + wi, yi + hi, 1.0),
        ):
            corners[cx, cy] = corners.get((cx, cy), 0.0) + sign * weight
    return {c: v for c, v in corners.items() if v != 0.0}


class HaarCascade:
    """OpenCV stump-based Haar cascade (new XML format) evaluated with numpy.

    All pyramid levels are packed into one canvas and share one integral image, so each stage is a
    handful of array operations over every surviving window of every scale at once.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        root = ET.parse(path).getroot()
        cascade = root.find("cascade")
        if cascade is None or (cascade.findtext("featureType") or "").strip() != "HAAR":
            raise ValueError(f"{path}: not an OpenCV HAAR cascade in the new XML format")
        self.window = (int(cascade.findtext("width", "0")), int(cascade.findtext("height", "0")))
        features = []
        for feat in cascade.iterfind("features/_"):
            if int(feat.findtext("tilted", "0")):
                raise ValueError(f"{path}: tilted Haar features are not supported")
            rects = [[float(v) for v in (r.text or "").split()] for r in feat.iterfind("rects/_")]
            features.append(_feature_corners(rects))
        self.stages: list[_Stage] = []
        for stage in cascade.iterfind("stages/_"):
            nodes = []
            for weak in stage.iterfind("weakClassifiers/_"):
                internal = (weak.findtext("internalNodes") or "").split()
                leaves = (weak.findtext("leafValues") or "").split()
                if len(internal) != 4 or internal[:2] != ["0", "-1"] or len(leaves) != 2:
                    raise ValueError(f"{path}: only stump (depth-1) cascades are supported")
                nodes.append((int(internal[2]), float(internal[3]), float(leaves[0]), float(leaves[1])))
            k = max(len(features[n[0]]) for n in nodes)
            cx = np.zeros((len(nodes), k), np.intp)
            cy = np.zeros((len(nodes), k), np.intp)
            coef = np.zeros((len(nodes), k), np.float64)
            for t, node in enumerate(nodes):
                for j, ((x, y), v) in enumerate(features[node[0]].items()):
                    cx[t, j], cy[t, j], coef[t, j] = x, y, v
            arr = np.array([n[1:] for n in nodes], np.float64)
            threshold = float(stage.findtext("stageThreshold", "0"))
            self.stages.append(_Stage(threshold, cx, cy, coef, arr[:, 0], arr[:, 1], arr[:, 2]))

    def detect(
        self,
        gray: npt.NDArray[np.uint8],
        scale_factor: float = 1.2,
        min_neighbors: int = 3,
        min_size: float = 24.0,
        max_size: float | None = None,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """Faces in a grayscale uint8 image: ``(N, 4)`` x, y, w, h rows (pixels of ``gray``) and
        the number of raw hits merged into each (a confidence), strongest first."""
        ww, wh = self.window
        h0, w0 = gray.shape
        levels: list[tuple[float, npt.NDArray[np.uint8]]] = []
        scale = max(1.0, min_size / ww)
        limit = max_size / ww if max_size is not None else np.inf
        while w0 / scale >= ww + 1 and h0 / scale >= wh + 1 and scale <= limit:
            size = (round(w0 / scale), round(h0 / scale))
            img = gray if scale == 1.0 else cv2.resize(gray, size, interpolation=cv2.INTER_LINEAR)
            levels.append((scale, np.asarray(img, np.uint8)))
            scale *= scale_factor
        if not levels:
            return np.zeros((0, 4), np.float32), np.zeros(0, np.int64)
        canvas = np.zeros((sum(im.shape[0] for _, im in levels), levels[0][1].shape[1]), np.uint8)
        stride = canvas.shape[1] + 1
        bases, scales, rows = [], [], []
        row = 0
        for s, im in levels:
            lh, lw = im.shape
            canvas[row : row + lh, :lw] = im
            # OpenCV steps 2 px on fine levels and 1 px once the window is >= 2x its base size.
            step = 1 if s >= 2.0 else 2
            ys = np.arange(row, row + lh - wh + 1, step)
            xs = np.arange(0, lw - ww + 1, step)
            b = (ys[:, None] * stride + xs[None, :]).ravel()
            bases.append(b)
            scales.append(np.full(b.size, s))
            rows.append(np.full(b.size, row))
            row += lh
        base = np.concatenate(bases)
        win_scale = np.concatenate(scales)
        level_row = np.concatenate(rows)
        ii, sq = cv2.integral2(canvas, sdepth=cv2.CV_64F, sqdepth=cv2.CV_64F)
        isum = ii.ravel()
        isq = sq.ravel()

        # Variance normalisation over the window minus a 1-px border, as OpenCV does; windows with
        # almost no texture (std below ~10 grey levels) are rejected up front, like OpenCV 4.
        nx, ny, nw, nh = 1, 1, ww - 2, wh - 2
        area = float(nw * nh)
        nc = np.array(
            [ny * stride + nx, ny * stride + nx + nw, (ny + nh) * stride + nx, (ny + nh) * stride + nx + nw]
        )
        gi = base[:, None] + nc[None, :]
        s1 = isum[gi]
        s2 = isq[gi]
        wsum = s1[:, 3] - s1[:, 1] - s1[:, 2] + s1[:, 0]
        wsq = s2[:, 3] - s2[:, 1] - s2[:, 2] + s2[:, 0]
        nf = np.sqrt(np.maximum(area * wsq - wsum * wsum, 0.0))
        keep = nf > 10.0 * area
        base, win_scale, level_row = base[keep], win_scale[keep], level_row[keep]
        inv_nf = 1.0 / nf[keep]

        for st in self.stages:
            if base.size == 0:
                break
            offsets = st.cy * stride + st.cx
            keep = np.empty(base.size, bool)
            # Chunks keep the (n, T, K) gather around a few MB, in cache.
            chunk = max(64, _GATHER_ELEMS // offsets.size)
            for i in range(0, base.size, chunk):
                b = base[i : i + chunk]
                g = isum[b[:, None, None] + offsets[None]]  # (n, T, K)
                value = np.einsum("ntk,tk->nt", g, st.coef) * inv_nf[i : i + chunk, None]
                score = np.where(value < st.node_threshold, st.left, st.right).sum(axis=1)
                keep[i : i + chunk] = score >= st.threshold
            base, win_scale, level_row, inv_nf = base[keep], win_scale[keep], level_row[keep], inv_nf[keep]

        ys, xs = np.divmod(base, stride)
        raw = np.stack([xs * win_scale, (ys - level_row) * win_scale, ww * win_scale, wh * win_scale], axis=1)
        return group_rectangles(raw.astype(np.float32), min_neighbors)


def group_rectangles(
    rects: npt.NDArray[np.float32], min_neighbors: int, eps: float = 0.2
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Merge overlapping raw hits as ``cv2.groupRectangles`` does: cluster with OpenCV's similarity
    rule, drop clusters of ``min_neighbors`` hits or fewer, average each, drop boxes nested in a
    stronger one. Returns the boxes and their hit counts, strongest first."""
    n = rects.shape[0]
    empty = (np.zeros((0, 4), np.float32), np.zeros(0, np.int64))
    if n == 0:
        return empty
    x, y, w, h = rects.T
    delta = eps * 0.5 * (np.minimum(w[:, None], w[None, :]) + np.minimum(h[:, None], h[None, :]))
    similar = (
        (np.abs(x[:, None] - x[None, :]) <= delta)
        & (np.abs(y[:, None] - y[None, :]) <= delta)
        & (np.abs((x + w)[:, None] - (x + w)[None, :]) <= delta)
        & (np.abs((y + h)[:, None] - (y + h)[None, :]) <= delta)
    )
    # Connected components by min-label propagation with pointer jumping.
    labels = np.arange(n)
    while True:
        new = np.where(similar, labels[None, :], n).min(axis=1)
        new = new[new]
        if np.array_equal(new, labels):
            break
        labels = new
    uniq, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    sums = np.zeros((uniq.size, 4), np.float64)
    np.add.at(sums, inverse, rects)
    boxes = (sums / counts[:, None]).astype(np.float32)
    strong = counts > min_neighbors
    boxes, counts = boxes[strong], counts[strong].astype(np.int64)
    if boxes.shape[0] == 0:
        return empty
    bx, by, bw, bh = boxes.T
    dx, dy = bw * eps, bh * eps
    inside = (
        (bx[:, None] >= bx[None, :] - dx[None, :])
        & (by[:, None] >= by[None, :] - dy[None, :])
        & ((bx + bw)[:, None] <= (bx + bw + dx)[None, :])
        & ((by + bh)[:, None] <= (by + bh + dy)[None, :])
        & ((counts[None, :] > np.maximum(3, counts[:, None])) | (counts[:, None] < 3))
    )
    np.fill_diagonal(inside, False)
    keep = ~inside.any(axis=1)
    boxes, counts = boxes[keep], counts[keep]
    order = np.argsort(-counts, kind="stable")
    return boxes[order], counts[order]


class FaceDetector:
    """Frontal-face detector run on a downscaled grey copy of the frame (cost scales with pixels).

    ``detect_width``: for a full-frame search the frame is shrunk to this width (never enlarged);
    ``min_face``: smallest face, in pixels of that shrunk copy. ``detect(..., near=box)`` searches
    only within 0.75 face sizes of a known face and only at 0.75-1.35x its size, on a copy scaled
    so that face is ~40 px wide, accepting weaker clusters (the known face is the prior): what a
    tracker needs, at about a tenth of the cost. One detector can be shared by many sessions: it
    holds no per-frame state.
    """

    _NEAR_FACE_PX = 40.0
    _NEAR_MARGIN = 0.75  # search this many face sizes beyond each side of the known box
    _NEAR_MIN_NEIGHBORS = 1

    def __init__(
        self,
        cascade_path: str | os.PathLike[str] | None = None,
        detect_width: int = 256,
        min_face: int = 24,
        scale_factor: float = 1.2,
        min_neighbors: int = 3,
    ) -> None:
        self.cascade_path = find_cascade(cascade_path)
        self.detect_width = detect_width
        self.min_face = min_face
        self.scale_factor = scale_factor
        self.min_neighbors = min_neighbors
        classifier = getattr(cv2, "CascadeClassifier", None)
        self._cv: object | None = None
        self._np: HaarCascade | None = None
        if classifier is not None:
            self._cv = classifier(str(self.cascade_path))
            self.backend = "opencv"
        else:
            self._np = HaarCascade(self.cascade_path)
            self.backend = "numpy"

    def detect(self, rgb: npt.NDArray[np.uint8], near: Box | None = None) -> list[Box]:
        """Faces in an ``H×W×3`` RGB uint8 frame, most confident first, in full-resolution pixels."""
        h, w = rgb.shape[:2]
        x0, y0 = 0, 0
        neighbors = self.min_neighbors
        if near is None:
            k = min(1.0, self.detect_width / w)
            lo, hi = float(self.min_face), None
        else:
            # Search a 2.5x box around the known face, scaled so that face is ~40 px wide.
            side = 0.5 * (near.w + near.h)
            pad = self._NEAR_MARGIN * side
            x0, y0 = max(0, int(near.x - pad)), max(0, int(near.y - pad))
            x1, y1 = min(w, int(near.x + near.w + pad)), min(h, int(near.y + near.h + pad))
            if x1 - x0 < 8 or y1 - y0 < 8:
                return []
            rgb = rgb[y0:y1, x0:x1]
            k = min(1.0, self._NEAR_FACE_PX / side)
            lo, hi = 0.75 * side * k, 1.35 * side * k
            neighbors = min(neighbors, self._NEAR_MIN_NEIGHBORS)
            h, w = rgb.shape[:2]
        if k < 1.0:
            rgb = np.asarray(
                cv2.resize(rgb, (round(w * k), round(h * k)), interpolation=cv2.INTER_AREA), np.uint8
            )
        gray = np.asarray(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), np.uint8)
        if self._cv is not None:
            lo_px = round(lo)
            hi_px = round(hi) if hi is not None else 0
            found = self._cv.detectMultiScale(  # type: ignore[attr-defined]
                gray, self.scale_factor, neighbors, minSize=(lo_px, lo_px), maxSize=(hi_px, hi_px)
            )
            boxes = np.asarray(found, np.float32).reshape(-1, 4)
        else:
            assert self._np is not None
            boxes, _ = self._np.detect(gray, self.scale_factor, neighbors, lo, hi)
        return [Box(x0 + b[0] / k, y0 + b[1] / k, b[2] / k, b[3] / k) for b in boxes.tolist()]


@functools.lru_cache(maxsize=1)
def default_detector() -> FaceDetector:
    """One shared detector (the cascade is parsed once per process)."""
    return FaceDetector()


def _iou(a: Box, b: Box) -> float:
    ix = max(0.0, min(a.x + a.w, b.x + b.w) - max(a.x, b.x))
    iy = max(0.0, min(a.y + a.h, b.y + b.h) - max(a.y, b.y))
    inter = ix * iy
    return inter / (a.w * a.h + b.w * b.h - inter)


class FaceTracker:
    """Per-session face box.

    While a face is tracked, every ``redetect_every``-th ``update`` re-detects only near the current
    box (cheap) and blends the new box into the old one (``smoothing`` = weight of the old box) so
    the crop does not jitter; frames in between reuse the box. A miss holds the last box for up to
    ``max_missed`` re-detections, then the face is reported lost (None) and the whole frame is
    searched, at most once every ``search_every`` frames so a face-less camera stays cheap.
    """

    def __init__(
        self,
        detector: FaceDetector | None = None,
        redetect_every: int = 2,
        max_missed: int = 5,
        smoothing: float = 0.6,
        search_every: int = 4,
    ) -> None:
        self.detector = detector if detector is not None else default_detector()
        self.redetect_every = max(1, redetect_every)
        self.max_missed = max_missed
        self.smoothing = smoothing
        self.search_every = max(1, search_every)
        self.box: Box | None = None
        self.missed = 0
        self._countdown = 0

    def reset(self) -> None:
        self.box = None
        self.missed = 0
        self._countdown = 0

    def update(self, rgb: npt.NDArray[np.uint8]) -> Box | None:
        """Feed one RGB frame; returns the current face box, or None while no face is tracked."""
        if self._countdown > 0:
            self._countdown -= 1
            return self.box
        prev = self.box
        if prev is None:
            faces = self.detector.detect(rgb)
            if faces:
                self.box = faces[0]
                self.missed = 0
                self._countdown = self.redetect_every - 1
            else:
                self._countdown = self.search_every - 1
            return self.box
        self._countdown = self.redetect_every - 1
        faces = self.detector.detect(rgb, near=prev)
        if not faces:
            self.missed += 1
            if self.missed > self.max_missed:
                self.box = None
                self._countdown = 0
            return self.box
        self.missed = 0
        best = max(faces, key=lambda f: _iou(f, prev))
        a = self.smoothing
        self.box = Box(*(a * p + (1.0 - a) * n for p, n in zip(prev, best, strict=True)))
        return self.box


def crop_transform(box: Box, size: int = 224) -> npt.NDArray[np.float64]:
    """The 2×3 similarity (here: scale + shift) mapping frame pixels to the DECA crop."""
    side = 0.5 * (box.w + box.h)
    cx = box.x + 0.5 * box.w
    cy = box.y + 0.5 * box.h + CROP_SHIFT_DOWN * side
    side *= CROP_SCALE
    # DECA maps the square's corners onto (0, 0) and (size-1, size-1).
    k = (size - 1) / side
    return np.array([[k, 0.0, -k * (cx - 0.5 * side)], [0.0, k, -k * (cy - 0.5 * side)]])


def crop_face(
    rgb: npt.NDArray[np.uint8],
    box: Box,
    size: int = 224,
    out: npt.NDArray[np.float32] | None = None,
) -> npt.NDArray[np.float32]:
    """DECA-style aligned crop: ``H×W×3`` RGB uint8 → ``[3, size, size]`` float32 in [0, 1].

    Pixels outside the frame are black, as in DECA's warp.
    """
    warped = cv2.warpAffine(
        rgb, crop_transform(box, size), (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT
    )
    if out is None:
        out = np.empty((3, size, size), np.float32)
    np.multiply(warped.transpose(2, 0, 1), np.float32(1.0 / 255.0), out=out)
    return out
