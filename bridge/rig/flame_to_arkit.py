"""FLAME (expression, jaw, eyelids) → ARKit-52 weights as one fixed linear map plus a [0, 1] clamp.

There is no official FLAME→ARKit mapping (shared/design/research/models-and-anchors.md §2). The
DEFAULT matrix is a hand-built HEURISTIC: it is approximate, gets jaw and blinks about right and
the rest only qualitatively. Its assumptions are listed in ``_HEURISTIC`` and docs/rig.md; a user
with a fitted mapping (e.g. least squares of ARKit-semantic shapes on the FLAME mesh) saves a
``(52, 55)`` float matrix with ``np.save`` and loads it with ``FlameToArkit.from_file``.

Input channel order of the map (55): 50 expression ψ, jaw axis-angle (x, y, z) in radians,
eyelid closure (left, right) in [0, 1]. ``map_flame`` takes the full FLAME frame layout of
``bridge.rig.flame`` (which also holds the head rotation) and picks those channels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from bridge.rig import flame
from bridge.rig.arkit import ARKIT_INDEX, NUM_ARKIT

NUM_INPUTS = flame.N_EXPRESSION + flame.N_JAW + flame.N_EYELIDS
_JAW_X = flame.N_EXPRESSION
_JAW_Y = flame.N_EXPRESSION + 1
_EYELID_L = flame.N_EXPRESSION + flame.N_JAW
_EYELID_R = _EYELID_L + 1

# Indices of the 55 map inputs inside a FLAME frame vector (expression, jaw, eyelids; no head).
FLAME_INPUT_INDEX: npt.NDArray[np.intp] = np.r_[
    np.arange(flame.EXPRESSION.start, flame.EXPRESSION.stop),
    np.arange(flame.JAW.start, flame.JAW.stop),
    np.arange(flame.EYELIDS.start, flame.EYELIDS.stop),
]

# Jaw opening (rad) that reads as a fully open ARKit JawOpen; lateral jaw (rad) for JawLeft/Right.
_JAW_OPEN_FULL = 0.35
_JAW_SIDE_FULL = 0.15
# Expression components are roughly unit-variance; ψ = ±2 (2 σ) should drive a shape fully.
_PSI_FULL = 2.0

# (ARKit name, input index, gain). Assumptions about FLAME 2020 expression PCA directions (ψ0 lips
# part, ψ1 lip corners up (+) / down (−), ψ2 brows up (+) / down (−), ψ3 lips pushed forward) are
# eyeballed, not fitted. Jaw: +x opens the mouth; +y turns the chin to the subject's left (+X).
# Eyelid 0 is taken to be the subject's left eye. Negative gains on a shared input give the
# opposite shape after the clamp (e.g. ψ1 < 0 drives MouthFrown, ψ1 > 0 MouthSmile).
_HEURISTIC: tuple[tuple[str, int, float], ...] = (
    ("JawOpen", _JAW_X, 1.0 / _JAW_OPEN_FULL),
    ("JawLeft", _JAW_Y, 1.0 / _JAW_SIDE_FULL),
    ("JawRight", _JAW_Y, -1.0 / _JAW_SIDE_FULL),
    ("EyeBlinkLeft", _EYELID_L, 1.0),
    ("EyeBlinkRight", _EYELID_R, 1.0),
    ("MouthLowerDownLeft", 0, 0.6 / _PSI_FULL),
    ("MouthLowerDownRight", 0, 0.6 / _PSI_FULL),
    ("MouthUpperUpLeft", 0, 0.6 / _PSI_FULL),
    ("MouthUpperUpRight", 0, 0.6 / _PSI_FULL),
    ("MouthSmileLeft", 1, 1.0 / _PSI_FULL),
    ("MouthSmileRight", 1, 1.0 / _PSI_FULL),
    ("CheekSquintLeft", 1, 0.5 / _PSI_FULL),
    ("CheekSquintRight", 1, 0.5 / _PSI_FULL),
    ("MouthFrownLeft", 1, -1.0 / _PSI_FULL),
    ("MouthFrownRight", 1, -1.0 / _PSI_FULL),
    ("BrowInnerUp", 2, 1.0 / _PSI_FULL),
    ("BrowOuterUpLeft", 2, 0.8 / _PSI_FULL),
    ("BrowOuterUpRight", 2, 0.8 / _PSI_FULL),
    ("BrowDownLeft", 2, -1.0 / _PSI_FULL),
    ("BrowDownRight", 2, -1.0 / _PSI_FULL),
    ("MouthPucker", 3, 1.0 / _PSI_FULL),
    ("MouthFunnel", 3, 0.5 / _PSI_FULL),
    ("MouthStretchLeft", 3, -0.7 / _PSI_FULL),
    ("MouthStretchRight", 3, -0.7 / _PSI_FULL),
)


def heuristic_matrix() -> npt.NDArray[np.float32]:
    """The default (52, 55) heuristic matrix; every ARKit shape not listed stays 0."""
    m = np.zeros((NUM_ARKIT, NUM_INPUTS), dtype=np.float32)
    for name, src, gain in _HEURISTIC:
        m[ARKIT_INDEX[name], src] = gain
    return m


class FlameToArkit:
    """``weights = clip(M @ [ψ, jaw, eyelids], 0, 1)``, vectorised over any leading batch axes."""

    def __init__(self, matrix: npt.ArrayLike) -> None:
        m = np.asarray(matrix, dtype=np.float32)
        if m.shape != (NUM_ARKIT, NUM_INPUTS):
            raise ValueError(f"FLAME→ARKit matrix must be ({NUM_ARKIT}, {NUM_INPUTS}), got {m.shape}")
        if not np.all(np.isfinite(m)):
            raise ValueError("FLAME→ARKit matrix contains NaN or Inf")
        # Stored transposed and contiguous so a batch is one (B, 55) @ (55, 52) GEMM.
        self._mt = np.ascontiguousarray(m.T)

    @classmethod
    def default(cls) -> FlameToArkit:
        """The built-in approximate heuristic (see module docstring and docs/rig.md)."""
        return cls(heuristic_matrix())

    @classmethod
    def from_file(cls, path: str | Path) -> FlameToArkit:
        """Load a fitted ``(52, 55)`` matrix saved with ``np.save``."""
        return cls(np.load(Path(path), allow_pickle=False))

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        """The (52, 55) matrix (a copy)."""
        return self._mt.T.copy()

    def map(
        self, inputs: npt.ArrayLike, out: npt.NDArray[np.float32] | None = None
    ) -> npt.NDArray[np.float32]:
        """``(..., 55)`` map inputs → ``(..., 52)`` ARKit weights in [0, 1] (float32)."""
        x = np.asarray(inputs, dtype=np.float32)
        if x.shape[-1] != NUM_INPUTS:
            raise ValueError(f"expected (..., {NUM_INPUTS}) inputs, got {x.shape}")
        if out is None:
            out = np.empty((*x.shape[:-1], NUM_ARKIT), dtype=np.float32)
        np.matmul(x, self._mt, out=out)
        np.clip(out, 0.0, 1.0, out=out)
        return out

    def map_flame(
        self, params: npt.ArrayLike, out: npt.NDArray[np.float32] | None = None
    ) -> npt.NDArray[np.float32]:
        """``(..., FLAME_DIM)`` frames laid out as ``bridge.rig.flame`` → ``(..., 52)`` weights."""
        p = np.asarray(params, dtype=np.float32)
        if p.shape[-1] != flame.FLAME_DIM:
            raise ValueError(f"expected (..., {flame.FLAME_DIM}) FLAME frames, got {p.shape}")
        return self.map(p[..., FLAME_INPUT_INDEX], out)
