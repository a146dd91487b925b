"""Camera work yields the CPU to frames that are never dropped.

A camera pipeline's inputs are droppable (latest wins: a newer image supersedes one that waited),
motion and speech frames are not. So the threads that run camera pre-processing and engine calls
lower their own OS priority by CAMERA_NICE, once each: when the cores are contended (two clients
flooding 2-megapixel images on a 2-core machine) the motion path runs first and the camera path takes
what is left; on an idle core nothing changes. Linux's nice is per thread; elsewhere (where
PRIO_PROCESS would name the whole process) this does nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

CAMERA_NICE = 5  # CFS weight 1024 -> 335: a contended camera thread gets ~1/3 of a motion thread's CPU

_lowered = threading.local()


def yield_to_realtime() -> None:
    """Lower the calling thread's priority by CAMERA_NICE, the first time it calls (cheap after).
    Not the main thread's: a tool or test that runs a pipeline inline keeps its own priority, and the
    threads it starts later would inherit the lowered one."""
    if getattr(_lowered, "done", False):
        return
    _lowered.done = True
    if sys.platform != "linux" or threading.current_thread() is threading.main_thread():
        return
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):  # a sandbox may refuse; the priority is an optimisation
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + CAMERA_NICE)
