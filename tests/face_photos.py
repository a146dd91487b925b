"""Harder face photos, made from real photos that ship in installed packages, and every face in them
as MediaPipe's FaceLandmarker and as the bridge's tracker see it (tests/test_face_quality.py and
bench/face_quality.py).

The photos: scikit-image's astronaut (Eileen Collins, NASA, public domain) and matplotlib's Grace
Hopper sample. Two kinds:
- rolled: the face turned 30-45 degrees in a frame that cuts close to it, so the rotated region the
  mesh network reads runs past the frame's edge;
- group: several people side by side on frames of different shapes, faces 60-90 px tall (forehead to
  chin).

No laughing face ships in any package here: the astronaut's open smile is the nearest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

from bridge.pipelines.face_tracking import FaceTrackingPipeline
from bridge.vision import face_geometry as geo

Image = npt.NDArray[np.uint8]
F64 = npt.NDArray[np.float64]

# Forehead-to-chin height (mesh points 10 and 152, as MediaPipe places them) in each source photo, and
# the head-and-shoulders part of it a group photo shows (x0, y0, x1, y1).
FACE_HEIGHT_PX = {"astronaut": 105.3, "hopper": 201.4}
HEAD_AND_SHOULDERS = {"astronaut": (120, 10, 340, 290), "hopper": (80, 40, 450, 560)}


def sources() -> dict[str, Image]:
    """The real photos, RGB."""
    import matplotlib
    from skimage import data

    hopper = Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg"
    bgr = cv2.imread(str(hopper), cv2.IMREAD_COLOR)
    assert bgr is not None, hopper
    astronaut = np.asarray(data.astronaut(), np.uint8)  # type: ignore[no-untyped-call]
    return {"astronaut": astronaut, "hopper": np.asarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), np.uint8)}


def rotate(image: Image, degrees: float) -> Image:
    """Turned counter-clockwise as seen about the centre; the corners filled by reflection."""
    h, w = image.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2, h / 2), degrees, 1.0)
    return np.asarray(cv2.warpAffine(image, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT))


def rolled() -> dict[str, Image]:
    """Rolled faces in frames cut close around them (x0, y0, x1, y1 after the turn)."""
    src = sources()
    cuts = {
        "astronaut-roll45-cut": ("astronaut", 45.0, (100, 90, 420, 400)),
        "astronaut-roll-40-cut": ("astronaut", -40.0, (130, 40, 400, 300)),
        "hopper-roll45-cut": ("hopper", 45.0, (150, 120, 400, 380)),
        "hopper-roll30-cut": ("hopper", 30.0, (170, 150, 420, 450)),
        "hopper-roll-45-cut": ("hopper", -45.0, (110, 130, 380, 400)),
    }
    out = {}
    for name, (who, degrees, (x0, y0, x1, y1)) in cuts.items():
        out[name] = np.ascontiguousarray(rotate(src[who], degrees)[y0:y1, x0:x1])
    return out


def group(size: tuple[int, int], faces: list[tuple[str, float, float, float]], grey: int = 110) -> Image:
    """A `size` (w, h) frame with people pasted in: (who, face height px, centre x, centre y as
    fractions of the frame) each, head and shoulders; later people cover earlier ones."""
    src = sources()
    w, h = size
    canvas = np.full((h, w, 3), grey, np.uint8)
    for who, face_px, fx, fy in faces:
        x0, y0, x1, y1 = HEAD_AND_SHOULDERS[who]
        photo = src[who][y0:y1, x0:x1]
        k = face_px / FACE_HEIGHT_PX[who]
        person = cv2.resize(photo, None, fx=k, fy=k, interpolation=cv2.INTER_AREA)
        ph, pw = person.shape[:2]
        x0, y0 = round(fx * w - pw / 2), round(fy * h - ph / 2)
        cx0, cy0 = max(0, x0), max(0, y0)
        cx1, cy1 = min(w, x0 + pw), min(h, y0 + ph)
        canvas[cy0:cy1, cx0:cx1] = person[cy0 - y0 : cy1 - y0, cx0 - x0 : cx1 - x0]
    return canvas


def groups() -> dict[str, Image]:
    """Group photos: faces 60-90 px tall on frames of several shapes (the detector's letterbox pads
    each differently)."""
    return {
        "group-2-637x332": group(
            (637, 332), [("hopper", 69.1, 0.2453, 0.3902), ("astronaut", 66.1, 0.7262, 0.5751)]
        ),
        "group-2-647x412": group(
            (647, 412), [("hopper", 86.6, 0.273, 0.472), ("astronaut", 74.1, 0.787, 0.391)]
        ),
        "group-2-500x330": group((500, 330), [("astronaut", 84, 0.28, 0.5), ("hopper", 88, 0.74, 0.52)]),
        "group-2-420x300": group((420, 300), [("hopper", 72, 0.3, 0.45), ("astronaut", 66, 0.72, 0.5)]),
        "group-2-360x450": group((360, 450), [("hopper", 78, 0.5, 0.27), ("astronaut", 74, 0.5, 0.73)]),
    }


@dataclass(frozen=True)
class Face:
    """One face found in a photo: its 478 landmarks (image pixels, x and y) and 52 blendshape scores in
    MediaPipe's order (`_neutral` first)."""

    landmarks: F64
    scores: F64

    @property
    def centre(self) -> F64:
        centre: F64 = self.landmarks.mean(0)
        return centre

    @property
    def height(self) -> float:
        return float(np.linalg.norm(self.landmarks[10] - self.landmarks[152]))


