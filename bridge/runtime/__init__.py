"""Inference runtime: model manifests, backends (ONNX Runtime, TensorRT, torch) and the Engine.

Importing this package needs numpy only; each backend imports its framework when it is created.
"""

from __future__ import annotations

from bridge.runtime.backend import (
    Backend,
    BackendUnavailable,
    available_backends,
    create_backend,
    register_backend,
)
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
    "available_backends",
    "create_backend",
    "find_manifests",
    "load_manifest",
    "register_backend",
    "validate_against_onnx",
]
