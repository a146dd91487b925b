"""Soak benchmark: many sessions through a real bridge process for a long time, on the CPU default.

Default: 16 sessions (14 motion fed one row of music features per 60 Hz tick, 2 face fed 15 fps
video) for 10 minutes; `--input audio` feeds the motion sessions PCM instead, so the bridge computes
the features (about 1 ms of CPU per session per tick: 16 sessions need more than 2 free cores). It
reports the bridge's resident memory over time (growth after warm-up, and its trend), errors (the
client's error replies and the bridge's own error counters from /metrics), lost frames (sequence
gaps and published-but-not-received), latency, and guard activity. Target: zero errors, zero lost
frames on loopback, memory growth under 5%.

    python bench/soak.py [--minutes 10] [--sessions 16] [--face 2] [--input features|audio] [--out soak.json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import zmq
from prometheus_client.parser import text_string_to_metric_families

from bridge.audio.music_features import MusicFeatureStream
from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.process import BridgeProcess
from bridge.clients.harness.run import SessionTrack, percentile
from bridge.clients.harness.sources import audio_chunks, face_frames

ROOT = Path(__file__).resolve().parents[1]
MOTION_FPS = 60.0
RSS_EVERY_S = 5.0
DRAIN_S = 3.0


@dataclass
class SoakReport:
    minutes: float
    sessions: int
    face_sessions: int
    inputs_sent: int
    frames_published: int
    frames_received: int
    frames_lost: int  # sequence gaps plus frames published but never received
    client_errors: list[str]
    bridge_errors: dict[str, float]  # error counters from /metrics that are not zero
    contract_violations: int
    guard: dict[str, float]  # outputs clamped / held, session restarts
    latency_ms: dict[str, dict[str, float]]  # per pipeline: p50, p99, max (capture -> received)
    rss_mb_warm: float  # after warm-up (the first 10% of the run, at least 20 s when the run allows)
    rss_mb_end: float
    rss_mb_max: float
    rss_growth_pct: float  # end vs warm
    rss_trend_mb_per_min: float  # least-squares slope after warm-up: a leak shows as a steady rise
    rss_samples: list[tuple[float, float]] = field(repr=False)  # (seconds, MiB)

    @property
    def ok(self) -> bool:
        return (
            self.frames_lost == 0
            and not self.client_errors
            and not self.bridge_errors
            and not self.contract_violations
            and self.frames_received > 0
        )


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def soak(
    minutes: float, sessions: int = 16, face: int = 2, face_fps: float = 15.0, audio_input: bool = False
) -> SoakReport:
    with tempfile.TemporaryDirectory() as tmp:
        args = ("--metrics-port", "0", "--idle-timeout", "60")
        with BridgeProcess(*args, start_timeout_s=120, log_path=Path(tmp) / "bridge.log") as bridge:
            return _drive(bridge.proc.pid, bridge.ports, minutes, sessions, face, face_fps, audio_input)


def _drive(
    pid: int,
    ports: dict[str, int],
    minutes: float,
    sessions: int,
    face: int,
    face_fps: float,
    audio_input: bool,
) -> SoakReport:
    # One client per session, each subscribed to its own topic, as the plugins do: a subscriber's
    # send queue on the bridge (64 frames) then holds about a second of its session's frames.
    clients: list[BridgeClient] = []
    tracks: dict[str, SessionTrack] = {}
    try:
        for i in range(sessions):
            client = BridgeClient("127.0.0.1", ports["request_port"], timeout_s=30)
            clients.append(client)
            client.hello("soak")
            pipeline = "face" if i < face else "motion"
            opened = client.open(pipeline)
            client.subscribe(opened["topic"].encode())
            tracks[opened["session"]] = SessionTrack(opened["session"], pipeline, opened)
        time.sleep(0.2)  # subscriptions reach the bridge before the first frame
        pairs = list(zip(clients, tracks.values(), strict=True))
        poller = zmq.Poller()
        for client in clients:
            poller.register(client.sub, zmq.POLLIN)
        by_socket = {client.sub: (client, track) for client, track in pairs}
        # Inputs loop over a few seconds of material so memory on this side stays flat too.
        rate, chunks = audio_chunks(4.0, MOTION_FPS)
        audio = list(chunks)
        rows = MusicFeatureStream(rate, MOTION_FPS).push(np.concatenate(audio))
        video = list(face_frames(2.0, face_fps))
        face_every = max(1, round(MOTION_FPS / face_fps))

        def receive(timeout_ms: int) -> int:
            got = 0
            for sock, _ in poller.poll(timeout_ms):
                client, track = by_socket[sock]
                for r in client.recv_frames(0):
                    track.add(r, keep=False)
                    got += 1
            return got

        seconds = minutes * 60
        warm_s = min(max(20.0, seconds / 10), seconds / 2)
        rss: list[tuple[float, float]] = []
        period_ns = int(1e9 / MOTION_FPS)
        start = time.monotonic_ns()
        next_rss = 0.0
        sent = tick = 0
        while (elapsed := (time.monotonic_ns() - start) / 1e9) < seconds:
            if elapsed >= next_rss:
                rss.append((elapsed, rss_mb(pid)))
                next_rss += RSS_EVERY_S
            for client, track in pairs:
                if track.pipeline == "motion" and audio_input:
                    client.send_audio(track.session, tick, audio[tick % len(audio)], rate)
                elif track.pipeline == "motion":
                    client.send_features(track.session, tick, rows[tick % len(rows)][None])
                elif tick % face_every == 0:
                    client.send_image(track.session, tick, video[(tick // face_every) % len(video)])
                else:
                    continue
                track.last_input_seq = tick
                sent += 1
            tick += 1
            while (wait := start + tick * period_ns - time.monotonic_ns()) > 0:
                receive(max(1, wait // 1_000_000))
        quiet_until = time.monotonic() + DRAIN_S
        while time.monotonic() < quiet_until:
            if receive(50):
                quiet_until = min(quiet_until, time.monotonic() + 0.5)
        rss.append(((time.monotonic_ns() - start) / 1e9, rss_mb(pid)))
        published = sum(client.close_session(track.session)["frames_published"] for client, track in pairs)
        receive(100)
        errors, invalid = [], 0
        for client in clients:
            client.poll_replies()
            errors += [f"{e.get('name')}: {e.get('message')}" for e in client.errors]
            invalid += len(client.invalid_frames)
        metrics = scrape(ports["metrics_port"])
    finally:
        for client in clients:
            client.close()
    return _report(
        minutes, sessions, face, sent, published, list(tracks.values()), errors, invalid, metrics, rss, warm_s
    )


def _report(
    minutes: float,
    sessions: int,
    face: int,
    sent: int,
    published: int,
    tracks: list[SessionTrack],
    errors: list[str],
    invalid_frames: int,
    metrics: dict[str, list[tuple[dict[str, str], float]]],
    rss: list[tuple[float, float]],
    warm_s: float,
) -> SoakReport:
    received = sum(t.frames_received for t in tracks)
    latency: dict[str, dict[str, float]] = {}
    for pipeline in sorted({t.pipeline for t in tracks}):
        ms = np.array([x for t in tracks if t.pipeline == pipeline for x in t.latencies_ns], np.float64) / 1e6
        if ms.size:
            latency[pipeline] = {
                "p50": percentile(ms, 50),
                "p99": percentile(ms, 99),
                "max": float(ms.max()),
            }

    def total(name: str, **labels: str) -> float:
        return sum(v for lab, v in metrics.get(name, []) if all(lab.get(k) == x for k, x in labels.items()))

    after = [(t, mb) for t, mb in rss if t >= warm_s] or rss[-1:]
    times, mbs = np.array([t for t, _ in after]), np.array([mb for _, mb in after])
    trend = float(np.polyfit(times / 60, mbs, 1)[0]) if len(after) >= 3 else 0.0
    return SoakReport(
        minutes=minutes,
        sessions=sessions,
        face_sessions=face,
        inputs_sent=sent,
        frames_published=published,
        frames_received=received,
        frames_lost=sum(t.gaps for t in tracks) + max(0, published - received),
        client_errors=errors,
        bridge_errors={lab["name"]: v for lab, v in metrics.get("avatar_bridge_errors_total", []) if v},
        contract_violations=invalid_frames + sum(len(t.violations) for t in tracks),
        guard={
            "clamped": total("avatar_bridge_guard_outputs_total", verdict="clamped"),
            "held": total("avatar_bridge_guard_outputs_total", verdict="held"),
            "restarts": total("avatar_bridge_session_restarts_total"),
            "face_inputs_superseded": total("avatar_bridge_inputs_dropped_total"),
        },
        latency_ms=latency,
        rss_mb_warm=float(mbs[0]),
        rss_mb_end=float(mbs[-1]),
        rss_mb_max=max(mb for _, mb in rss),
        rss_growth_pct=float((mbs[-1] - mbs[0]) / mbs[0] * 100),
        rss_trend_mb_per_min=trend,
        rss_samples=rss,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument(
        "--face", type=int, default=2, help="how many of the sessions are face (0: motion only)"
    )
    parser.add_argument("--face-fps", type=float, default=15.0)
    parser.add_argument(
        "--input", choices=("features", "audio"), default="features", help="what motion sessions get"
    )
    parser.add_argument("--out", type=Path, help="write the full report as JSON here")
    args = parser.parse_args()
    report = soak(args.minutes, args.sessions, args.face, args.face_fps, args.input == "audio")
    data: dict[str, Any] = asdict(report)
    data["ok"] = report.ok
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=2))
    data.pop("rss_samples")
    print(json.dumps(data, indent=2))
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
