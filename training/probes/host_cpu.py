"""The host's CPU during a benchmark (bench/gpu.py): who uses it, second by second, and on which cores.

Linux only (/proc); elsewhere the readings are empty and pinning does nothing.

- `bridge_roles`: the processes of a running `serve --workers N` by role (front end, frames forwarder,
  worker K in start order), told apart from /proc alone, so the bridge needs no change to be measured.
- `CpuSampler`: a thread that reads each process's CPU time, the host's busy and stolen cores, its
  runnable threads, page faults, context switches and pressure stalls (PSI) once a second, so a slow
  second of the window can be matched with who was busy in it, or with what held every process at once.
- `cpu_layout` and `pin`: disjoint cores for the load generators, the front end, the forwarder and each
  worker (sched_setaffinity on every thread), so the generators' load is kept off the bridge's cores.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

ThreadTimes = dict[int, dict[int, tuple[str, float]]]  # pid -> tid -> (thread name, CPU seconds)


def process_tree(root: int) -> list[int]:
    """`root` and every process under it (from /proc's parent ids)."""
    parents: dict[int, list[int]] = defaultdict(list)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(fields[1])].append(int(stat.parent.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += parents.get(pid, [])
    return out


def _cpu_seconds(stat: Path) -> float:
    """user + system CPU seconds from a /proc .../stat file."""
    rest = stat.read_text().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK


def thread_times(pids: Sequence[int]) -> ThreadTimes:
    """CPU seconds (user + system) of every thread of `pids`."""
    out: ThreadTimes = {}
    for pid in pids:
        threads: dict[int, tuple[str, float]] = {}
        for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                text = stat.read_text()
                threads[int(stat.parent.name)] = (
                    text[text.index("(") + 1 : text.rindex(")")],
                    _cpu_seconds(stat),
                )
        out[pid] = threads
    return out


def cpu_use(
    before: ThreadTimes, after: ThreadTimes, seconds: float, roles: dict[int, str]
) -> list[dict[str, Any]]:
    """Per process: its role, CPU % (100 = one core) and its busiest threads' CPU %, over the window."""
    out = []
    for pid, threads in after.items():
        start = before.get(pid, {})
        use = {
            tid: (name, 100 * (t - start.get(tid, (name, 0.0))[1]) / seconds)
            for tid, (name, t) in threads.items()
        }
        busiest = sorted(use.values(), key=lambda x: -x[1])[:4]
        out.append({
            "role": roles.get(pid, "other"),
            "pid": pid,
            "cpu_percent": round(sum(u for _, u in use.values()), 1),
            "busiest_threads": [[name, round(u, 1)] for name, u in busiest],
        })  # fmt: skip
    return out


def bridge_roles(front_end: int) -> dict[int, str]:
    """The processes of a running `serve --workers N` under `front_end`, by role. The front end starts
    the frames forwarder first and then the workers one after another, so in pid order (multiprocessing's
    resource tracker aside, known by its command line) the first helper is the forwarder and the rest are
    worker 0, 1, ..."""
    roles = {front_end: "front end"}
    helpers = []
    for pid in process_tree(front_end)[1:]:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" in command:
            roles[pid] = "resource tracker"
        else:
            helpers.append(pid)
    helpers.sort()
    roles |= {pid: f"worker {k}" for k, pid in enumerate(helpers[1:])}
    return roles | ({helpers[0]: "frames forwarder"} if helpers else {})


def _host() -> tuple[float, float, int]:
    """Busy and stolen CPU seconds of the whole host so far (stolen: a virtual machine's vCPUs kept
    off the real cores by its hypervisor), and its threads runnable now."""
    busy = steal = 0.0
    running = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("cpu "):
                values = [int(v) for v in line.split()[1:]]
                busy = (sum(values[:7]) - values[3] - values[4]) / TICK  # all but idle, iowait, steal
                steal = values[7] / TICK
            elif line.startswith("procs_running"):
                running = int(line.split()[1])
    return busy, steal, running


def _counters() -> dict[str, float]:
    """The host's running totals that can stall every process at once: page faults (minor ones too: a
    microVM may back a guest page only when it is first touched), context switches, and the
    microseconds some task waited for a CPU or for memory (PSI, Linux 4.20+). Missing ones are 0."""
    out = dict.fromkeys(
        ("page_faults", "major_faults", "context_switches", "cpu_stall_us", "memory_stall_us"), 0.0
    )
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/vmstat").read_text().splitlines():
            name, value = line.split()
            if name == "pgfault":
                out["page_faults"] = float(value)
            elif name == "pgmajfault":
                out["major_faults"] = float(value)
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("ctxt "):
                out["context_switches"] = float(line.split()[1])
    for kind in ("cpu", "memory"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            some = Path(f"/proc/pressure/{kind}").read_text().splitlines()[0]
            out[f"{kind}_stall_us"] = float(some.rsplit("total=", 1)[1])
    return out


def _minor_faults(pid: int) -> float:
    """Minor page faults of process `pid` so far."""
    return float(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[7])


class CpuSampler:
    """Once a second from `start()`: each process's CPU % (100 = one core) and minor page faults, the
    host's busy and stolen cores, its runnable threads at that instant (more than the cores: something
    waits for one), and the rates of `_counters` per second."""

    def __init__(self, roles: dict[int, str], period_s: float = 1.0) -> None:
        self.roles = roles
        self.period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)
        self.per_process: dict[str, list[float]] = {role: [] for role in roles.values()}
        self.host_busy_cores: list[float] = []
        self.host_stolen_cores: list[float] = []
        self.runnable: list[int] = []
        self.host_rates: dict[str, list[float]] = {}
        self.faults_per_process: dict[str, list[float]] = {role: [] for role in roles.values()}

    def _read(self) -> dict[int, tuple[float, float]]:
        """Each process's (CPU seconds, minor faults) so far."""
        out = {}
        for pid in self.roles:
            with contextlib.suppress(OSError, ValueError, IndexError):
                out[pid] = (_cpu_seconds(Path(f"/proc/{pid}/stat")), _minor_faults(pid))
        return out

    def _loop(self) -> None:
        last, (busy_last, steal_last, _), t_last = self._read(), _host(), time.monotonic()
        counters_last = _counters()
        t0, k = t_last, 1
        while True:
            stopped = self._stop.wait(max(0.0, t0 + k * self.period_s - time.monotonic()))
            now, (busy, steal, running), t = self._read(), _host(), time.monotonic()
            counters = _counters()
            dt = t - t_last
            if stopped and dt < 0.5 * self.period_s:  # a last part-second too short to read
                return
            for pid, role in self.roles.items():
                (cpu, faults), (cpu_last, faults_last) = now.get(pid, (0.0, 0.0)), last.get(pid, (0.0, 0.0))
                self.per_process[role].append(round(100 * (cpu - cpu_last) / dt, 1))
                self.faults_per_process[role].append(round((faults - faults_last) / dt))
            self.host_busy_cores.append(round((busy - busy_last) / dt, 2))
            self.host_stolen_cores.append(round((steal - steal_last) / dt, 2))
            self.runnable.append(running)
            for name, value in counters.items():
                self.host_rates.setdefault(f"{name}_per_s", []).append(
                    round((value - counters_last[name]) / dt)
                )
            last, busy_last, steal_last, t_last, counters_last = now, busy, steal, t, counters
            k += 1
            if stopped:
                return

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> dict[str, Any]:
        """Stop and return the readings: per second, each process, the workers' sum and busiest, the
        load generators' sum, the host's busy cores and runnable threads."""
        self._stop.set()
        self._thread.join()
        workers = [v for r, v in self.per_process.items() if r.startswith("worker")]
        generators = [v for r, v in self.per_process.items() if r.startswith("load generator")]
        seconds = len(self.host_busy_cores)

        def column(rows: list[list[float]], how: Any) -> list[float]:
            return [round(float(how(r[k] for r in rows)), 1) for k in range(seconds)] if rows else []

        return {
            "host_busy_cores": self.host_busy_cores,
            "host_stolen_cores": self.host_stolen_cores,
            "host_runnable_threads": self.runnable,
            "workers_sum_percent": column(workers, sum),
            "workers_max_percent": column(workers, max),
            "load_generators_sum_percent": column(generators, sum),
            "per_process_percent": self.per_process,
            "minor_faults_per_s_by_process": self.faults_per_process,
            **{f"host_{name}": values for name, values in self.host_rates.items()},
        }


def available_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def cpu_layout(cpus: Sequence[int], workers: int, generator_cores: int) -> dict[str, list[int]]:
    """Disjoint cores by role: the load generators (and the benchmark's own process) on the last
    `generator_cores`, the front end and the frames forwarder one each below them, the workers the
    rest, each its own contiguous share (all of them share it when there are more workers than
    cores).
    Empty when there are too few cores for that."""
    if generator_cores < 1 or len(cpus) < generator_cores + 3:
        return {}
    rest = list(cpus[:-generator_cores])
    layout = {
        "load generators": list(cpus[-generator_cores:]),
        "front end": rest[-1:],
        "frames forwarder": rest[-2:-1],
    }
    rest = rest[:-2]
    for k in range(workers):
        share = rest[k * len(rest) // workers : (k + 1) * len(rest) // workers]
        layout[f"worker {k}"] = share if workers <= len(rest) else rest
    return layout


def pin(pid: int, cpus: Iterable[int]) -> None:
    """Every thread of `pid` onto `cpus` (threads started later inherit their starter's set)."""
    cores = set(cpus)
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError, ValueError):
            os.sched_setaffinity(int(task.name), cores)
