"""Calibration and held-out inputs for a model, by its manifest's roles.

Face models (`image` role): a folder of face crops (png/jpg/bmp), resized to the model's input size.
Motion models (`features` role): a folder of sequences, `.npy` ([T, 35] features) or `.npz` (`features`,
optional `style`). A sequence is rolled through the FP32 model one step at a time, feeding back the
recurrent state and the previous pose, so calibration sees the activations the model sees when it runs,
not zeros. Without a folder, seeded synthetic inputs are used (smooth noise images; sinusoid features);
results from them say so in their `source`.

Held-out inputs never overlap calibration inputs: different files, or, with a single sequence, its last
quarter.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bridge.runtime.manifest import ModelManifest

__all__ = ["IMAGE_SUFFIXES", "Samples", "load_samples"]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")
Feeds = dict[str, np.ndarray]


@dataclass(frozen=True)
class Samples:
    calibration: list[Feeds]
    holdout: list[Feeds]
    source: str  # where they came from, for the report


def _split(n_items: int, holdout: int) -> int:
    """How many of n items go to calibration (the rest, at least one, are held out)."""
    if n_items < 2:
        raise ValueError(f"need at least 2 calibration files (one is held out), found {n_items}")
    return n_items - max(1, min(holdout, n_items // 4))


# ---------------------------------------------------------------------------------------------------
# Face crops


def _image_shape(manifest: ModelManifest) -> tuple[str, int, int]:
    spec = manifest.input_for("image")
    assert spec is not None  # callers dispatch on the role
    _, _, h, w = spec.shape
    return spec.tensor, int(h), int(w)


def _read_image(path: Path, h: int, w: int) -> np.ndarray:
    import cv2

    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"{path}: not a readable image")
    rgb = cv2.cvtColor(cv2.resize(bgr, (w, h), interpolation=cv2.INTER_AREA), cv2.COLOR_BGR2RGB)
    return (rgb.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]


def _synthetic_images(n: int, h: int, w: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Smooth colour fields (8x8 noise upsampled): closer to photo statistics than white noise."""
    import cv2

    out = []
    for _ in range(n):
        coarse = rng.random((8, 8, 3), dtype=np.float32)
        out.append(
            cv2.resize(coarse, (w, h), interpolation=cv2.INTER_CUBIC).clip(0, 1).transpose(2, 0, 1)[None]
        )
    return out


def _face_samples(
    manifest: ModelManifest, folder: Path | None, n_cal: int, n_hold: int, seed: int
) -> Samples:
    tensor, h, w = _image_shape(manifest)
    if folder is None:
        images = _synthetic_images(n_cal + n_hold, h, w, np.random.default_rng(seed))
        return Samples(
            [{tensor: a} for a in images[:n_cal]],
            [{tensor: a} for a in images[n_cal:]],
            f"synthetic smooth-noise images (seed {seed})",
        )
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    cut = _split(len(files), n_hold)
    cal, hold = files[:cut][:n_cal], files[cut:]
    return Samples(
        [{tensor: _read_image(p, h, w)} for p in cal],
        [{tensor: _read_image(p, h, w)} for p in hold],
        f"{len(cal)} face crops from {folder} ({len(hold)} held out)",
    )


# ---------------------------------------------------------------------------------------------------
# Feature sequences, rolled through the FP32 model


def _read_sequence(path: Path) -> tuple[np.ndarray, int]:
    if path.suffix == ".npy":
        seq: np.ndarray = np.load(path).astype(np.float32)
        return seq, 0
    with np.load(path) as z:
        if "features" not in z:
            raise ValueError(f"{path}: an .npz sequence needs a 'features' array (has {sorted(z.files)})")
        return z["features"].astype(np.float32), int(z["style"]) if "style" in z else 0


