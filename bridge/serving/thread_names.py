"""Native (OS) names for serve's busy threads, so `top -H`, /proc and the GPU benchmark's CPU readings
tell a worker's I/O loop, scheduler and publisher apart (before 3.14 Python leaves every thread named
after the process). Linux only; elsewhere, and where /proc refuses, nothing changes."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

MAX_CHARS = 15  # the kernel's limit for a thread's name (16 bytes with the terminating NUL)


def name_native_thread(name: str) -> None:
    """Name the calling thread `name` (cut to 15 characters) for the OS."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            Path("/proc/thread-self/comm").write_text(name[:MAX_CHARS])
