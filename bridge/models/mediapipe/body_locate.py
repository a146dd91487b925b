"""Find the body tracker's networks (MediaPipe Pose and Holistic's hand models) and check each by sha256.

They ship inside PyPI's `mediapipe` 0.10.21 wheel (Apache-2.0), under `mediapipe/modules/`. The bridge
may have another mediapipe installed (the face oracle), and two versions cannot share one
site-packages, so `install` puts this one `--no-deps` into a folder of its own in the user cache
(`pip install --target`); the files are found through the package's metadata there (or on sys.path,
where a user installed 0.10.21 themselves), never imported. A copy of the files themselves in the
user cache folder is found first (`copy_in`, for machines without the package index).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from bridge.paths import user_cache_dir

DISTRIBUTION = "mediapipe"
VERSION = "0.10.21"
REQUIREMENT = f"{DISTRIBUTION}=={VERSION}"
CACHE_FOLDER = "mediapipe_body"
SOURCE = f"Google MediaPipe Pose / Holistic networks ({REQUIREMENT} wheel, Apache-2.0)"


@dataclass(frozen=True)
class BodyFile:
    name: str
    sha256: str  # of the file in the 0.10.21 wheel
    member: str  # its path inside the package


FILES = (
    BodyFile(
        "pose_detection.tflite",
        "9ba9dd3d42efaaba86b4ff0122b06f29c4122e756b329d89dca1e297fd8f866c",
        "mediapipe/modules/pose_detection/pose_detection.tflite",
    ),
    BodyFile(
        "pose_landmark_full.tflite",
        "e9a5c5cb17f736fafd4c2ec1da3b3d331d6edbe8a0d32395855aeb2cdfd64b9f",
        "mediapipe/modules/pose_landmark/pose_landmark_full.tflite",
    ),
    BodyFile(
        "hand_recrop.tflite",
        "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d",
        "mediapipe/modules/holistic_landmark/hand_recrop.tflite",
    ),
    BodyFile(
        "hand_landmark_full.tflite",
        "11c272b891e1a99ab034208e23937a8008388cf11ed2a9d776ed3d01d0ba00e3",
        "mediapipe/modules/hand_landmark/hand_landmark_full.tflite",
    ),
    BodyFile(
        "palm_detection_full.tflite",
        "1b14e9422c6ad006cde6581a46c8b90dd573c07ab7f3934b5589e7cea3f89a54",
        "mediapipe/modules/palm_detection/palm_detection_full.tflite",
    ),
)
INSTALL_HINT = "avatar-bridge models install body"


class BodyModelError(FileNotFoundError):
    """A body network is missing or is not the expected file; the message says where we looked."""


def cache_dir() -> Path:
    """Copies of the files, and the converted ONNX folders."""
    return user_cache_dir() / CACHE_FOLDER


def package_dir() -> Path:
    """Where `install` puts the 0.10.21 wheel (`pip install --target`), apart from the environment."""
    return user_cache_dir() / f"{DISTRIBUTION}-{VERSION}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _package_copies(file: BodyFile) -> list[tuple[Path, str]]:
    copies = []
    on_path = importlib.metadata.distributions(name=DISTRIBUTION)
    apart = importlib.metadata.distributions(name=DISTRIBUTION, path=[str(package_dir())])
    for dists in (on_path, apart):
        for dist in dists:
            path = Path(str(dist.locate_file(file.member)))
            copies.append((path, f"package {DISTRIBUTION} {dist.version} at {dist.locate_file('')}"))
    return copies


def find(file: BodyFile, cache: Path | None = None) -> Path:
    """The first copy whose sha256 matches: the user cache, then the installed package(s)."""
    looked = []
    for path, source in [((cache or cache_dir()) / file.name, "user cache"), *_package_copies(file)]:
        if not path.is_file():
            looked.append(f"{path} ({source}: no file)")
            continue
        actual = sha256_of(path)
        if actual != file.sha256:
            looked.append(f"{path} ({source}: sha256 {actual[:12]}..., expected {file.sha256[:12]}...)")
            continue
        return path
    raise BodyModelError(f"{file.name} not found; looked in: {'; '.join(looked)}. Run `{INSTALL_HINT}`")


def locate(cache: Path | None = None) -> dict[str, Path]:
    """Every body network, checked (BodyModelError for the first one missing)."""
    return {f.name: find(f, cache) for f in FILES}


def install(python: str = sys.executable) -> dict[str, Path]:
    """`pip install --no-deps --target <user cache>/mediapipe-0.10.21 mediapipe==0.10.21` unless every
    file is already found; pip's progress goes to the terminal."""
    try:
        return locate()
    except BodyModelError:
        pass
    target = package_dir()
    command = [python, "-m", "pip", "install", "--no-deps", "--upgrade", "--target", str(target), REQUIREMENT]
    subprocess.run(command, check=True)
    return locate()


def copy_in(given: Path) -> dict[str, Path]:
    """Files the user already has (a folder of them), each checked, into the cache folder."""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for file in FILES:
        path = given / file.name
        if not path.is_file():
            raise BodyModelError(f"{path}: no such file")
        actual = sha256_of(path)
        if actual != file.sha256:
            raise BodyModelError(f"{path} has sha256 {actual}, expected {file.sha256}")
        out[file.name] = Path(shutil.copyfile(path, folder / file.name))
    return out
