"""The face tracker's image geometry as batched torch operations, for the torch backend's device path
(issue 45 item 2): many sessions' frames in one call, on whatever device the tensors are on.

Each function computes what its CPU counterpart in bridge.vision.face_geometry computes for
one face, for a batch of faces at once:

- `letterbox_batch`: `letterbox` (the detector's 128x128 input, the frame fitted with zero padding);
- `crop_batch`: `crop` (the rotated 256x256 mesh crops, edge pixels repeated outside the frame) as one
  `grid_sample`, each face through its own crop-to-image map;
- `project_batch`: `project` (crop landmarks back to image pixels);
- `fit_head_pose_batch`: `fit_head_pose` (the canonical mesh fitted to each face's landmarks).

OpenCV interpolates with fixed-point weights and torch in floating point; both sample on a 1/32-pixel
grid and round to whole levels, so pixels differ by a level or two of 255 at most (tests/test_face_gpu.py
bounds it). Without the grid and the rounding, a small face's detection moved enough to change a
blendshape by 0.08 (tests/test_face_tracking_device.py: 0.02 with them). FaceTrackingPipeline's device path
(bridge.pipelines.face_tracking_device) runs them on the torch backend.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from bridge.vision.face_geometry import DETECTOR_SIZE, MESH_SIZE


def _sample(images: torch.Tensor, maps: torch.Tensor, size: int, padding: str) -> torch.Tensor:
    """Bilinear samples (n, 3, size, size) of `images` (n, h, w, 3) at crop pixel centres mapped to image
    pixels by `maps` (n, 2, 3), as cv2.warpAffine with WARP_INVERSE_MAP (pixel centres at integers)."""
    n, h, w = images.shape[:3]
    dtype = torch.float32
    axis = torch.arange(size, device=images.device, dtype=dtype)
    v, u = torch.meshgrid(axis, axis, indexing="ij")
    crop = torch.stack([u, v, torch.ones_like(u)], -1).reshape(1, size * size, 3)
    xy = crop @ maps.to(dtype).transpose(1, 2)  # (n, size*size, 2) image pixels
    # OpenCV's warps place each sample on a 1/32-pixel grid (INTER_BITS = 5): so do these.
    xy = torch.round(xy * 32.0) / 32.0
    # grid_sample with align_corners=False puts pixel i's centre at (2i + 1) / extent - 1.
    scale = torch.tensor([2.0 / w, 2.0 / h], device=images.device, dtype=dtype)
    grid = ((xy + 0.5) * scale - 1.0).reshape(n, size, size, 2)
    pixels = images.permute(0, 3, 1, 2).to(dtype)
    # Rounded to whole levels, as OpenCV's warps of byte images write them.
    return F.grid_sample(pixels, grid, mode="bilinear", padding_mode=padding, align_corners=False).round_()


def letterbox_batch(images: torch.Tensor) -> tuple[torch.Tensor, float, float, float]:
    """Detector inputs (n, 3, 128, 128) in [0, 1] of same-sized frames `images` (n, h, w, 3) uint8, and
    the map back (scale, pad_x, pad_y) in detector pixels, as `letterbox`."""
    h, w = images.shape[1:3]
    scale = DETECTOR_SIZE / max(h, w)
    px, py = (DETECTOR_SIZE - w * scale) / 2, (DETECTOR_SIZE - h * scale) / 2
    # Detector pixel (u, v) samples image pixel ((u - px) / scale, (v - py) / scale).
    inverse = torch.tensor([[1 / scale, 0.0, -px / scale], [0.0, 1 / scale, -py / scale]])
    maps = inverse.expand(images.shape[0], 2, 3).to(images.device)
    return _sample(images, maps, DETECTOR_SIZE, "zeros") / 255.0, scale, px, py


def crop_batch(images: torch.Tensor, crop_to_image: torch.Tensor, size: int = MESH_SIZE) -> torch.Tensor:
    """The mesh crops (n, 3, size, size), float in [0, 255], of frames `images` (n, h, w, 3) uint8, face
    i through its crop-to-image map `crop_to_image[i]` (n, 2, 3; `Roi.crop_to_image`), edge pixels
    repeated outside the frame, as `crop`."""
    return _sample(images, crop_to_image, size, "border")


def project_batch(landmarks: torch.Tensor, crop_to_image: torch.Tensor) -> torch.Tensor:
    """Crop landmarks (n, 478, 3) in crop pixels to image pixels through each face's crop-to-image map
    (n, 2, 3); z scales with x, as `project`."""
    m = crop_to_image.to(landmarks.dtype)
    xy = landmarks[..., :2] @ m[:, :, :2].transpose(1, 2) + m[:, None, :, 2]
    z = landmarks[..., 2:3] * torch.hypot(m[:, 0, 0], m[:, 1, 0])[:, None, None]
    return torch.cat([xy, z], 2)


def fit_head_pose_batch(
    landmarks: torch.Tensor,
    canonical: torch.Tensor,
    weights: torch.Tensor,
    image_w: torch.Tensor,
    image_h: torch.Tensor,
    vertical_fov_deg: float = 63.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Head rotations (n, 3, 3) and translations (n, 3, metres) of faces `landmarks` (n, 478, 3) in
    image pixels, frames `image_w`, `image_h` (n,): the weighted similarity fit of the canonical mesh
    (468, 3) with `weights` (468,), as `fit_head_pose` (same axes, same weak-perspective depth)."""
    dtype = landmarks.dtype
    flip = torch.tensor([1.0, -1.0, -1.0], dtype=dtype, device=landmarks.device)
    obs = landmarks[:, :468] * flip
    canonical, weights = canonical.to(dtype), weights.to(dtype)
    w = weights / weights.sum()
    mu_o = torch.einsum("k,nkc->nc", w, obs)
    mu_c = w @ canonical
    o, c = obs - mu_o[:, None], canonical - mu_c
    cov = (o * w[:, None]).transpose(1, 2) @ c
    u, s, vt = torch.linalg.svd(cov)
    fix = torch.ones_like(s)
    fix[:, 2] = torch.sign(torch.linalg.det(u @ vt))
    rotation = (u * fix[:, None, :]) @ vt
    scale = (s * fix).sum(1) / (w @ (c**2).sum(1))
    focal = (image_h.to(dtype) / 2) / math.tan(math.radians(vertical_fov_deg) / 2)
    centre = mu_o - scale[:, None] * (rotation @ mu_c)
    translation = (
        torch.stack(
            [
                (centre[:, 0] - image_w.to(dtype) / 2) / scale,
                (centre[:, 1] + image_h.to(dtype) / 2) / scale,
                -focal / scale,
            ],
            1,
        )
        / 100.0
    )
    return rotation, translation
