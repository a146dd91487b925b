"""Pressure benchmark (issue 11): a real `serve` process, a quiet baseline, then every attack of the
issue while a bystander (a 60 Hz motion session, tests/bystander.py) streams.

Each phase: the bystander streams for `--seconds`, the attack runs in a separate process (so the
attacker's Python never competes with the bystander's measurement for one GIL), then the bystander
drains and reports. Per phase: the bystander's lost frames, errors, p50/p99 (input captured ->
frame received) and p99 against the quiet p99, the bridge's peak resident memory against quiet, the
bridge's own counters (stalls, reply drops, error codes) and what the attacker saw.

Targets: bystander 0 lost, 0 errors, p99 <= 2x quiet, RSS <= 500 MB above quiet; a paused-then-resumed
subscriber's first frame at most one frame period behind the newest (the `paused subscriber` row: met
by a client with the "resume at newest" rule, not by a raw ZeroMQ subscriber).

    python bench/pressure.py [--quick] [--seconds S] [--only NAME] [--attacker-nice N]
                             [--out bench/results/pressure-cpu.json]

The attacker runs on the same machine: on 2 cores its own CPU (packing a gigabyte a second of
images) competes with the bystander's client and the bridge alike. `--attacker-nice 10` runs it below
them, so what remains is what the bridge's handling of the attack costs the bystander.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import zmq
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.bystander: the same bystander the tests use

from bridge.clients.harness.client import RESUME_AFTER_S, BridgeClient  # noqa: E402
from bridge.clients.harness.process import BridgeProcess  # noqa: E402
from bridge.protocol import decode_frame, pack, unpack_map  # noqa: E402
from tests.bystander import Bystander, BystanderReport  # noqa: E402

ROW = np.zeros((1, 35), np.float32)
PERIOD_MS = 1000 / 60


# ------------------------------------------------------------------ helpers (attack side)
def _dealer(port: int) -> zmq.Socket[bytes]:
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{port}")
    return sock


def _ask(sock: zmq.Socket[bytes], message: dict[str, Any]) -> dict[str, Any]:
    sock.send(pack(message))
    if not sock.poll(5000):
        raise TimeoutError(f"no reply to {message.get('op')}")
    return unpack_map(sock.recv())


def _codes(sock: zmq.Socket[bytes], out: dict[str, int]) -> None:
    while sock.poll(0):
        reply = unpack_map(sock.recv())
        key = str(reply.get("name") or reply.get("op"))
        out[key] = out.get(key, 0) + 1


def _input(session: str, seq: int = 0, **fields: Any) -> dict[str, Any]:
    return {"op": "input", "session": session, "seq": seq, "t_capture_ns": time.time_ns(), **fields}


def _features(session: str, seq: int = 0, rows: np.ndarray = ROW, **fields: Any) -> dict[str, Any]:
    data = np.ascontiguousarray(rows, "<f4")
    return _input(session, seq, kind="features", rows=len(data), cols=35, data=data.tobytes(), **fields)


# ------------------------------------------------------------------ attacks (each in its own process)
def attack_seq_max(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    sock = _dealer(ports["request_port"])
    seen: dict[str, int] = {}
    sid = _ask(sock, {"op": "open", "pipeline": "motion"})["session"]
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:  # co-batched with the bystander: seq and times at the uint64 edge
        sock.send(pack(_features(sid, 2**64 - 1)))
        sock.send(pack(_features(sid, 0, t_capture_ns=2**64 - 1)))
        n += 2
        _codes(sock, seen)
        time.sleep(1 / 60)
    time.sleep(0.3)
    _codes(sock, seen)
    return {"sent": n, "replies": seen}


def attack_huge_audio(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    sock = _dealer(ports["request_port"])
    seen: dict[str, int] = {}
    sid = _ask(sock, {"op": "open", "pipeline": "motion"})["session"]
    one_mib = np.zeros(1 << 19, "<i2").tobytes()  # 65 s at 8 kHz
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        sock.send(pack(_input(sid, n, kind="audio", rate=8000, format="s16le", data=one_mib)))
        n += 1
        _codes(sock, seen)
        time.sleep(0.05)
    time.sleep(0.3)
    _codes(sock, seen)
    return {"sent": n, "replies": seen}


def attack_images(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    """Two clients, 8 face sessions each, flood the largest legal images (2048x1024, 7 work units) on
    every session as fast as they go out, plus one over the pixel bound per round (refused at the edge)."""
    socks = [_dealer(ports["request_port"]) for _ in range(2)]
    for s in socks:
        s.setsockopt(zmq.SNDHWM, 8)  # the attacker's own queue: a few images, not gigabytes
    sids = [[_ask(s, {"op": "open", "pipeline": "face"})["session"] for _ in range(8)] for s in socks]
    seen: dict[str, int] = {}
    largest = np.zeros((1024, 2048, 3), np.uint8).tobytes()
    too_many = np.zeros((682, 4096, 3), np.uint8).tobytes()
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for s, mine in zip(socks, sids, strict=True):
            sends = [_input(sid, n, kind="image", width=2048, height=1024, data=largest) for sid in mine]
            sends.append(_input(mine[0], n, kind="image", width=4096, height=682, data=too_many))
            for message in sends:
                try:
                    s.send(pack(message), zmq.NOBLOCK)
                    n += 1
                except zmq.Again:
                    pass
            _codes(s, seen)
        time.sleep(0.01)
    time.sleep(0.3)
    for s in socks:
        _codes(s, seen)
    return {"sent": n, "replies": seen}


def attack_subscriptions(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    endpoint = f"tcp://127.0.0.1:{ports['frames_port']}"
    long_sub: zmq.Socket[bytes] = ctx.socket(zmq.SUB)
    long_sub.connect(endpoint)
    short_sub: zmq.Socket[bytes] = ctx.socket(zmq.SUB)
    short_sub.connect(endpoint)
    for i in range(20_000):  # 1 KB each: over the bridge's subscription bound
        long_sub.setsockopt(zmq.SUBSCRIBE, b"frame/%016d" % i + b"x" * 1000)
    for i in range(20_000):  # 60 bytes each: within it, each a distinct topic
        short_sub.setsockopt(zmq.SUBSCRIBE, b"frame/%054d" % i)
    time.sleep(seconds)
    long_sub.close(0)
    short_sub.close(0)
    return {"subscriptions": 40_000}


def attack_unread_close(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    sock = _dealer(ports["request_port"])
    sock.setsockopt(zmq.RCVHWM, 1)
    big = "x" * (4 << 20)
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:  # replies never read
        try:
            sock.send(pack({"op": "close", "id": n, "session": big}), zmq.NOBLOCK)
            n += 1
        except zmq.Again:
            time.sleep(0.01)
    return {"sent": n}


def attack_paused_subscriber(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    """Three subscribers to every frame read nothing for `seconds`, then read: how stale is what comes
    first, and how long until a current frame? One has libzmq's default receive queue (1,000
    messages), one asks for recent frames only (16 messages, 4 KiB kernel buffer), one is the harness
    client with the "resume at newest" rule (docs/protocol.md section 1); extra sessions make enough
    traffic to overflow the bridge's queue for all. `first_behind_ms`: resume time minus the first
    frame's t_publish_ns (negative: published after the resume)."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    subs: dict[str, zmq.Socket[bytes]] = {}
    for name, hwm, rcvbuf in (("default", 1000, -1), ("small", 16, 4096)):
        sub: zmq.Socket[bytes] = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.RCVHWM, hwm)
        sub.setsockopt(zmq.RCVBUF, rcvbuf)
        sub.connect(f"tcp://127.0.0.1:{ports['frames_port']}")
        sub.setsockopt(zmq.SUBSCRIBE, b"frame/")
        subs[name] = sub
    ruled = BridgeClient("127.0.0.1", ports["request_port"], resume_after_s=RESUME_AFTER_S)
    ruled.hello("resume at newest")
    ruled.subscribe(b"frame/")
    load = [BridgeClient("127.0.0.1", ports["request_port"]) for _ in range(8)]
    sids = []
    for c in load:
        c.hello("load")
        sids.append(c.open("motion")["session"])
    ruled.recv_frames(0)  # its last read before the pause
    end, seq = time.monotonic() + seconds, 0
    while time.monotonic() < end:  # 9 sessions at 60 Hz: ~540 frames/s into the paused queues
        for c, sid in zip(load, sids, strict=True):
            c.send_features(sid, seq, ROW)
            c.poll_replies()
        seq += 1
        time.sleep(1 / 60)
    out: dict[str, Any] = {}
    for name, sub in subs.items():
        t_resume = time.time_ns()
        stale, first_lag_ms, to_current_ms = 0, None, None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sub.poll(2000):
            frame = decode_frame(sub.recv_multipart()[1])
            if first_lag_ms is None:
                first_lag_ms = round((t_resume - frame.header.t_publish_ns) / 1e6, 1)
            if (time.time_ns() - frame.header.t_publish_ns) / 1e6 <= PERIOD_MS:
                to_current_ms = round((time.time_ns() - t_resume) / 1e6, 1)
                break
            stale += 1
        out[name] = {"first_behind_ms": first_lag_ms, "stale": stale, "to_current_ms": to_current_ms}
        sub.close(0)
    out["resume"] = _resumed(ruled)
    ruled.close()
    for c in load:
        c.close()
    return out