def _synthetic_sequence(length: int, width: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(length, dtype=np.float32)[:, None]
    freq = rng.uniform(0.01, 0.3, width).astype(np.float32)
    phase = rng.uniform(0, 2 * np.pi, width).astype(np.float32)
    noise = rng.standard_normal((length, width)).astype(np.float32)
    seq: np.ndarray = np.sin(freq * t + phase) + 0.1 * noise
    return seq


class _Rollout:
    """Steps the FP32 model over a sequence, recording each step's feeds."""

    def __init__(self, manifest: ModelManifest) -> None:
        import onnxruntime as ort

        self.m = manifest
        self.session = ort.InferenceSession(str(manifest.onnx_path), providers=["CPUExecutionProvider"])
        feat = manifest.input_for("features")
        assert feat is not None  # callers dispatch on the role
        self.features = feat.tensor
        self.prev = manifest.input_for("pose.previous")
        self.style = manifest.input_for("style")
        pose = manifest.output_for("pose.axis_angle")
        self.pose_out = pose.tensor if pose is not None else None

    def feeds(self, seq: np.ndarray, style: int) -> list[Feeds]:
        state = {p.input: np.zeros(p.zeros_shape(1), np.dtype(p.dtype)) for p in self.m.state}
        prev = np.zeros((1, int(self.prev.shape[-1])), np.float32) if self.prev is not None else None
        steps: list[Feeds] = []
        names = [o.name for o in self.session.get_outputs()]
        for frame in seq:
            f: Feeds = {self.features: frame[None, None, :], **state}
            if self.prev is not None and prev is not None:
                f[self.prev.tensor] = prev
            if self.style is not None:
                f[self.style.tensor] = np.array([style], np.dtype(self.style.dtype))
            steps.append(f)
            out = dict(zip(names, self.session.run(None, f), strict=True))
            state = {p.input: out[p.output] for p in self.m.state}
            if prev is not None and self.pose_out is not None:
                prev = out[self.pose_out][:, -1, :]
        return steps


def _pick(steps: list[Feeds], n: int) -> list[Feeds]:
    """n steps spread evenly over the rollout (early frames alone would all look like the zero state)."""
    if len(steps) <= n:
        return steps
    return [steps[i] for i in np.linspace(0, len(steps) - 1, n).round().astype(int)]


def _motion_samples(
    manifest: ModelManifest, folder: Path | None, n_cal: int, n_hold: int, seed: int
) -> Samples:
    roll = _Rollout(manifest)
    feat = manifest.input_for("features")
    width = int(feat.shape[-1]) if feat is not None else 0
    if folder is None:
        rng = np.random.default_rng(seed)
        cal = roll.feeds(_synthetic_sequence(4 * n_cal, width, rng), 0)
        hold = roll.feeds(_synthetic_sequence(4 * n_hold, width, rng), 1 % max(1, len(manifest.styles)))
        return Samples(
            _pick(cal, n_cal), _pick(hold, n_hold), f"synthetic sinusoid feature sequences (seed {seed})"
        )
    files = sorted(p for p in folder.iterdir() if p.suffix in (".npy", ".npz"))
    if len(files) == 1:
        seq, style = _read_sequence(files[0])
        cut = len(seq) * 3 // 4
        steps = roll.feeds(seq, style)
        return Samples(
            _pick(steps[:cut], n_cal), _pick(steps[cut:], n_hold), f"{files[0]} (last quarter held out)"
        )
    cut = _split(len(files), n_hold)
    cal_steps: list[Feeds] = []
    hold_steps: list[Feeds] = []
    for i, path in enumerate(files):
        seq, style = _read_sequence(path)
        (cal_steps if i < cut else hold_steps).extend(roll.feeds(seq, style))
    return Samples(
        _pick(cal_steps, n_cal),
        _pick(hold_steps, n_hold),
        f"{cut} feature sequences from {folder} ({len(files) - cut} held out)",
    )


def load_samples(
    manifest: ModelManifest, folder: Path | None, *, calibration: int, holdout: int, seed: int
) -> Samples:
    if folder is not None and not folder.is_dir():
        raise ValueError(f"calibration folder not found: {folder}")
    if calibration < 1 or holdout < 1:
        raise ValueError("--samples and --holdout must be >= 1")
    # A validated manifest has the task's required input role: `image` for face, `features` for motion.
    loader = _face_samples if manifest.task == "face" else _motion_samples
    samples = loader(manifest, folder, calibration, holdout, seed)
    if not samples.calibration or not samples.holdout:
        raise ValueError(f"no usable calibration data in {folder} (sequences too short?)")
    return samples
