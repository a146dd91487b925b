"""The output router in its own process, which is how `serve` runs it (VMC, Live Link Face).

In the bridge's process the router would decode every frame of every session on the bridge's GIL
(measured: `--osc` took a bystander session's p99 from 7 to 24 ms). In a child process it costs the
bridge one more subscriber on the PUB socket and nothing else: the child has its own interpreter,
and a child that is slow or stuck loses frames like any slow subscriber (it never stalls the bridge).

The child is started with `spawn` (no inherited ZeroMQ state), builds the outputs itself from the
same destinations, and exits when told to or when its parent is gone (bridge.child_process: it
ignores the group's SIGINT and SIGTERM, so `kill -- -PGID` and Ctrl-C stop it through the bridge).
It runs at a lower CPU priority (CHILD_NICE): formatting VMC for many sessions can take a whole core,
and on a small machine the bridge's sessions come first; a starved output loses frames (latest wins
in its workers), the bridge does not.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

from bridge.child_process import ChildProcess, ParentLine
from bridge.clients.outputs.livelink_face import LiveLinkFaceOutput
from bridge.clients.outputs.router import Output, OutputRouter
from bridge.clients.outputs.vmc import VmcOptions, VmcOutput

log = logging.getLogger(__name__)

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
        self._child = ChildProcess(_child, (specs, endpoint), "avatar-bridge outputs")

    @property
    def pid(self) -> int | None:
        return self._child.pid

    def start(self) -> None:
        """Start the child; returns once it is subscribed (RuntimeError if it cannot)."""
        self._child.start()
        if not self._child.wait_ready(READY_TIMEOUT_S)[0]:
            self.stop()
            raise RuntimeError(f"the output process could not subscribe to {self.endpoint}")
        log.info("outputs run in process %s", self._child.pid)

    def stop(self, timeout: float = 3.0) -> None:
        if not self._child.stop(timeout):
            log.warning("output process %s did not stop in %.1f s; killed it", self._child.pid, timeout)


def _child(specs: list[OutputSpec], endpoint: str, parent: ParentLine) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s outputs: %(message)s")
    if hasattr(os, "nice"):  # POSIX only: on Windows the child keeps normal priority
        os.nice(CHILD_NICE)
    router = OutputRouter([spec.build() for spec in specs], endpoint)
    router.start()
    try:
        if parent.ready():
            parent.stopped(None)  # the bridge's word, or its end of the pipe closing when it is gone
    finally:
        router.stop()
