"""The output router in its own process, which is how `serve` runs it (VMC, Live Link Face).

In the bridge's process the router would decode every frame of every session on the bridge's GIL
(measured: `--osc` took a bystander session's p99 from 7 to 24 ms). In a child process it costs the
bridge one more subscriber on the PUB socket and nothing else: the child has its own interpreter,
and a child that is slow or stuck loses frames like any slow subscriber (it never stalls the bridge).

The child is started with `spawn` (no inherited ZeroMQ state), builds the outputs itself from the
same destinations, and exits when told to or when its parent is gone. It runs at a lower CPU
priority (CHILD_NICE): formatting VMC for many sessions can take a whole core, and on a small
machine the bridge's sessions come first; a starved output loses frames (latest wins in its
workers), the bridge does not.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event

from bridge.outputs.livelink_face import LiveLinkFaceOutput
from bridge.outputs.router import Output, OutputRouter
from bridge.outputs.vmc import VmcOptions, VmcOutput

log = logging.getLogger(__name__)

PARENT_POLL_S = 0.5  # how often the child checks that the bridge is still there
READY_TIMEOUT_S = 20.0  # spawn, import and subscribe
CHILD_NICE = 10  # added to the child's niceness: outputs get the CPU the bridge leaves


@dataclass(frozen=True)
class OutputSpec:
    """A picklable description of one output, rebuilt in the child."""

    kind: str  # "vmc" or "livelink_face"
    host: str
    port: int
    max_rate_hz: float | None
    bundle: bool = True
    vmc_options: VmcOptions = field(default_factory=VmcOptions)  # vmc:// URL options

    def build(self) -> Output:
        if self.kind == "vmc":
            return VmcOutput(
                self.host,
                self.port,
                bundle=self.bundle,
                max_rate_hz=self.max_rate_hz,
                options=self.vmc_options,
            )
        return LiveLinkFaceOutput(self.host, self.port, max_rate_hz=self.max_rate_hz)


class RouterProcess:
    """`start()` / `stop()` like OutputRouter, with the router in a child process."""

    def __init__(self, specs: list[OutputSpec], endpoint: str) -> None:
        self.specs = specs
        self.endpoint = endpoint
        self._mp = multiprocessing.get_context("spawn")
        self._ready = self._mp.Event()
        self._stop = self._mp.Event()
        self._process = self._mp.Process(
            target=_child,
            args=(specs, endpoint, self._ready, self._stop, os.getpid()),
            name="avatar-bridge outputs",
            daemon=True,
        )

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def start(self) -> None:
        """Start the child; returns once it is subscribed (RuntimeError if it cannot)."""
        self._process.start()
        if not self._ready.wait(READY_TIMEOUT_S):
            self.stop()
            raise RuntimeError(f"the output process could not subscribe to {self.endpoint}")
        log.info("outputs run in process %s", self._process.pid)

    def stop(self, timeout: float = 3.0) -> None:
        self._stop.set()
        if self._process.pid is None:
            return
        self._process.join(timeout)
        if self._process.is_alive():
            log.warning("output process %s did not stop; terminating it", self._process.pid)
            self._process.terminate()
            self._process.join(timeout)


def _child(specs: list[OutputSpec], endpoint: str, ready: Event, stop: Event, parent: int) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s outputs: %(message)s")
    if hasattr(os, "nice"):  # POSIX only: on Windows the child keeps normal priority
        os.nice(CHILD_NICE)
    router = OutputRouter([spec.build() for spec in specs], endpoint)
    router.start()
    ready.set()
    try:
        while not stop.wait(PARENT_POLL_S):
            if os.getppid() != parent:  # the bridge died without stopping us
                break
    finally:
        router.stop()