class MediaPipeFaces:
    """MediaPipe's FaceLandmarker (IMAGE mode, blendshapes on, up to `max_faces`): the oracle."""

    def __init__(self, bundle: Path, max_faces: int = 8) -> None:
        import mediapipe as mp
        from mediapipe.tasks.python import BaseOptions, vision

        self._mp = mp
        options = vision.FaceLandmarkerOptions(
            base_options=BaseOptions(model_asset_path=str(bundle)),
            running_mode=vision.RunningMode.IMAGE,
            output_face_blendshapes=True,
            num_faces=max_faces,
        )
        self._landmarker: Any = vision.FaceLandmarker.create_from_options(options)

    def __call__(self, image: Image) -> list[Face]:
        mp = self._mp
        r = self._landmarker.detect(
            mp.Image(image_format=mp.ImageFormat.SRGB, data=np.ascontiguousarray(image))
        )
        h, w = image.shape[:2]
        return [
            Face(np.array([[p.x * w, p.y * h] for p in points]), np.array([c.score for c in scores]))
            for points, scores in zip(r.face_landmarks, r.face_blendshapes, strict=True)
        ]

    def close(self) -> None:
        self._landmarker.close()


def bridge_faces(pipeline: FaceTrackingPipeline, image: Image) -> list[Face]:
    """Every face the bridge's tracker finds from a fresh start: its detector, each detection's region
    and crop, the mesh (kept where its presence passes) and blendshape networks, through the pipeline's
    own engines and geometry (a session follows one of these: the largest or the most central)."""
    tensor, scale, px, py = geo.letterbox(image)
    out, _ = pipeline.detector.run({"face.detector_image": tensor[None]})
    found = geo.decode_detections(out["face.detections"][0], out["face.detection_scores"][0], scale, px, py)
    faces = []
    for detection in found:
        crop, m = geo.crop(image, geo.roi_from_detection(detection))
        mesh, _ = pipeline.engine.run({"face.mesh_image": crop[None]})
        if mesh["face.presence"][0, 0] < geo.MIN_PRESENCE:
            continue
        landmarks = geo.project(mesh["face.landmarks"].reshape(1, -1, 3), m[None])
        subset = landmarks[:, geo.BLENDSHAPE_SUBSET, :2].astype(np.float32)
        scores = pipeline.blendshape_engine.run({"face.landmark_subset": subset})[0]["arkit.blendshapes"]
        faces.append(Face(landmarks[0, :, :2], scores[0].astype(np.float64)))
    return faces


def pair(theirs: list[Face], ours: list[Face]) -> list[tuple[Face, Face | None]]:
    """Each of MediaPipe's faces with the bridge's face nearest it (None when none lies within half a
    face height)."""
    pairs: list[tuple[Face, Face | None]] = []
    for face in theirs:
        near = [f for f in ours if np.linalg.norm(f.centre - face.centre) < 0.5 * face.height]
        pairs.append(
            (face, min(near, key=lambda f: float(np.linalg.norm(f.centre - face.centre)), default=None))
        )
    return pairs


def blendshape_mae(theirs: Face, ours: Face) -> float:
    """Mean absolute difference over the 51 ARKit blendshapes (MediaPipe's `_neutral` left out)."""
    return float(np.abs(theirs.scores[1:] - ours.scores[1:]).mean())
