"""Motion post-processing on the torch backend's device: the rules of
`bridge.motion.post.MotionPost` (output guard, joint clamp, axis-angle -> quaternion,
second-order low-pass with sign continuity) as one batch of tensor ops over all sessions of a call.

The per-session rows live on the device, so a step costs a fixed few dozen kernel launches whatever
the batch size, instead of numpy passes over every session on the host; only the pose comes in and
the quaternions, root and held flags go out. Math is float32 (the numpy version converts axis-angle
in float64: results agree to ~1e-6).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from bridge.filters.output_guard import (
    ANGLE_MARGIN_RAD,
    GROSS_ROOT_SPEED_M_S,
    MAX_ROOT_SPEED_M_S,
    GuardStats,
)
from bridge.motion.post import ANGLES, NEUTRAL, POSE_DIM
from bridge.rig import smpl
from bridge.rig.rotations import SMALL_ANGLE
from bridge.rig.smpl import JOINT_LIMIT_ROWS

__all__ = ["DeviceMotionPost"]

F32 = npt.NDArray[np.float32]


class DeviceMotionPost:
    chunk = 1 << 30  # one batch of launches: splitting over threads would only add launches

    def __init__(self, stats: GuardStats, dt: float, device: torch.device) -> None:
        self.stats = stats
        self.dt = dt
        self.device = device
        self.capacity = 0
        self._lo = torch.as_tensor(JOINT_LIMIT_ROWS[:, 0], device=device)
        self._hi = torch.as_tensor(JOINT_LIMIT_ROWS[:, 1], device=device)
        self._neutral = torch.as_tensor(NEUTRAL, device=device)
        self.rows: dict[str, torch.Tensor] = {}
        self._grow(0)

    def _grow(self, capacity: int) -> None:
        j = smpl.NUM_JOINTS
        shapes: dict[str, tuple[tuple[int, ...], torch.dtype]] = {
            "last_good": ((POSE_DIM,), torch.float32),  # also the model's pose.previous
            "has_good": ((), torch.bool),
            "bad_run": ((), torch.int64),
            "started": ((), torch.bool),
            "q_stages": ((2, j, 4), torch.float32),
            "q_out": ((j, 4), torch.float32),
            "r_stages": ((2, 3), torch.float32),
        }
        for name, (shape, dtype) in shapes.items():
            rows = torch.zeros((capacity, *shape), dtype=dtype, device=self.device)
            if name in self.rows:
                rows[: self.capacity] = self.rows[name]
            self.rows[name] = rows
        self.capacity = capacity

    def prepare(self, size: int, fresh: npt.NDArray[np.int64]) -> None:
        if size > self.capacity:
            self._grow(max(size, 2 * self.capacity, 16))
        if len(fresh):
            index = torch.as_tensor(fresh, device=self.device)
            for name in ("last_good", "has_good", "bad_run", "started"):
                self.rows[name].index_fill_(0, index, 0)

    def previous(self, slots: npt.NDArray[np.int64]) -> F32:
        out: F32 = self.rows["last_good"][torch.as_tensor(slots, device=self.device)].cpu().numpy()
        return out

    def restart_due(self, slots: npt.NDArray[np.int64], after: int) -> npt.NDArray[np.bool_]:
        due: npt.NDArray[np.bool_] = (
            (self.rows["bad_run"][torch.as_tensor(slots, device=self.device)] >= after).cpu().numpy()
        )
        return due

    @torch.no_grad()
    def step(
        self, slots: npt.NDArray[np.int64], pose: F32, alpha: F32, energy: F32 | None = None
    ) -> tuple[F32, F32, npt.NDArray[np.bool_]]:
        idx = torch.as_tensor(slots, device=self.device)
        x = torch.as_tensor(np.ascontiguousarray(pose, np.float32)).to(self.device, non_blocking=True)
        a = torch.as_tensor(np.ascontiguousarray(alpha, np.float32)).to(self.device, non_blocking=True)
        out, bad, clamped = self._guard(idx, x)
        if energy is not None and (energy != 1.0).any():  # as MotionPost: around the neutral stance
            e = torch.as_tensor(np.ascontiguousarray(energy, np.float32)).to(self.device)[:, None]
            scaled = self._neutral + e * (out[:, :ANGLES] - self._neutral)
            out = torch.cat((torch.minimum(torch.maximum(scaled, self._lo), self._hi), out[:, ANGLES:]), 1)
        joints, root = self._quats(out), out[:, ANGLES:]
        joints, root = self._low_pass(idx, joints, root, a)
        counts = torch.stack((bad.sum(), (clamped & ~bad).sum())).cpu().tolist()
        with self.stats._lock:  # one update per batch (GuardStats.record is one lock round per output)
            self.stats.outputs += len(slots)
            self.stats.held += int(counts[0])
            self.stats.clamped += int(counts[1])
        return joints.cpu().numpy(), root.cpu().numpy(), bad.cpu().numpy()

    def _guard(self, idx: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rows = self.rows
        angles, root = x[:, :ANGLES], x[:, ANGLES:]
        last = rows["last_good"][idx]
        step = root - last[:, ANGLES:]
        distance = torch.where(rows["has_good"][idx], torch.linalg.vector_norm(step, dim=1), 0.0)
        bad = ~torch.isfinite(x).all(dim=1)
        bad |= ((angles < self._lo - ANGLE_MARGIN_RAD) | (angles > self._hi + ANGLE_MARGIN_RAD)).any(dim=1)
        bad |= distance > GROSS_ROOT_SPEED_M_S * self.dt
        limited = torch.minimum(torch.maximum(angles, self._lo), self._hi)
        clamped = (limited != angles).any(dim=1)
        fast = distance > MAX_ROOT_SPEED_M_S * self.dt
        scale = MAX_ROOT_SPEED_M_S * self.dt / torch.where(fast, distance, 1.0)
        root = torch.where(fast[:, None], last[:, ANGLES:] + step * scale[:, None], root)
        out = torch.where(bad[:, None], last, torch.cat((limited, root), dim=1))
        rows["last_good"][idx] = out  # a held row's output is its last good pose
        rows["has_good"][idx] = rows["has_good"][idx] | ~bad
        rows["bad_run"][idx] = torch.where(bad, rows["bad_run"][idx] + 1, 0)
        return out, bad, clamped | fast

    @staticmethod
    def _quats(pose: torch.Tensor) -> torch.Tensor:
        v = pose[:, :ANGLES].reshape(-1, smpl.NUM_JOINTS, 3)
        angle = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
        small = angle < SMALL_ANGLE
        # sin(θ/2)/θ ≈ 1/2 - θ²/48 near zero (as bridge.rig.rotations.axis_angle_to_quat).
        scale = torch.where(
            small, 0.5 - angle * angle / 48.0, torch.sin(0.5 * angle) / torch.where(small, 1.0, angle)
        )
        return torch.cat((v * scale, torch.cos(0.5 * angle)), dim=-1)

    def _low_pass(
        self, idx: torch.Tensor, q: torch.Tensor, root: torch.Tensor, alpha: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.rows
        started = rows["started"][idx]
        dot = (q * rows["q_out"][idx]).sum(dim=-1)
        aligned = torch.where(((dot < 0) & started[:, None])[..., None], -q, q)
        qs, rs = rows["q_stages"][idx], rows["r_stages"][idx]
        a = torch.where(started, alpha, 1.0)  # a first sample starts both stages at it
        q0 = qs[:, 0] + a[:, None, None] * (aligned - qs[:, 0])
        q1 = qs[:, 1] + a[:, None, None] * (q0 - qs[:, 1])
        r0 = rs[:, 0] + a[:, None] * (root - rs[:, 0])
        r1 = rs[:, 1] + a[:, None] * (r0 - rs[:, 1])
        out = q1 / torch.linalg.vector_norm(q1, dim=-1, keepdim=True).clamp_min(1e-12)
        smooth = alpha > 0  # other rows pass through; their filter rows are never read
        rows["q_stages"][idx] = torch.stack((q0, q1), dim=1)
        rows["r_stages"][idx] = torch.stack((r0, r1), dim=1)
        rows["q_out"][idx] = out
        rows["started"][idx] = True
        return torch.where(smooth[:, None, None], out, q), torch.where(smooth[:, None], r1, root)
