"""How well frames follow the speech: per-frame viseme accuracy and lip-sync offset (tests, bench)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bridge.speech.visemes import OPEN_VOWELS, SIL


def accuracy(predicted: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    p, t = np.asarray(predicted), np.asarray(truth)
    return float((p == t).mean())


def chance(truth: npt.ArrayLike) -> float:
    """Accuracy of always answering the most frequent class."""
    counts = np.bincount(np.asarray(truth))
    return float(counts.max() / counts.sum())


def energy_baseline(
    level_db: npt.ArrayLike, train_truth: npt.ArrayLike, threshold_db: float
) -> npt.NDArray[np.int64]:
    """The trivial baseline: silence below a level threshold, else the most frequent spoken viseme."""
    t = np.asarray(train_truth)
    spoken = int(np.bincount(t[t != SIL]).argmax())
    out: npt.NDArray[np.int64] = np.where(np.asarray(level_db) > threshold_db, spoken, SIL).astype(np.int64)
    return out


def lipsync_offset(jaw_open: npt.ArrayLike, truth: npt.ArrayLike, max_lag: int = 5) -> int:
    """Frames by which jawOpen trails the open-vowel ground truth (negative: it leads), from the peak
    of their cross-correlation over lags -max_lag..max_lag."""
    jaw = np.asarray(jaw_open, np.float64)
    ref = np.isin(np.asarray(truth), OPEN_VOWELS).astype(np.float64)
    jaw, ref = jaw - jaw.mean(), ref - ref.mean()
    lags = np.arange(-max_lag, max_lag + 1)
    n = len(jaw)
    corr = [
        float(np.dot(ref[: n - k], jaw[k:])) if k >= 0 else float(np.dot(ref[-k:], jaw[: n + k]))
        for k in lags
    ]
    return int(lags[int(np.argmax(corr))])
