"""Inference runtime: model manifests, the backend interface and the Engine.

Importing this package needs numpy only; each backend imports its framework when it is created.
"""

from __future__ import annotations

from bridge.runtime.backend import Backend, BackendUnavailable
from bridge.runtime.engine import Engine
from bridge.runtime.manifest import (
    INPUT_ROLES,
    OUTPUT_ROLES,
    ManifestError,
    ModelManifest,
    Profile,
    StatePair,
    TensorSpec,
    find_manifests,
    load_manifest,
    validate_against_onnx,
)

__all__ = [
    "INPUT_ROLES",
    "OUTPUT_ROLES",
    "Backend",
    "BackendUnavailable",
    "Engine",
    "ManifestError",
    "ModelManifest",
    "Profile",
    "StatePair",
    "TensorSpec",
    "find_manifests",
    "load_manifest",
    "validate_against_onnx",
]
