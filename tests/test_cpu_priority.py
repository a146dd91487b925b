"""Camera pipelines' threads yield the CPU to the motion path (bridge.runtime.cpu_priority)."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from bridge.runtime.cpu_priority import CAMERA_NICE, yield_to_realtime


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(sys.platform != "linux", reason="nice is per thread on Linux only")
def test_a_camera_thread_lowers_its_own_priority_once() -> None:
    seen: list[int] = []

    def camera_thread() -> None:
        before = _nice()
        yield_to_realtime()
        yield_to_realtime()  # once per thread
        seen.append(_nice() - before)

    main_before = _nice()
    thread = threading.Thread(target=camera_thread)
    thread.start()
    thread.join()
    expected = min(CAMERA_NICE, 19 - main_before)  # nice stops at 19
    assert seen == [expected]
    yield_to_realtime()  # the main thread (a tool running a pipeline inline) keeps its priority
    assert _nice() == main_before
