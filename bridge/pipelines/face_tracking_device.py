"""Face tracking's device path: the torch backend's pre-processing on its device (issue 45).

FaceTrackingPipeline hands `prepare` and `run_batch` to a DeviceTracker when its engines run on the
torch backend. `prepare` then keeps the frame as it came (the RGB pixels, or on CUDA the JPEG itself:
`decodes_jpeg`); `run_batch` does the rest for every session of the call at once, on the backend's
device:

1. decode: the call's JPEGs in one nvJPEG batch (bridge.vision.jpeg.decode_batch; on the CPU device,
   libjpeg-turbo), raw frames uploaded; a JPEG that fails fails only its session (BAD_IMAGE);
2. per frame size: mirror, the dark test, and for the sessions that follow no face, the letterbox and
   the BlazeFace call; its 896 scores are filtered on the device and only the rows over the threshold
   (a few per frame) come to the host, where the CPU path's own helpers decode their boxes and run
   the weighted NMS (geo.decode_detections) and the session's face is chosen (`followed_face`);
3. crop: every followed face's rotated 256x256 region in one `grid_sample` per frame size
   (bridge.vision.face_gpu.crop_batch);
4. engine: the mesh network on the crops, the landmarks projected to the frame, the blendshape network
   on their subset, each engine called on the device tensors (run_on_device: no host round trip);
5. pose: the head-pose fit of the canonical mesh, batched (fit_head_pose_batch).

One copy brings each face's results to the host: presence, 52 blendshapes, the rotation matrix and
translation, and the landmarks (the next frame's region, computed by the CPU path's
`geo.rois_from_landmarks`, and the TrackedFaces rows post-processing and previews read), about 12 KB
a face. Each stage's time goes out with the result (`BatchResult.stages`, stages `face_decode`,
`face_detect`, `face_crop`, `face_engine`, `face_pose`: CUDA events on the GPU, so measuring adds no
synchronisation). With torch on the CPU device the same code runs eagerly: the CI tests compare it
with the CPU path on real photos (tests/test_face_tracking_device.py).
"""

from __future__ import annotations

import importlib.util
import logging
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from bridge.backends.torch.runner import TorchBackend, run_on_device
from bridge.media.face_video import FaceVideo
from bridge.pipelines.base import BatchResult, FailedRow, Step
from bridge.pipelines.face_tracking import (
    ARKIT_FROM_MP,
    DARK_LUMA,
    MEDIAPIPE_NAMES,
    TrackedFaces,
    TrackingState,
    TrackStep,
    followed_face,
)
from bridge.protocol.errors import ErrorCode
from bridge.protocol.jpeg import JpegError, read_header
from bridge.protocol.requests import ImageInput, Input, JpegInput
from bridge.rig.rotations import matrix_to_quat, quat_to_axis_angle
from bridge.runtime.images import SCALE
from bridge.vision import face_geometry as geo
from bridge.vision.face_gpu import crop_batch, fit_head_pose_batch, letterbox_batch, project_batch
from bridge.vision.jpeg import decode_batch, encode

if TYPE_CHECKING:
    from bridge.pipelines.face_tracking import FaceTrackingPipeline

__all__ = ["STAGES", "DeviceTracker"]

log = logging.getLogger(__name__)

STAGES = ("face_decode", "face_detect", "face_crop", "face_engine", "face_pose")
# The detector's rows kept on the device: score logit at least the threshold's, less a margin so that
# no row the host's float64 test keeps is lost to float32 rounding (the host tests them again).
_MIN_LOGIT = math.log(geo.MIN_DETECTION_SCORE / (1.0 - geo.MIN_DETECTION_SCORE)) - 1e-3
_BLEND = len(MEDIAPIPE_NAMES)  # the blendshape network's outputs


