"""Which PyTorch module runs a manifest: the definition the manifest names (`torch_module`, seeded
reference weights; `torch_weights`, trained weights from the .pt file beside the ONNX file), else the
ONNX graph itself (bridge.backends.torch.onnx_module: our face-tracking conversions), or a module the
caller passes to the backend. The backend names no model: the manifest does."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, cast

from torch import nn

from bridge.backends.torch.onnx_module import OnnxModule
from bridge.runtime.manifest import ModelManifest

__all__ = ["module_for"]


def _resolve(target: str, manifest: ModelManifest) -> Callable[..., Any]:
    module_name, _, attr = target.partition(":")
    if not attr:
        raise ValueError(f"{manifest.name}: torch module {target!r} is not 'package.module:callable'")
    return cast(Callable[..., Any], getattr(importlib.import_module(module_name), attr))


def module_for(manifest: ModelManifest, seed: int = 0) -> nn.Module:
    weights = manifest.onnx_path.with_suffix(".pt")
    if manifest.trained and manifest.torch_weights and weights.exists():
        return cast(nn.Module, _resolve(manifest.torch_weights, manifest)(weights))
    if manifest.torch_module:
        return cast(nn.Module, _resolve(manifest.torch_module, manifest)(seed))
    return OnnxModule(manifest.onnx_path)
