"""The face tracker finds the faces MediaPipe's FaceLandmarker finds, with its blendshapes, in harder
frames: faces rolled 30-45 degrees in frames cut close around them, and group photos with faces 60-90
px tall (tests/face_photos.py: real photos from installed packages). MediaPipe's own output is the
oracle: every face it finds is found, each within a blendshape MAE of 0.02."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from bridge.pipelines.face_tracking import ARKIT_FROM_MP, FaceTrackingPipeline
from tests import face_photos as fp
from tests.test_face_tracking import bundle, models, pipeline, track  # noqa: F401  (fixtures)

MAX_MAE = 0.02

pytest.importorskip("skimage.data")
pytest.importorskip("mediapipe")


@pytest.fixture(scope="module")
def mediapipe_faces(bundle: Any) -> Any:  # noqa: F811
    oracle = fp.MediaPipeFaces(bundle.path)
    yield oracle
    oracle.close()


@pytest.mark.parametrize("kind", ["rolled", "group"])
def test_every_face_mediapipe_finds_is_found_with_its_blendshapes(
    pipeline: FaceTrackingPipeline,  # noqa: F811
    mediapipe_faces: Any,
    kind: str,
) -> None:
    photos = fp.rolled() if kind == "rolled" else fp.groups()
    found = 0
    for name, image in photos.items():
        theirs = mediapipe_faces(image)
        assert theirs, f"{name}: MediaPipe finds no face (the photo set is meant to have faces)"
        for face, ours in fp.pair(theirs, fp.bridge_faces(pipeline, image)):
            assert ours is not None, f"{name}: MediaPipe's face at {face.centre.round()} not found"
            mae = fp.blendshape_mae(face, ours)
            assert mae <= MAX_MAE, (name, mae)
            found += 1
            if kind == "group":
                assert 55 <= face.height <= 95, (name, face.height)  # the size this set is about
    assert found >= len(photos)


def test_a_session_follows_the_largest_face_as_mediapipe_sees_it(
    pipeline: FaceTrackingPipeline,  # noqa: F811
    mediapipe_faces: Any,
) -> None:
    """Through the served path (prepare, run_batch, finish_batch; smoothing off): the session's face is
    the largest of MediaPipe's, with its blendshapes (ARKit order)."""
    for name, image in {**fp.rolled(), **fp.groups()}.items():
        state = pipeline.open_session({"smoothing": False})
        row, _, frame = track(pipeline, state, image)
        assert row is not None and frame.face_found, name
        theirs = mediapipe_faces(image)
        centre = row.landmarks[:, :2].mean(0)
        face = min(theirs, key=lambda f: float(np.linalg.norm(f.centre - centre)))
        assert np.linalg.norm(face.centre - centre) < 0.25 * face.height, name
        expected = np.where(ARKIT_FROM_MP >= 0, face.scores[ARKIT_FROM_MP], 0.0)
        mae = float(np.abs(np.asarray(frame.blendshapes) - expected).mean())
        assert mae <= MAX_MAE, (name, mae)
