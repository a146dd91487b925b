"""Export the reference models to ONNX with their manifests.

    python -m training.export [--out models] [--emoca]

writes face_expression_small.{onnx,manifest.json} and dance_lstm.{onnx,manifest.json}, plus the large
emoca_size pair with --emoca. Weights are seeded and UNTRAINED. On one machine the output is
byte-reproducible for a given torch version: the TorchScript exporter (dynamo=False) produces the same
bytes run after run (stable node and initializer names), and the manifest JSON has a fixed key order.
Across CPUs it is reproducible within a tolerance only: the seeded initialisers go through CPU-specific
kernels (nn.init.orthogonal_ is a LAPACK QR), so weights differ by ~1e-6 from one CPU to another.
tests/test_models.py re-exports every untrained model in models/ (through REFERENCE_EXPORTS) and
compares graph, weights and outputs within its stated tolerances.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import onnx
import torch

from bridge.models.face import DECA_LAYOUT, DECA_PARAMS, build_emoca_size, build_face_small
from bridge.models.motion import AIST_STYLES, N_FEATURES, N_JOINT_VALUES, N_POSE, DanceLSTM, build_dance_lstm
from bridge.runtime.manifest import (
    FOOT_PLANT,
    ModelManifest,
    Profile,
    StatePair,
    TensorSpec,
    manifest_path_for,
    validate_against_onnx,
)

__all__ = ["REFERENCE_EXPORTS", "export_dance_lstm", "export_emoca_size", "export_face_small", "main"]

OPSET = 17
SEED = 0
UNTRAINED = (
    "UNTRAINED reference weights (seeded, deterministic) for tests and benchmarks; outputs are not "
    "meaningful estimates."
)
TRAINED_DANCE = (
    "Our own model, distilled from our rule-based choreographer (bridge.choreography) on our own "
    "synthetic songs, MIDI songs we compose (rendered by fluidsynth) and real game-music recordings "
    "from Debian packages (the choreographer's dance on them is the target); no mocap or dance data set. "
    "Its horizontal root translation is not trained: the post-processing plants its feet "
    "(post_processing: foot_plant); see the training field and docs/dance.md."
)
IMAGE = (3, 224, 224)


def _export_onnx(
    model: torch.nn.Module,
    args: tuple[torch.Tensor, ...],
    path: Path,
    input_names: list[str],
    output_names: list[str],
    dynamic_axes: dict[str, dict[int, str]],
    doc: str,
    trained: bool = False,
) -> str:
    """Export `model` to `path` and return the file's sha256."""
    with warnings.catch_warnings():
        # The TorchScript exporter is deprecated in favour of dynamo, and warns about LSTM batch sizes
        # (we pass h/c explicitly, which is what that warning asks for).
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            args,
            str(path),
            dynamo=False,
            opset_version=OPSET,
            input_names=input_names,
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            do_constant_folding=True,
        )
    proto = onnx.load(str(path))
    proto.doc_string = doc
    meta = proto.metadata_props.add()
    meta.key, meta.value = "avatar_bridge.trained", str(trained).lower()
    data = proto.SerializeToString()
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def _finish(manifest: ModelManifest) -> ModelManifest:
    manifest.write()
    validate_against_onnx(manifest)
    return manifest


def export_face_small(out_dir: Path, seed: int = SEED) -> ModelManifest:
    """FaceExpressionNet -> face_expression_small.onnx (+ manifest)."""
    name = "face_expression_small"
    path = out_dir / f"{name}.onnx"
    outputs = ["expression", "jaw", "head", "eyelids"]
    dyn = {n: {0: "batch"} for n in ["image", *outputs]}
    sha = _export_onnx(
        build_face_small(seed),
        (torch.zeros(1, *IMAGE),),
        path,
        ["image"],
        outputs,
        dyn,
        f"{name}: {UNTRAINED}",
    )
    return _face_manifest(
        name,
        path,
        sha,
        (
            TensorSpec("flame.expression", "expression", ("batch", 50), "float32"),
            TensorSpec("flame.jaw", "jaw", ("batch", 3), "float32"),
            TensorSpec("flame.head", "head", ("batch", 3), "float32"),
            TensorSpec("flame.eyelids", "eyelids", ("batch", 2), "float32"),
        ),
        f"Small CNN face expression encoder (CPU default). {UNTRAINED}",
        "bridge.models.face:build_face_small",
    )


