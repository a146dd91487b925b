"""Train the viseme classifier on synthesized speech and export it with its manifest.

    python -m training.speech.train [--out models] [--epochs 25]

writes speech_visemes.onnx, speech_visemes.manifest.json and speech_visemes.calibration.json (the
training voices' mean vowel profiles, the target of per-session calibration). Data: our own sentences
(bridge.speech.corpus) spoken by eSpeak NG's training voices in five languages, twice per voice with
a random speaking rate, pitch and gain, each with its own calibration clip; every utterance is used
both as is and calibrated, so the model works with and without a session calibration. Labels: the
viseme of eSpeak's phoneme at each frame time. Model: an MLP (104 -> 128 -> 64 -> 15, ReLU) trained
with cross-entropy, seeded; the feature standardisation is folded into the ONNX graph. Held-out
voices and sentences are scored at the end (bench/speech.py is the full measurement). Takes about ten
minutes on a busy two-core machine (6 CPU-minutes).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.audio.speech_features import CONTEXT, FEATURE_DIM, utterance_features
from bridge.speech.calibration import VoiceProfile, measure, offset, reference_path, save_reference
from bridge.speech.corpus import Voice, calibration_clip, sentences, speak, voices
from bridge.speech.espeak import viseme_track
from bridge.speech.visemes import NUM_VISEMES, VISEMES

NAME = "speech_visemes"
FPS = 30.0
HIDDEN = (128, 64)
SEED = 0
DRAWS_PER_VOICE = 2
OPSET = 17


def augmented_voices(rng: np.random.Generator) -> list[tuple[Voice, float]]:
    """(voice with a random rate and pitch, gain in dB) per training voice and draw."""
    out = []
    for v in voices(held_out=False):
        for _ in range(DRAWS_PER_VOICE):
            voice = Voice(v.language, v.variant, int(rng.integers(130, 211)), int(rng.integers(30, 76)))
            out.append((voice, float(rng.uniform(-18.0, 0.0))))
    return out


def _scaled(audio: npt.NDArray[np.int16], gain_db: float) -> npt.NDArray[np.float32]:
    return (audio.astype(np.float32) / 32768.0) * np.float32(10.0 ** (gain_db / 20.0))


def voice_data(
    voice: Voice, gain_db: float, held_out: bool
) -> tuple[VoiceProfile, list[tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]]]:
    """The voice's calibration profile and its (raw features, labels) per sentence."""
    clip, rate = calibration_clip(voice)
    profile = measure(_scaled(clip, gain_db), rate, FPS)
    items = []
    for text in sentences(voice.language, held_out):
        u = speak(voice, text)
        features, _ = utterance_features(_scaled(u.audio, gain_db), u.rate, FPS)
        labels = viseme_track(u, FPS)[: len(features)]
        items.append((features, labels))
    return profile, items


def reference_of(profiles: Sequence[VoiceProfile]) -> VoiceProfile:
    return VoiceProfile(
        np.mean([p.vowels for p in profiles], axis=0), float(np.mean([p.level_db for p in profiles]))
    )


def build_dataset(
    rng: np.random.Generator,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64], VoiceProfile]:
    per_voice = [voice_data(v, g, held_out=False) for v, g in augmented_voices(rng)]
    reference = reference_of([p for p, _ in per_voice])
    xs, ys = [], []
    for profile, items in per_voice:
        shift = np.tile(offset(reference, profile), CONTEXT).astype(np.float32)
        for features, labels in items:
            xs += [features, features + shift]
            ys += [labels, labels]
    return np.concatenate(xs), np.concatenate(ys), reference


