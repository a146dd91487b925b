"""Helper processes of `serve` (the outputs, the frames forwarder, the workers): started so that a
signal to the whole process group stops them cleanly, and told to stop over a pipe.

What goes wrong otherwise: `kill -TERM -- -PGID` (systemd's stop) and Ctrl-C reach every process of
the group at once. A child killed while it holds a multiprocessing Event's lock (inside `wait()`)
leaves the parent's `set()` waiting forever; a child that takes Ctrl-C prints its own
KeyboardInterrupt traceback. So nothing here shares a lock with a child: the parent and the child talk
over one pipe (the child says it is ready, the parent says stop), and a parent that is gone closes its
end, which the child reads as stop. The child is born ignoring the signals the parent decides on (the
ignored disposition survives the spawn's exec, and Python keeps SIGINT ignored at start-up), so it
stops on its parent's word, never half-way through its imports.

A leaf module (standard library only): outputs and serving both use it.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

__all__ = ["ChildProcess", "ParentLine", "ignoring"]

STOP = "stop"  # the parent's only word


@contextlib.contextmanager
def ignoring(signals: Sequence[signal.Signals]) -> Iterator[None]:
    """Ignore `signals` in this process for the block (so a child spawned in it is born ignoring them).
    Only the main thread can change handlers; elsewhere the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in signals}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


class ParentLine:
    """The child's end of the pipe: say ready, hear stop (or that the parent is gone)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def fileno(self) -> int:
        """Readable once the parent says stop or is gone: for a child's own poller."""
        return self._conn.fileno()

    def ready(self, payload: Any = None) -> bool:
        """Tell the parent the child serves; False if the parent is already gone."""
        try:
            self._conn.send(payload)
        except OSError:
            return False
        return True

    def stopped(self, timeout_s: float | None = 0.0) -> bool:
        """True once the parent said stop or is gone; waits up to `timeout_s` (None: until then)."""
        try:
            if self._conn.poll(timeout_s):
                self._conn.recv()  # STOP; EOF when the parent is gone
                return True
        except (EOFError, OSError):
            return True
        return False


class ChildProcess:
    """A spawned child that gets a ParentLine as its last argument and is born ignoring `ignore`."""

    def __init__(
        self,
        target: Callable[..., None],
        args: tuple[Any, ...],
        name: str,
        ignore: Sequence[signal.Signals] = (signal.SIGINT, signal.SIGTERM),
    ) -> None:
        mp = multiprocessing.get_context("spawn")  # no inherited sockets, threads or CUDA context
        self._conn, child_end = mp.Pipe()
        self._child_end: Connection | None = child_end
        self._ignore = ignore
        self.process: BaseProcess = mp.Process(
            target=target, args=(*args, ParentLine(child_end)), name=name, daemon=True
        )

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def start(self) -> None:
        with ignoring(self._ignore):
            self.process.start()
        assert self._child_end is not None
        self._child_end.close()  # the child holds its own copy: ours would hide the child's exit
        self._child_end = None
        # A parent that exits without stop() (an error) must still let the child go: multiprocessing's
        # own exit handler joins its children after a SIGTERM this child ignores, so our end of the
        # pipe closes first (atexit runs the later registration first), which the child reads as stop.
        atexit.register(self._conn.close)

    def wait_ready(self, timeout_s: float) -> tuple[bool, Any]:
        """(True, what the child sent) once it is ready; (False, None) if it exits or is not ready in
        time."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                if self._conn.poll(min(left, 0.05)):
                    return True, self._conn.recv()
            except (EOFError, OSError):
                return False, None
            if not self.process.is_alive():
                return False, None
        return False, None

    def stop(self, timeout_s: float) -> bool:
        """Tell the child to stop and wait for it; kill it if it is still there after `timeout_s`.
        True if it stopped on its own."""
        if self.process.pid is None:
            return True
        with contextlib.suppress(OSError):  # a child already gone closed its end
            self._conn.send(STOP)
        self.process.join(timeout_s)
        clean = not self.process.is_alive()
        if not clean:
            self.process.kill()
            self.process.join()
        self._conn.close()
        return clean
