"""The face tracker's batched torch geometry (bridge.vision.face_gpu) against the CPU path's
(bridge.vision.face_geometry), with torch on the CPU: the same crops, detector inputs and
projected landmarks for faces of the demo's clip, rolled and cut by the frame's edge."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bridge.media.face_video import FaceVideo  # noqa: E402
from bridge.vision import face_geometry as geo  # noqa: E402
from bridge.vision.face_gpu import crop_batch, letterbox_batch, project_batch  # noqa: E402


def _frames(n: int, width: int = 320, height: int = 240) -> np.ndarray:
    video = FaceVideo(width, height, 30.0)
    return np.stack([video.frame(7 * i) for i in range(n)])


def _rois(n: int) -> list[geo.Roi]:
    rng = np.random.default_rng(3)
    # Centres near and past the edges, rolls up to 60 degrees either way: the crops reach outside.
    return [
        geo.Roi(
            float(rng.uniform(-20, 340)), float(rng.uniform(-20, 260)), float(w), float(w * 1.1), float(a)
        )
        for w, a in zip(rng.uniform(60, 200, n), rng.uniform(-1.05, 1.05, n), strict=True)
    ]


def test_crops_match_the_cpu_path() -> None:
    frames, rois = _frames(6), _rois(6)
    maps = np.stack([r.crop_to_image(geo.MESH_SIZE) for r in rois])
    ours = crop_batch(torch.from_numpy(frames), torch.from_numpy(maps)).permute(0, 2, 3, 1).numpy()
    for i, roi in enumerate(rois):
        theirs, m = geo.crop(frames[i], roi)
        np.testing.assert_allclose(m, maps[i])
        diff = np.abs(ours[i] - theirs.astype(np.float32))
        # OpenCV's 5-bit fixed-point weights against float: a level or two, rarely more at sharp edges.
        assert diff.mean() < 0.4, (i, diff.mean())
        assert np.percentile(diff, 99.9) <= 2.5 and diff.max() <= 4.0, (i, np.percentile(diff, 99.9))


@pytest.mark.parametrize("size", [(320, 240), (240, 320), (200, 200)])
def test_letterbox_matches_the_cpu_path(size: tuple[int, int]) -> None:
    frames = _frames(3, *size)
    ours, scale, px, py = letterbox_batch(torch.from_numpy(frames))
    for i in range(len(frames)):
        theirs, s, x, y = geo.letterbox(frames[i])
        assert (scale, px, py) == pytest.approx((s, x, y))
        diff = np.abs(ours[i].numpy() - theirs)
        assert diff.mean() < 1.0 / 255, diff.mean()
        assert diff.max() <= 1.0 / 255 + 1e-6, diff.max()  # a level, at most (float32 rounding aside)


def test_projection_matches_the_cpu_path() -> None:
    rng = np.random.default_rng(5)
    landmarks = rng.uniform(0, 256, (4, 478, 3)).astype(np.float32)
    maps = np.stack([r.crop_to_image(geo.MESH_SIZE) for r in _rois(4)])
    ours = project_batch(torch.from_numpy(landmarks).double(), torch.from_numpy(maps)).numpy()
    np.testing.assert_allclose(ours, geo.project(landmarks, maps), rtol=1e-9, atol=1e-6)
