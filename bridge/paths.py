"""Where avatar-bridge's own files live: the bundled models and the user's cache.

A leaf module (standard library and platformdirs only), so every layer may ask it.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import platformdirs

__all__ = ["CACHE_ENV", "MODELS_ENV", "default_models_dir", "plan_dir", "user_cache_dir"]

MODELS_ENV = "AVATAR_BRIDGE_MODELS"
_OLD_MODELS_ENV = "AVATAR_BRIDGE_ENGINES"  # the name before 0.2, still read
CACHE_ENV = "AVATAR_BRIDGE_CACHE"

# A source checkout keeps the models in the top-level models/ folder beside the package; a wheel
# carries the same files as bridge/bundled_models (pyproject.toml's wheel target maps one to the other;
# bridge/models is the models' Python code, not their files).
_CHECKOUT_MODELS = Path(__file__).resolve().parents[1] / "models"
_BUNDLED = "bundled_models"


def default_models_dir() -> Path:
    """The models folder `serve` and `demo` load by default: $AVATAR_BRIDGE_MODELS, else the bundled one."""
    override = os.environ.get(MODELS_ENV) or os.environ.get(_OLD_MODELS_ENV)
    if override:
        return Path(override)
    # Installed packages are plain folders (ONNX Runtime needs real files); a zipped install is not supported.
    bundled = Path(str(resources.files("bridge") / _BUNDLED))
    # The wheel's folder first: beside an installed package, ../models is site-packages/models, which
    # another distribution may own.
    if bundled.is_dir() or not _CHECKOUT_MODELS.is_dir():
        return bundled
    return _CHECKOUT_MODELS


def user_cache_dir() -> Path:
    """This user's cache for avatar-bridge (converted models, built plans): $AVATAR_BRIDGE_CACHE, else
    the platform's user cache directory (~/.cache/avatar-bridge, ~/Library/Caches/avatar-bridge,
    %LOCALAPPDATA%\\avatar-bridge\\Cache). Not created here: writers create what they write."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    return Path(platformdirs.user_cache_dir("avatar-bridge", appauthor=False))


def plan_dir(onnx_path: Path, onnx_sha256: str) -> Path:
    """Where TensorRT plans of a model go by default: beside its ONNX in a folder of the user's own, in the
    user cache (keyed by the ONNX hash) when the ONNX is package data (installed models are read-only
    to us: a plan in site-packages would be lost on upgrade) or the folder is not writable."""
    folder = onnx_path.resolve().parent
    installed = folder.is_relative_to(Path(__file__).resolve().parent)
    if not installed and os.access(folder, os.W_OK):
        return folder
    return user_cache_dir() / "plans" / onnx_sha256[:16]