def _face_manifest(
    name: str, path: Path, sha: str, outputs: tuple[TensorSpec, ...], description: str, torch_module: str
) -> ModelManifest:
    """The face models share their input (one RGB crop), rate and shape tiers; they differ in outputs."""
    one, four, eight = (1, *IMAGE), (4, *IMAGE), (8, *IMAGE)
    return _finish(
        ModelManifest(
            name=name,
            task="face",
            onnx_path=path.resolve(),
            onnx_sha256=sha,
            trained=False,
            fps=30.0,
            inputs=(TensorSpec("image", "image", ("batch", *IMAGE), "float32"),),
            outputs=outputs,
            state=(),
            profiles=(
                Profile("realtime", {"image": (one, one, one)}),
                Profile("batched", {"image": (one, four, eight)}),
            ),
            description=description,
            torch_module=torch_module,
        )
    )


def export_emoca_size(
    out_dir: Path,
    seed: int = SEED,
    *,
    name: str = "emoca_size",
    layers: tuple[int, int, int, int] = (3, 4, 6, 3),
    base_width: int = 64,
) -> ModelManifest:
    """EmocaSizeNet (two ResNet-50s) -> emoca_size.onnx, one [B,236] output described with slices.

    `layers`/`base_width` shrink the ResNets (tests export a tiny model with the same I/O layout).
    """
    path = out_dir / f"{name}.onnx"
    sha = _export_onnx(
        build_emoca_size(seed, layers, base_width),
        (torch.zeros(1, *IMAGE),),
        path,
        ["image"],
        ["params"],
        {"image": {0: "batch"}, "params": {0: "batch"}},
        f"{name}: {UNTRAINED}",
    )
    params = ("batch", DECA_PARAMS)

    def role(r: str, key: str) -> TensorSpec:
        return TensorSpec(r, "params", params, "float32", DECA_LAYOUT[key])

    return _face_manifest(
        name,
        path,
        sha,
        (
            role("flame.expression", "exp"),
            role("flame.head", "global_pose"),
            role("flame.jaw", "jaw_pose"),
            role("extra.flame.shape", "shape"),
            role("extra.flame.texture", "tex"),
            role("extra.camera", "cam"),
            role("extra.light", "light"),
        ),
        "EMOCA-size encoder pair (DECA coarse ResNet-50 -> 236 DECA parameters, expression "
        f"ResNet-50 -> 50 replacing the exp slot) for GPU benchmarks. {UNTRAINED}",
        "bridge.models.face:build_emoca_size",
    )