def _resumed(client: BridgeClient) -> dict[str, Any]:
    """The rule's subscriber after its pause: the same figures as the raw ones, and its resubscribes."""
    t_resume = time.time_ns()
    stale, first_lag_ms, to_current_ms = 0, None, None
    deadline = time.monotonic() + 10
    while to_current_ms is None and time.monotonic() < deadline:
        for r in client.recv_frames(20):
            if first_lag_ms is None:
                first_lag_ms = round((t_resume - r.frame.header.t_publish_ns) / 1e6, 1)
            if (r.recv_ns - r.frame.header.t_publish_ns) / 1e6 <= PERIOD_MS:
                to_current_ms = round((r.recv_ns - t_resume) / 1e6, 1)
                break
            stale += 1
    return {
        "first_behind_ms": first_lag_ms,
        "stale": stale,
        "to_current_ms": to_current_ms,
        "resubscribes": client.resubscribes,
    }


def attack_hijack(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    sock = _dealer(ports["request_port"])
    seen: dict[str, int] = {}
    end, n = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for message in (
            _features(victim),
            {"op": "ping", "session": victim},
            {"op": "close", "session": victim},
        ):
            sock.send(pack(message))
            n += 1
        _codes(sock, seen)
        time.sleep(0.02)
    time.sleep(0.3)
    _codes(sock, seen)
    return {"sent": n, "replies": seen}


def attack_offline(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    """Two offline sessions streaming whole sequences, each read by a subscriber that keeps up."""
    rows = np.random.default_rng(3).standard_normal((1024, 35)).astype(np.float32)
    clients, sids = [], []
    for _ in range(2):
        c = BridgeClient("127.0.0.1", ports["request_port"])
        c.hello("offline flood")
        sid = c.open("motion", mode="offline")["session"]
        c.subscribe(f"frame/{sid}".encode())
        clients.append(c)
        sids.append(sid)
    time.sleep(0.1)
    sent = {sid: 0 for sid in sids}
    got: dict[str, list[int]] = {sid: [] for sid in sids}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for c, sid in zip(clients, sids, strict=True):
            if len(got[sid]) >= sent[sid]:  # the previous sequence is all in: send the next
                c.send_features(sid, sent[sid], rows)
                sent[sid] += len(rows)
            got[sid] += [r.frame.header.seq for r in c.recv_frames(5)]
    drain = time.monotonic() + 20
    while time.monotonic() < drain and any(len(got[s]) < sent[s] for s in sids):
        for c, sid in zip(clients, sids, strict=True):
            got[sid] += [r.frame.header.seq for r in c.recv_frames(20)]
    errors = sum(len(c.errors) for c in clients)
    for c in clients:
        c.close()
    return {
        "offline_frames_sent": sum(sent.values()),
        "offline_frames_received": sum(len(set(v)) for v in got.values()),
        "offline_errors": errors,
    }


def attack_slowloris(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    conns = []
    refused = 0
    for _ in range(2000):
        try:
            s = socket.create_connection(("127.0.0.1", ports["metrics_port"]), timeout=1)
            s.sendall(b"GET /metr")
            conns.append(s)
        except OSError:
            refused += 1
    t0 = time.monotonic()
    ok = 0
    while time.monotonic() - t0 < seconds:  # can a quick scraper still get through?
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ports['metrics_port']}/healthz", timeout=2) as r:
                ok += r.status == 200
        except OSError:
            pass
        time.sleep(0.2)
    for s in conns:
        s.close()
    return {"connections": len(conns), "connect_failed": refused, "healthz_ok_during": ok}


def attack_scrapers(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    counts = [0] * 8
    stop = threading.Event()

    def scrape(i: int) -> None:
        while not stop.is_set():
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{ports['metrics_port']}/metrics", timeout=5
                ) as r:
                    r.read()
                    counts[i] += 1
            except OSError:
                pass

    threads = [threading.Thread(target=scrape, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(10)
    return {"scrapes": sum(counts)}


def attack_load(ports: dict[str, int], victim: str, seconds: float) -> dict[str, Any]:
    """Eight more well-behaved motion sessions at 60 Hz (the load of the --osc comparison)."""
    clients = []
    for _ in range(8):
        c = BridgeClient("127.0.0.1", ports["request_port"])
        c.hello("load")
        clients.append((c, c.open("motion")["session"]))
    end, seq = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        for c, sid in clients:
            c.send_features(sid, seq, ROW)
            c.poll_replies()
        seq += 1
        time.sleep(1 / 60)
    for c, _ in clients:
        c.close()
    return {"sessions": 8}


ATTACKS: dict[str, tuple[Callable[[dict[str, int], str, float], dict[str, Any]], str]] = {
    "seq 2^64-1": (attack_seq_max, "edge"),
    "huge audio": (attack_huge_audio, "edge"),
    "image floods": (attack_images, "edge"),
    "subscription flood": (attack_subscriptions, "delivery"),
    "unread close, 4 MB strings": (attack_unread_close, "edge"),
    "paused subscriber": (attack_paused_subscriber, "delivery"),
    "hijack": (attack_hijack, "edge"),
    "offline flood": (attack_offline, "delivery"),
    "slowloris metrics": (attack_slowloris, "delivery"),
    "8 scrapers": (attack_scrapers, "delivery"),
}


def _attack_main(
    name: str, ports: dict[str, int], victim: str, seconds: float, out: Any, nice: int = 0
) -> None:
    os.nice(nice)  # --attacker-nice: the attacker's own CPU (packing its floods) yields to the bridge's
    fn = ATTACKS[name][0] if name in ATTACKS else attack_load
    try:
        out.put(fn(ports, victim, seconds))
    except Exception as exc:  # reported in the table, never hides the others
        out.put({"attack_failed": f"{type(exc).__name__}: {exc}"})


# ------------------------------------------------------------------ bridge side
def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def counters(metrics_port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in (
                "avatar_bridge_subscriber_stalls_total",
                "avatar_bridge_frames_dropped_total",
                "avatar_bridge_replies_dropped_total",
                "avatar_bridge_scheduler_restarts_total",
            ):
                key = s.name.removeprefix("avatar_bridge_") + "".join(
                    f"{{{v}}}" for k, v in sorted(s.labels.items()) if k == "reason"
                )
                out[key] = out.get(key, 0.0) + s.value
            elif s.name == "avatar_bridge_errors_total" and s.value:
                out[f"errors{{{s.labels['name']}}}"] = s.value
    return out


def phase(bridge: BridgeProcess, name: str, seconds: float, attacker_nice: int = 0) -> dict[str, Any]:
    ports = bridge.ports
    before = counters(ports["metrics_port"])
    rss_samples = [rss_mb(bridge.proc.pid)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.1):
            rss_samples.append(rss_mb(bridge.proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    bystander = Bystander(ports["request_port"], drain_s=5.0)
    bystander.start()
    attack: dict[str, Any] = {}
    if name == "quiet":
        time.sleep(seconds)
    else:
        mp = multiprocessing.get_context("spawn")
        out = mp.Queue()
        proc = mp.Process(
            target=_attack_main, args=(name, ports, bystander.session, seconds, out, attacker_nice)
        )
        proc.start()
        try:
            attack = out.get(timeout=seconds + 60)
        except Exception:
            attack = {"attack_failed": "no result"}
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    report: BystanderReport = bystander.stop()
    stop.set()
    sampler.join()
    after = counters(ports["metrics_port"])
    delta = {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0)}
    return {
        "phase": name,
        "sent": report.sent,
        "received": report.received,
        "lost": report.lost,
        "gaps": report.gaps,
        "errors": len(report.errors),
        "error_names": sorted({str(e.get("name")) for e in report.errors}),
        "p50_ms": report.latency_p50_ms,
        "p99_ms": report.latency_p99_ms,
        "rss_peak_mb": max(rss_samples),
        "bridge_counters": delta,
        "attack": attack,
    }


def run(seconds: float, out: Path, only: list[str] | None = None, attacker_nice: int = 0) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    load_before = os.getloadavg()
    with BridgeProcess("--metrics-port", "0") as bridge:
        time.sleep(1.0)
        rows.append(phase(bridge, "quiet", seconds))
        # The paused-subscriber and --osc rows add 8 sessions of load: their baseline is this row.
        rows.append(phase(bridge, "8 sessions of load", seconds))
        rows[-1]["phase"] = "load baseline (8 sessions)"
        for name in ATTACKS:
            if only and name not in only:
                continue
            rows.append(phase(bridge, name, seconds, attacker_nice))
            print(f"  {name}: done", flush=True)
    if not only or "--osc" in only:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # a VMC receiver that drops everything
        udp.bind(("127.0.0.1", 0))
        osc = f"vmc://127.0.0.1:{udp.getsockname()[1]}"
        with BridgeProcess("--metrics-port", "0", "--osc", osc) as with_osc:
            rows.append(phase(with_osc, "8 sessions of load", seconds))
            rows[-1]["phase"] = "--osc (8 sessions of load)"
        udp.close()
    context = {"load_average_before": load_before, "load_average_after": os.getloadavg()}
    return finish(rows, seconds, out, {**context, "attacker_nice": attacker_nice})


def finish(
    rows: list[dict[str, Any]], seconds: float, out: Path, context: dict[str, Any] | None = None
) -> dict[str, Any]:
    quiet, loaded = rows[0], rows[1]
    for row in rows:
        base = loaded if row["phase"] in ("paused subscriber", "--osc (8 sessions of load)") else quiet
        row["baseline"] = base["phase"]
        base_p99, base_rss = base["p99_ms"], base["rss_peak_mb"]
        row["p99_vs_quiet"] = row["p99_ms"] / base_p99
        row["rss_delta_mb"] = row["rss_peak_mb"] - base_rss
        row["owner"] = ATTACKS.get(row["phase"], (None, "delivery"))[1]
        row["meets_targets"] = (
            row["lost"] == 0
            and row["gaps"] == 0
            and row["errors"] == 0
            and row["p99_vs_quiet"] <= 2.0
            and row["rss_delta_mb"] <= 500
            and _resume_met(row)
        )
    result = {
        "seconds_per_phase": seconds,
        "machine": f"{multiprocessing.cpu_count()} cores",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        **(context or {}),
        "rows": rows,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    return result


def _resume_met(row: dict[str, Any]) -> bool:
    """The paused subscriber's target, for the client that follows the protocol's rule."""
    if row["phase"] != "paused subscriber":
        return True
    behind = row["attack"].get("resume", {}).get("first_behind_ms")
    return behind is not None and behind <= PERIOD_MS


def table(result: dict[str, Any]) -> str:
    lines = [
        "| attack | bystander sent / lost | errors | p50 / p99 ms | p99 vs baseline | RSS Δ MB "
        "| bridge counted | attacker saw | targets |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        counted = ", ".join(f"{k} {v:g}" for k, v in sorted(r["bridge_counters"].items())) or "-"
        saw = (
            ", ".join(
                f"{k} {v}" if not isinstance(v, dict) else f"{k} {json.dumps(v)}"
                for k, v in r["attack"].items()
            )
            or "-"
        )
        lines.append(
            f"| {r['phase']} | {r['sent']} / {r['lost']} | {r['errors']} "
            f"| {r['p50_ms']:.1f} / {r['p99_ms']:.1f} | "
            f"{r['p99_vs_quiet']:.2f}x{'' if r['baseline'] == 'quiet' else ' (load)'} "
            f"| {r['rss_delta_mb']:+.0f} | {counted} | {saw} | "
            f"{'met' if r['meets_targets'] else '**not met**'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="3 s per phase instead of 10")
    parser.add_argument("--seconds", type=float, help="seconds per phase")
    parser.add_argument("--only", action="append", help="run only these attacks (repeatable), after quiet")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "pressure-cpu.json")
    parser.add_argument(
        "--attacker-nice",
        type=int,
        default=0,
        help="run each attack's process this much nicer than the bridge and the bystander (0: as an "
        "equal; 10 takes the attacker's own CPU, e.g. packing its floods, out of the bystander's way)",
    )
    args = parser.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    result = run(seconds, args.out, args.only, args.attacker_nice)
    print(table(result))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
