"""Which PyTorch module runs a manifest: a trained model from the weights beside its ONNX file, the
reference models by manifest name (seeded weights, the
same ones `training.export` writes to ONNX), the face-tracking networks from their ONNX file
(bridge.backends.torch.onnx_module), or a module the caller passes in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from torch import nn

from bridge.backends.torch.onnx_module import OnnxModule
from bridge.models.face import build_emoca_size, build_face_small
from bridge.models.motion import build_dance_lstm, load_dance_lstm
from bridge.runtime.manifest import ModelManifest

__all__ = ["ONNX_TASKS", "REFERENCE_MODULES", "TRAINED_MODULES", "module_for", "reference_module"]

REFERENCE_MODULES: dict[str, Callable[[int], nn.Module]] = {
    "dance_lstm": build_dance_lstm,
    "face_expression_small": build_face_small,
    "emoca_size": build_emoca_size,
}

# Trained models by manifest name: their weights are the .pt file beside the ONNX file.
TRAINED_MODULES: dict[str, Callable[[Path], nn.Module]] = {"dance_lstm": load_dance_lstm}


def reference_module(name: str, seed: int = 0) -> nn.Module:
    build = REFERENCE_MODULES.get(name)
    if build is None:
        raise ValueError(
            f"torch backend: no reference module for model {name!r} "
            f"(known: {', '.join(sorted(REFERENCE_MODULES))}); pass module=... to the backend"
        )
    return build(seed)


# Manifest tasks whose ONNX file is run as is (our own conversions, a small op set).
ONNX_TASKS = (
    "face_landmarks", "face_detector", "face_blendshapes",
    "pose_detector", "pose_landmarks", "hand_recrop", "hand_landmarks",
)  # fmt: skip


def module_for(manifest: ModelManifest, seed: int = 0) -> nn.Module:
    if manifest.task in ONNX_TASKS:
        return OnnxModule(manifest.onnx_path)
    weights = manifest.onnx_path.with_suffix(".pt")
    if manifest.trained and manifest.name in TRAINED_MODULES and weights.exists():
        return TRAINED_MODULES[manifest.name](weights)
    return reference_module(manifest.name, seed)