def export_dance_lstm(
    out_dir: Path, seed: int = SEED, trained: DanceLSTM | None = None, training: dict[str, Any] | None = None
) -> ModelManifest:
    """DanceLSTM -> dance_lstm.onnx (+ manifest), dynamic batch and time: the seeded untrained reference,
    or `trained` weights with `training` (how they were made) in the manifest."""
    name = "dance_lstm"
    path = out_dir / f"{name}.onnx"
    model = build_dance_lstm(seed) if trained is None else trained.eval()
    what = UNTRAINED if trained is None else TRAINED_DANCE
    h, c = model.zero_state(1)
    args = (torch.zeros(1, 1, N_FEATURES), torch.zeros(1, N_POSE), torch.zeros(1, dtype=torch.int64), h, c)
    inputs = ["features", "pose_prev", "style", "h_in", "c_in"]
    outputs = ["pose", "h_out", "c_out"]
    dyn = {n: {0: "batch"} for n in inputs + outputs}
    dyn["features"] = {0: "batch", 1: "time"}
    dyn["pose"] = {0: "batch", 1: "time"}
    sha = _export_onnx(model, args, path, inputs, outputs, dyn, f"{name}: {what}", trained is not None)
    state_shape = ("batch", model.layers, model.hidden)

    def shapes_at(batch: int, time: int) -> dict[str, tuple[int, ...]]:
        return {
            "features": (batch, time, N_FEATURES),
            "pose_prev": (batch, N_POSE),
            "style": (batch,),
            "h_in": (batch, model.layers, model.hidden),
            "c_in": (batch, model.layers, model.hidden),
        }

    def profile(name: str, lo: tuple[int, int], opt: tuple[int, int], hi: tuple[int, int]) -> Profile:
        a, b, c = shapes_at(*lo), shapes_at(*opt), shapes_at(*hi)
        return Profile(name, {t: (a[t], b[t], c[t]) for t in a})

    return _finish(
        ModelManifest(
            name=name,
            task="motion",
            onnx_path=path.resolve(),
            onnx_sha256=sha,
            trained=trained is not None,
            fps=60.0,
            inputs=(
                TensorSpec("features", "features", ("batch", "time", N_FEATURES), "float32"),
                TensorSpec("pose.previous", "pose_prev", ("batch", N_POSE), "float32"),
                TensorSpec("style", "style", ("batch",), "int64"),
            ),
            outputs=(
                TensorSpec(
                    "pose.axis_angle", "pose", ("batch", "time", N_POSE), "float32", (0, N_JOINT_VALUES)
                ),
                TensorSpec(
                    "pose.root_translation",
                    "pose",
                    ("batch", "time", N_POSE),
                    "float32",
                    (N_JOINT_VALUES, N_POSE),
                ),
            ),
            state=(
                StatePair("h_in", "h_out", state_shape, "float32"),
                StatePair("c_in", "c_out", state_shape, "float32"),
            ),
            profiles=(
                profile("realtime", (1, 1), (1, 1), (1, 1)),
                profile("batched", (1, 1), (8, 1), (64, 1)),
                profile("offline", (1, 16), (4, 64), (8, 128)),
            ),
            description=(
                f"2-layer LSTM (hidden {model.hidden}) music-to-dance step with explicit h/c state; "
                "AIST++ layout (60 FPS, 35 music features, 24 SMPL joints axis-angle + root "
                f"translation). {what}"
            ),
            styles=AIST_STYLES,
            post_processing=() if trained is None else (FOOT_PLANT,),
            # A student trained on its own previous pose (training.dance.train --pose-input fed).
            steps_on_previous_pose=bool(training and training.get("pose_input") == "fed"),
            training=training or {},
            torch_module="bridge.models.motion:build_dance_lstm",
            torch_weights="bridge.models.motion:load_dance_lstm" if trained is not None else "",
        )
    )


# The seeded reference models by manifest name: what reproduces each untrained model in models/.
REFERENCE_EXPORTS: dict[str, Callable[[Path, int], ModelManifest]] = {
    "face_expression_small": export_face_small,
    "dance_lstm": export_dance_lstm,
    "emoca_size": export_emoca_size,
}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.export", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("models"), help="output folder (default: models)")
    ap.add_argument("--emoca", action="store_true", help="also export the EMOCA-size model (~225 MB)")
    ap.add_argument("--seed", type=int, default=SEED)
    ns = ap.parse_args(argv)
    ns.out.mkdir(parents=True, exist_ok=True)
    # A trained dance model (its weights beside it) is re-exported by training.dance.export instead.
    trained_dance = (ns.out / "dance_lstm.pt").exists()
    if trained_dance:
        print("dance_lstm: trained weights in place, kept (python -m training.dance.export re-exports)")
    exports = [export_face_small, *([] if trained_dance else [export_dance_lstm])]
    exports += [export_emoca_size] if ns.emoca else []
    for fn in exports:
        m = fn(ns.out, ns.seed)
        size = m.onnx_path.stat().st_size / 1e6
        manifest_name = manifest_path_for(m.onnx_path).name
        print(f"{m.name}: {m.onnx_path} ({size:.1f} MB, sha256 {m.onnx_sha256[:12]}) + {manifest_name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
