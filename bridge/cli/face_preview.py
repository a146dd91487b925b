"""`demo --preview DIR`: debug pictures of face tracking, landmarks and head axes drawn on the frames.

The frames are tracked again in this process with the same converted models the bridge serves (frames
on the wire carry no landmarks), one session, in order, so tracking behaves as in the bridge.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import cv2
import numpy as np

from bridge.backends import load_engine
from bridge.models.mediapipe.convert import SERVED_NAME
from bridge.pipelines.face_tracking import FaceTrackingPipeline, TrackedFace
from bridge.protocol.requests import ImageInput

AXIS_CM = 8.0  # drawn length of each head axis, canonical centimetres
# Wire axes X (subject's left), Y (up), Z (towards the camera): red, green, blue (drawn on RGB).
_COLOURS = ((255, 0, 0), (0, 200, 0), (0, 80, 255))


def write_previews(models: Path, frames: Iterable[np.ndarray], out: Path, every: int = 10) -> list[Path]:
    """Track `frames` and write every `every`-th one with its landmarks and head axes as PNG."""
    out.mkdir(parents=True, exist_ok=True)
    pipeline = FaceTrackingPipeline(load_engine(models / f"{SERVED_NAME}.onnx"))
    written = []
    try:
        state = pipeline.open_session({"smoothing": False})
        for i, image in enumerate(frames):
            steps = pipeline.prepare(state, ImageInput(i, "preview", i, int(i * 1e9 / 30), False, image))
            face = pipeline.run_batch([state], steps).rows[0]
            if i % every:
                continue
            path = out / f"face-{i:05d}.png"
            cv2.imwrite(str(path), cv2.cvtColor(draw(image, face, pipeline), cv2.COLOR_RGB2BGR))
            written.append(path)
    finally:
        for engine in (pipeline.engine, pipeline.detector, pipeline.blendshape_engine):
            engine.close()
    return written


def draw(image: np.ndarray, face: TrackedFace | None, pipeline: FaceTrackingPipeline) -> np.ndarray:
    canvas = np.ascontiguousarray(image.copy())
    if face is None:
        cv2.putText(canvas, "face lost", (8, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 0, 0), 2)
        return canvas
    for x, y in face.landmarks[:, :2]:
        cv2.circle(canvas, (round(x), round(y)), 1, (0, 255, 255), -1)
    rotation = cv2.Rodrigues(face.rotation.reshape(3, 1))[0]
    # Scale from the landmarks' spread against the canonical mesh's, origin at the nose tip (1).
    spread = (
        np.ptp(face.landmarks[:468, :2], axis=0).max()
        / np.ptp(pipeline.canonical.vertices[:, :2], axis=0).max()
    )
    origin = face.landmarks[1, :2]
    for axis, colour in zip(np.eye(3), _COLOURS, strict=True):
        d = rotation @ axis * AXIS_CM * spread
        end = origin + np.array([d[0], -d[1]])  # wire Y up -> image y down
        cv2.arrowedLine(
            canvas, tuple(np.round(origin).astype(int)), tuple(np.round(end).astype(int)), colour, 2
        )
    return canvas
