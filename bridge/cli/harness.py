"""`avatar-bridge harness`: drive a running bridge over ZeroMQ and report what arrived."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bridge.clients.harness.client import BridgeClient, BridgeError
from bridge.clients.harness.run import HarnessReport, run_harness
from bridge.protocol.versions import DEFAULT_REQUEST_PORT
from bridge.transport.curve import load_public_key, load_secret_key


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--request-port", type=int, default=DEFAULT_REQUEST_PORT)
    parser.add_argument("--pipeline", choices=("face", "motion"), default="motion")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--sessions", type=int, default=1, help="concurrent sessions to open")
    parser.add_argument("--fps", type=float, default=60.0, help="input rate per session")
    parser.add_argument(
        "--input", type=Path, help="face: video or image file; motion: 16-bit WAV (default: generated)"
    )
    parser.add_argument("--style", help="motion style (see `list`)")
    parser.add_argument("--json", type=Path, help="write the report here")
    parser.add_argument(
        "--batch-topic",
        action="store_true",
        help="motion: read frames from the batch topic batch/motion (docs/protocol.md 5.3), not frame/",
    )
    parser.add_argument(
        "--batch-group",
        default=f"harness-{os.getpid()}",
        help="with --batch-topic: open the sessions in this batch group and read only its topic "
        "batch/motion/<group>/, no other client's rows (default: harness-<pid>; '' for batch/motion)",
    )
    parser.add_argument(
        "--multiplex",
        action="store_true",
        help="send each tick's inputs of all sessions in `inputs` messages (docs/protocol.md 4.7)",
    )
    parser.add_argument("--server-key", type=Path, help="CURVE: the bridge's public key file (from `keys`)")
    parser.add_argument(
        "--client-key", type=Path, help="CURVE: this client's secret key file (default: a new pair)"
    )


def run(args: argparse.Namespace) -> int:
    try:
        client = BridgeClient(args.host, args.request_port, **curve_options(args))
    except (OSError, ValueError) as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return 2
    options = {"style": args.style} if args.style else {}
    try:
        report = run_harness(
            client,
            args.pipeline,
            seconds=args.seconds,
            sessions=args.sessions,
            fps=args.fps,
            input_path=args.input,
            options=options,
            batch_topic=args.batch_topic,
            batch_group=args.batch_group,
            multiplex=args.multiplex,
        )
    except (TimeoutError, BridgeError, ValueError, OSError) as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return 2
    finally:
        client.close()
    print_report(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report.to_json(), indent=2))
    return 0 if report.ok else 1


def curve_options(args: argparse.Namespace) -> dict[str, Any]:
    """BridgeClient keyword arguments for CURVE, from the key files `avatar-bridge keys` writes."""
    if args.server_key is None:
        return {}
    options: dict[str, Any] = {"server_key": load_public_key(args.server_key)}
    if args.client_key is not None:
        options["client_keys"] = load_secret_key(args.client_key)
    return options


def print_report(report: HarnessReport) -> None:
    rows = [
        ("pipeline", report.pipeline),
        ("sessions", report.sessions),
        ("inputs sent", report.inputs_sent),
        ("frames published", report.frames_published),
        ("frames received", report.frames_received),
        ("frames lost", report.frames_lost),
        ("invalid frames", report.invalid_frames),
        ("errors", len(report.errors)),
        ("latency p50 (ms)", f"{report.latency_ms_p50:.2f}"),
        ("latency p99 (ms)", f"{report.latency_ms_p99:.2f}"),
        ("engine p50 (ms)", f"{report.engine_ms_p50:.2f}"),
        ("mean batch", f"{report.mean_batch:.2f}"),
        ("fps per session", f"{report.fps_per_session:.1f}"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    for error in report.errors[:10]:
        print(f"error: {error}")