def train(
    x: npt.NDArray[np.float32], y: npt.NDArray[np.int64], epochs: int
) -> tuple[
    list[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]],
    npt.NDArray[np.float32],
    npt.NDArray[np.float32],
]:
    """Weights (W, b) per layer and the feature mean and std the first layer expects."""
    import torch

    torch.manual_seed(SEED)
    mean = x.mean(axis=0)
    std = x.std(axis=0) + 1e-3
    xt = torch.from_numpy((x - mean) / std)
    yt = torch.from_numpy(y)
    layers: list[torch.nn.Module] = []
    width = FEATURE_DIM
    for h in HIDDEN:
        layers += [torch.nn.Linear(width, h), torch.nn.ReLU(), torch.nn.Dropout(0.1)]
        width = h
    layers.append(torch.nn.Linear(width, NUM_VISEMES))
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, epochs)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.05)
    gen = torch.Generator().manual_seed(SEED)
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(perm), 256):
            idx = perm[i : i + 256]
            opt.zero_grad()
            loss = loss_fn(model(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
        sched.step()
        print(f"epoch {epoch + 1}/{epochs}: loss {total / len(xt):.3f}", file=sys.stderr)
    linear = [m for m in model if isinstance(m, torch.nn.Linear)]
    weights = [(m.weight.detach().numpy().copy(), m.bias.detach().numpy().copy()) for m in linear]
    return weights, mean.astype(np.float32), std.astype(np.float32)


def export_onnx(
    path: Path,
    weights: Sequence[tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]],
    mean: npt.NDArray[np.float32],
    std: npt.NDArray[np.float32],
) -> None:
    """A plain graph (standardise, Gemm/Relu layers, Softmax) built node by node: byte-stable."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [
        numpy_helper.from_array(mean, "mean"),
        numpy_helper.from_array((1.0 / std).astype(np.float32), "inv_std"),
    ]
    nodes = [
        helper.make_node("Sub", ["features", "mean"], ["centred"]),
        helper.make_node("Mul", ["centred", "inv_std"], ["h0"]),
    ]
    for i, (w, b) in enumerate(weights):
        inits += [
            numpy_helper.from_array(w.astype(np.float32), f"w{i}"),
            numpy_helper.from_array(b.astype(np.float32), f"b{i}"),
        ]
        out = f"z{i}" if i < len(weights) - 1 else "logits"
        nodes.append(helper.make_node("Gemm", [f"h{i}", f"w{i}", f"b{i}"], [out], transB=1))
        if i < len(weights) - 1:
            nodes.append(helper.make_node("Relu", [out], [f"h{i + 1}"]))
    nodes.append(helper.make_node("Softmax", ["logits"], ["visemes"], axis=1))
    graph = helper.make_graph(
        nodes,
        NAME,
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", FEATURE_DIM])],
        [helper.make_tensor_value_info("visemes", TensorProto.FLOAT, ["batch", NUM_VISEMES])],
        inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="avatar-bridge"
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.write_bytes(model.SerializeToString())


def write_manifest(path: Path, onnx_path: Path) -> None:
    from bridge.runtime.manifest import sha256_file

    doc = {
        "format_version": 1,
        "name": NAME,
        "task": "speech",
        "description": (
            "Viseme classifier (MLP over 8 x 13 causal MFCC frames, 15 Oculus visemes) trained by "
            "`python -m training.speech.train` on speech synthesized with eSpeak NG (docs/speech.md)."
        ),
        "trained": True,
        "fps": FPS,
        "onnx_path": onnx_path.name,
        "onnx_sha256": sha256_file(onnx_path),
        "styles": [],
        "inputs": [
            {
                "role": "speech.features",
                "tensor": "features",
                "shape": ["batch", FEATURE_DIM],
                "dtype": "float32",
            }
        ],
        "outputs": [
            {
                "role": "speech.visemes",
                "tensor": "visemes",
                "shape": ["batch", NUM_VISEMES],
                "dtype": "float32",
            }
        ],
        "profiles": [
            {
                "name": f"b{b}",
                "shapes": {
                    "features": {"min": [1, FEATURE_DIM], "opt": [b, FEATURE_DIM], "max": [b, FEATURE_DIM]}
                },
            }
            for b in (1, 16, 64)
        ],
    }
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.speech.train", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=Path("models"))
    parser.add_argument("--epochs", type=int, default=25)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(SEED)
    x, y, reference = build_dataset(rng)
    counts = np.bincount(y, minlength=NUM_VISEMES) / len(y)
    print(
        f"{len(y)} frames; " + ", ".join(f"{v} {c:.2f}" for v, c in zip(VISEMES, counts, strict=True)),
        file=sys.stderr,
    )
    weights, mean, std = train(x, y, args.epochs)
    args.out.mkdir(parents=True, exist_ok=True)
    onnx_path = args.out / f"{NAME}.onnx"
    export_onnx(onnx_path, weights, mean, std)
    save_reference(reference_path(onnx_path), reference)
    write_manifest(args.out / f"{NAME}.manifest.json", onnx_path)
    print(f"wrote {onnx_path} and its manifest and calibration reference", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
