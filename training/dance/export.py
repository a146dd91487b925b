"""Export the trained dance student to ONNX with its manifest: `python -m training.dance.export`.

Reads `models/dance_lstm.pt` (written by training.dance.train: the state dict and how it was
made) and writes `models/dance_lstm.onnx` + manifest through training.export, so the graph, the
tensor names and the manifest's roles, state and profiles are the untrained reference's; only the
weights, `trained` and the `training` field differ. tests/test_dance_trained.py re-exports it and
compares the outputs within a tolerance.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch

from bridge.models.motion import DanceLSTM, load_dance_lstm
from bridge.runtime.manifest import ModelManifest
from training.export import export_dance_lstm

__all__ = ["export_trained", "load_trained"]

WEIGHTS = Path(__file__).resolve().parents[2] / "models" / "dance_lstm.pt"


def load_trained(path: Path = WEIGHTS) -> tuple[DanceLSTM, dict[str, Any]]:
    """The student and its training record from a checkpoint of training.dance.train."""
    return load_dance_lstm(path), dict(torch.load(path, weights_only=True)["training"])


def export_trained(out_dir: Path, weights: Path = WEIGHTS) -> ModelManifest:
    model, training = load_trained(weights)
    return export_dance_lstm(out_dir, trained=model, training=training)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", type=Path, default=WEIGHTS)
    ap.add_argument("--out", type=Path, default=WEIGHTS.parent)
    a = ap.parse_args()
    m = export_trained(a.out, a.weights)
    print(f"{m.name}: {m.onnx_path} (sha256 {m.onnx_sha256[:12]}), trained={m.trained}")


if __name__ == "__main__":
    main()
