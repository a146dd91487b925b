"""The live viewer in headless Chromium: the page's frame rate with N avatars, and publish -> screen latency.

A bridge in this process serves `--sessions` dance sessions (motion, fed music-feature rows at the
model's 60 fps; the cheapest pipeline, so the browser gets the CPU) and the viewer; Debian's Chromium
(software WebGL: SwiftShader, as on a machine without a GPU) opens the page at `--size`. After
`--warm-up` seconds the page is read for `--seconds`:

- page FPS: renders per second (requestAnimationFrame callbacks that drew the scene);
- latency: for every frame shown, the page's wall clock right after `renderer.render()` returned that
  drew it, minus the frame's `t_publish_ns` (same machine, same clock); p50/p95/p99;
- of that latency, the part before the page had the frame (publish -> the WebSocket message parsed:
  the bridge, the viewer process, the socket and the page's busy main thread), p50/p95;
- per session: frames received per second and seq gaps (frames the feed dropped).

Targets (issue 43): >= 30 FPS with 4 avatars; a frame on screen within 50 ms of its publish time.

    python bench/viewer.py [--sessions 4] [--seconds 10] [--size 1280x720] [--out FILE.json]

(default out: bench/results/viewer-cpu.json, and a screenshot beside it)
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from bridge.clients.harness.client import BridgeClient
from bridge.clients.harness.run import write_bench_json
from bridge.clients.viewer.avatar import ensure_default_avatar
from bridge.clients.viewer.browser import CHROMIUM, launch_args
from bridge.clients.viewer.process import ViewerProcess
from bridge.clients.viewer.server import ViewerConfig
from bridge.clients.viewer.vrm_check import load_avatar
from bridge.paths import default_models_dir
from bridge.serving.server import Bridge, ServeConfig
from bridge.transport.zmq_sockets import TransportConfig

ROOT = Path(__file__).resolve().parents[1]
FEATURE_COLS = 35


def feed(client: BridgeClient, sessions: list[str], rate_hz: float, stop: threading.Event) -> None:
    """One features row per session per tick, all sessions in one inputs message."""
    rng = np.random.default_rng(1)
    seq, period, next_at = 0, 1.0 / rate_hz, time.monotonic()
    while not stop.is_set():
        rows = rng.random((len(sessions), 1, FEATURE_COLS), dtype=np.float32)
        client.send_inputs([client.features_item(s, seq, rows[i]) for i, s in enumerate(sessions)])
        seq += 1
        next_at += period
        stop.wait(max(0.0, next_at - time.monotonic()))


def measure(
    url: str, sessions: list[str], size: tuple[int, int], warm_up: float, seconds: float, picture: Path
) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=launch_args())
        page = browser.new_page(viewport={"width": size[0], "height": size[1]}, bypass_csp=True)
        page.goto(url)
        shown = " && ".join(f"(window.__viewer.sessions['{s}'] || {{}}).loaded" for s in sessions)
        page.wait_for_function(f"window.__viewer && {shown}", timeout=120_000)
        time.sleep(warm_up)
        before = page.evaluate(
            "(() => { const v = window.__viewer; const s = {}; "
            "for (const [k, e] of Object.entries(v.sessions)) s[k] = [e.frames, e.lost]; "
            "return {renders: v.renders, latencies: v.latencies.length, sessions: s, "
            "t: performance.now()}; })()"
        )
        time.sleep(seconds)
        after = page.evaluate(
            "(() => { const v = window.__viewer; const s = {}; "
            "for (const [k, e] of Object.entries(v.sessions)) s[k] = [e.frames, e.lost]; "
            "return {renders: v.renders, latencies: v.latencies, feed: v.feedLatencies, sessions: s, "
            "t: performance.now(), "
            "errors: v.errors}; })()"
        )
        page.screenshot(path=str(picture))
        webgl = page.evaluate(
            "(() => { const gl = document.createElement('canvas').getContext('webgl2'); "
            "const d = gl && gl.getExtension('WEBGL_debug_renderer_info'); "
            "return d ? gl.getParameter(d.UNMASKED_RENDERER_WEBGL) : 'unknown'; })()"
        )
        version = browser.version
        browser.close()
    elapsed = (after["t"] - before["t"]) / 1000
    latencies = np.asarray(after["latencies"][before["latencies"] :])
    feed = np.asarray(after["feed"][before["latencies"] :])
    per_session = {
        s: {
            "frames_per_s": round((after["sessions"][s][0] - before["sessions"][s][0]) / elapsed, 1),
            "seq_gaps": after["sessions"][s][1] - before["sessions"][s][1],
        }
        for s in sessions
    }
    return {
        "browser": f"Chromium {version} (headless, {webgl})",
        "page_fps": round((after["renders"] - before["renders"]) / elapsed, 1),
        "latency_ms": {
            "frames": int(latencies.size),
            "p50": round(float(np.percentile(latencies, 50)), 1),
            "p95": round(float(np.percentile(latencies, 95)), 1),
            "p99": round(float(np.percentile(latencies, 99)), 1),
            "max": round(float(latencies.max()), 1),
        },
        "feed_latency_ms": {
            "p50": round(float(np.percentile(feed, 50)), 1),
            "p95": round(float(np.percentile(feed, 95)), 1),
        },
        "sessions": per_session,
        "page_errors": after["errors"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warm-up", type=float, default=3.0)
    parser.add_argument("--size", default="1280x720", help="the page's viewport, WIDTHxHEIGHT")
    parser.add_argument("--rate", type=float, default=60.0, help="inputs per second per session")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "viewer-cpu.json")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.split("x"))
    bridge = Bridge(
        ServeConfig(
            transport=TransportConfig(request_port=0, frames_port=0), models_dir=default_models_dir()
        )
    )
    bridge.start()
    server = threading.Thread(target=bridge.serve_forever, daemon=True)
    server.start()
    viewer = ViewerProcess(  # in its own process, as serve runs it
        ViewerConfig("127.0.0.1", 0, bridge.sockets.frames_endpoint, load_avatar(ensure_default_avatar()))
    )
    viewer.start()
    client = BridgeClient(request_port=bridge.sockets.request_port)
    client.hello()
    sessions = [client.open("motion")["session"] for _ in range(args.sessions)]
    stop = threading.Event()
    feeder = threading.Thread(target=feed, args=(client, sessions, args.rate, stop), daemon=True)
    feeder.start()
    try:
        result = measure(
            viewer.url, sessions, (width, height), args.warm_up, args.seconds, args.out.with_suffix(".png")
        )
    finally:
        stop.set()
        feeder.join(5)
        client.close()
        viewer.stop()
        bridge.stop()
        server.join(5)
        bridge.close()
    fields = {
        "command": "python bench/viewer.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "avatars": args.sessions,
        "pipeline": f"motion (dance_lstm), features at {args.rate:g} Hz",
        "viewport": args.size,
        # The two cores are shared (other processes' load slows the software renderer most of all).
        "load_average_1min": round(os.getloadavg()[0], 2),
        **result,
        "targets": {"page_fps_min": 30, "latency_ms_max": 50},
    }
    write_bench_json(args.out, fields)
    print(
        f"{args.sessions} avatars at {args.size}: {result['page_fps']} FPS, latency p50 "
        f"{result['latency_ms']['p50']} ms p95 {result['latency_ms']['p95']} ms (of which publish -> page "
        f"p50 {result['feed_latency_ms']['p50']} ms) -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
