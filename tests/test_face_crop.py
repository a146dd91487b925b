"""Face detection on a real photo, the per-session tracker and the DECA crop."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest
from skimage import data

from bridge.vision.face_crop import (
    CROP_SCALE,
    CROP_SHIFT_DOWN,
    Box,
    FaceDetector,
    FaceTracker,
    crop_face,
    crop_transform,
    find_cascade,
)

ASTRONAUT: np.ndarray = data.astronaut()  # type: ignore[no-untyped-call]


# The astronaut's face in skimage.ASTRONAUT (512×512), by eye: centre and width in pixels.
FACE_CENTRE = np.array([222.0, 112.0])
FACE_WIDTH = 100.0


@pytest.fixture(scope="module")
def detector() -> FaceDetector:
    return FaceDetector()


def _vga(rgb: np.ndarray) -> np.ndarray:
    """The photo letter-boxed into a 640×480 camera frame (face ~95 px wide)."""
    frame = np.zeros((480, 640, 3), np.uint8)
    frame[:, 80:560] = cv2.resize(rgb, (480, 480), interpolation=cv2.INTER_AREA)
    return frame


def test_detects_the_astronaut_face(detector: FaceDetector) -> None:
    faces = detector.detect(ASTRONAUT)
    assert faces, "no face found"
    f = faces[0]
    centre = np.array([f.x + f.w / 2, f.y + f.h / 2])
    assert np.linalg.norm(centre - FACE_CENTRE) < 0.25 * FACE_WIDTH
    assert 0.7 * FACE_WIDTH < f.w < 1.4 * FACE_WIDTH


def test_blank_and_flat_images_have_no_face(detector: FaceDetector) -> None:
    assert detector.detect(np.zeros((480, 640, 3), np.uint8)) == []
    assert detector.detect(np.full((480, 640, 3), 200, np.uint8)) == []


def test_crop_is_centred_on_the_face(detector: FaceDetector) -> None:
    photo = ASTRONAUT
    box = detector.detect(photo)[0]
    crop = crop_face(photo, box)
    assert crop.shape == (224, 224, 3) and crop.dtype == np.uint8
    # The detector, run on the crop, finds the face around the middle of it.
    again = detector.detect(crop)
    assert again
    g = again[0]
    centre = np.array([g.x + g.w / 2, g.y + g.h / 2])
    # DECA's downward shift puts the detector box's centre a little above the crop's centre.
    expected = np.array([111.5, 111.5 - CROP_SHIFT_DOWN / CROP_SCALE * 223])
    assert np.linalg.norm(centre - expected) < 0.12 * 224
    assert 0.55 * 224 < g.w < 0.95 * 224


def test_crop_geometry_follows_the_deca_rule() -> None:
    box = Box(100.0, 120.0, 80.0, 60.0)
    m = crop_transform(box, 224)
    side = 0.5 * (80.0 + 60.0)
    centre = np.array([140.0, 150.0 + CROP_SHIFT_DOWN * side, 1.0])
    np.testing.assert_allclose(m @ centre, [111.5, 111.5])
    assert m[0, 0] == pytest.approx(223.0 / (CROP_SCALE * side))
    # A white square exactly filling the crop square comes out all white.
    img = np.zeros((400, 400, 3), np.uint8)
    s = CROP_SCALE * side
    x0, y0 = centre[0] - s / 2, centre[1] - s / 2
    img[int(np.floor(y0)) : int(np.ceil(y0 + s)) + 1, int(np.floor(x0)) : int(np.ceil(x0 + s)) + 1] = 255
    assert crop_face(img, box).min() > 252


def test_tracker_holds_the_box_through_misses(detector: FaceDetector) -> None:
    frame = _vga(ASTRONAUT)
    blank = np.zeros_like(frame)
    tracker = FaceTracker(detector, redetect_every=1, max_missed=3)
    first = tracker.update(frame)
    assert first is not None
    for shift in (4, 8, 12):
        box = tracker.update(np.roll(frame, shift, axis=1))
        assert box is not None and abs(box.x - first.x) < 20
    held = tracker.box
    for _ in range(3):
        assert tracker.update(blank) == held  # missed: last box held
    assert tracker.update(blank) is None  # lost after max_missed
    assert tracker.update(frame) is not None  # re-acquired by a full search


def test_detection_cost_on_vga(detector: FaceDetector) -> None:
    frame = _vga(ASTRONAUT)
    box = detector.detect(frame)[0]
    runs = 5
    t0 = time.perf_counter()
    for _ in range(runs):
        detector.detect(frame)
    full_ms = (time.perf_counter() - t0) / runs * 1e3
    t0 = time.perf_counter()
    for _ in range(runs):
        detector.detect(frame, near=box)
    near_ms = (time.perf_counter() - t0) / runs * 1e3
    t0 = time.perf_counter()
    for _ in range(runs):
        crop_face(frame, box)
    crop_ms = (time.perf_counter() - t0) / runs * 1e3
    print(
        f"\n[face_crop] 640x480: full search {full_ms:.1f} ms, "
        f"near-box re-detect {near_ms:.1f} ms, crop {crop_ms:.2f} ms"
    )
    assert near_ms < full_ms


def test_missing_cascade_says_how_to_fix(tmp_path: object) -> None:
    with pytest.raises(FileNotFoundError, match="opencv-python-headless<5"):
        find_cascade("/nonexistent/cascade.xml")
