"""bench/gpu.py's host readings (training.probes.host_cpu): the core layout, the per-second sampler and
the roles of a real `serve --workers 2`."""

from __future__ import annotations

import os
import sys
import time

import pytest

from bridge.clients.harness.process import BridgeProcess
from training.probes.host_cpu import CpuSampler, bridge_roles, cpu_layout, pin

linux = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")


def test_layout_is_disjoint_and_uses_every_core() -> None:
    for workers in (1, 6, 8, 11):
        layout = cpu_layout(list(range(16)), workers, 3)
        assert layout["load generators"] == [13, 14, 15]
        assert layout["front end"] == [12] and layout["frames forwarder"] == [11]
        cores = [c for role, cs in layout.items() for c in cs]
        assert sorted(cores) == list(range(16)), workers  # disjoint, none left idle
        assert all(layout[f"worker {k}"] for k in range(workers))


def test_layout_shares_the_rest_when_workers_outnumber_cores() -> None:
    layout = cpu_layout(list(range(16)), 12, 3)
    assert all(layout[f"worker {k}"] == list(range(11)) for k in range(12))
    assert cpu_layout([0, 1], 2, 1) == {}  # too few cores: no pinning


@linux
def test_sampler_reads_each_second() -> None:
    sampler = CpuSampler({os.getpid(): "load generator 0"})
    sampler.start()
    deadline = time.monotonic() + 2.2
    while time.monotonic() < deadline:  # keep one core busy
        sum(range(10_000))
    readings = sampler.stop()
    busy = readings["per_process_percent"]["load generator 0"]
    assert len(busy) == 2 and all(b > 10 for b in busy), busy  # a shared 2-core CI box gives less
    assert readings["load_generators_sum_percent"] == busy
    assert len(readings["host_busy_cores"]) == len(readings["host_stolen_cores"]) == 2
    assert len(readings["host_page_faults_per_s"]) == len(readings["host_cpu_stall_us_per_s"]) == 2
    assert len(readings["minor_faults_per_s_by_process"]["load generator 0"]) == 2


@linux
def test_roles_of_a_real_front_end() -> None:
    with BridgeProcess("--workers", "2", "--no-face-tracking", "--idle-timeout", "5") as bridge:
        roles = bridge_roles(bridge.proc.pid)
        pin(bridge.proc.pid, sorted(os.sched_getaffinity(0)))  # every thread; nothing refused
    named = sorted(r for r in roles.values() if r != "resource tracker")
    assert named == ["frames forwarder", "front end", "worker 0", "worker 1"]
