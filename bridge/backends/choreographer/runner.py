"""`choreographer` backend: serves the rule-based dancer behind any motion manifest with the dance
layout (features, style, h_in/c_in state ≥ STATE_SIZE values per row), so `motion` sessions dance
without a trained model: `load_engine(manifest, backend="choreographer")`. The ONNX file is validated
but never run. Each session's dancer state lives in its h_in row (c is passed through), so batching
and state slots work unchanged. Styles are the manifest's style names (unknown ones dance "house").
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bridge.motion.choreographer import STATE_SIZE, Choreographer
from bridge.motion.styles import STYLES
from bridge.runtime.backend import Backend

__all__ = ["ChoreographerBackend"]


class ChoreographerBackend(Backend):
    name = "choreographer"
    plants_feet = True  # its dancer plants its own feet: the motion post's foot_plant stage is skipped

    def activate_impl(self) -> None:
        m = self.manifest
        if m.task != "motion" or not m.state:
            raise ValueError(f"choreographer backend: {m.name} is not a motion model with state")
        pose = [s.tensor for s in m.outputs]
        self._pose = pose[0]
        self._state = [(p.input, p.output) for p in m.state]
        self._features = next(s.tensor for s in m.inputs if s.role == "features")
        self._style = next((s.tensor for s in m.inputs if s.role == "style"), None)
        self._styles = [s if s in STYLES else "house" for s in m.styles] or ["house"]

    def deactivate_impl(self) -> None:
        pass

    def infer(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        features = feeds[self._features]
        batch, length = features.shape[:2]
        styles = feeds[self._style] if self._style is not None else np.zeros(batch, np.int64)
        h_name, h_out = self._state[0]
        h = np.array(feeds[h_name], np.float32, copy=True)
        if h[0].size < STATE_SIZE:
            raise ValueError(f"choreographer backend: state rows hold {h[0].size} < {STATE_SIZE} values")
        pose = np.zeros((batch, length, 75), np.float32)
        for b in range(batch):
            dancer = Choreographer(self._styles[int(styles[b]) % len(self._styles)])
            row = h[b].reshape(-1)
            dancer.state = row[:STATE_SIZE].astype(np.float64)
            pose[b] = dancer.step(features[b])
            row[:STATE_SIZE] = dancer.state
        out = {self._pose: pose, h_out: h}
        for name_in, name_out in self._state[1:]:
            out[name_out] = np.asarray(feeds[name_in])
        return out
