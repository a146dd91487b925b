"""Voice calibrations off the I/O thread (issue 40).

Measuring a voice's five vowels costs tens of milliseconds per clip (about 23 ms for 8 s at 192 kHz);
on the I/O thread three clients calibrating in a loop stalled every other client's inputs. Here one
worker thread runs them, below the I/O and scheduler threads' priority (bridge.runtime.cpu_priority),
and the I/O thread sends each reply when it is done (`finished`, every loop turn). Bounded twice: a
client has at most PER_CLIENT calibrations waiting or running, the bridge at most MAX_WAITING; past
either `submit` says why and the caller answers OVERLOADED.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import Counter, deque
from collections.abc import Callable

from bridge.runtime.cpu_priority import yield_to_realtime

log = logging.getLogger(__name__)

PER_CLIENT = 1  # calibrations of one client waiting or running
MAX_WAITING = 8  # calibrations of all clients waiting or running

Envelope = tuple[bytes, ...]
Job = Callable[[], bytes]  # runs the calibration; returns the reply (or error reply) to send


class Calibrations:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[bytes, Envelope, Job] | None] = queue.SimpleQueue()
        self._done: deque[tuple[Envelope, bytes]] = deque()
        self._lock = threading.Lock()
        self._held: Counter[bytes] = Counter()  # client -> calibrations waiting or running
        self._thread = threading.Thread(target=self._run, name="calibrations", daemon=True)
        self._thread.start()

    def submit(self, owner: bytes, envelope: Envelope, job: Job) -> str | None:
        """Queue `job` for client `owner` (I/O thread); None when queued, else why it was refused."""
        with self._lock:
            if self._held[owner] >= PER_CLIENT:
                return f"this client already has {PER_CLIENT} calibration in progress"
            if sum(self._held.values()) >= MAX_WAITING:
                return f"{MAX_WAITING} calibrations are in progress"
            self._held[owner] += 1
        self._jobs.put((owner, envelope, job))
        return None

    def finished(self) -> list[tuple[Envelope, bytes]]:
        """The replies of the calibrations done since the last call (I/O thread)."""
        out = []
        while self._done:
            out.append(self._done.popleft())
        return out

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=5)

    def _run(self) -> None:
        yield_to_realtime()
        while (task := self._jobs.get()) is not None:
            owner, envelope, job = task
            try:
                self._done.append((envelope, job()))  # the job answers its own failures
            except Exception:  # a bug in one job must not end the thread
                log.exception("calibration failed")
            finally:
                with self._lock:
                    self._held[owner] -= 1
                    if not self._held[owner]:
                        del self._held[owner]
