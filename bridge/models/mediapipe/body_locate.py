"""The body tracker's networks (MediaPipe Pose and Holistic's hand models): the `body` model set.

They ship inside PyPI's `mediapipe` 0.10.21 wheel (Apache-2.0), under `mediapipe/modules/`. The bridge
may keep another mediapipe in its environment (the face oracle), and two versions cannot share one
site-packages, so `avatar-bridge models install body` puts this one `--no-deps` into a folder of its own
in the user cache (bridge.models.install, `apart`); the files are found through the package's metadata
there or on sys.path, never imported, or as copies in the user cache (`--file`). Each is sha256-checked.
"""

from __future__ import annotations

from pathlib import Path

from bridge.models.install import ModelFile, ModelFileError, ModelSet, find_set

VERSION = "0.10.21"
SOURCE = f"Google MediaPipe Pose / Holistic networks (mediapipe {VERSION} wheel, Apache-2.0)"
_ASSETS = "https://storage.googleapis.com/mediapipe-assets/"  # MediaPipe's own asset downloads

BODY = ModelSet(
    name="body",
    summary=f"MediaPipe Pose and Holistic hands (mediapipe {VERSION}, Apache-2.0): pose detector, "
    "33-point pose with world coordinates, hand re-crop, 21-point hands, palm detector",
    files=tuple(
        ModelFile(name, sha256, _ASSETS + name)
        for name, sha256 in (
            ("pose_detection.tflite", "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c"),
            ("pose_landmark_full.tflite", "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f"),
            ("hand_recrop.tflite", "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d"),
            ("hand_landmark_full.tflite", "11c272b891e1a99ab034208e23937a8008388cf11ed2a9d776ed3d01d0ba00e3"),
            (
                "palm_detection_full.tflite",
                "1b14e9422c6ad006cde6581a46c8b90dd573c07ab7f3934b5589e7cea3f89a54",
            ),
        )
    ),
    distribution="mediapipe",
    version=VERSION,
    cache_folder="mediapipe_body",
    apart=True,
)
FILES = BODY.files
INSTALL_HINT = "avatar-bridge models install body"


class BodyModelError(ModelFileError):
    """A body network is missing or is not the expected file; the message says where we looked."""


def cache_dir() -> Path:
    """Copies of the files, and the converted ONNX folders."""
    return BODY.cache_dir()


def locate() -> dict[str, Path]:
    """Every body network, checked (BodyModelError for the first one missing, naming the fix)."""
    try:
        return {name: found.path for name, found in find_set(BODY).items()}
    except ModelFileError as exc:
        raise BodyModelError(f"{exc}. Run `{INSTALL_HINT}`") from exc
