"""The viewer in its own process, which is how `serve` and `demo` run it.

In the bridge's process the viewer would re-encode every frame and write every browser's socket on the
bridge's GIL, and its own latency would wait on the bridge's Python work. In a child (spawned, like the
output router: bridge.child_process) it is one more subscriber of the frames socket and nothing else;
a slow or stuck viewer loses frames like any slow subscriber and never stalls the bridge.
"""

from __future__ import annotations

import logging
import os

from bridge.child_process import ChildProcess, ParentLine
from bridge.clients.viewer.server import ViewerConfig, ViewerServer, viewer_url

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 30.0  # spawn, import, bind and subscribe
CHILD_NICE = 5  # the bridge's sessions come first on a small machine; the page loses frames, not them


class ViewerProcess:
    """`start()` returns once the child listens (`port` is then bound); `stop()` ends it."""

    def __init__(self, config: ViewerConfig) -> None:
        self.config = config
        self.port = config.port
        self._child = ChildProcess(_child, (config,), "avatar-bridge viewer")

    @property
    def url(self) -> str:
        return viewer_url(self.config.host, self.port)

    def start(self) -> None:
        """Start the child; OSError when it cannot listen, RuntimeError when it does not start."""
        self._child.start()
        ready, answer = self._child.wait_ready(READY_TIMEOUT_S)
        if not ready:
            self.stop()
            raise RuntimeError("the viewer process did not start")
        if isinstance(answer, str):  # the child's reason for not listening
            self.stop()
            raise OSError(answer)
        self.port = int(answer)
        log.info("viewer runs in process %s", self._child.pid)

    def stop(self, timeout: float = 5.0) -> None:
        if not self._child.stop(timeout):
            log.warning("viewer process %s did not stop in %.1f s; killed it", self._child.pid, timeout)


def _child(config: ViewerConfig, parent: ParentLine) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s viewer: %(message)s")
    if hasattr(os, "nice"):  # POSIX only
        os.nice(CHILD_NICE)
    viewer = ViewerServer(config)
    try:
        viewer.start()
    except (OSError, RuntimeError) as exc:
        parent.ready(str(exc))
        return
    try:
        if parent.ready(viewer.port):
            parent.stopped(None)  # the bridge's word, or its end of the pipe closing when it is gone
    finally:
        viewer.stop()
