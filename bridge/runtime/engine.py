"""Engine: what pipelines use. Roles in, roles out, recurrent state handled explicitly.

An Engine wraps one activated Backend and its manifest. `run` maps role arrays to tensor feeds,
checks them against the manifest, runs the backend, applies output slices and returns the new state
keyed by state *input* name, so a session can store it and pass it back verbatim on the next tick.
Everything derivable from the manifest is precomputed in __init__: `run` is called at 60 Hz per
session and does no spec lookups.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any, NamedTuple

import numpy as np

from bridge.runtime.backend import Backend
from bridge.runtime.images import is_image_input, rgb_planes
from bridge.runtime.manifest import ModelManifest, Profile

__all__ = ["Engine"]


class _InputPlan(NamedTuple):
    role: str
    tensor: str
    dtype: np.dtype[Any]
    ndim: int
    static: tuple[tuple[int, int], ...]  # (axis, size) for every fixed dim
    declared: str  # shape as the manifest writes it, for error messages
    image: bool  # float32 [N, 3, H, W]: also takes [N, H, W, 3] uint8 (bridge.runtime.images)


class _OutputPlan(NamedTuple):
    role: str
    tensor: str
    slice: slice | None


class _StatePlan(NamedTuple):
    input: str
    output: str
    dtype: np.dtype[Any]
    ndim: int
    batch_axis: int
    static: tuple[tuple[int, int], ...]


class Engine:
    """One model ready to run. Made by `backends.load_engine`; call `run` per tick; `close` when done."""

    def __init__(self, manifest: ModelManifest, backend: Backend) -> None:
        self.manifest = manifest
        self.backend = backend
        self._inputs = tuple(
            _InputPlan(
                s.role,
                s.tensor,
                np.dtype(s.dtype),
                len(s.shape),
                tuple((i, d) for i, d in enumerate(s.shape) if isinstance(d, int)),
                "[" + ",".join(str(d) for d in s.shape) + "]",
                is_image_input(s.dtype, s.shape),
            )
            for s in manifest.inputs
        )
        self._outputs = tuple(
            _OutputPlan(s.role, s.tensor, None if s.slice is None else slice(*s.slice))
            for s in manifest.outputs
        )
        self._state = tuple(
            _StatePlan(
                p.input,
                p.output,
                np.dtype(p.dtype),
                len(p.shape),
                p.batch_axis,
                tuple((i, int(d)) for i, d in enumerate(p.shape) if i != p.batch_axis),
            )
            for p in manifest.state
        )


    # -------------------------------------------------------------------------------------------

    def input_buffer(
        self, role: str, shape: tuple[int, ...], dtype: type[np.generic] | None = None
    ) -> np.ndarray:
        """An array to assemble input `role` of one call in: the backend's staging buffer where it has
        one (pinned memory on the torch backend; a call given it copies it to the device directly,
        skipping a host copy, and no fresh array is faulted in per call), else a new array. `dtype`
        np.uint8 asks for an image input's bytes, `shape` `[N, H, W, 3]` (bridge.runtime.images).
        Valid until the next `input_buffer` call for the same role and dtype."""
        plan = next((p for p in self._inputs if p.role == role), None)
        if plan is None:
            raise ValueError(f"{self.manifest.name}: no input role {role!r}")
        kind = np.dtype(dtype or plan.dtype)
        if kind == np.uint8 and not plan.image:
            raise ValueError(
                f"{self.manifest.name}: input role {role!r} is not an image; it takes {plan.dtype}"
            )
        staging = getattr(self.backend, "staging", None)
        return staging(plan.tensor, shape, kind) if staging is not None else np.empty(shape, kind)

    def initial_state(self, batch: int) -> dict[str, np.ndarray]:
        """Zero state for `batch` sessions, keyed by state input tensor name."""
        return {p.input: np.zeros(p.zeros_shape(batch), p.dtype) for p in self.manifest.state}

    def run(
        self,
        inputs_by_role: Mapping[str, np.ndarray],
        state: Mapping[str, np.ndarray] | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Run once. Returns (outputs by role with slices applied, new state by state input name).

        Sliced outputs are views into the backend's output array. Roles the model does not take are
        ignored, so a pipeline may pass e.g. `pose.previous` to any motion model. `state=None` starts
        from zeros. An image input may be given as `[N, H, W, 3]` uint8 (bridge.runtime.images).
        """
        feeds: dict[str, np.ndarray] = {}
        batch = -1
        for p in self._inputs:
            a = inputs_by_role.get(p.role)
            if a is None:
                raise ValueError(f"{self.manifest.name}: missing input role {p.role!r} (tensor {p.tensor!r})")
            if not isinstance(a, np.ndarray) or a.ndim != p.ndim:
                raise ValueError(self._bad_input(p, a))
            as_bytes = p.image and a.dtype == np.uint8
            if not as_bytes and a.dtype != p.dtype:
                raise ValueError(self._bad_input(p, a))
            # [N, H, W, 3] bytes are checked as the planes they become.
            shape = (a.shape[0], a.shape[3], a.shape[1], a.shape[2]) if as_bytes else a.shape
            for axis, size in p.static:
                if shape[axis] != size:
                    raise ValueError(self._bad_input(p, a))
            if as_bytes and not self.backend.converts_uint8_images:
                a = rgb_planes(a)
            if batch < 0:
                batch = shape[0]
            elif shape[0] != batch:
                raise ValueError(
                    f"{self.manifest.name}: input role {p.role!r} has batch {shape[0]}, other inputs {batch}"
                )
            feeds[p.tensor] = a
        if self._state:
            if state is None:
                state = self.initial_state(batch)
            for sp in self._state:
                s = state.get(sp.input)
                if (
                    s is None
                    or not isinstance(s, np.ndarray)
                    or s.dtype != sp.dtype
                    or s.ndim != sp.ndim
                    or s.shape[sp.batch_axis] != batch
                    or any(s.shape[axis] != size for axis, size in sp.static)
                ):
                    raise ValueError(self._bad_state(sp, s, batch))
                feeds[sp.input] = s
        results = self.backend.infer(feeds)
        new_state = {sp.input: results[sp.output] for sp in self._state}
        return self.outputs_by_role(results), new_state

    def outputs_by_role(self, results: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The backend's results (by tensor name) as role outputs, slices applied as views."""
        return {
            p.role: results[p.tensor] if p.slice is None else results[p.tensor][..., p.slice]
            for p in self._outputs
        }

    def warmup(self) -> None:
        """Run zeros at each profile's min and max shapes (batch 1 and max batch for the bundled models)
        so allocations and kernel choices happen before the first real request. A backend whose own
        tiers may differ from the manifest's (TensorRT: the plans' tiers; torch on CUDA graphs: its
        batch tiers) names them as `profiles`."""
        shapes_seen: set[tuple[tuple[int, ...], ...]] = set()
        own = getattr(self.backend, "profiles", None)
        profiles = own or self.manifest.profiles or (Profile("default", {}),)
        for prof in profiles:
            for idx in (0, 2):
                feeds = {p.role: np.zeros(self._warmup_shape(p, prof, idx), p.dtype) for p in self._inputs}
                key = tuple(a.shape for a in feeds.values())
                if key in shapes_seen:
                    continue
                shapes_seen.add(key)
                batch = next(iter(feeds.values())).shape[0] if feeds else 1
                self.run(feeds, self.initial_state(batch))

    def _warmup_shape(self, p: _InputPlan, prof: Profile, idx: int) -> tuple[int, ...]:
        if p.tensor in prof.shapes:
            return prof.shapes[p.tensor][idx]
        batch = prof.min_batch if idx == 0 and prof.shapes else (prof.max_batch if prof.shapes else 1)
        fixed = dict(p.static)
        return tuple(fixed.get(axis, batch if axis == 0 else 1) for axis in range(p.ndim))

    def close(self) -> None:
        self.backend.deactivate()

    @property
    def closed(self) -> bool:
        return not self.backend.is_active

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Engine {self.manifest.name} on {self.backend.name}>"

    # -------------------------------------------------------------------------------------------

    def _bad_input(self, p: _InputPlan, a: object) -> str:
        got = (
            f"{a.dtype} {list(a.shape)}"
            if isinstance(a, np.ndarray)
            else f"a {type(a).__name__}, not an ndarray"
        )
        also = " (or uint8 [N,H,W,3])" if p.image else ""
        return (
            f"{self.manifest.name}: input role {p.role!r} (tensor {p.tensor!r}) "
            f"expects {p.dtype} {p.declared}{also}, got {got}"
        )

    def _bad_state(self, sp: _StatePlan, s: object, batch: int) -> str:
        want = tuple(batch if i == sp.batch_axis else dict(sp.static)[i] for i in range(sp.ndim))
        if s is None:
            got = "nothing"
        elif isinstance(s, np.ndarray):
            got = f"{s.dtype} {list(s.shape)}"
        else:
            got = f"a {type(s).__name__}"
        return f"{self.manifest.name}: state {sp.input!r} expects {sp.dtype} {list(want)}, got {got}"
