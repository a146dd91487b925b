"""MediaPipe's own Holistic graph (the `mediapipe` 0.10.21 wheel's legacy solution), the body tracker's
oracle. Run as a script by the Python of the bridge's venv with PYTHONPATH set to the folder where
scripts/install.sh --dev installed that wheel with the numpy < 2 and protobuf 4 it needs:

    python tests/oracles/holistic.py IMAGES.npy OUT.npz [still|video|timed]

IMAGES.npy holds RGB frames (n, h, w, 3): `still` (the default) processes each as a still image
(static_image_mode: detection on every frame); `video` as a clip (tracking from the previous frame's
landmarks). Landmark smoothing is off in both: the bridge filters rotations, not landmarks. `timed`
is bench/body.py's: video mode with MediaPipe's defaults (smoothing on), and OUT.npz's `ms` holds
each frame's process() time.
OUT.npz: pose (n, 33, 4) image pixels x, y, z and visibility; world (n, 33, 3) metres; hands
(n, 2, 21, 3) image pixels, the subject's left then right; NaN where none.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from mediapipe.python.solutions import holistic  # type: ignore[import-not-found]


def main(images_path: str, out_path: str, mode: str = "still") -> None:
    images = np.load(images_path)
    n = len(images)
    pose = np.full((n, 33, 4), np.nan)
    world = np.full((n, 33, 3), np.nan)
    hands = np.full((n, 2, 21, 3), np.nan)
    still = mode == "still"
    ms = np.zeros(n)
    smooth = mode == "timed"
    with holistic.Holistic(static_image_mode=still, model_complexity=1, smooth_landmarks=smooth) as graph:
        for k, image in enumerate(images):
            frame = np.ascontiguousarray(image)
            t0 = time.perf_counter()
            result = graph.process(frame)
            ms[k] = (time.perf_counter() - t0) * 1e3
            h, w = image.shape[:2]
            if result.pose_landmarks:
                pose[k] = [(p.x * w, p.y * h, p.z * w, p.visibility) for p in result.pose_landmarks.landmark]
                world[k] = [(p.x, p.y, p.z) for p in result.pose_world_landmarks.landmark]
            for side, found in enumerate((result.left_hand_landmarks, result.right_hand_landmarks)):
                if found:
                    hands[k, side] = [(p.x * w, p.y * h, p.z * w) for p in found.landmark]
    np.savez(out_path, pose=pose, world=world, hands=hands, ms=ms)


if __name__ == "__main__":
    main(*sys.argv[1:4])