class _StageClock:
    """Stage boundaries of one call: CUDA events on the GPU (read after the call's last copy, so no
    extra synchronisation), the wall clock elsewhere."""

    def __init__(self, device: torch.device) -> None:
        self._cuda = device.type == "cuda"
        self._marks: list[tuple[str, torch.cuda.Event | float]] = []
        self.mark("")

    def mark(self, stage: str) -> None:
        if self._cuda:
            event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            event.record()
            self._marks.append((stage, event))
        else:
            self._marks.append((stage, time.perf_counter()))

    def seconds(self) -> dict[str, float]:
        """Seconds per stage, each from the mark before it (call after the device work is done)."""
        out: dict[str, float] = {}
        for (_, start), (stage, end) in zip(self._marks, self._marks[1:], strict=False):
            if isinstance(start, torch.cuda.Event) and isinstance(end, torch.cuda.Event):
                out[stage] = out.get(stage, 0.0) + start.elapsed_time(end) / 1e3
            elif isinstance(start, float) and isinstance(end, float):
                out[stage] = out.get(stage, 0.0) + end - start
        return out


class DeviceTracker:
    """FaceTrackingPipeline's `prepare` and `run_batch` on the torch backend's device."""

    def __init__(self, pipeline: FaceTrackingPipeline) -> None:
        self.pipeline = pipeline
        backend = pipeline.engine.backend
        if not isinstance(backend, TorchBackend):
            raise TypeError(f"the face tracker's device path needs the torch backend, not {backend.name}")
        self.device = backend.device
        for engine in (pipeline.detector, pipeline.blendshape_engine):
            other = engine.backend
            if not isinstance(other, TorchBackend) or other.device != self.device:
                raise ValueError(f"{engine.manifest.name}: not on the mesh engine's device {self.device}")
        # nvJPEG on CUDA, through torchvision; without either the prepare threads decode (libjpeg-turbo,
        # which releases the GIL there).
        self.decodes_jpeg = self.device.type == "cuda" and importlib.util.find_spec("torchvision") is not None
        if self.device.type == "cuda" and not self.decodes_jpeg:
            log.warning("face tracking: torchvision is not installed; JPEG frames are decoded on the CPU")
        canonical = pipeline.canonical
        self._canonical = torch.as_tensor(canonical.vertices, dtype=torch.float64, device=self.device)
        self._weights = torch.as_tensor(canonical.weights, dtype=torch.float64, device=self.device)
        self._subset = torch.as_tensor(geo.BLENDSHAPE_SUBSET, device=self.device)
        if self.device.type == "cuda":
            t0 = time.perf_counter()
            try:
                found = self.warm_up()
            except Exception:  # the first session's call pays the start-up instead; serving goes on
                log.exception("face tracking: the device path's warm-up failed")
            else:
                log.info(
                    "face tracking: device path warmed up in %.1f s (face: %s)",
                    time.perf_counter() - t0,
                    found,
                )

    def warm_up(self) -> bool:
        """One call, before any session, on a 640x480 JPEG of the bundled face photo, so that what a
        GPU does at each stage's first use (nvJPEG's handles, cuSOLVER for the pose's SVD, kernels
        loaded lazily) happens at load: on the H100 every worker of a serve had one call of several
        seconds in its first window (bench/RESULTS.md, 2026-12-07; whether this removes it is not
        measured yet). True when the face was found (every stage ran). No session's state is
        touched: the throwaway session's row goes back to the pool."""
        data = encode(FaceVideo(640, 480).frame(0), 85)
        item = JpegInput(0, "warm-up", 0, 0, False, read_header(data), memoryview(data))
        state = self.pipeline.open_session({})
        try:
            result = self.run_batch([state], [self.prepare(state, item)])
        finally:
            state.slot.release()
        faces: TrackedFaces = result.rows
        return bool(faces.where[0] >= 0)

    # ------------------------------------------------------------------ pre-process
    def prepare(self, state: TrackingState, item: Input) -> Step[TrackStep]:
        """The frame kept as it came, its size from the pixels or the JPEG's header."""
        if isinstance(item, JpegInput):
            size = (item.header.width, item.header.height)
            frame: np.ndarray | JpegInput = item
        else:
            assert isinstance(item, ImageInput)
            size = (item.width, item.height)
            frame = item.pixels
        return Step(TrackStep(None, np.zeros((2, 3)), size, False, frame), item.seq, item.t_capture_ns)

    # ------------------------------------------------------------------ the batch
    def run_batch(self, states: Sequence[TrackingState], steps: Sequence[Step[TrackStep]]) -> BatchResult:
        with torch.no_grad():
            return self._run(states, steps)

    def _run(self, states: Sequence[TrackingState], steps: Sequence[Step[TrackStep]]) -> BatchResult:
        n = len(steps)
        clock = _StageClock(self.device)
        follow = [s.roi for s in states]
        for state in states:
            state.roi = None  # re-detect next frame unless a face is followed below
        frames, failed = self._upload(steps)
        for i in failed:
            states[i].roi = follow[i]  # a frame that could not be read: its face is followed as before
        clock.mark("face_decode")
        # Per frame size: mirror, dark test, detection where no face is followed.
        groups: dict[tuple[int, int], list[int]] = {}
        for i, frame in enumerate(frames):
            if frame is not None:
                groups.setdefault(steps[i].payload.size, []).append(i)
        batches: dict[tuple[int, int], torch.Tensor] = {}
        dark = torch.zeros(n, dtype=torch.bool, device=self.device)
        for size, rows in groups.items():
            batch = self._stack([f for i in rows if (f := frames[i]) is not None])
            mirrored = [k for k, i in enumerate(rows) if states[i].mirror]
            if mirrored:
                batch[mirrored] = batch[mirrored].flip(2)
            batches[size] = batch
            luma = batch[:, ::8, ::8].to(torch.float32).mean((1, 2, 3))
            dark[torch.as_tensor(rows, device=self.device)] = luma < DARK_LUMA
            detect = [k for k, i in enumerate(rows) if follow[i] is None]
            if detect:
                for k, roi in zip(
                    detect, self._detect(batch[detect], [states[rows[k]] for k in detect]), strict=True
                ):
                    follow[rows[k]] = roi
        clock.mark("face_detect")
        # Crops of every followed face, in `live` order.
        live: list[int] = []
        crops: list[torch.Tensor] = []
        maps: list[torch.Tensor] = []  # each face's crop-to-image map
        for size, rows in groups.items():
            here = [k for k, i in enumerate(rows) if follow[i] is not None]
            if not here:
                continue
            m = np.stack([r.crop_to_image(geo.MESH_SIZE) for k in here if (r := follow[rows[k]])])
            maps.append(torch.from_numpy(m).to(self.device))
            crops.append(crop_batch(batches[size][here], maps[-1]))
            live += [rows[k] for k in here]
        clock.mark("face_crop")
        if not live:
            return self._result(states, steps, live, None, dark, failed, clock)
        to_image = torch.cat(maps)
        images = torch.cat(crops) * float(SCALE)
        out = run_on_device(self.pipeline.engine, {"face.mesh_image": images})
        raw = out["face.landmarks"].reshape(len(live), -1, 3).to(torch.float64)
        lm = project_batch(raw, to_image)
        ok = (out["face.presence"][:, 0] >= geo.MIN_PRESENCE) & torch.isfinite(lm).all(2).all(1)
        lm = torch.where(ok[:, None, None], lm, 0.0)  # a face not present is dropped on the host
        subset = lm[:, self._subset, :2].to(torch.float32)
        blend = run_on_device(self.pipeline.blendshape_engine, {"face.landmark_subset": subset})
        clock.mark("face_engine")
        sizes = torch.tensor([steps[i].payload.size for i in live], dtype=torch.float64, device=self.device)
        rotation, translation = fit_head_pose_batch(
            lm, self._canonical, self._weights, sizes[:, 0], sizes[:, 1]
        )
        clock.mark("face_pose")
        table = torch.cat(
            [
                ok[:, None].to(torch.float64),
                blend["arkit.blendshapes"].to(torch.float64),
                rotation.reshape(-1, 9),
                translation,
                lm.reshape(len(live), -1),
            ],
            1,
        )
        return self._result(states, steps, live, table, dark, failed, clock)

    def _upload(
        self, steps: Sequence[Step[TrackStep]]
    ) -> tuple[list[torch.Tensor | np.ndarray | None], dict[int, FailedRow]]:
        """Each row's frame (h, w, 3) uint8: decoded on the device from its JPEG, or the pixels it came
        with (uploaded by `_stack`); None where its JPEG failed (and why)."""
        frames: list[torch.Tensor | np.ndarray | None] = [None] * len(steps)
        jpegs: list[tuple[int, JpegInput]] = []
        for i, step in enumerate(steps):
            frame = step.payload.frame
            if isinstance(frame, JpegInput):
                jpegs.append((i, frame))
            else:
                frames[i] = frame
        failed: dict[int, FailedRow] = {}
        for (i, item), pixels in zip(jpegs, decode_batch([j for _, j in jpegs], self.device), strict=True):
            if isinstance(pixels, JpegError):
                failed[i] = FailedRow(f"image input {item.seq}: {pixels}", ErrorCode.BAD_IMAGE)
            else:
                frames[i] = pixels
        return frames, failed

    def _stack(self, frames: Sequence[torch.Tensor | np.ndarray]) -> torch.Tensor:
        """Same-sized frames as one (k, h, w, 3) uint8 tensor on the device: the pixels that came raw
        stacked on the host and uploaded in one copy."""
        raw = [f for f in frames if isinstance(f, np.ndarray)]
        uploaded = iter(torch.from_numpy(np.stack(raw)).to(self.device) if raw else ())
        if len(raw) == len(frames):
            return torch.stack(list(uploaded))
        return torch.stack([next(uploaded) if isinstance(f, np.ndarray) else f for f in frames])

    def _detect(self, frames: torch.Tensor, states: Sequence[TrackingState]) -> list[geo.Roi | None]:
        """The followed face's region in each of same-sized frames (k, h, w, 3): BlazeFace on the
        device, its rows over the score threshold decoded and merged on the host."""
        h, w = frames.shape[1:3]
        tensor, scale, px, py = letterbox_batch(frames)
        out = run_on_device(self.pipeline.detector, {"face.detector_image": tensor})
        logits = out["face.detection_scores"].reshape(len(states), -1)
        image, anchor = torch.nonzero(logits >= _MIN_LOGIT, as_tuple=True)
        raw = out["face.detections"][image, anchor].cpu().numpy()
        kept = logits[image, anchor].cpu().numpy()
        image_np, anchor_np = image.cpu().numpy(), anchor.cpu().numpy()
        rois: list[geo.Roi | None] = []
        for k, state in enumerate(states):
            mine = image_np == k
            found = geo.decode_detections(
                raw[mine], kept[mine], scale, px, py, anchors=geo.ANCHORS[anchor_np[mine]]
            )
            rois.append(followed_face(found, state.select, w, h))
        return rois

    def _result(
        self,
        states: Sequence[TrackingState],
        steps: Sequence[Step[TrackStep]],
        live: list[int],
        table: torch.Tensor | None,
        dark: torch.Tensor,
        failed: dict[int, FailedRow],
        clock: _StageClock,
    ) -> BatchResult:
        """The one copy to the host (`table`: a row per face in `live`), and the batch's TrackedFaces."""
        n = len(steps)
        flat = dark.to(torch.float64)
        if table is not None:
            flat = torch.cat([flat, table.flatten()])
        host = flat.cpu().numpy()
        stages = clock.seconds()
        for step, is_dark in zip(steps, host[:n].tolist(), strict=True):
            step.payload.dark = bool(is_dark)
        if table is None:
            return BatchResult(TrackedFaces.none(n), 0.0, stages, failed)
        faces = host[n:].reshape(len(live), -1)
        ok = faces[:, 0] > 0.5
        present = np.asarray(live, np.intp)[ok]
        faces = faces[ok]
        blend = faces[:, 1 : 1 + _BLEND].astype(np.float32)
        rotation = faces[:, 1 + _BLEND : 10 + _BLEND].reshape(-1, 3, 3)
        translation = np.ascontiguousarray(faces[:, 10 + _BLEND : 13 + _BLEND])
        lm = faces[:, 13 + _BLEND :].reshape(len(present), -1, 3)
        for i, roi in zip(present.tolist(), geo.rois_from_landmarks(lm), strict=True):
            states[i].roi = roi
        where = np.full(n, -1, np.intp)
        where[present] = np.arange(len(present))
        arkit = np.where(ARKIT_FROM_MP >= 0, blend[:, ARKIT_FROM_MP], 0.0).astype(np.float32)
        rotvec = quat_to_axis_angle(matrix_to_quat(rotation)).astype(np.float64)
        engine_us = stages.get("face_engine", 0.0) * 1e6
        return BatchResult(TrackedFaces(where, lm, arkit, rotvec, translation), engine_us, stages, failed)
