"""Bridge worker processes behind one front end (`serve --workers N`, bridge.serving.cluster.front_end).

A worker is an ordinary `Bridge` in its own process (its own GIL, its own CUDA context; several
share one GPU through CUDA MPS, docs/deployment.md). What makes it a worker is only where its two
sockets live: its ROUTER is bound on an `ipc://` endpoint inside the front end's private folder (mode
0700, so only this user's processes can reach it), its PUB publishes into the front end's forwarder
(and binds one more ipc endpoint, from which the front end reads session events). Nothing on it is
reachable over TCP.

The front end connects to the worker's ROUTER with one DEALER per client, whose routing id stands
for that client, so the worker's own ownership and quota rules (docs/protocol.md section 4) see the
original client, not the front end.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import sys
import threading
from dataclasses import dataclass, field, replace
from multiprocessing.process import BaseProcess
from pathlib import Path

import zmq

from bridge.child_process import ignoring
from bridge.serving.heap import freeze_startup_heap
from bridge.serving.server import Bridge, ServeConfig
from bridge.serving.thread_names import name_native_thread

log = logging.getLogger(__name__)

PARENT_CHECK_S = 0.5  # a worker whose front end is gone stops within this
SWITCH_INTERVAL_ENV = "AVATAR_BRIDGE_SWITCH_INTERVAL_US"  # the workers' GIL switch interval, if set


@dataclass(frozen=True)
class WorkerSpec:
    """What one worker process is started with (pickled into the child)."""

    index: int
    generation: int  # restarts of this index so far; endpoints are fresh for each generation
    config: ServeConfig  # already the worker's own: loopback, free ports, no CURVE (worker_config)
    folder: Path  # the front end's private folder (0700)
    forward_endpoint: str  # the front end's XSUB: every frame and event goes there
    public_frames_port: int  # what `hello` tells clients
    parent_pid: int
    env: dict[str, str] = field(default_factory=dict)  # e.g. CUDA_VISIBLE_DEVICES for this worker

    @property
    def request_endpoint(self) -> str:
        return f"ipc://{self.folder}/w{self.index}.{self.generation}.req"

    @property
    def events_endpoint(self) -> str:
        return f"ipc://{self.folder}/w{self.index}.{self.generation}.pub"

    @property
    def ready_file(self) -> Path:
        return self.folder / f"w{self.index}.{self.generation}.json"


def worker_config(config: ServeConfig, *, metrics: bool) -> ServeConfig:
    """A worker's config from the front end's: the same engines, limits and backend; the public edge
    (host, ports, CURVE, per-subscriber bounds, metrics address, GPU memory figures) belongs to the
    front end. The PUB link to the front end is unbounded (frames_hwm 0, and no subscription limit:
    that one connection carries every client's): the front end's XPUB applies the public bounds."""
    transport = replace(
        config.transport,
        host="127.0.0.1",
        request_port=0,
        frames_port=0,
        frames_hwm=0,
        frames_sndbuf=0,
        max_subscriptions=0,
        insecure_remote=False,
        curve_secret_key=None,
        curve_client_keys=None,
    )
    return replace(
        config,
        transport=transport,
        ports_file=None,
        metrics_port=0 if metrics else None,
        metrics_host="127.0.0.1",
        gpu_metrics=False,
    )


def worker_main(spec: WorkerSpec) -> None:
    """The child process: a Bridge on internal endpoints, until SIGTERM or the front end is gone."""
    os.environ.update(spec.env)  # before any engine loads: CUDA reads CUDA_VISIBLE_DEVICES at init
    # How long a thread that wants the GIL waits before the holder is asked to give it up (Python's
    # default 5 ms). An experiment knob for the GPU benchmark (issue 46): the I/O loop decoding a big
    # `inputs` message can keep the scheduler waiting that long.
    switch_us = os.environ.get(SWITCH_INTERVAL_ENV)
    if switch_us:
        sys.setswitchinterval(float(switch_us) / 1e6)
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s %(levelname)s worker{spec.index} %(name)s: %(message)s"
    )
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group; the front end decides
    bridge = Bridge(replace(spec.config, ports_file=spec.ready_file))
    _move_to_internal_endpoints(bridge, spec)
    signal.signal(signal.SIGTERM, lambda *_: bridge.stop())
    threading.Thread(target=_watch_parent, args=(bridge, spec.parent_pid), daemon=True).start()
    bridge.start()  # writes the ready file (ports, metrics port) once it serves
    freeze_startup_heap()
    name_native_thread(f"worker{spec.index}-io")  # this thread runs the I/O loop from here
    try:
        bridge.serve_forever()
    finally:
        bridge.close()


def _move_to_internal_endpoints(bridge: Bridge, spec: WorkerSpec) -> None:
    """Replace the loopback TCP endpoints Bridge bound with the front end's ipc endpoints (before any
    traffic: nothing knows the TCP ports)."""
    router, pub = bridge.sockets.router, bridge.sockets.pub
    router.unbind(router.getsockopt_string(zmq.LAST_ENDPOINT))
    router.bind(spec.request_endpoint)
    pub.unbind(pub.getsockopt_string(zmq.LAST_ENDPOINT))
    pub.bind(spec.events_endpoint)
    pub.connect(spec.forward_endpoint)
    bridge.sockets.frames_port = spec.public_frames_port  # the hello reply names the public PUB


def _watch_parent(bridge: Bridge, parent_pid: int) -> None:
    stop = threading.Event()
    while not stop.wait(PARENT_CHECK_S):
        if os.getppid() != parent_pid:
            log.error("front end (pid %d) is gone; stopping", parent_pid)
            bridge.stop()
            return


class WorkerProcess:
    """One worker index as the front end sees it: the current process, its endpoints, readiness."""

    def __init__(self, index: int, make_spec: WorkerSpecFactory) -> None:
        self.index = index
        self._make_spec = make_spec
        self.generation = -1
        self.restarts = 0
        self.spec: WorkerSpec | None = None
        self.process: BaseProcess | None = None
        self.ready = False
        self.metrics_port: int | None = None

    def start(self) -> None:
        self.generation += 1
        self.spec = self._make_spec(self.index, self.generation)
        self.ready = False
        self.metrics_port = None
        # spawn, not fork: the front end runs threads (the forwarder), and a CUDA context never forks.
        self.process = multiprocessing.get_context("spawn").Process(
            target=worker_main, args=(self.spec,), name=f"avatar-bridge-worker{self.index}", daemon=True
        )
        with ignoring((signal.SIGINT,)):  # born ignoring Ctrl-C: no traceback from its imports either
            self.process.start()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def poll_ready(self) -> bool:
        """True once the worker serves (its ready file is written); reads its metrics port."""
        if not self.ready and self.spec is not None and self.spec.ready_file.exists():
            ports = json.loads(self.spec.ready_file.read_text())
            self.metrics_port = ports.get("metrics_port")
            self.ready = True
        return self.ready

    def stop(self, timeout_s: float = 10.0) -> None:
        if self.process is None:
            return
        if self.process.is_alive():
            self.process.terminate()  # SIGTERM: the Bridge closes its sessions ("shutdown") and exits
            self.process.join(timeout_s)
            if self.process.is_alive():
                self.process.kill()
                self.process.join()
        self.ready = False


class WorkerSpecFactory:
    """Makes each (index, generation)'s spec from the front end's fixed parts."""

    def __init__(
        self,
        config: ServeConfig,
        folder: Path,
        forward_endpoint: str,
        public_frames_port: int,
        envs: list[dict[str, str]],
    ) -> None:
        self.config = worker_config(config, metrics=config.metrics_port is not None)
        self.folder = folder
        self.forward_endpoint = forward_endpoint
        self.public_frames_port = public_frames_port
        self.envs = envs

    def __call__(self, index: int, generation: int) -> WorkerSpec:
        return WorkerSpec(
            index=index,
            generation=generation,
            config=self.config,
            folder=self.folder,
            forward_endpoint=self.forward_endpoint,
            public_frames_port=self.public_frames_port,
            parent_pid=os.getpid(),
            env=self.envs[index % len(self.envs)] if self.envs else {},
        )
