"""A tqdm progress bar for an engine build, fed by TensorRT's IProgressMonitor.

TensorRT reports nested phases ("Building engine" > "Optimizing graph" > ...), each with a step count.
Top-level phases get a bar; the innermost running sub-phase is shown after it, which stays readable in
logs (nested bars interleave badly on anything but a terminal). TensorRT calls the monitor from its own
threads, hence the lock.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
from typing import IO, TYPE_CHECKING, Any

from bridge.backends.tensorrt.builder.flavour import Flavour

if TYPE_CHECKING:
    import tensorrt_rtx as trt
    from tqdm import tqdm

log = logging.getLogger(__name__)

__all__ = ["PhaseBars", "progress_monitor"]


class PhaseBars:
    """The bars themselves, independent of TensorRT (so they are testable without a build)."""

    def __init__(self, *, file: IO[str] | None = None, disable: bool = False) -> None:
        self._file = file
        self._disable = disable
        # tqdm comes with the tensorrt extras, not the core: without it the build runs without bars.
        self._have_tqdm = importlib.util.find_spec("tqdm") is not None
        if not self._have_tqdm:
            log.info("no build progress bar: tqdm is not installed (pip install tqdm)")
        self._bars: dict[str, tqdm[Any]] = {}  # top-level phase -> its bar
        self._open: list[str] = []  # sub-phases, innermost last
        self._lock = threading.Lock()
        self.phases_seen: list[str] = []

    def _top(self) -> tqdm[Any] | None:
        return next(reversed(self._bars.values()), None)

    def start(self, phase: str, parent: str | None, steps: int) -> None:
        with self._lock:
            self.phases_seen.append(phase)
            if parent is None:
                if not self._have_tqdm:
                    return
                from tqdm import tqdm

                self._bars[phase] = tqdm(
                    total=steps, desc=phase, file=self._file, disable=self._disable, unit="step", leave=True
                )
                return
            self._open.append(phase)
            top = self._top()
            if top is not None:
                top.set_postfix_str(phase)

    def step(self, phase: str, step: int) -> None:
        with self._lock:
            bar = self._bars.get(phase)
            if bar is not None:
                bar.update(step + 1 - bar.n)  # TensorRT reports the index of the step just completed

    def finish(self, phase: str) -> None:
        with self._lock:
            bar = self._bars.pop(phase, None)
            if bar is not None:
                bar.set_postfix_str("done")
                bar.update((bar.total or bar.n) - bar.n)
                bar.close()
            elif phase in self._open:
                self._open.remove(phase)

    def close(self) -> None:
        with self._lock:
            for bar in self._bars.values():
                bar.close()
            self._bars.clear()


def progress_monitor(flavour: Flavour, bars: PhaseBars) -> trt.IProgressMonitor:
    """An IProgressMonitor subclass instance of `flavour` driving `bars`; it never cancels the build."""

    class _Monitor(flavour.trt.IProgressMonitor):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            flavour.trt.IProgressMonitor.__init__(self)

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            bars.start(phase_name, parent_phase, num_steps)

        def step_complete(self, phase_name: str, step: int) -> bool:
            bars.step(phase_name, step)
            return True

        def phase_finish(self, phase_name: str) -> None:
            bars.finish(phase_name)

    return _Monitor()
